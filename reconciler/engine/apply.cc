#include "reconciler/engine/apply.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

#include "reconciler/core/render.h"
#include "reconciler/engine/submit_attempt.h"

namespace rg::engine {
namespace {

// Serialises a shared sink across the submit workers.
class LockedSink : public ports::ArtifactSink {
 public:
  explicit LockedSink(ports::ArtifactSink* inner) : inner_(inner) {}
  core::Status WriteSubmission(const ports::SubmissionRecord& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    return inner_->WriteSubmission(record);
  }
  core::Status WriteDriverLog(std::string_view submission_id, std::string_view log,
                              size_t skipped_bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    return inner_->WriteDriverLog(submission_id, log, skipped_bytes);
  }

 private:
  ports::ArtifactSink* inner_;
  std::mutex mu_;
};

// The specs are sorted by path (core::DesiredState): a binary search, not a scan per submit.
const core::JobSpec* FindSpec(const core::DesiredState& state, const std::string& path) {
  auto it = std::lower_bound(
      state.jobs.begin(), state.jobs.end(), path,
      [](const core::JobSpec& spec, const std::string& p) { return spec.path < p; });
  return it != state.jobs.end() && it->path == path ? &*it : nullptr;
}

std::string TextOf(const ports::DesiredSnapshot& snapshot, const ApplyOptions& options,
                   const std::string& path) {
  if (options.spec_texts != nullptr) {
    if (auto it = options.spec_texts->find(path); it != options.spec_texts->end()) {
      return it->second;
    }
  }
  auto it = snapshot.texts.find(path);
  return it == snapshot.texts.end() ? std::string() : it->second;
}

ActionOutcome DoStop(ports::JobServer& server, const core::Action& action) {
  ActionOutcome out;
  out.action = action;
  core::Result<bool> stopped = server.Stop(action.submission_id);
  if (stopped.ok()) {
    out.ok = true;
    out.stop_sent = *stopped;
  } else if (stopped.error().IsNotFound()) {
    // Gone already: nothing is left running, which is what the stop was for.
    out.ok = true;
  } else {
    out.error = stopped.error();
  }
  return out;
}

ActionOutcome DoSubmit(ports::JobServer& server, ports::ArtifactSink* artifacts,
                       const core::Action& action, const ports::DesiredSnapshot& snapshot,
                       const ApplyOptions& options) {
  ActionOutcome out;
  out.action = action;
  const core::JobSpec* spec = FindSpec(snapshot.state, action.spec_path);
  if (spec == nullptr || !snapshot.state.cluster) {
    out.error = core::Error::Fatal("no valid spec at " + action.spec_path + " to submit");
    return out;
  }
  core::RenderContext context;
  context.instance = options.owner.instance;
  context.attempt = action.attempt;
  context.slot = action.slot;
  context.commit = snapshot.commit;
  context.repo_url = snapshot.repo_url;
  // A job with `after`: its ${runs.<name>.dir} are the directories of the runs the plan found
  // SUCCEEDED (core/pipeline.h).
  if (!action.upstream_runs.empty()) context.upstream_runs = action.upstream_runs;
  if (options.secrets != nullptr) {
    core::Result<const core::SecretValues*> values = options.secrets->ForSubmit(action.name);
    if (!values.ok()) {
      out.error = values.error();
      return out;
    }
    context.secret_values = *values;
  }
  // The code first: a run whose working_dir Ray cannot find fails in its runtime_env setup.
  if (spec->has_code()) {
    core::Status shipped = options.code == nullptr
                               ? core::Status(core::Error::Fatal("no way to upload code was given"))
                               : options.code->Ensure(server, spec->code().tree_id);
    if (!shipped.ok()) {
      out.error = core::Error(shipped.error().kind(),
                              "code " + spec->code().folder + ": " + shipped.error().message());
      return out;
    }
  }
  SubmitArtifactInputs inputs;
  inputs.ray_config_text = TextOf(snapshot, options, snapshot.state.cluster->path);
  inputs.jobspec_text = TextOf(snapshot, options, spec->path);
  inputs.ray_address = options.ray_address;
  core::Result<SubmitAttemptResult> submitted = SubmitAttempt(
      server, artifacts, *spec, *snapshot.state.cluster, context, inputs, &options.owner);
  if (!submitted.ok()) {
    out.error = submitted.error();
    return out;
  }
  out.ok = true;
  out.adopted = submitted->adopted;
  out.artifact_error = submitted->artifact_error;
  if (submitted->submission_id != action.submission_id) {
    // The renderer and the planner derive the id from the same spec; a difference is a bug.
    out.ok = false;
    out.error = core::Error::Fatal("submitted " + submitted->submission_id + " but planned " +
                                   action.submission_id);
  }
  return out;
}

// The outcomes of the actions that started, in plan order.
std::vector<ActionOutcome> Started(std::vector<ActionOutcome> outcomes,
                                   const std::vector<char>& started) {
  std::vector<ActionOutcome> out;
  out.reserve(outcomes.size());
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (started[i] != 0) out.push_back(std::move(outcomes[i]));
  }
  return out;
}

}  // namespace

std::vector<ActionOutcome> ApplyPlan(const core::Plan& plan, const ports::DesiredSnapshot& snapshot,
                                     ports::JobServer& server, const JobServerFactory& factory,
                                     ports::ArtifactSink* artifacts, const ApplyOptions& options) {
  std::vector<ActionOutcome> outcomes(plan.actions.size());
  std::vector<char> started(plan.actions.size(), 0);
  auto stopping = [&options]() { return options.stop_requested && options.stop_requested(); };
  std::vector<size_t> submits;
  for (size_t i = 0; i < plan.actions.size(); ++i) {
    const core::Action& action = plan.actions[i];
    if (action.kind == core::ActionKind::kStop) {
      if (stopping()) break;
      started[i] = 1;
      outcomes[i] = DoStop(server, action);
    } else {
      submits.push_back(i);
    }
  }
  if (submits.empty()) return Started(std::move(outcomes), started);

  std::optional<LockedSink> locked;
  ports::ArtifactSink* sink = nullptr;
  if (artifacts != nullptr) {
    locked.emplace(artifacts);
    sink = &*locked;
  }
  const size_t workers = std::min<size_t>(
      submits.size(), factory ? static_cast<size_t>(std::max(1, options.parallelism)) : 1);
  if (workers <= 1) {
    for (size_t i : submits) {
      if (stopping()) break;
      started[i] = 1;
      outcomes[i] = DoSubmit(server, sink, plan.actions[i], snapshot, options);
    }
    return Started(std::move(outcomes), started);
  }

  std::atomic<size_t> next{0};
  auto work = [&]() {
    std::unique_ptr<ports::JobServer> own = factory();
    for (size_t k = next++; k < submits.size(); k = next++) {
      if (stopping()) break;
      const size_t i = submits[k];
      started[i] = 1;
      if (own == nullptr) {
        outcomes[i].action = plan.actions[i];
        outcomes[i].error = core::Error::Fatal("could not create a Ray client");
        continue;
      }
      outcomes[i] = DoSubmit(*own, sink, plan.actions[i], snapshot, options);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  return Started(std::move(outcomes), started);
}

}  // namespace rg::engine
