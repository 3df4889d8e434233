// Whose a job is (docs/operations.md): the identity of a repository URL, and how a job's instance
// and repository labels classify it.

#include "reconciler/core/ownership.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/render.h"

namespace rg::core {
namespace {

struct IdentityRow {
  std::string url;
  std::string identity;
};

TEST_CASE("RepoIdentity reduces every spelling of a repository to one identity") {
  const std::vector<IdentityRow> rows = {
      // Credentials and user names are not part of the identity.
      {"https://user:tok@host.example/x", "host.example/x"},
      {"https://tok@host.example/x", "host.example/x"},
      {"ssh://git@host.example/x", "host.example/x"},
      {"git@host.example:org/repo.git", "host.example/org/repo"},
      {"https://u:p@ss@host.example/x", "host.example/x"},
      // The host and the scheme are case-insensitive; the path is not.
      {"https://GitHub.COM/org/repo", "github.com/org/repo"},
      {"HTTPS://github.com/org/repo", "github.com/org/repo"},
      {"git@GitHub.com:org/repo", "github.com/org/repo"},
      {"https://github.com/Org/Repo", "github.com/Org/Repo"},
      // Trailing ".git" and "/", in either order.
      {"https://github.com/org/repo.git", "github.com/org/repo"},
      {"https://github.com/org/repo/", "github.com/org/repo"},
      {"https://github.com/org/repo.git/", "github.com/org/repo"},
      {"https://github.com/org/repo/.git", "github.com/org/repo"},
      {"https://github.com/org/repo//", "github.com/org/repo"},
      {"git@github.com:org/repo.git/", "github.com/org/repo"},
      // A query or fragment is no part of the repository.
      {"https://github.com/org/repo.git?ref=main", "github.com/org/repo"},
      {"https://github.com/org/repo#readme", "github.com/org/repo"},
      // Default ports are left out; other ports are kept.
      {"ssh://git@host.example:22/x", "host.example/x"},
      {"git+ssh://git@host.example:22/x", "host.example/x"},
      {"http://host.example:80/x", "host.example/x"},
      {"https://host.example:443/x", "host.example/x"},
      {"git://host.example:9418/x", "host.example/x"},
      {"ssh://git@host.example:2222/x", "host.example:2222/x"},
      {"https://host.example:8443/x", "host.example:8443/x"},
      {"http://host.example:443/x", "host.example:443/x"},  // 443 is not http's port
      {"https://HOST.example:8443/x", "host.example:8443/x"},
      {"https://[::1]:8443/x", "[::1]:8443/x"},
      {"https://[::1]/x", "[::1]/x"},
      // The scp-like form is ssh: the same repository as its ssh:// and https:// spellings.
      {"git@github.com:org/repo.git", "github.com/org/repo"},
      {"ssh://git@github.com/org/repo.git", "github.com/org/repo"},
      {"https://github.com/org/repo", "github.com/org/repo"},
      {"git://github.com/org/repo", "github.com/org/repo"},
      {"git@github.com:/org/repo", "github.com/org/repo"},
      {"github.com:org/repo", "github.com/org/repo"},
      // An IPv6 address in brackets, in either form.
      {"git@[::1]:org/repo.git", "[::1]/org/repo"},
      {"[2001:DB8::1]:org/repo", "[2001:db8::1]/org/repo"},
      {"ssh://git@[::1]:22/org/repo", "[::1]/org/repo"},
      // A file:// URL or a path is the path, lexically normalised.
      {"file:///srv/repo.git", "/srv/repo"},
      {"/srv/repo.git", "/srv/repo"},
      {"/srv/repo", "/srv/repo"},
      {"/srv/repo/", "/srv/repo"},
      {"/srv/repo/.git", "/srv/repo"},
      {"/srv/repo/.git/", "/srv/repo"},
      {"/srv/./x/../repo", "/srv/repo"},
      {"//srv//repo", "/srv/repo"},
      {"/../srv/repo", "/srv/repo"},
      {"file:///srv/repo/", "/srv/repo"},
      {"file://localhost/srv/repo", "/srv/repo"},
      {"FILE:///srv/repo", "/srv/repo"},
      {"/srv/Repo", "/srv/Repo"},
      {"/srv/a:b", "/srv/a:b"},  // a path that holds a colon is no scp-like URL
      // A relative path stays relative (callers make it absolute first).
      {"./repo", "repo"},
      {"repo/.git", "repo"},
      {"repo[1]", "repo[1]"},
      // Surrounding blanks are ignored; a blank input has no identity.
      {"  https://github.com/org/repo\n", "github.com/org/repo"},
      {"", ""},
      {"   ", ""},
      {"\t\r\n", ""},
  };
  for (const IdentityRow& row : rows) {
    SECTION("'" + row.url + "'") { CHECK(RepoIdentity(row.url) == row.identity); }
  }
}

TEST_CASE("RepoIdentity: the spellings people use for one repository are equal") {
  const std::vector<std::vector<std::string>> same = {
      {"git@github.com:org/repo.git", "ssh://git@github.com/org/repo.git",
       "https://github.com/org/repo", "https://token@GitHub.com:443/org/repo.git/",
       "ssh://git@github.com:22/org/repo", "git://github.com/org/repo.git"},
      {"file:///srv/repo.git", "/srv/repo.git", "/srv/repo/", "/srv/repo/.git", "/srv/./x/../repo",
       "file://localhost/srv/repo"},
      {"git@[::1]:org/repo.git", "ssh://git@[::1]/org/repo", "https://[::1]/org/repo/"},
  };
  for (const auto& group : same) {
    for (const std::string& url : group) {
      CAPTURE(group.front(), url);
      CHECK(RepoIdentity(url) == RepoIdentity(group.front()));
    }
  }
  // ...and distinct repositories stay distinct.
  CHECK(RepoIdentity("https://github.com/org/repo") != RepoIdentity("https://github.com/org/Repo"));
  CHECK(RepoIdentity("https://github.com/org/repo") !=
        RepoIdentity("https://github.com:8443/org/repo"));
  CHECK(RepoIdentity("https://github.com/org/repo") != RepoIdentity("https://gitlab.com/org/repo"));
  CHECK(RepoIdentity("/srv/repo") != RepoIdentity("/srv/repo2"));
}

constexpr const char* kOurUrl = "https://github.com/team-a/jobs.git";

RayJob Labelled(const std::string& instance, const std::string& repo) {
  RayJob job;
  job.type = "SUBMISSION";
  job.submission_id = "train-aaaaaaaaaa";
  job.status = RayJobStatus::kRunning;
  if (!instance.empty()) job.metadata.emplace(kMetaManagedBy, instance);
  if (!repo.empty()) job.metadata.emplace(kMetaRepo, repo);
  job.metadata.emplace(kMetaName, "train");
  job.metadata.emplace(kMetaSpecHash, "aaaaaaaaaa");
  return job;
}

RayJob Without(RayJob job, std::string_view label) {
  job.metadata.erase(std::string(label));
  return job;
}

Ownership Owner() {
  Ownership owner;
  owner.repo = RepoIdentity(kOurUrl);
  return owner;
}

std::string Name(JobOwnership o) {
  switch (o) {
    case JobOwnership::kOurs:
      return "ours";
    case JobOwnership::kOursPrevious:
      return "ours (previous)";
    case JobOwnership::kForeign:
      return "foreign";
    case JobOwnership::kNotOurs:
      return "not ours";
    case JobOwnership::kDisowned:
      return "disowned";
  }
  return "?";
}

struct ClassifyRow {
  std::string title;
  RayJob job;
  Ownership owner;
  JobOwnership expected;
};

TEST_CASE("ClassifyJob: ours only when the instance and the repository are ours") {
  Ownership with_alias = Owner();
  with_alias.aliases.push_back(RepoIdentity("/home/ci/checkout"));
  Ownership with_previous = Owner();
  with_previous.AddPrevious("git@old.example.com:team-a/jobs.git");
  Ownership any_repo = Owner();
  any_repo.repo = "";
  Ownership other_instance = Owner();
  other_instance.instance = "team-a";
  Ownership disowned = Owner();
  disowned.disowned.emplace("train-aaaaaaaaaa", "its entrypoint differs");

  RayJob driver = Labelled("ray-gitops", kOurUrl);
  driver.type = "DRIVER";
  driver.submission_id = "";
  RayJob one_off = Labelled("", kOurUrl);
  one_off.metadata.emplace("gitops.submitted-by", "cli");

  const std::vector<ClassifyRow> rows = {
      {"a driver", driver, Owner(), JobOwnership::kNotOurs},
      {"another instance", Labelled("team-b", kOurUrl), Owner(), JobOwnership::kNotOurs},
      {"the default instance when ours is named", Labelled("ray-gitops", kOurUrl), other_instance,
       JobOwnership::kNotOurs},
      {"a one-off run (no gitops.managed-by)", one_off, Owner(), JobOwnership::kNotOurs},
      {"a job submitted by hand", Labelled("", ""), Owner(), JobOwnership::kNotOurs},
      {"our instance and repository", Labelled("ray-gitops", kOurUrl), Owner(),
       JobOwnership::kOurs},
      {"no gitops.repo label: a job by hand with a stray label", Labelled("ray-gitops", ""),
       Owner(), JobOwnership::kNotOurs},
      {"only gitops.managed-by", Without(Labelled("ray-gitops", ""), kMetaName), Owner(),
       JobOwnership::kNotOurs},
      {"our instance and repository without gitops.spec-hash",
       Without(Labelled("ray-gitops", kOurUrl), kMetaSpecHash), Owner(), JobOwnership::kNotOurs},
      {"no gitops.repo label when ours is unknown", Labelled("ray-gitops", ""), any_repo,
       JobOwnership::kNotOurs},
      {"another repository without gitops.spec-hash",
       Without(Labelled("ray-gitops", "https://github.com/team-b/jobs"), kMetaSpecHash), Owner(),
       JobOwnership::kNotOurs},
      {"our labels, but disowned (not the run we render)", Labelled("ray-gitops", kOurUrl),
       disowned, JobOwnership::kDisowned},
      {"another job of ours when one is disowned",
       [] {
         RayJob job = Labelled("ray-gitops", kOurUrl);
         job.submission_id = "train-bbbbbbbbbb";
         return job;
       }(),
       disowned, JobOwnership::kOurs},
      {"a job by hand under a disowned id stays not ours", Labelled("", ""), disowned,
       JobOwnership::kNotOurs},
      {"our repository spelt another way", Labelled("ray-gitops", "git@github.com:team-a/jobs"),
       Owner(), JobOwnership::kOurs},
      {"our repository with credentials",
       Labelled("ray-gitops", "https://x:tok@GITHUB.com/team-a/jobs/"), Owner(),
       JobOwnership::kOurs},
      {"an alias of our repository", Labelled("ray-gitops", "file:///home/ci/checkout/.git"),
       with_alias, JobOwnership::kOurs},
      {"a --previous-repo URL", Labelled("ray-gitops", "ssh://git@old.example.com/team-a/jobs"),
       with_previous, JobOwnership::kOursPrevious},
      {"our repository when a previous one is also given", Labelled("ray-gitops", kOurUrl),
       with_previous, JobOwnership::kOurs},
      {"another repository", Labelled("ray-gitops", "https://github.com/team-b/jobs"), Owner(),
       JobOwnership::kForeign},
      {"another repository with the same path on another host",
       Labelled("ray-gitops", "https://gitlab.com/team-a/jobs"), Owner(), JobOwnership::kForeign},
      {"the previous repository without --previous-repo",
       Labelled("ray-gitops", "git@old.example.com:team-a/jobs.git"), Owner(),
       JobOwnership::kForeign},
      {"any repository when ours is unknown",
       Labelled("ray-gitops", "https://github.com/team-b/jobs"), any_repo, JobOwnership::kOurs},
      {"another instance when ours is unknown", Labelled("team-b", "https://github.com/b/jobs"),
       any_repo, JobOwnership::kNotOurs},
      {"a named instance of ours", Labelled("team-a", kOurUrl), other_instance,
       JobOwnership::kOurs},
  };
  for (const ClassifyRow& row : rows) {
    SECTION(row.title) {
      const JobOwnership got = ClassifyJob(row.job, row.owner);
      CHECK(Name(got) == Name(row.expected));
      CHECK(IsOurs(got) ==
            (row.expected == JobOwnership::kOurs || row.expected == JobOwnership::kOursPrevious));
    }
  }
}

TEST_CASE("AddPrevious keys by identity and keeps the URL without credentials") {
  Ownership owner;
  owner.AddPrevious("https://user:tok@old.example.com/team-a/jobs.git");
  owner.AddPrevious("https://old.example.com/team-a/jobs");  // the same repository again
  owner.AddPrevious("   ");                                  // nothing
  REQUIRE(owner.previous.size() == 1);
  CHECK(owner.previous.begin()->first == "old.example.com/team-a/jobs");
  CHECK(owner.previous.begin()->second == "https://old.example.com/team-a/jobs.git");
}

TEST_CASE("RecordedRepoOf names the repository without credentials") {
  CHECK(RecordedRepoOf(Labelled("ray-gitops", "https://u:tok@github.com/b/jobs")) ==
        "https://github.com/b/jobs");
  CHECK(RecordedRepoOf(Labelled("ray-gitops", "")) == "an unnamed repository");
}

TEST_CASE("GroupForeignJobs groups the spellings of one repository, sorted, with counts") {
  const std::vector<RayJob> foreign = {
      Labelled("ray-gitops", "https://github.com/team-c/jobs"),
      Labelled("ray-gitops", "https://github.com/team-b/jobs.git"),
      Labelled("ray-gitops", "git@github.com:team-b/jobs"),
      Labelled("ray-gitops", "https://tok@GitHub.com/team-b/jobs/"),
      Labelled("ray-gitops", ""),
  };
  const std::vector<ForeignRepository> groups = GroupForeignJobs(foreign);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].repo == "an unnamed repository");
  CHECK(groups[0].jobs == 1);
  // The URL as first recorded names the group.
  CHECK(groups[1].repo == "https://github.com/team-b/jobs.git");
  CHECK(groups[1].jobs == 3);
  CHECK(groups[2].repo == "https://github.com/team-c/jobs");
  CHECK(groups[2].jobs == 1);
  CHECK(GroupForeignJobs({}).empty());
}

TEST_CASE("ForeignJobsMessage names the other repository and the fix") {
  CHECK(ForeignJobsMessage("ray-gitops", {"https://github.com/team-b/jobs", 3}) ==
        "instance ray-gitops on this cluster is also used by https://github.com/team-b/jobs "
        "(3 jobs); give each repository its own --instance");
  CHECK(ForeignJobsMessage("shared", {"git@github.com:team-b/jobs.git", 1}) ==
        "instance shared on this cluster is also used by git@github.com:team-b/jobs.git "
        "(1 job); give each repository its own --instance");
}

}  // namespace
}  // namespace rg::core
