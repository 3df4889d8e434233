#include "reconciler/core/text_table.h"

#include <catch2/catch.hpp>

namespace rg::core {
namespace {

TEST_CASE("table columns are as wide as their widest cell plus two, the last one as is") {
  CHECK(FormatTextTable({{"ID", "STATUS", "NOTE"},
                         {"a-0123456789", "RUNNING", "x"},
                         {"b", "SUCCEEDED", "a long last cell"}}) ==
        "ID            STATUS     NOTE\n"
        "a-0123456789  RUNNING    x\n"
        "b             SUCCEEDED  a long last cell\n");
  CHECK(FormatTextTable({{"ONLY"}, {"one column"}}) == "ONLY\none column\n");
  CHECK(FormatTextTable({}).empty());
}

TEST_CASE("a table appended to a text follows it and grows it once, by the table's size") {
  const std::vector<TextRow> rows = {{"ID", "STATUS", "NOTE"},
                                     {"a-0123456789", "RUNNING", "x"},
                                     {"b", "SUCCEEDED", "a long last cell"},
                                     {"c", "", ""}};
  std::string out = "Plan: 3 jobs\n";
  AppendTextTable(rows, out);
  CHECK(out == "Plan: 3 jobs\n" + FormatTextTable(rows));
  // Reserved exactly: the text's capacity is its size (no doubling's spare half).
  std::string exact;
  AppendTextTable(rows, exact);
  CHECK(exact.capacity() == exact.size());
  CHECK(exact == FormatTextTable(rows));
}

TEST_CASE("a cell holding control characters is shown escaped, on its own row") {
  CHECK(FormatTextTable({{"NAME", "NOTE"}, {"a\nb", "\x1b[31mred\r"}, {"c", "bidi\xE2\x80\xAE"}}) ==
        "NAME  NOTE\n"
        "a\\nb  \\x1b[31mred\\r\n"
        "c     bidi\\u202e\n");
}

}  // namespace
}  // namespace rg::core
