// Two repositories on one shared cluster, both on the default instance (docs/operations.md): the
// other repository's runs are foreign (never stopped, adopted or counted by the guards), an
// id taken by one is a conflict, and runs recorded under a --previous-repo URL are ours.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/identity.h"
#include "reconciler/core/markdown.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/plan_format.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "tests/unit/planner/plan_fixtures.h"

namespace rg::core {
namespace {

using fixtures::Describe;
using fixtures::Desired;

constexpr const char* kHash = "aaaaaaaaaa";
constexpr const char* kOtherHash = "bbbbbbbbbb";
constexpr const char* kOurRepo = "https://github.com/team-a/jobs";
constexpr const char* kTheirRepo = "https://github.com/team-b/jobs";
constexpr const char* kOldRepo = "git@old.example.com:team-a/jobs.git";

JobSpec Spec(const std::string& name, int retries = 0) {
  JobSpec s;
  s.name = name;
  s.path = "jobs/" + name + ".yaml";
  s.workload = Workload::kCustom;
  s.entrypoint = "true";
  s.spec_hash = kHash;
  s.retries = retries;
  return s;
}

// A run of `name` submitted by the default instance from the repository `repo`.
RayJob Job(const std::string& name, RayJobStatus status, const std::string& repo,
           const std::string& hash = kHash, int attempt = 0) {
  RayJob j;
  j.type = "SUBMISSION";
  j.submission_id = name + "-" + hash + (attempt > 0 ? "-r" + std::to_string(attempt) : "");
  j.status = status;
  j.start_time_ms = 1000 + attempt;
  j.metadata = {{std::string(kMetaManagedBy), std::string(kDefaultInstance)},
                {std::string(kMetaName), name},
                {std::string(kMetaSpecPath), "jobs/" + name + ".yaml"},
                {std::string(kMetaSpecHash), hash},
                {std::string(kMetaAttempt), std::to_string(attempt)},
                {std::string(kMetaRepo), repo}};
  return j;
}

// Team A's policy: the default instance, its own repository.
PlanPolicy Policy() {
  PlanPolicy p;
  p.owner.repo = RepoIdentity(kOurRepo);
  return p;
}

PlanPolicy PolicyWithPrevious() {
  PlanPolicy p = Policy();
  p.owner.AddPrevious(kOldRepo);
  return p;
}

TEST_CASE("a foreign run whose name we do not declare is not stopped, only listed") {
  const std::vector<RayJob> observed = {Job("theirs", RayJobStatus::kRunning, kTheirRepo)};
  Plan plan = PlanActions(Desired({Spec("mine")}), observed, {}, Policy());
  CHECK(Describe(plan) == "submit mine-aaaaaaaaaa;");
  CHECK(plan.FindJob("theirs") == nullptr);
  REQUIRE(plan.foreign.size() == 1);
  CHECK(plan.foreign[0].submission_id == "theirs-aaaaaaaaaa");
  CHECK(plan.unmanaged.empty());
  CHECK(plan.instance == "ray-gitops");
  CHECK_FALSE(plan.blocked);

  SECTION("the same run labelled with our repository is ours, and its removal stops it") {
    Plan ours = PlanActions(Desired({Spec("mine")}),
                            {Job("theirs", RayJobStatus::kRunning, "git@github.com:team-a/jobs")},
                            {}, Policy());
    CHECK(Describe(ours) == "stop theirs-aaaaaaaaaa;submit mine-aaaaaaaaaa;");
    CHECK(ours.foreign.empty());
  }
  SECTION("nor when our desired state is empty") {
    Plan empty = PlanActions(Desired({}), observed, {}, Policy());
    CHECK(Describe(empty).empty());
    CHECK(empty.jobs.empty());
    CHECK(empty.foreign.size() == 1);
    CHECK_FALSE(empty.blocked);
  }
  SECTION("nor by an explicit --max-stops") {
    PlanPolicy forced = Policy();
    forced.max_stops = 100;
    forced.max_stops_explicit = true;
    Plan plan2 = PlanActions(Desired({}), observed, {}, forced);
    CHECK(Describe(plan2).empty());
  }
}

TEST_CASE("a spec whose id is taken by a foreign run is a conflict naming the other repository") {
  SECTION("the same spec in both repositories") {
    const RayJob theirs =
        Job("train", RayJobStatus::kRunning, "https://bot:secret@github.com/team-b/jobs.git");
    Plan plan = PlanActions(Desired({Spec("train")}), {theirs}, {}, Policy());
    CHECK(Describe(plan).empty());
    REQUIRE(plan.jobs.size() == 1);
    const JobPlan& train = plan.jobs[0];
    CHECK(train.phase == Phase::kConflict);
    CHECK(train.submission_id == "train-aaaaaaaaaa");
    CHECK_THAT(train.message, Catch::Contains("https://github.com/team-b/jobs.git"));
    CHECK_THAT(train.message, Catch::Contains("--instance"));
    CHECK_THAT(train.message, !Catch::Contains("secret"));
    REQUIRE(train.observed.has_value());
    CHECK(train.observed->status == RayJobStatus::kRunning);  // their run, seen
    CHECK(plan.foreign.size() == 1);
  }
  SECTION("a retry whose id the other repository holds") {
    // Our attempt 0 failed; their run holds the id of our attempt 1.
    Plan plan = PlanActions(Desired({Spec("train", 2)}),
                            {Job("train", RayJobStatus::kFailed, kOurRepo),
                             Job("train", RayJobStatus::kRunning, kTheirRepo, kHash, 1)},
                            {}, Policy());
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kConflict);
    CHECK(plan.jobs.at(0).submission_id == "train-aaaaaaaaaa-r1");
    CHECK_THAT(plan.jobs.at(0).message, Catch::Contains(kTheirRepo));
  }
  SECTION("a foreign run of the same name and other content is no old version of ours") {
    Plan plan =
        PlanActions(Desired({Spec("train")}),
                    {Job("train", RayJobStatus::kRunning, kTheirRepo, kOtherHash)}, {}, Policy());
    CHECK(Describe(plan) == "submit train-aaaaaaaaaa;");
    CHECK(plan.jobs.at(0).phase == Phase::kPending);
    CHECK_FALSE(plan.jobs.at(0).spec_changed);
  }
}

TEST_CASE("a disowned job under our id is a conflict naming it: never adopted or stopped") {
  // Our labels, forged: the pass found it is not the run we render (engine/adoption_check.h).
  PlanPolicy policy = Policy();
  policy.owner.disowned.emplace("train-aaaaaaaaaa", "its entrypoint differs");
  SECTION("attempt 0, SUCCEEDED: not the spec's success") {
    Plan plan = PlanActions(Desired({Spec("train")}),
                            {Job("train", RayJobStatus::kSucceeded, kOurRepo)}, {}, policy);
    CHECK(Describe(plan).empty());
    REQUIRE(plan.jobs.size() == 1);
    CHECK(plan.jobs[0].phase == Phase::kConflict);
    CHECK(plan.jobs[0].submission_id == "train-aaaaaaaaaa");
    CHECK_THAT(plan.jobs[0].message, Catch::StartsWith("submission id train-aaaaaaaaaa is taken"));
    CHECK_THAT(plan.jobs[0].message, Catch::Contains("its entrypoint differs"));
    REQUIRE(plan.unmanaged.size() == 1);
    CHECK(plan.unmanaged[0].submission_id == "train-aaaaaaaaaa");
  }
  SECTION("attempt 0, RUNNING, with the spec removed: not stopped") {
    Plan plan = PlanActions(Desired({Spec("other")}),
                            {Job("train", RayJobStatus::kRunning, kOurRepo)}, {}, policy);
    CHECK(Describe(plan) == "submit other-aaaaaaaaaa;");
    CHECK(plan.FindJob("train") == nullptr);
  }
  SECTION("a retry's id: attempt 0 of ours failed, the planted job holds attempt 1") {
    PlanPolicy retry = Policy();
    retry.owner.disowned.emplace("train-aaaaaaaaaa-r1", "its runtime_env differs (working_dir)");
    Plan plan = PlanActions(Desired({Spec("train", 2)}),
                            {Job("train", RayJobStatus::kFailed, kOurRepo),
                             Job("train", RayJobStatus::kSucceeded, kOurRepo, kHash, 1)},
                            {}, retry);
    CHECK(Describe(plan).empty());
    CHECK(plan.jobs.at(0).phase == Phase::kConflict);
    CHECK(plan.jobs.at(0).submission_id == "train-aaaaaaaaaa-r1");
    CHECK_THAT(plan.jobs.at(0).message, Catch::Contains("working_dir"));
  }
}

TEST_CASE("a job without gitops.repo or gitops.spec-hash is never stopped, whatever it says") {
  RayJob managed_only;
  managed_only.type = "SUBMISSION";
  managed_only.submission_id = "by-hand";
  managed_only.status = RayJobStatus::kRunning;
  managed_only.metadata = {{std::string(kMetaManagedBy), std::string(kDefaultInstance)}};
  RayJob no_hash = Job("gone", RayJobStatus::kRunning, kOurRepo);
  no_hash.metadata.erase(std::string(kMetaSpecHash));
  RayJob no_repo = Job("gone2", RayJobStatus::kRunning, kOurRepo);
  no_repo.metadata.erase(std::string(kMetaRepo));
  PlanPolicy any_repo = Policy();
  any_repo.owner.repo.clear();
  for (const PlanPolicy& policy : {Policy(), any_repo}) {
    Plan plan = PlanActions(Desired({Spec("mine")}), {managed_only, no_hash, no_repo}, {}, policy);
    CHECK(Describe(plan) == "submit mine-aaaaaaaaaa;");
    CHECK(plan.unmanaged.size() == 3);
    CHECK(plan.foreign.empty());
  }
}

TEST_CASE("foreign runs do not count toward the stop guards") {
  std::vector<RayJob> foreign;
  for (int i = 0; i < 6; ++i) {
    foreign.push_back(Job("b" + std::to_string(i), RayJobStatus::kRunning, kTheirRepo));
  }
  SECTION("more foreign runs than --max-stops block nothing") {
    Plan plan = PlanActions(Desired({Spec("mine")}), foreign, {}, Policy());
    CHECK_FALSE(plan.blocked);
    CHECK(Describe(plan) == "submit mine-aaaaaaaaaa;");
    CHECK(plan.foreign.size() == 6);
  }
  SECTION("--max-stops counts our stops only") {
    std::vector<RayJob> observed = foreign;
    for (int i = 0; i < 5; ++i) {
      observed.push_back(Job("a" + std::to_string(i), RayJobStatus::kRunning, kOurRepo));
    }
    Plan plan = PlanActions(Desired({Spec("mine")}), observed, {}, Policy());
    CHECK_FALSE(plan.blocked);
    CHECK(plan.CountActions(ActionKind::kStop) == 5);
    for (const Action& a : plan.actions) CHECK(a.name.front() != 'b');
  }
  SECTION("an empty desired state that would stop every one of our runs is still blocked") {
    // Their runs are not among "every active job": counting them would let this through.
    std::vector<RayJob> observed = foreign;
    observed.push_back(Job("a", RayJobStatus::kRunning, kOurRepo));
    Plan plan = PlanActions(Desired({}), observed, {}, Policy());
    CHECK(plan.blocked);
    CHECK_THAT(plan.blocked_reason, Catch::Contains("stop every active job (1)"));
    CHECK(Describe(plan).empty());
    REQUIRE(plan.jobs.size() == 1);
    CHECK(plan.jobs[0].name == "a");
    CHECK(plan.jobs[0].phase == Phase::kBlocked);
  }
}

TEST_CASE("runs recorded under a --previous-repo URL are ours and the plan says it adopts them") {
  const std::vector<RayJob> observed = {
      Job("train", RayJobStatus::kRunning, "ssh://git@old.example.com/team-a/jobs"),
      Job("eval", RayJobStatus::kSucceeded, "https://old.example.com/team-a/jobs.git"),
      Job("serve", RayJobStatus::kRunning, kOurRepo),
  };
  const DesiredState desired = Desired({Spec("eval"), Spec("serve"), Spec("train")});

  SECTION("with --previous-repo: kept as they are, nothing resubmitted") {
    Plan plan = PlanActions(desired, observed, {}, PolicyWithPrevious());
    CHECK(Describe(plan).empty());
    CHECK(plan.FindJob("train")->phase == Phase::kRunning);
    CHECK(plan.FindJob("eval")->phase == Phase::kSucceeded);
    CHECK(plan.FindJob("serve")->phase == Phase::kRunning);
    CHECK(plan.foreign.empty());
    // Counted under the URL as given, not under the spelling recorded; our own run is not.
    CHECK(plan.adopted_previous == std::map<std::string, int, std::less<>>{{kOldRepo, 2}});
  }
  SECTION("with --previous-repo an adopted run is ours in every way: removing its spec stops it") {
    Plan plan =
        PlanActions(Desired({Spec("eval"), Spec("serve")}), observed, {}, PolicyWithPrevious());
    CHECK(Describe(plan) == "stop train-aaaaaaaaaa;");
    CHECK(plan.FindJob("train")->phase == Phase::kStopping);
  }
  SECTION("without --previous-repo: foreign; their specs are conflicts, nothing stopped") {
    Plan plan = PlanActions(desired, observed, {}, Policy());
    CHECK(Describe(plan).empty());
    CHECK_FALSE(plan.blocked);
    CHECK(plan.adopted_previous.empty());
    CHECK(plan.foreign.size() == 2);
    for (const char* name : {"train", "eval"}) {
      CAPTURE(name);
      const JobPlan* jp = plan.FindJob(name);
      REQUIRE(jp != nullptr);
      CHECK(jp->phase == Phase::kConflict);
      CHECK_THAT(jp->message, Catch::Contains("old.example.com/team-a/jobs"));
    }
    CHECK(plan.FindJob("serve")->phase == Phase::kRunning);
  }
  SECTION("without --previous-repo and without their specs: nothing stopped either") {
    Plan plan = PlanActions(Desired({Spec("serve")}), observed, {}, Policy());
    CHECK(Describe(plan).empty());
    CHECK(plan.FindJob("train") == nullptr);
    CHECK(plan.foreign.size() == 2);
  }
}

// JSON without the whitespace outside strings, so a test can look for a fragment of it.
std::string Compact(std::string_view json) {
  std::string out;
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == ' ' || c == '\n') {
      continue;
    } else if (c == '"') {
      in_string = true;
    }
    out += c;
  }
  return out;
}

