// `after` and ${runs.<name>.dir} as the loader reads them: each file on its own, then across
// files (unknown names, cycles), and the identity BindDesiredState gives a pipeline.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/unit/spec/diagnostic_messages.h"

namespace rg::spec {
namespace {

const SourceFile kCluster{"cluster.yaml", "address: http://127.0.0.1:8265\nshared_root: /shared\n"};

const core::InvalidSpec* FindInvalid(const core::DesiredState& state, const std::string& path) {
  for (const auto& bad : state.invalid) {
    if (bad.path == path) return &bad;
  }
  return nullptr;
}

const core::JobSpec* FindJob(const core::DesiredState& state, const std::string& name) {
  for (const auto& job : state.jobs) {
    if (job.name == name) return &job;
  }
  return nullptr;
}

std::vector<std::string> ErrorsOf(const std::string& text) {
  return Messages(LoadJobSpec(text, "jobs/t.yaml", "jobs").diagnostics);
}

TEST_CASE("after is read as a list of job names with their positions") {
  const Parsed<core::JobSpec> spec = LoadJobSpec(
      "workload: custom\nentrypoint: echo\nafter: [sft-qwen, data.prep]\n", "jobs/t.yaml", "jobs");
  REQUIRE(spec.value);
  CHECK(spec.value->pipeline().after == std::vector<std::string>{"sft-qwen", "data.prep"});
  REQUIRE(spec.value->pipeline().after_pos.size() == 2);
  CHECK(spec.value->pipeline().after_pos[1] == core::SourcePos{3, 19});
  // `after` is identity: the same spec without it has another hash.
  const Parsed<core::JobSpec> alone =
      LoadJobSpec("workload: custom\nentrypoint: echo\n", "jobs/t.yaml", "jobs");
  CHECK(alone.value->spec_hash != spec.value->spec_hash);
}

TEST_CASE("a bad after or ${runs...} is an error at its line and column") {
  CHECK(ErrorsOf("workload: custom\nentrypoint: echo\nafter: sft\n") ==
        std::vector<std::string>{"jobs/t.yaml:3:8: error: after must be a list of job names, "
                                 "e.g. after: [sft-qwen] (got \"sft\")"});
  CHECK(ErrorsOf("workload: custom\nentrypoint: echo\nafter: [Sft]\n") ==
        std::vector<std::string>{"jobs/t.yaml:3:9: error: after[0] must be a job name (got "
                                 "\"Sft\")"});
  CHECK(ErrorsOf("workload: custom\nentrypoint: echo\nafter: [a, a]\n") ==
        std::vector<std::string>{"jobs/t.yaml:3:12: error: after[1]: a is listed twice"});
  CHECK(ErrorsOf("workload: sft\nmodel_id: ${runs.a.dir}/checkpoints\n") ==
        std::vector<std::string>{"jobs/t.yaml:2:11: error: model_id: ${runs.a.dir} names a, "
                                 "which is not listed in after (add after: [a])"});
  CHECK(ErrorsOf("workload: custom\nentrypoint: cp ${runs.a.out} x\nafter: [a]\n") ==
        std::vector<std::string>{"jobs/t.yaml:2:13: error: entrypoint: ${runs.a.out} is not a "
                                 "variable ray-gitops knows (write ${runs.<job name>.dir})"});
  CHECK(ErrorsOf("workload: custom\nentrypoint: echo\nenv_vars:\n  M: ${runs.b.dir\n"
                 "after: [a]\n") ==
        std::vector<std::string>{"jobs/t.yaml:4:6: error: env_vars.M: ${runs.b.dir is not a "
                                 "variable ray-gitops knows (write ${runs.<job name>.dir})"});
  CHECK(ErrorsOf("workload: ppo\noverrides:\n  - x=${runs.q.dir}\nafter: [a]\n") ==
        std::vector<std::string>{"jobs/t.yaml:3:5: error: overrides[0]: ${runs.q.dir} names q, "
                                 "which is not listed in after (add after: [q])"});
  // Annotations are not rendered: anything goes there.
  CHECK(ErrorsOf("workload: custom\nentrypoint: echo\nannotations:\n  n: ${runs.x.dir}\n").empty());
  // A name with dots is a name.
  CHECK(ErrorsOf("workload: sft\nmodel_id: ${runs.sft-qwen2.5.dir}/c\nafter: [sft-qwen2.5]\n")
            .empty());
}

TEST_CASE("an unknown name in after is an error of the downstream spec, an invalid one is not") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/b.yaml", "workload: custom\nentrypoint: echo\nafter: [a, nope]\n"},
                 {"jobs/a.yaml", "workload: custom\nentrypoint: echo\n"},
                 {"jobs/c.yaml", "workload: custom\nentrypoint: echo\nafter: [broken]\n"},
                 {"jobs/broken.yaml", "workload: custom\n"}});
  const core::InvalidSpec* b = FindInvalid(state, "jobs/b.yaml");
  REQUIRE(b != nullptr);
  CHECK(Messages(b->diagnostics) ==
        std::vector<std::string>{
            "jobs/b.yaml:3:12: error: after: there is no job named nope in this repository"});
  // c waits on a job whose spec is broken: c is valid (and frozen by the planner).
  CHECK(FindJob(state, "c") != nullptr);
  CHECK(FindJob(state, "a") != nullptr);
}

