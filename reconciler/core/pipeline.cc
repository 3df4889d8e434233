#include "reconciler/core/pipeline.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "reconciler/core/identity.h"

namespace rg::core {

std::vector<RunsVariableUse> FindRunsVariables(std::string_view text) {
  std::vector<RunsVariableUse> uses;
  size_t at = 0;
  while ((at = text.find(kRunsVariablePrefix, at)) != std::string_view::npos) {
    RunsVariableUse use;
    use.begin = at;
    const size_t inner = at + kRunsVariablePrefix.size();
    const size_t close = text.find('}', inner);
    if (close == std::string_view::npos) {
      use.end = text.size();
      use.name = std::string(text.substr(inner));
    } else {
      use.end = close + 1;
      std::string_view body = text.substr(inner, close - inner);  // "<name>.dir"
      constexpr std::string_view kDir = ".dir";
      if (body.size() > kDir.size() && body.ends_with(kDir)) {
        body.remove_suffix(kDir.size());
        use.well_formed = IsValidJobName(body);
      }
      use.name = std::string(body);
    }
    at = use.end;
    uses.push_back(std::move(use));
  }
  return uses;
}

std::string RunDirectory(std::string_view shared_root, std::string_view id) {
  std::string dir(shared_root);
  if (dir.empty() || dir.back() != '/') dir += '/';
  dir += "jobs/";
  dir += id;
  return dir;
}

std::string CheckpointDirectory(std::string_view shared_root, std::string_view run_id) {
  return RunDirectory(shared_root, run_id) + "/checkpoints";
}

std::string RunIdOf(std::string_view submission_id, int attempt) {
  if (attempt < 1) return std::string(submission_id);
  const std::string suffix = "-r" + std::to_string(attempt);
  if (submission_id.size() > suffix.size() && submission_id.ends_with(suffix)) {
    submission_id.remove_suffix(suffix.size());
  }
  return std::string(submission_id);
}

UpstreamRun UpstreamRunOf(std::string_view submission_id, int attempt, const StatusRecord* record,
                          const RayConfig& cluster) {
  UpstreamRun run;
  run.submission_id = std::string(submission_id);
  if (record != nullptr && record->submission_id == submission_id) {
    run.run_dir = record->run_dir;
  } else if (cluster.shared_root) {
    run.run_dir = RunDirectory(*cluster.shared_root, RunIdOf(submission_id, attempt));
  }
  return run;
}

namespace {

// Resolves the variables of one string; the first problem goes to `error`.
class RunsResolver {
 public:
  RunsResolver(const UpstreamRuns& runs, const RayConfig& cluster)
      : runs_(runs), cluster_(cluster) {}

  void Resolve(std::string& text) {
    if (text.find(kRunsVariablePrefix) == std::string::npos) return;
    std::string out;
    size_t done = 0;
    for (const RunsVariableUse& use : FindRunsVariables(text)) {
      out.append(text, done, use.begin - done);
      done = use.end;
      auto run = runs_.find(use.name);
      if (!use.well_formed || run == runs_.end()) {
        Fail(text.substr(use.begin, use.end - use.begin),
             use.well_formed ? use.name + " has no successful current run"
                             : "not ${runs.<name>.dir}");
        continue;
      }
      if (!run->second.run_dir.empty()) {
        out += run->second.run_dir;
        continue;
      }
      if (!cluster_.shared_root) {
        Fail(text.substr(use.begin, use.end - use.begin),
             cluster_.path + " sets no shared_root, which run directories are under");
        continue;
      }
      out += RunDirectory(*cluster_.shared_root, run->second.submission_id);
    }
    out += std::string_view(text).substr(done);
    text = std::move(out);
  }

  void Resolve(std::optional<std::string>& text) {
    if (text) Resolve(*text);
  }

  void Resolve(Value& value) {
    if (value.is_string()) {
      std::string text = value.as_string();
      Resolve(text);
      value = Value(std::move(text));
    } else if (value.is_array()) {
      for (Value& item : value.as_array()) Resolve(item);
    } else if (value.is_object()) {
      for (auto& [key, item] : value.as_object()) Resolve(item);
    }
  }

  const std::optional<Error>& error() const { return error_; }

 private:
  void Fail(std::string_view variable, const std::string& why) {
    if (!error_) error_ = Error::InvalidInput(std::string(variable) + ": " + why);
  }

