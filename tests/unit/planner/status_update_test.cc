// Step 6's records: whose ledger they are in (instance and cluster).

#include "reconciler/core/status_update.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/ownership.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/render.h"

namespace rg::core {
namespace {

using core::Phase;

core::JobPlan Planned(const std::string& name, Phase phase, const std::string& submission_id = "",
                      const std::string& message = "") {
  core::JobPlan jp;
  jp.name = name;
  jp.spec_path = "jobs/" + name + ".yaml";
  jp.phase = phase;
  jp.submission_id = submission_id;
  jp.message = message;
  return jp;
}

// A run of job `name` submitted by the instance "ray-gitops", as Ray lists it.
core::RayJob OurRun(const std::string& name, const std::string& submission_id) {
  core::RayJob run;
  run.type = "SUBMISSION";
  run.submission_id = submission_id;
  run.metadata = {{std::string(core::kMetaManagedBy), "ray-gitops"},
                  {std::string(core::kMetaName), name},
                  {std::string(core::kMetaSpecHash), "aaaaaaaaaa"},
                  {std::string(core::kMetaRepo), "https://git.example/team-a/jobs"}};
  return run;
}

struct Inputs {
  core::DesiredState desired;
  core::Plan plan;
  core::Ledger ledger;
  StatusInputs in;