TEST_CASE("after may not name a scheduled job, but a scheduled job may have after") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/nightly.yaml",
                  "workload: custom\nentrypoint: echo\nschedule: \"0 2 * * *\"\nafter: [prep]\n"},
                 {"jobs/prep.yaml", "workload: custom\nentrypoint: echo\n"},
                 {"jobs/report.yaml", "workload: custom\nentrypoint: echo\nafter: [nightly]\n"}});
  const core::InvalidSpec* report = FindInvalid(state, "jobs/report.yaml");
  REQUIRE(report != nullptr);
  CHECK(Messages(report->diagnostics) ==
        std::vector<std::string>{"jobs/report.yaml:3:9: error: after: nightly "
                                 "(jobs/nightly.yaml) is a scheduled job, which has a run per "
                                 "slot, not one current run to wait for"});
  CHECK(FindJob(state, "nightly") != nullptr);
}

TEST_CASE("a cycle is an error of every spec on it, naming its files") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/a.yaml", "workload: custom\nentrypoint: echo\nafter: [b]\n"},
                 {"jobs/b.yaml", "workload: custom\nentrypoint: echo\nafter: [x, a]\n"},
                 {"jobs/x.yaml", "workload: custom\nentrypoint: echo\n"},
                 {"jobs/down.yaml", "workload: custom\nentrypoint: echo\nafter: [a]\n"},
                 {"jobs/self.yaml", "workload: custom\nentrypoint: echo\nafter: [self]\n"}});
  const core::InvalidSpec* a = FindInvalid(state, "jobs/a.yaml");
  const core::InvalidSpec* b = FindInvalid(state, "jobs/b.yaml");
  const core::InvalidSpec* self = FindInvalid(state, "jobs/self.yaml");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  REQUIRE(self != nullptr);
  CHECK(Messages(a->diagnostics) ==
        std::vector<std::string>{"jobs/a.yaml:3:9: error: after: a -> b -> a is a cycle "
                                 "(jobs/a.yaml, jobs/b.yaml); a job cannot wait for itself"});
  CHECK(Messages(b->diagnostics) ==
        std::vector<std::string>{"jobs/b.yaml:3:12: error: after: a -> b -> a is a cycle "
                                 "(jobs/a.yaml, jobs/b.yaml); a job cannot wait for itself"});
  CHECK(Messages(self->diagnostics) ==
        std::vector<std::string>{"jobs/self.yaml:3:9: error: after: self -> self is a cycle "
                                 "(jobs/self.yaml); a job cannot wait for itself"});
  // Off the cycle: x is fine, and down waits on an invalid job (valid itself).
  CHECK(FindJob(state, "x") != nullptr);
  CHECK(FindJob(state, "down") != nullptr);
}

