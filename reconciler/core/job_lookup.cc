#include "reconciler/core/job_lookup.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "reconciler/core/identity.h"
#include "reconciler/core/ownership.h"
#include "reconciler/core/render.h"

namespace rg::core {
namespace {

// The runs of one name that share an owner and a repository.
struct RunGroup {
  std::string instance;  // gitops.managed-by; empty for one-off runs of `submit`
  std::string repo;      // gitops.repo as recorded; empty when the runs have none
  std::vector<const RayJob*> runs;

  const RayJob& Latest() const {
    return **std::max_element(runs.begin(), runs.end(),
                              [](const RayJob* a, const RayJob* b) { return IsLaterRun(*b, *a); });
  }
};

// A run named `name` that ray-gitops submitted: a daemon's or a one-off run.
bool IsNamedRun(const RayJob& job, std::string_view name) {
  if (job.Label(kMetaName) != name) return false;
  return !job.Label(kMetaManagedBy).empty() || job.Label(kMetaSubmittedBy) == kSubmittedByCli;
}

// Every run named `name`, grouped by instance and repository identity, in that order.
std::vector<RunGroup> GroupRuns(const std::vector<RayJob>& jobs, std::string_view name) {
  std::map<std::pair<std::string, std::string>, RunGroup> groups;
  for (const RayJob& job : jobs) {
    if (!IsNamedRun(job, name)) continue;
    std::string instance = job.Label(kMetaManagedBy);
    std::string repo = job.Label(kMetaRepo);
    RunGroup& group = groups[{instance, RepoIdentity(repo)}];
    if (group.runs.empty()) {
      group.instance = std::move(instance);
      group.repo = std::move(repo);
    }
    group.runs.push_back(&job);
  }
  std::vector<RunGroup> out;
  out.reserve(groups.size());
  for (auto& entry : groups) out.push_back(std::move(entry.second));
  return out;
}

std::string OwnerText(const RunGroup& group) {
  std::string text =
      group.instance.empty() ? "one-off runs of submit" : "instance " + group.instance;
  if (!group.repo.empty()) text += ", repository " + group.repo;
  return text;
}

std::string NoJobMessage(const JobQuery& query, const std::vector<RunGroup>& left_out) {
  std::string text = "no job named " + query.arg;
  if (!query.instance.empty()) text += " of instance " + query.instance;
  text += " or with id " + query.arg + " in " + query.where;
  if (left_out.empty()) return text;
  text += " (jobs named " + query.arg + " belong to ";
  for (size_t i = 0; i < left_out.size(); ++i) {
    text += (i == 0 ? "" : "; ") + OwnerText(left_out[i]);
  }
  return text + ")";
}

std::string AmbiguousMessage(const JobQuery& query, const std::vector<RunGroup>& groups) {
  std::string text = "several jobs are named " + query.arg + " in " + query.where +
                     "; give the submission id of the one you mean";
  const bool several_instances = std::any_of(groups.begin(), groups.end(), [&](const RunGroup& g) {
    return g.instance != groups.front().instance;
  });
  if (query.instance.empty() && several_instances) text += ", or choose one with --instance";
  text += ":";
  for (const RunGroup& group : groups) {
    const RayJob& latest = group.Latest();
    text += "\n  " + latest.submission_id + " (" + std::string(RayJobStatusName(latest.status)) +
            "): " + OwnerText(group);
  }
  return text;
}

// The group a name means: the only one, else the default instance's when it has exactly one.
const RunGroup* ChooseGroup(const std::vector<RunGroup>& groups, const JobQuery& query) {
  if (groups.size() == 1) return groups.data();
  if (!query.instance.empty()) return nullptr;
  const RunGroup* chosen = nullptr;
  for (const RunGroup& group : groups) {
    if (group.instance != kDefaultInstance) continue;
    if (chosen != nullptr) return nullptr;
    chosen = &group;
  }
  return chosen;
}

FoundJob LatestOf(const RunGroup& group) {
  FoundJob found;
  found.job = group.Latest();
  found.by_name = true;
  std::vector<const RayJob*> others;
  for (const RayJob* run : group.runs) {
    if (run->submission_id != found.job.submission_id && IsActive(run->status)) {
      others.push_back(run);
    }
  }
  std::sort(others.begin(), others.end(),
            [](const RayJob* a, const RayJob* b) { return IsLaterRun(*b, *a); });
  for (const RayJob* run : others) found.other_active.push_back(run->submission_id);
  return found;
}

}  // namespace

bool IsLaterRun(const RayJob& a, const RayJob& b) {
  constexpr int64_t kNotStarted = std::numeric_limits<int64_t>::max();
  const int64_t start_a = a.start_time_ms.value_or(kNotStarted);
  const int64_t start_b = b.start_time_ms.value_or(kNotStarted);
  if (start_a != start_b) return start_a > start_b;
  const int attempt_a = AttemptLabel(a).value_or(-1);
  const int attempt_b = AttemptLabel(b).value_or(-1);
  if (attempt_a != attempt_b) return attempt_a > attempt_b;
  return a.submission_id > b.submission_id;
}

Result<FoundJob> FindJob(const std::vector<RayJob>& jobs, const JobQuery& query) {
  for (const RayJob& job : jobs) {
    if (!query.arg.empty() && (job.submission_id == query.arg || job.job_id == query.arg)) {
      FoundJob found;
      found.job = job;
      return found;
    }
  }
  std::vector<RunGroup> named = GroupRuns(jobs, query.arg);
  std::vector<RunGroup> groups;
  std::vector<RunGroup> left_out;
  for (RunGroup& group : named) {
    const bool wanted = query.instance.empty() || group.instance == query.instance;
    (wanted ? groups : left_out).push_back(std::move(group));
  }
  if (groups.empty()) return Error::NotFound(NoJobMessage(query, left_out));
  const RunGroup* chosen = ChooseGroup(groups, query);
  if (chosen == nullptr) return Error::InvalidInput(AmbiguousMessage(query, groups));
  return LatestOf(*chosen);
}

}  // namespace rg::core