TEST_CASE("plan and its formats name the other repositories and the adopted runs") {
  const std::vector<RayJob> observed = {
      Job("train", RayJobStatus::kRunning, kOldRepo),
      Job("b1", RayJobStatus::kRunning, kTheirRepo),
      Job("b2", RayJobStatus::kSucceeded, "git@github.com:team-b/jobs.git"),
      Job("c1", RayJobStatus::kRunning, "https://github.com/team-c/jobs"),
  };
  const DesiredState desired = Desired({Spec("train")});
  const Plan plan = PlanActions(desired, observed, {}, PolicyWithPrevious());
  REQUIRE(Describe(plan).empty());

  const std::string team_b =
      "Warning: instance ray-gitops on this cluster is also used by https://github.com/team-b/jobs "
      "(2 jobs); give each repository its own --instance";
  const std::string team_c =
      "Warning: instance ray-gitops on this cluster is also used by https://github.com/team-c/jobs "
      "(1 job); give each repository its own --instance";
  const std::string adopting =
      "Note: adopting 1 run recorded under git@old.example.com:team-a/jobs.git (--previous-repo)";
  CHECK(OwnershipNotices(plan) == std::vector<std::string>{team_b, team_c, adopting});

  const PlanView view{&plan, &desired, nullptr, "c0ffee", {}};
  SECTION("text") {
    const std::string text = FormatPlanText(view);
    CHECK_THAT(text, Catch::Contains("\n" + team_b + "\n" + team_c + "\n" + adopting + "\n"));
  }
  SECTION("markdown") {
    const std::string md = FormatPlanMarkdown(view);
    // Shown as escaped text: the addresses are not links, the '@' mentions no one.
    CHECK_THAT(
        md, Catch::Contains("> " + EscapeMarkdownText(team_b) + "\n\n> " +
                            EscapeMarkdownText(team_c) + "\n\n> " + EscapeMarkdownText(adopting)));
    CHECK_THAT(md, Catch::Contains("used by https&#8203;://github.com/team-b/jobs (2 jobs)"));
  }
  SECTION("json") {
    const std::string json = Compact(FormatPlanJson(view));
    CHECK_THAT(json, Catch::Contains(R"("foreign":[{"jobs":2,"message":")" + team_b.substr(9) +
                                     R"(","repo":")" + kTheirRepo + R"("},)"));
    CHECK_THAT(json, Catch::Contains(R"("repo":"https://github.com/team-c/jobs"}])"));
    CHECK_THAT(json, Catch::Contains(R"("adopted_previous":[{"repo":")" + std::string(kOldRepo) +
                                     R"(","runs":1}])"));
  }
  SECTION("several adopted runs, and a named instance") {
    PlanPolicy policy = PolicyWithPrevious();
    policy.owner.instance = "shared";
    std::vector<RayJob> named;
    for (RayJob job : observed) {
      job.metadata[std::string(kMetaManagedBy)] = "shared";
      named.push_back(job);
    }
    named.push_back(Job("eval", RayJobStatus::kSucceeded, kOldRepo));
    named.back().metadata[std::string(kMetaManagedBy)] = "shared";
    const Plan p = PlanActions(desired, named, {}, policy);
    const std::vector<std::string> notices = OwnershipNotices(p);
    REQUIRE(notices.size() == 3);
    CHECK(notices[0].starts_with("Warning: instance shared on this cluster is also used by "));
    CHECK(notices[2] ==
          "Note: adopting 2 runs recorded under git@old.example.com:team-a/jobs.git "
          "(--previous-repo)");
  }
  SECTION("no notices when every run is ours") {
    const Plan quiet = PlanActions(desired, {Job("train", RayJobStatus::kRunning, kOurRepo)}, {},
                                   PolicyWithPrevious());
    CHECK(OwnershipNotices(quiet).empty());
    const PlanView quiet_view{&quiet, &desired, nullptr, "c0ffee", {}};
    CHECK_THAT(FormatPlanText(quiet_view), !Catch::Contains("Warning:"));
    CHECK_THAT(FormatPlanMarkdown(quiet_view), !Catch::Contains("(--previous-repo)"));
    const std::string json = Compact(FormatPlanJson(quiet_view));
    CHECK_THAT(json, Catch::Contains(R"("foreign":[])"));
    CHECK_THAT(json, Catch::Contains(R"("adopted_previous":[])"));
  }
}

