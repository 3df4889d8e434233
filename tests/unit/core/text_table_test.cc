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

}  // namespace
}  // namespace rg::core