TEST_CASE("a spec with other errors has its after checked too, in the same run") {
  // b's entrypoint_num_cpus is wrong, and b is on a cycle with a; c lacks its entrypoint and
  // names no job. One load reports all of it: a user mends everything after one validate.
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/a.yaml", "workload: custom\nentrypoint: echo\nafter: [b]\n"},
                 {"jobs/b.yaml",
                  "workload: custom\nentrypoint: echo\nafter: [a]\nentrypoint_num_cpus: lots\n"},
                 {"jobs/c.yaml", "workload: custom\nafter: [nope, a]\n"}});
  CHECK(state.jobs.empty());
  const core::InvalidSpec* a = FindInvalid(state, "jobs/a.yaml");
  const core::InvalidSpec* b = FindInvalid(state, "jobs/b.yaml");
  const core::InvalidSpec* c = FindInvalid(state, "jobs/c.yaml");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  REQUIRE(c != nullptr);
  const std::string cycle =
      "after: a -> b -> a is a cycle (jobs/a.yaml, jobs/b.yaml); a job cannot wait for itself";
  CHECK(Messages(a->diagnostics) == std::vector<std::string>{"jobs/a.yaml:3:9: error: " + cycle});
  CHECK(Messages(b->diagnostics) ==
        std::vector<std::string>{"jobs/b.yaml:3:9: error: " + cycle,
                                 "jobs/b.yaml:4:22: error: entrypoint_num_cpus must be a number "
                                 ">= 0 (got \"lots\")"});
  CHECK(Messages(c->diagnostics) ==
        std::vector<std::string>{
            "jobs/c.yaml:1:1: error: missing required key \"entrypoint\" (workload custom needs "
            "it)",
            "jobs/c.yaml:2:9: error: after: there is no job named nope in this repository"});
}

TEST_CASE("a long cycle is spelled out in order") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/p.yaml", "workload: custom\nentrypoint: echo\nafter: [q]\n"},
                 {"jobs/q.yaml", "workload: custom\nentrypoint: echo\nafter: [r]\n"},
                 {"jobs/r.yaml", "workload: custom\nentrypoint: echo\nafter: [p]\n"}});
  CHECK(state.jobs.empty());
  const core::InvalidSpec* r = FindInvalid(state, "jobs/r.yaml");
  REQUIRE(r != nullptr);
  CHECK(Messages(r->diagnostics) ==
        std::vector<std::string>{"jobs/r.yaml:3:9: error: after: p -> q -> r -> p is a cycle "
                                 "(jobs/p.yaml, jobs/q.yaml, jobs/r.yaml); a job cannot wait "
                                 "for itself"});
}

TEST_CASE("${runs...} needs a shared_root, like ${shared_root}") {
  const core::DesiredState state =
      LoadDesiredState(SourceFile{"cluster.yaml", "address: http://127.0.0.1:8265\n"},
                       {{"jobs/a.yaml", "workload: custom\nentrypoint: echo\n"},
                        {"jobs/b.yaml", "workload: sft\nmodel_id: ${runs.a.dir}/m\nafter: [a]\n"}});
  const core::InvalidSpec* b = FindInvalid(state, "jobs/b.yaml");
  REQUIRE(b != nullptr);
  CHECK(Messages(b->diagnostics) ==
        std::vector<std::string>{"jobs/b.yaml:2:11: error: ${runs.<name>.dir} is used but "
                                 "cluster.yaml sets no shared_root, which run directories are "
                                 "under"});
}

core::DesiredState Chain(const std::string& a_entrypoint) {
  core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/a.yaml", "workload: custom\nentrypoint: " + a_entrypoint + "\n"},
                 {"jobs/b.yaml", "workload: custom\nentrypoint: echo b\nafter: [a]\n"},
                 {"jobs/c.yaml", "workload: custom\nentrypoint: echo c\nafter: [b]\n"},
                 {"jobs/d.yaml", "workload: custom\nentrypoint: echo d\n"}});
  REQUIRE(state.invalid.empty());
  return state;
}