TEST_CASE("after the instance joins the hash, a run submitted before it is kept, not restarted") {
  JobSpec spec = Spec("train");
  spec.document = Value::Object{{"workload", Value("custom")}, {"entrypoint", Value("true")}};
  spec.spec_hash = ComputeSpecHash(spec.document);
  const std::string before = spec.spec_hash;
  BindSpecToInstance(spec, "team-a");
  REQUIRE(spec.spec_hash != before);

  PlanPolicy p = Policy();
  p.owner.instance = "team-a";
  RayJob old = Job("train", RayJobStatus::kRunning, kOurRepo, before);
  old.metadata[std::string(kMetaManagedBy)] = "team-a";
  Plan plan = PlanActions(Desired({spec}), {old}, {}, p);
  CHECK(Describe(plan).empty());
  const JobPlan* jp = plan.FindJob("train");
  REQUIRE(jp != nullptr);
  CHECK(jp->phase == Phase::kRunning);
  CHECK(jp->submission_id == old.submission_id);

  // Once it has failed, its retry takes the id with the instance in.
  spec.retries = 1;
  old.status = RayJobStatus::kFailed;
  old.end_time_ms = 2000;
  Plan retry = PlanActions(Desired({spec}), {old}, {}, p);
  CHECK(Describe(retry) == "submit train-" + spec.spec_hash + "-r1;");
}

}  // namespace
}  // namespace rg::core
