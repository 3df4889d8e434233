#pragma once
// Whose a job in Ray is (docs/operations.md, "One cluster, several teams"): ours only when its
// gitops.managed-by is our instance, its gitops.repo names our repository and it has a
// gitops.spec-hash. A job of our instance from another repository is foreign: never stopped,
// adopted or recorded, only reported, so two teams on one shared cluster who both kept the
// default instance never stop each other's runs. Labels are a claim, not a proof: a job whose
// labels claim a run of a current spec but that is not that run's render is disowned
// (docs/reconcile.md, "Adoption").

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/ray_job.h"

namespace rg::core {

// The instance name when --instance is not given.
inline constexpr std::string_view kDefaultInstance = "ray-gitops";

// What makes two spellings of one repository equal:
// - a network URL (scheme://, or scp-like [user@]host:path; an IPv6 host stays in brackets,
//   "[::1]") becomes "host[:port]/path": no scheme, user or credentials, the host in lower
//   case, a default port (22 ssh, 80 http, 443 https, 9418 git) left out, no trailing "/" or
//   ".git";
// - a file:// URL or a path becomes the path, lexically normalised, with no trailing "/" or
//   ".git" (so "/srv/repo.git", "/srv/repo/" and "file:///srv/repo.git" are one repository,
//   and so are a checkout and its ".git" folder). A relative path stays relative: callers
//   make it absolute first (core does no I/O).
// Empty for an empty or blank input.
std::string RepoIdentity(std::string_view url);

// Who we are: the instance and the repository (identities as RepoIdentity gives them).
struct Ownership {
  std::string instance = std::string(kDefaultInstance);
  // Our repository. Empty: the caller knows no repository, and runs of any repository of the
  // instance are ours (tests and tools that read every run of an instance).
  std::string repo;
  // Other identities of this same repository (a checkout's own path when its origin gives
  // the identity): runs recorded under them are ours, silently.
  std::vector<std::string> aliases;
  // --previous-repo: identity -> the URL as given (credentials stripped). Runs recorded
  // under it are ours, and `plan` says it adopts them.
  std::map<std::string, std::string, std::less<>> previous;
  // Jobs whose labels say ours but which are not the run ray-gitops renders for the id they
  // hold (a job planted under a predicted id, engine/adoption_check.h): submission id -> what
  // differs, one line that names no secret value. They are never stopped, adopted, recorded
  // or deleted, and a spec whose id one of them holds is a Conflict with that line.
  std::map<std::string, std::string, std::less<>> disowned;

  // Adds a --previous-repo URL.
  void AddPrevious(std::string_view url);
};

enum class JobOwnership {
  kOurs,          // our instance and repository (or an alias)
  kOursPrevious,  // our instance, recorded under a --previous-repo URL
  kForeign,       // our instance, another repository
  // A driver, another instance, a one-off run, a job submitted by hand, and any job without
  // both gitops.repo and gitops.spec-hash, whatever its other labels say.
  kNotOurs,
  kDisowned,  // labelled as ours, but in Ownership::disowned: not the run we render
};

JobOwnership ClassifyJob(const RayJob& job, const Ownership& owner);

inline bool IsOurs(JobOwnership o) {
  return o == JobOwnership::kOurs || o == JobOwnership::kOursPrevious;
}

// Why a spec cannot use `id`: the disowned job that holds it (`what`: what differs, as
// Ownership::disowned keeps it) and how to resolve it.
std::string DisownedMessage(std::string_view id, std::string_view what);

// The repository a job of ours or a foreign job was recorded under (its gitops.repo label),
// or "an unnamed repository".
std::string RecordedRepoOf(const RayJob& job);

// Foreign jobs grouped by repository identity: the URL as first recorded and how many jobs.
struct ForeignRepository {
  std::string repo;  // the gitops.repo label as recorded (credentials stripped)
  int jobs = 0;
};
std::vector<ForeignRepository> GroupForeignJobs(const std::vector<RayJob>& foreign);

// "instance ray-gitops on this cluster is also used by <repo> (3 jobs); give each repository
// its own --instance": the line plan, sync, /readyz, the page and the logs show.
std::string ForeignJobsMessage(std::string_view instance, const ForeignRepository& other);

}  // namespace rg::core