TEST_CASE("a change upstream gives every job downstream a new hash, and nothing else") {
  core::DesiredState one = Chain("echo a");
  core::DesiredState two = Chain("echo a2");
  const core::DesiredState before_bind = one;
  core::BindDesiredState(one, "ray-gitops");
  core::BindDesiredState(two, "ray-gitops");
  CHECK(FindJob(one, "a")->spec_hash != FindJob(two, "a")->spec_hash);
  CHECK(FindJob(one, "b")->spec_hash != FindJob(two, "b")->spec_hash);
  CHECK(FindJob(one, "c")->spec_hash != FindJob(two, "c")->spec_hash);
  CHECK(FindJob(one, "d")->spec_hash == FindJob(two, "d")->spec_hash);
  // Binding is what makes the difference: b's own document did not change.
  CHECK(FindJob(before_bind, "b")->spec_hash != FindJob(one, "b")->spec_hash);
  CHECK(FindJob(one, "b")->spec_hash ==
        core::ComputeSpecHash(FindJob(one, "b")->document, "ray-gitops",
                              {{"a", FindJob(one, "a")->spec_hash}}));
  CHECK(FindJob(one, "b")->legacy_spec_hashes.empty());
  // Binding twice changes nothing.
  core::DesiredState again = one;
  core::BindDesiredState(again, "ray-gitops");
  CHECK(FindJob(again, "c")->spec_hash == FindJob(one, "c")->spec_hash);
  // Another instance: other ids all the way down.
  core::DesiredState other = Chain("echo a");
  core::BindDesiredState(other, "team-b");
  CHECK(FindJob(other, "c")->spec_hash != FindJob(one, "c")->spec_hash);
  // A policy field upstream changes nothing downstream.
  core::DesiredState policy = LoadDesiredState(
      kCluster, {{"jobs/a.yaml", "workload: custom\nentrypoint: echo a\nretries: 3\n"},
                 {"jobs/b.yaml", "workload: custom\nentrypoint: echo b\nafter: [a]\n"},
                 {"jobs/c.yaml", "workload: custom\nentrypoint: echo c\nafter: [b]\n"}});
  core::BindDesiredState(policy, "ray-gitops");
  CHECK(FindJob(policy, "c")->spec_hash == FindJob(one, "c")->spec_hash);
}

TEST_CASE("the planning order puts every upstream first") {
  const core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/a.yaml", "workload: custom\nentrypoint: echo\nafter: [m, z]\n"},
                 {"jobs/m.yaml", "workload: custom\nentrypoint: echo\nafter: [z]\n"},
                 {"jobs/q.yaml", "workload: custom\nentrypoint: echo\n"},
                 {"jobs/z.yaml", "workload: custom\nentrypoint: echo\n"}});
  std::vector<std::string> names;
  for (size_t i : core::PipelineOrder(state)) names.push_back(state.jobs[i].name);
  CHECK(names == std::vector<std::string>{"q", "z", "m", "a"});
}

TEST_CASE("${runs.<name>.dir} of a run without a recorded folder is its attempt's folder") {
  core::DesiredState state = LoadDesiredState(
      kCluster,
      {{"jobs/sft.yaml", "workload: sft\nmodel_id: m\n"},
       {"jobs/grpo.yaml",
        "workload: grpo\nmodel_id: ${runs.sft.dir}/checkpoints/global_step_5/huggingface\n"
        "overrides:\n  - trainer.resume_from_path=${runs.sft.dir}\nenv_vars:\n"
        "  FROM: ${runs.sft.dir} and ${runs.sft.dir}\nafter: [sft]\n"}});
  REQUIRE(state.invalid.empty());
  const core::JobSpec& grpo = *FindJob(state, "grpo");
  // A run submitted before run folders existed: its successful attempt's folder.
  auto resolved =
      core::ResolveRunsVariables(grpo, {{"sft", {"sft-0123456789-r1", ""}}}, *state.cluster);
  REQUIRE(resolved.ok());
  CHECK(*resolved->trainer().model_id ==
        "/shared/jobs/sft-0123456789-r1/checkpoints/global_step_5/huggingface");
  CHECK(resolved->trainer().overrides ==
        std::vector<std::string>{"trainer.resume_from_path=/shared/jobs/sft-0123456789-r1"});
  CHECK(resolved->env_vars.at("FROM") ==
        "/shared/jobs/sft-0123456789-r1 and /shared/jobs/sft-0123456789-r1");
  // The identity is the spec's, never the resolved text's.
  CHECK(resolved->spec_hash == grpo.spec_hash);
  // No run for it: an error naming the variable.
  auto missing = core::ResolveRunsVariables(grpo, {}, *state.cluster);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message() == "${runs.sft.dir}: sft has no successful current run");
}