  Inputs() {
    desired.cluster = core::RayConfig{};
    desired.cluster->address = "http://10.0.0.1:8265";
    plan.jobs = {Planned("a", Phase::kRunning)};
    in.desired = &desired;
    in.plan = &plan;
    in.ledger = &ledger;
    in.owner.instance = "team-b";
    in.ray_address = "https://user:secret@ray.example:8265";
  }
};

TEST_CASE("records name their instance and the cluster the ledger was read for",
          "[status_update]") {
  Inputs x;
  SECTION("the Ray address in use, without credentials, when cluster.yaml has no name") {
    const auto update = BuildStatusUpdate(x.in);
    REQUIRE(update.records.count("a") == 1);
    CHECK(update.records.at("a").instance == "team-b");
    CHECK(update.records.at("a").ray_cluster == "https://ray.example:8265");
  }
  SECTION("cluster.yaml's name") {
    x.desired.cluster->name = "prod";
    CHECK(BuildStatusUpdate(x.in).records.at("a").ray_cluster == "prod");
  }
  SECTION("an explicit ray_cluster") {
    x.desired.cluster->name = "prod";
    x.in.ray_cluster = "given";
    CHECK(BuildStatusUpdate(x.in).records.at("a").ray_cluster == "given");
  }
}

TEST_CASE("an ownerless ledger record is stamped, which makes a one-time commit",
          "[status_update]") {
  Inputs x;
  core::StatusRecord legacy;
  legacy.name = "a";
  legacy.spec_path = "jobs/a.yaml";
  legacy.phase = Phase::kRunning;
  x.ledger["a"] = legacy;
  const auto update = BuildStatusUpdate(x.in);
  const auto diff = DiffAgainstLedger(update, x.ledger);
  REQUIRE(diff.changes.count("a") == 1);
  REQUIRE(diff.transitions.size() == 1);
  CHECK(diff.transitions[0] ==
        "a: Running, now in the ledger of team-b on https://ray.example:8265");

  // Once stamped, the same pass again changes nothing.
  x.ledger["a"] = *diff.changes.at("a");
  CHECK(DiffAgainstLedger(BuildStatusUpdate(x.in), x.ledger).changes.empty());
}

TEST_CASE("a diff by names only gives the same names, lines and items without copying records",
          "[status_update]") {
  Inputs x;
  x.plan.jobs = {Planned("a", Phase::kRunning), Planned("b", Phase::kRunning),
                 Planned("c", Phase::kRunning)};
  const auto first = BuildStatusUpdate(x.in);
  x.ledger["b"] = first.records.at("b");  // b unchanged; a and c new
  const auto update = BuildStatusUpdate(x.in);
  const StatusDiff copied = DiffAgainstLedger(update, x.ledger);
  const StatusDiff named = DiffAgainstLedger(update, x.ledger, DiffRecords::kNamesOnly);
  CHECK(copied.changed == std::vector<std::string>{"a", "c"});
  CHECK(named.changed == copied.changed);
  CHECK(named.changes.empty());
  REQUIRE(copied.changes.size() == 2);
  CHECK(copied.changes.at("c").has_value());
  CHECK(named.transitions == copied.transitions);
  CHECK(named.subject_items == copied.subject_items);
  CHECK(named.transitions.size() == 2);
}

TEST_CASE("a Conflict over an id held by a run not ours records nothing of that run",
          "[status_update]") {
  Inputs x;
  core::JobPlan jp = Planned("a", Phase::kConflict, "my-pinned-run",
                             "submission id my-pinned-run is taken by a job not managed by team-b");
  x.plan.jobs = {jp};
  core::RayJob held;
  held.type = "SUBMISSION";
  held.submission_id = "my-pinned-run";
  held.status = core::RayJobStatus::kRunning;
  held.message = "Job is currently running.";
  held.job_id = "02000000";
  held.start_time_ms = 1700000000000;
  SECTION("a job submitted by hand") {}
  SECTION("another instance's run") {
    held.metadata = {{std::string(core::kMetaManagedBy), "team-a"},
                     {std::string(core::kMetaName), "a"}};
  }
  SECTION("another repository's run of this instance") {
    x.in.owner.repo = core::RepoIdentity("https://git.example/team-b/jobs");
    held.metadata = {{std::string(core::kMetaManagedBy), "team-b"},
                     {std::string(core::kMetaName), "a"},
                     {std::string(core::kMetaSpecHash), "aaaaaaaaaa"},
                     {std::string(core::kMetaRepo), "https://git.example/team-a/jobs"}};
  }
  x.in.ray_jobs.emplace(held.submission_id, &held);
  const auto update = BuildStatusUpdate(x.in);
  REQUIRE(update.records.count("a") == 1);
  const core::StatusRecord& rec = update.records.at("a");
  CHECK(rec.phase == Phase::kConflict);
  CHECK(rec.message == jp.message);
  CHECK(rec.status == core::RayJobStatus::kUnknown);
  CHECK_FALSE(rec.job_id.has_value());
  CHECK_FALSE(rec.start_time_ms.has_value());
  CHECK(rec.attempts.empty());
}

TEST_CASE("dashboard links never carry credentials", "[status_update]") {
  CHECK(DashboardUrl("http://user:secret@ray.example:8265/", "a-1") ==
        "http://ray.example:8265/#/jobs/a-1");
  CHECK(DashboardUrl("http://ray:8265", "").empty());
}

TEST_CASE("a record's spec_commit is the commit its run was submitted from", "[status_update]") {
  Inputs x;
  core::JobPlan jp = Planned("a", Phase::kRunning, "a-0123456789");
  jp.attempt = 1;
  x.plan.jobs = {jp};
  x.in.owner.instance = "ray-gitops";
  x.in.spec_commit = "cccccccccccccccccccccccccccccccccccccccc";
  core::RayJob run = OurRun("a", jp.submission_id);
  run.status = core::RayJobStatus::kRunning;
  run.metadata.insert_or_assign(core::kMetaCommit, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  SECTION("the run's gitops.commit label, not the pass's commit") {
    x.in.ray_jobs.emplace(run.submission_id, &run);
    CHECK(BuildStatusUpdate(x.in).records.at("a").spec_commit == run.Label(core::kMetaCommit));
  }
  SECTION("the ledger's for the same run when Ray has not got it listed") {
    core::StatusRecord old;
    old.name = "a";
    old.submission_id = jp.submission_id;
    old.spec_commit = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    x.ledger["a"] = old;
    CHECK(BuildStatusUpdate(x.in).records.at("a").spec_commit == old.spec_commit);
  }
  SECTION("the pass's commit for a run still to come") {
    core::StatusRecord old;
    old.name = "a";
    old.submission_id = "a-older-run";
    old.spec_commit = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    x.ledger["a"] = old;
    CHECK(BuildStatusUpdate(x.in).records.at("a").spec_commit == x.in.spec_commit);
  }
}

TEST_CASE("dashboard links start with the dashboard URL when one is given", "[status_update]") {
  Inputs x;
  x.plan.jobs = {Planned("a", Phase::kRunning, "a-0123456789")};
  CHECK(BuildStatusUpdate(x.in).records.at("a").dashboard_url ==
        "https://ray.example:8265/#/jobs/a-0123456789");
  x.in.dashboard_url = "https://ray.example.com/dashboard";
  CHECK(BuildStatusUpdate(x.in).records.at("a").dashboard_url ==
        "https://ray.example.com/dashboard/#/jobs/a-0123456789");
}

TEST_CASE("records built from the ledger let it go and are what the two steps give",
          "[status_update]") {
  Inputs x;
  Redactor secrets;
  secrets.Add("hunter2-secret");
  // d twice, as an invalid spec and a valid one may share a name: the last row is its record.
  x.plan.jobs = {Planned("a", Phase::kStopped, "", "stopped by hunter2-secret"),
                 Planned("b", Phase::kRunning), Planned("c", Phase::kRunning),
                 Planned("d", Phase::kSuspended, "", "first"),
                 Planned("d", Phase::kStopped, "", "last")};
  StatusUpdate settled = BuildStatusUpdate(x.in);
  for (auto& [name, record] : settled.records) RedactRecord(record, secrets);
  x.ledger["a"] = settled.records.at("a");  // unchanged once redacted
  x.ledger["b"] = settled.records.at("b");
  x.ledger["b"].phase = Phase::kPending;  // b changed
  x.ledger["c"] = settled.records.at("c");
  x.ledger["c"].phase = Phase::kPending;    // c changed, but frozen
  x.ledger["e"] = settled.records.at("b");  // not planned
  x.ledger["e"].name = "e";

  StatusUpdate expected = BuildStatusUpdate(x.in);
  for (auto& [name, record] : expected.records) RedactRecord(record, secrets);
  StatusUpdate unfrozen = expected;
  unfrozen.records.erase("c");
  const StatusDiff expected_diff = DiffAgainstLedger(unfrozen, x.ledger, DiffRecords::kNamesOnly);
  REQUIRE(expected_diff.changed == std::vector<std::string>{"b", "d"});  // d is new

  Ledger ledger = x.ledger;
  x.in.ledger = nullptr;  // not read
  StatusUpdate update;
  const StatusDiff diff = BuildStatusUpdateFromLedger(
      x.in, ledger, secrets, [](std::string_view name) { return name == "c"; }, update);
  CHECK(diff.changed == expected_diff.changed);
  CHECK(diff.transitions == expected_diff.transitions);
  CHECK(diff.subject_items == expected_diff.subject_items);
  CHECK(diff.changes.empty());
  REQUIRE(update.records.size() == 4);
  CHECK(update.records == expected.records);
  CHECK(update.records.at("a").message == "stopped by <redacted>");
  CHECK(update.records.at("d").message == "last");
  // What is left of the ledger: the job not planned and the frozen one.
  CHECK(ledger.size() == 2);
  CHECK(ledger.contains("c"));
  CHECK(ledger.contains("e"));
}

}  // namespace
}  // namespace rg::core

namespace rg::core {
namespace {

TEST_CASE(
    "a scheduled job's record keeps the attempts of its latest 20 slots and its latest "
    "skipped slots",
    "[status_update]") {
  core::DesiredState desired;
  desired.cluster = core::RayConfig{};
  core::JobSpec spec;
  spec.name = "a";
  spec.path = "jobs/a.yaml";
  spec.spec_hash = "aaaaaaaaaa";
  spec.mutable_lifecycle().schedule.emplace();
  desired.jobs = {spec};
  core::StatusRecord old;
  old.name = "a";
  old.spec_path = "jobs/a.yaml";
  old.spec_hash = "aaaaaaaaaa";
  for (int minute = 0; minute < 30; ++minute) {
    core::AttemptRecord a;
    a.submission_id =
        "a-aaaaaaaaaa-2026112812" + std::string(minute < 10 ? "0" : "") + std::to_string(minute);
    a.spec_hash = "aaaaaaaaaa";
    a.status = minute == 3 ? RayJobStatus::kRunning : RayJobStatus::kSucceeded;
    a.phase = minute == 3 ? Phase::kRunning : Phase::kSucceeded;
    old.attempts.push_back(a);
  }
  for (int i = 0; i < 12; ++i) old.skipped_slots.push_back({int64_t{i} * 60'000, "missed"});
  old.submission_id = old.attempts.back().submission_id;
  core::Ledger ledger = {{"a", old}};
  core::Plan plan;
  core::JobPlan jp;
  jp.name = "a";
  jp.spec_path = "jobs/a.yaml";
  jp.phase = Phase::kSucceeded;
  jp.submission_id = old.submission_id;
  jp.notes.mutable_get().skipped_slots = {
      {int64_t{100} * 60'000, "concurrency forbid: x was still active"},
      {int64_t{11} * 60'000, "missed"}};  // already known: not added twice
  plan.jobs = {jp};
  StatusInputs in;
  in.desired = &desired;
  in.plan = &plan;
  in.ledger = &ledger;
  in.ray_jobs_complete = false;  // Ray's list unread: the running attempt is not Lost
  const StatusUpdate update = BuildStatusUpdate(in);
  const core::StatusRecord& rec = update.records.at("a");
  // Slots 10 to 29, and slot 3, whose run is still active.
  REQUIRE(rec.attempts.size() == 21);
  CHECK(rec.attempts.front().submission_id == "a-aaaaaaaaaa-202611281203");
  CHECK(rec.attempts[1].submission_id == "a-aaaaaaaaaa-202611281210");
  CHECK(rec.attempts.back().submission_id == "a-aaaaaaaaaa-202611281229");
  REQUIRE(rec.skipped_slots.size() == kKeptSkippedSlots);
  CHECK(rec.skipped_slots.front().slot_ms == int64_t{3} * 60'000);
  CHECK(rec.skipped_slots.back().slot_ms == int64_t{100} * 60'000);
  CHECK(rec.skipped_slots.back().reason == "concurrency forbid: x was still active");
  CHECK(MeaningfulChange(old, rec));
}

TEST_CASE("a run this pass submitted takes the phase Ray already reports for it",
          "[status_update]") {
  Inputs x;
  core::JobPlan jp = Planned("a", Phase::kPending, "a-0123456789", "new job");
  x.plan.jobs = {jp};
  x.in.owner.instance = "ray-gitops";
  core::ActionOutcome submitted;
  submitted.action.kind = core::ActionKind::kSubmit;
  submitted.action.name = "a";
  submitted.action.submission_id = jp.submission_id;
  submitted.ok = true;
  x.in.outcomes = {submitted};
  core::RayJob run = OurRun("a", jp.submission_id);
  auto phase_of = [&](core::RayJobStatus status) {
    run.status = status;
    x.in.ray_jobs.clear();
    x.in.ray_jobs.emplace(run.submission_id, &run);
    const StatusUpdate update = BuildStatusUpdate(x.in);
    const StatusDiff diff = DiffAgainstLedger(update, x.ledger);
    const core::StatusRecord& rec = update.records.at("a");
    REQUIRE(rec.attempts.size() == 1);
    // The job, its latest attempt and the commit message tell one story.
    CHECK(rec.phase == rec.attempts[0].phase);
    REQUIRE(diff.transitions.size() == 1);
    CHECK(diff.transitions[0] ==
          "a: new -> " + std::string(PhaseName(rec.phase)) + " (a-0123456789)");
    return rec.phase;
  };
  CHECK(phase_of(core::RayJobStatus::kPending) == Phase::kPending);
  CHECK(phase_of(core::RayJobStatus::kRunning) == Phase::kRunning);
  CHECK(phase_of(core::RayJobStatus::kSucceeded) == Phase::kSucceeded);
  SECTION("not listed again after the submit: Pending, as submitted") {
    x.in.ray_jobs.clear();
    const StatusUpdate update = BuildStatusUpdate(x.in);
    const core::StatusRecord& rec = update.records.at("a");
    CHECK(rec.phase == Phase::kPending);
    CHECK(rec.status == core::RayJobStatus::kPending);
  }
}

}  // namespace
}  // namespace rg::core
