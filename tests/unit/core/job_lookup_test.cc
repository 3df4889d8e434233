// Which job the argument of status, logs and stop names: an id as it is, else a name's
// latest run, with the default instance preferred and ambiguity refused.

#include "reconciler/core/job_lookup.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/identity.h"
#include "reconciler/core/render.h"

namespace rg::core {
namespace {

constexpr std::string_view kWhere = "Ray at http://head:8265";
constexpr std::string_view kRepoA = "https://github.com/team-a/jobs";
constexpr std::string_view kRepoB = "git@github.com:team-b/jobs.git";

// A daemon's run: `instance` empty makes it a one-off run of `submit`.
RayJob Run(const std::string& id, const std::string& name, std::optional<int64_t> start_ms,
           int attempt, const std::string& instance = "ray-gitops",
           std::string_view repo = kRepoA) {
  RayJob job;
  job.type = "SUBMISSION";
  job.submission_id = id;
  job.status = RayJobStatus::kSucceeded;
  job.start_time_ms = start_ms;
  job.metadata[std::string(kMetaName)] = name;
  job.metadata[std::string(kMetaAttempt)] = std::to_string(attempt);
  if (instance.empty()) {
    job.metadata[std::string(kMetaSubmittedBy)] = std::string(kSubmittedByCli);
  } else {
    job.metadata[std::string(kMetaManagedBy)] = instance;
    job.metadata[std::string(kMetaRepo)] = std::string(repo);
  }
  return job;
}

JobQuery Query(const std::string& arg, const std::string& instance = "") {
  JobQuery query;
  query.arg = arg;
  query.instance = instance;
  query.where = std::string(kWhere);
  return query;
}

struct LatestRow {
  std::string what;
  std::vector<RayJob> jobs;
  std::string want;
};

TEST_CASE("a name means the latest run of that name") {
  const std::vector<LatestRow> rows = {
      {"the later start time wins over a higher attempt",
       {Run("ppo-aaaaaaaaaa-r2", "ppo", 1000, 2), Run("ppo-bbbbbbbbbb", "ppo", 2000, 0)},
       "ppo-bbbbbbbbbb"},
      {"a retry started later wins",
       {Run("ppo-aaaaaaaaaa", "ppo", 1000, 0), Run("ppo-aaaaaaaaaa-r1", "ppo", 1500, 1)},
       "ppo-aaaaaaaaaa-r1"},
      {"on the same start time the higher attempt wins, not the greater id",
       {Run("ppo-aaaaaaaaaa-r10", "ppo", 1000, 10), Run("ppo-aaaaaaaaaa-r9", "ppo", 1000, 9)},
       "ppo-aaaaaaaaaa-r10"},
      {"on the same time and attempt the greater id wins",
       {Run("ppo-bbbbbbbbbb", "ppo", 1000, 0), Run("ppo-aaaaaaaaaa", "ppo", 1000, 0)},
       "ppo-bbbbbbbbbb"},
      {"a run without a start time counts as the latest",
       {Run("ppo-aaaaaaaaaa", "ppo", 5000, 0), Run("ppo-aaaaaaaaaa-r1", "ppo", std::nullopt, 1)},
       "ppo-aaaaaaaaaa-r1"},
      {"runs of other names are not considered",
       {Run("ppo-aaaaaaaaaa", "ppo", 1000, 0), Run("ppo-x-aaaaaaaaaa", "ppo-x", 9000, 0)},
       "ppo-aaaaaaaaaa"},
      {"a one-off run of submit has a name too",
       {Run("eval-aaaaaaaaaa-cli", "eval", 1000, 0, "")},
       "eval-aaaaaaaaaa-cli"},
  };
  for (const LatestRow& row : rows) {
    INFO(row.what);
    Result<FoundJob> found = FindJob(row.jobs, Query(row.jobs.front().Label(kMetaName)));
    REQUIRE(found.ok());
    CHECK(found->by_name);
    CHECK(found->job.submission_id == row.want);
  }
}

TEST_CASE("an id is used as it is, before any name") {
  RayJob driver;
  driver.type = "DRIVER";
  driver.job_id = "02000000";
  // A pinned id that equals another job's name: the id wins.
  const std::vector<RayJob> jobs = {Run("eval", "pinned", 1000, 0),
                                    Run("eval-aaaaaaaaaa", "eval", 2000, 0),
                                    Run("eval-aaaaaaaaaa-r1", "eval", 3000, 1), driver};

  Result<FoundJob> by_id = FindJob(jobs, Query("eval-aaaaaaaaaa"));
  REQUIRE(by_id.ok());
  CHECK_FALSE(by_id->by_name);
  CHECK(by_id->job.submission_id == "eval-aaaaaaaaaa");

  Result<FoundJob> pinned = FindJob(jobs, Query("eval"));
  REQUIRE(pinned.ok());
  CHECK_FALSE(pinned->by_name);
  CHECK(pinned->job.Label(kMetaName) == "pinned");

  Result<FoundJob> job_id = FindJob(jobs, Query("02000000"));
  REQUIRE(job_id.ok());
  CHECK(job_id->job.type == "DRIVER");

  // --instance narrows names only: an id of another instance is still found.
  Result<FoundJob> other_instance = FindJob(jobs, Query("eval-aaaaaaaaaa-r1", "team-b"));
  REQUIRE(other_instance.ok());
  CHECK(other_instance->job.submission_id == "eval-aaaaaaaaaa-r1");
}

TEST_CASE("an unknown name or id is not found, and says where it looked") {
  RayJob by_hand;
  by_hand.type = "SUBMISSION";
  by_hand.submission_id = "raysubmit_abc";
  by_hand.metadata[std::string(kMetaName)] = "manual";  // a label, but not ours
  const std::vector<RayJob> jobs = {Run("ppo-aaaaaaaaaa", "ppo", 1000, 0), by_hand};

  Result<FoundJob> missing = FindJob(jobs, Query("custom-fails"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().IsNotFound());
  CHECK(missing.error().message() ==
        "no job named custom-fails or with id custom-fails in Ray at http://head:8265");

  // A job submitted by hand is found by its id, never by a name label it happens to carry.
  CHECK_FALSE(FindJob(jobs, Query("manual")).ok());
  CHECK(FindJob(jobs, Query("raysubmit_abc")).ok());
  CHECK_FALSE(FindJob({}, Query("")).ok());
}

TEST_CASE("with several instances the default one wins unless --instance says otherwise") {
  const std::vector<RayJob> jobs = {
      Run("eval-aaaaaaaaaa", "eval", 1000, 0),
      Run("eval-bbbbbbbbbb", "eval", 5000, 0, "team-b", kRepoB),
      Run("eval-aaaaaaaaaa-cli", "eval", 9000, 0, ""),
  };
  Result<FoundJob> preferred = FindJob(jobs, Query("eval"));
  REQUIRE(preferred.ok());
  CHECK(preferred->job.submission_id == "eval-aaaaaaaaaa");  // though the others are later

  Result<FoundJob> chosen = FindJob(jobs, Query("eval", "team-b"));
  REQUIRE(chosen.ok());
  CHECK(chosen->job.submission_id == "eval-bbbbbbbbbb");

  Result<FoundJob> absent = FindJob(jobs, Query("eval", "team-c"));
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().IsNotFound());
  CHECK(absent.error().message() ==
        "no job named eval of instance team-c or with id eval in Ray at http://head:8265 (jobs "
        "named eval belong to one-off runs of submit; instance ray-gitops, repository "
        "https://github.com/team-a/jobs; instance team-b, repository "
        "git@github.com:team-b/jobs.git)");
}

TEST_CASE("a name held by several owners and no default instance is refused with the candidates") {
  std::vector<RayJob> jobs = {
      Run("eval-bbbbbbbbbb", "eval", 5000, 0, "team-b", kRepoB),
      Run("eval-cccccccccc", "eval", 6000, 0, "team-c", kRepoA),
      Run("eval-cccccccccc-r1", "eval", 7000, 1, "team-c", kRepoA),
  };
  jobs.back().status = RayJobStatus::kRunning;
  Result<FoundJob> found = FindJob(jobs, Query("eval"));
  REQUIRE_FALSE(found.ok());
  CHECK(found.error().IsInvalidInput());
  CHECK(
      found.error().message() ==
      "several jobs are named eval in Ray at http://head:8265; give the submission id of the "
      "one you mean, or choose one with --instance:\n"
      "  eval-bbbbbbbbbb (SUCCEEDED): instance team-b, repository git@github.com:team-b/jobs.git\n"
      "  eval-cccccccccc-r1 (RUNNING): instance team-c, repository https://github.com/team-a/jobs");
}

TEST_CASE("one instance used by two repositories never picks the other team's run") {
  const std::vector<RayJob> jobs = {
      Run("shared-aaaaaaaaaa", "shared", 1000, 0, "ray-gitops", kRepoA),
      Run("shared-bbbbbbbbbb", "shared", 2000, 0, "ray-gitops", kRepoB),
      // The same repository spelled another way is the same repository.
      Run("shared-aaaaaaaaaa-r1", "shared", 3000, 1, "ray-gitops",
          "git@github.com:team-a/jobs.git"),
  };
  for (const std::string& instance : {std::string(), std::string("ray-gitops")}) {
    Result<FoundJob> found = FindJob(jobs, Query("shared", instance));
    REQUIRE_FALSE(found.ok());
    CHECK(found.error().IsInvalidInput());
    const std::string& message = found.error().message();
    CHECK(message.find("  shared-aaaaaaaaaa-r1 (SUCCEEDED): instance ray-gitops") !=
          std::string::npos);
    CHECK(message.find("  shared-bbbbbbbbbb (SUCCEEDED): instance ray-gitops") !=
          std::string::npos);
    CHECK(message.find("--instance") == std::string::npos);  // it would not help
  }
}

TEST_CASE("the name's other runs that are still active are named, oldest first") {
  std::vector<RayJob> jobs = {
      Run("nightly-aaaaaaaaaa-202601010000", "nightly", 1000, 0),
      Run("nightly-aaaaaaaaaa-202601020000", "nightly", 2000, 0),
      Run("nightly-aaaaaaaaaa-202601030000", "nightly", 3000, 0),
      Run("nightly-aaaaaaaaaa-202601040000", "nightly", 4000, 0),
  };
  jobs[0].status = RayJobStatus::kRunning;
  jobs[1].status = RayJobStatus::kFailed;
  jobs[2].status = RayJobStatus::kPending;
  jobs[3].status = RayJobStatus::kRunning;
  Result<FoundJob> found = FindJob(jobs, Query("nightly"));
  REQUIRE(found.ok());
  CHECK(found->job.submission_id == "nightly-aaaaaaaaaa-202601040000");
  CHECK(found->other_active == std::vector<std::string>{"nightly-aaaaaaaaaa-202601010000",
                                                        "nightly-aaaaaaaaaa-202601030000"});
}

}  // namespace
}  // namespace rg::core
