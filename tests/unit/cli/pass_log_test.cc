// What a pass says in the log: an action's error once, with its action, and every other error
// on its own line.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <memory>
#include <sstream>
#include <string>

#include "reconciler/cli/pass_runner.h"

namespace rg::cli {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

core::ActionOutcome Failed(const std::string& name, const std::string& message) {
  core::ActionOutcome o;
  o.action.kind = core::ActionKind::kSubmit;
  o.action.name = name;
  o.action.submission_id = name + "-3f2a1c9b0e";
  o.error = core::Error::Transient(message);
  return o;
}

TEST_CASE("a failed action's error is logged once, with its action, and other errors apart") {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%l %v");
  const std::shared_ptr<spdlog::logger> before = spdlog::default_logger();
  spdlog::set_default_logger(logger);

  engine::PassResult result;
  for (int i = 0; i < 3000; ++i) {
    core::ActionOutcome o = Failed("job-" + std::to_string(i), "connection refused");
    result.errors.emplace_back(o.error->kind(), o.action.name + " (" + o.action.submission_id +
                                                    "): " + o.error->message());
    result.outcomes.push_back(std::move(o));
  }
  core::ActionOutcome ok;
  ok.action.kind = core::ActionKind::kSubmit;
  ok.action.name = "fine";
  ok.action.submission_id = "fine-3f2a1c9b0e";
  ok.ok = true;
  result.outcomes.push_back(ok);
  result.errors.push_back(core::Error::Transient("cannot record status: the remote refused"));
  // The same message as an action's, but of no action: logged.
  result.errors.push_back(core::Error::Transient("other (other-1): connection refused"));
  LogPass(result);
  spdlog::set_default_logger(before);

  const std::string log = out.str();
  CHECK(Count(log, "submit failed") == 3000);
  CHECK(Count(log, "job-17 (job-17-3f2a1c9b0e): connection refused") == 0);
  CHECK(Count(log, "submitted") == 1);
  CHECK(Count(log, "cannot record status: the remote refused") == 1);
  CHECK(Count(log, "other (other-1): connection refused") == 1);
}

}  // namespace
}  // namespace rg::cli
