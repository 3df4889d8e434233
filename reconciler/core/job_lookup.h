#pragma once
// Which job in Ray the argument of `status`, `logs` and `stop` names: a submission id or a
// Ray job id as it is, else the name of a job ray-gitops submitted, meaning that name's
// latest run. Pure: the caller lists the jobs.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/ray_job.h"
#include "reconciler/core/result.h"

namespace rg::core {

// True when `a` is a later run than `b`: the later start time (Ray sets it at submission; a
// job without one counts as the latest), then the higher gitops.attempt, then the greater
// submission id.
bool IsLaterRun(const RayJob& a, const RayJob& b);

struct JobQuery {
  std::string arg;       // what the user typed
  std::string instance;  // --instance; empty: not given
  std::string where;     // "Ray at http://host:8265", for the messages
};

struct FoundJob {
  RayJob job;
  bool by_name = false;  // the argument was a name and `job` is its latest run
  // by_name only: the ids of the name's other runs (same owner and repository) that are
  // still PENDING or RUNNING, oldest first.
  std::vector<std::string> other_active;
};

// The job `query.arg` names among `jobs`:
// 1. a job whose submission_id or job_id equals it, whatever --instance says;
// 2. else the runs named it (gitops.name) of an instance (gitops.managed-by) or of `submit`
//    (gitops.submitted-by: cli); with --instance only that instance's runs. Runs of one
//    owner and one repository (gitops.repo) form a group, and the latest run of the group
//    (IsLaterRun) is the answer. When several groups have the name, the default instance's
//    group wins when it is the only one of that instance; otherwise the answer is an error
//    listing every group's latest run, so that a name never picks another team's job.
// kNotFound: "no job named X or with id X in <where>" (naming the owners of runs with that
// name that --instance left out); kInvalidInput: the name is ambiguous.
Result<FoundJob> FindJob(const std::vector<RayJob>& jobs, const JobQuery& query);

}  // namespace rg::core
