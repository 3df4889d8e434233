#include "reconciler/core/spec_warnings.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace rg::core {
namespace {

JobSpec Verl(Workload workload) {
  JobSpec spec;
  spec.path = "jobs/t.yaml";
  spec.workload = workload;
  spec.positions = {
      {"workload", {1, 1}}, {"save_freq", {2, 1}}, {"retries", {3, 1}}, {"overrides", {4, 1}}};
  return spec;
}

TEST_CASE("a retried verl spec without save_freq above 0 is warned about, where it says so") {
  struct Case {
    const char* what;
    Workload workload;
    std::optional<int64_t> save_freq;
    int64_t retries;
    int64_t infra_retries;
    std::vector<std::string> overrides;
    int warned_line;  // 0: no warning
  };
  const std::vector<Case> cases = {
      {"ppo, infra_retries by default", Workload::kPpo, std::nullopt, 0, 3, {}, 1},
      {"grpo, save_freq -1, retries", Workload::kGrpo, -1, 2, 3, {}, 2},
      {"sft, save_freq 0, retries only", Workload::kSft, 0, 1, 0, {}, 2},
      {"sft, no save_freq, retries only", Workload::kSft, std::nullopt, 1, 0, {}, 3},
      {"never retried", Workload::kPpo, std::nullopt, 0, 0, {}, 0},
      {"custom", Workload::kCustom, std::nullopt, 3, 3, {}, 0},
      {"save_freq 10", Workload::kPpo, 10, 0, 3, {}, 0},
      {"an override turns it off", Workload::kPpo, 10, 0, 3, {"trainer.save_freq=-1"}, 4},
      {"the last override wins",
       Workload::kPpo,
       std::nullopt,
       0,
       3,
       {"trainer.save_freq=0", "++trainer.save_freq=50"},
       0},
      {"+key= sets it too", Workload::kGrpo, std::nullopt, 0, 3, {"+trainer.save_freq=5"}, 0},
      {"~key deletes it", Workload::kGrpo, 10, 0, 3, {"~trainer.save_freq"}, 4},
      {"an interpolation is taken as set",
       Workload::kPpo,
       std::nullopt,
       0,
       3,
       {"trainer.save_freq=${oc.env:SAVE}"},
       0},
      {"another key's prefix is not it",
       Workload::kPpo,
       std::nullopt,
       0,
       3,
       {"trainer.save_freq_extra=5"},
       1},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    JobSpec spec = Verl(c.workload);
    if (c.workload != Workload::kCustom) {
      spec.mutable_trainer().save_freq = c.save_freq;
      spec.mutable_trainer().overrides = c.overrides;
    }
    spec.retries = c.retries;
    spec.infra_retries = c.infra_retries;
    const Diagnostics warnings = SpecWarnings(spec);
    if (c.warned_line == 0) {
      CHECK(warnings.empty());
      continue;
    }
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].path == "jobs/t.yaml");
    CHECK(warnings[0].line == c.warned_line);
    CHECK(warnings[0].column == 1);
    CHECK(warnings[0].ToString("warning").starts_with(
        "jobs/t.yaml:" + std::to_string(c.warned_line) + ":1: warning: "));
    CHECK(warnings[0].message.find("a retried attempt starts again from step 0") !=
          std::string::npos);
  }
}

}  // namespace
}  // namespace rg::core