TEST_CASE("${runs.<name>.dir} resolves to the recorded run folder, not the attempt's") {
  core::DesiredState state = LoadDesiredState(
      kCluster, {{"jobs/sft.yaml", "workload: sft\nmodel_id: m\n"},
                 {"jobs/grpo.yaml",
                  "workload: grpo\nmodel_id: ${runs.sft.dir}/checkpoints/global_step_5\n"
                  "after: [sft]\n"}});
  REQUIRE(state.invalid.empty());
  const core::JobSpec& grpo = *FindJob(state, "grpo");
  auto resolved = core::ResolveRunsVariables(
      grpo, {{"sft", {"sft-0123456789-r1", "/shared/jobs/sft-0123456789"}}}, *state.cluster);
  REQUIRE(resolved.ok());
  CHECK(*resolved->trainer().model_id == "/shared/jobs/sft-0123456789/checkpoints/global_step_5");
  // The folder as recorded, even when cluster.yaml moved shared_root since: the checkpoints are
  // where the run wrote them.
  core::RayConfig moved = *state.cluster;
  moved.shared_root = "/elsewhere";
  auto same = core::ResolveRunsVariables(
      grpo, {{"sft", {"sft-0123456789-r1", "/shared/jobs/sft-0123456789"}}}, moved);
  REQUIRE(same.ok());
  CHECK(*same->trainer().model_id == "/shared/jobs/sft-0123456789/checkpoints/global_step_5");
}

TEST_CASE("an upstream's run folder comes from its record, else from its run id") {
  core::RayConfig cluster;
  cluster.shared_root = "/shared";
  core::StatusRecord rec;
  rec.submission_id = "sft-0123456789-r1";
  rec.attempt = 1;
  rec.run_dir = "/shared/jobs/sft-0123456789";
  CHECK(core::UpstreamRunOf("sft-0123456789-r1", 1, &rec, cluster) ==
        core::UpstreamRun{"sft-0123456789-r1", "/shared/jobs/sft-0123456789"});
  // Recorded before run folders existed: no folder, so the attempt's.
  rec.run_dir.clear();
  CHECK(core::UpstreamRunOf("sft-0123456789-r1", 1, &rec, cluster) ==
        core::UpstreamRun{"sft-0123456789-r1", ""});
  // No record of this run (none at all, or one of another run): the run folder of its run id.
  CHECK(core::UpstreamRunOf("sft-0123456789-r2", 2, &rec, cluster) ==
        core::UpstreamRun{"sft-0123456789-r2", "/shared/jobs/sft-0123456789"});
  CHECK(core::UpstreamRunOf("sft-0123456789-r2", 2, nullptr, cluster) ==
        core::UpstreamRun{"sft-0123456789-r2", "/shared/jobs/sft-0123456789"});
  CHECK(core::UpstreamRunOf("sft-0123456789", 0, nullptr, cluster) ==
        core::UpstreamRun{"sft-0123456789", "/shared/jobs/sft-0123456789"});
  CHECK(core::UpstreamRunOf("sft-0123456789", 0, nullptr, core::RayConfig{}) ==
        core::UpstreamRun{"sft-0123456789", ""});
}

TEST_CASE("RunIdOf strips only the attempt's own retry suffix") {
  CHECK(core::RunIdOf("a-0123456789-r2", 2) == "a-0123456789");
  CHECK(core::RunIdOf("a-0123456789-202501020300-r1", 1) == "a-0123456789-202501020300");
  CHECK(core::RunIdOf("a-0123456789", 0) == "a-0123456789");
  CHECK(core::RunIdOf("pinned-r1", 0) == "pinned-r1");
  CHECK(core::RunIdOf("a-0123456789-r12", 2) == "a-0123456789-r12");
  CHECK(core::RunIdOf("-r1", 1) == "-r1");
}

}  // namespace
}  // namespace rg::spec