  const UpstreamRuns& runs_;
  const RayConfig& cluster_;
  std::optional<Error> error_;
};

}  // namespace

Result<JobSpec> ResolveRunsVariables(const JobSpec& spec, const UpstreamRuns& runs,
                                     const RayConfig& cluster) {
  JobSpec out = spec;
  RunsResolver resolver(runs, cluster);
  if (!out.trainer_fields.empty()) {
    TrainerFields& t = out.mutable_trainer();
    resolver.Resolve(t.code_path);
    resolver.Resolve(t.model_id);
    resolver.Resolve(t.train_file);
    resolver.Resolve(t.val_file);
    for (std::string& o : t.overrides) resolver.Resolve(o);
  }
  resolver.Resolve(out.entrypoint);
  resolver.Resolve(out.runtime_env);
  StringMap env_vars;
  for (const auto& [key, value] : out.env_vars) {
    std::string text(value);
    resolver.Resolve(text);
    env_vars.insert_or_assign(std::string(key), std::move(text));
  }
  out.env_vars = std::move(env_vars);
  if (resolver.error()) return *resolver.error();
  return out;
}

namespace {

// Name -> index into state.jobs (the last spec of a name, as the planner finds it).
std::unordered_map<std::string_view, size_t> IndexByName(const DesiredState& state) {
  std::unordered_map<std::string_view, size_t> by_name;
  by_name.reserve(state.jobs.size());
  for (size_t i = 0; i < state.jobs.size(); ++i) by_name.insert_or_assign(state.jobs[i].name, i);
  return by_name;
}

}  // namespace

bool HasPipelines(const DesiredState& state) {
  return std::ranges::any_of(state.jobs,
                             [](const JobSpec& s) { return !s.pipeline().after.empty(); });
}

std::vector<size_t> PipelineOrder(const DesiredState& state) {
  std::vector<size_t> order;
  order.reserve(state.jobs.size());
  std::vector<size_t> waiting;
  for (size_t i = 0; i < state.jobs.size(); ++i) {
    (state.jobs[i].pipeline().after.empty() ? order : waiting).push_back(i);
  }
  if (waiting.empty()) return order;
  const std::unordered_map<std::string_view, size_t> by_name = IndexByName(state);
  // 0: not placed, 1: being placed (on the walk's path), 2: placed.
  std::vector<int> mark(state.jobs.size(), 0);
  for (size_t i : order) mark[i] = 2;
  // Depth-first, upstreams first; iterative, so a chain of 50,000 jobs needs no deep stack.
  for (size_t start : waiting) {
    if (mark[start] != 0) continue;
    std::vector<std::pair<size_t, size_t>> stack = {{start, 0}};  // (job, next upstream)
    mark[start] = 1;
    while (!stack.empty()) {
      auto& [job, next] = stack.back();
      const std::vector<std::string>& after = state.jobs[job].pipeline().after;
      if (next < after.size()) {
        auto up = by_name.find(after[next++]);
        if (up != by_name.end() && mark[up->second] == 0) {
          mark[up->second] = 1;
          stack.emplace_back(up->second, 0);
        }
        continue;
      }
      mark[job] = 2;
      order.push_back(job);
      stack.pop_back();
    }
  }
  return order;
}

void BindDesiredState(DesiredState& state, std::string_view instance) {
  for (JobSpec& spec : state.jobs) {
    BindSpecToInstance(spec, instance);
    // The code's tree is part of what the run is (docs/code-in-the-repository.md). No earlier
    // rule knew `code`: a legacy hash would not follow the code.
    if (spec.has_code() && !spec.code().tree_id.empty() && spec.document.is_object()) {
      spec.spec_hash =
          ComputeSpecHash(spec.document, instance, IdentityExtras{nullptr, spec.code().tree_id});
      spec.legacy_spec_hashes.clear();
    }
  }
  if (!HasPipelines(state)) return;
  const std::unordered_map<std::string_view, size_t> by_name = IndexByName(state);
  // A job whose hash could not take in every upstream's: its downstream cannot either.
  std::vector<bool> unbound(state.jobs.size(), false);
  for (size_t i : PipelineOrder(state)) {
    JobSpec& spec = state.jobs[i];
    const std::vector<std::string>& after = spec.pipeline().after;
    if (after.empty()) continue;
    std::map<std::string, std::string, std::less<>> upstream;
    for (const std::string& name : after) {
      auto up = by_name.find(name);
      if (up == by_name.end() || unbound[up->second] || up->second == i) {
        unbound[i] = true;
        break;
      }
      upstream.emplace(name, state.jobs[up->second].spec_hash);
    }
    if (unbound[i] || !spec.document.is_object()) continue;
    spec.spec_hash =
        ComputeSpecHash(spec.document, instance, IdentityExtras{&upstream, spec.code().tree_id});
    spec.legacy_spec_hashes.clear();
  }
}

}  // namespace rg::core
