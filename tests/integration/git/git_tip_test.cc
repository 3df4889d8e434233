// The tip check before stops on real repositories (docs/reconcile.md, "Stale views"): RemoteTip
// asks the remote (one ls-remote, no fetch), ChangesAtTip fetches and compares the desired state
// of two commits by tree ids: the cluster file, the spec files of the jobs folder, the code
// folders of the pass's specs; anything else moving is no change.

#include <git2.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_workspace.h"
#include "tests/support/git_test_repo.h"

namespace rg {
namespace {

using adapters::GitDesiredStateOptions;
using adapters::GitDesiredStateSource;
using adapters::GitWorkspace;
using adapters::GitWorkspaceOptions;
using Paths = std::vector<std::string>;

constexpr const char* kClusterFile = "address: http://127.0.0.1:8265\n";

std::string Spec(const std::string& command, const std::string& extra = "") {
  return "workload: custom\nentrypoint: " + command + "\n" + extra;
}

// A remote with cluster.yaml, two specs (one that ships a code folder, unless the whole
// repository is the jobs folder), other files, and a daemon's source over its own clone.
struct TipRepo : testing::TestRemote {
  std::shared_ptr<GitWorkspace> workspace;
  std::unique_ptr<GitDesiredStateSource> source;
  ports::DesiredSnapshot snapshot;  // the pass's view: the first push

  explicit TipRepo(GitDesiredStateOptions options = {}) {
    person->Write("cluster.yaml", kClusterFile);
    person->Write("jobs/a.yaml", Spec("sleep 1", options.jobs_dir.empty() ? "" : "code: src\n"));
    person->Write("jobs/b.yaml", Spec("sleep 2"));
    person->Write("src/train.py", "print('a')\n");
    person->Write("tools/other.py", "print('b')\n");
    person->Write("README.md", "hello\n");
    person->CommitAndPush("main", "initial");
    GitWorkspaceOptions ws;
    ws.repo = remote;
    ws.cache_dir = tmp.Sub("cache");
    auto opened = GitWorkspace::Open(ws);
    if (!opened) FAIL(opened.error().ToString());
    workspace = *opened;
    source = std::make_unique<GitDesiredStateSource>(workspace, std::move(options));
    auto loaded = source->Load("main");
    if (!loaded) FAIL(loaded.error().ToString());
    snapshot = std::move(*loaded);
    REQUIRE(snapshot.ref == "refs/heads/main");
    REQUIRE(snapshot.state.jobs.size() == 2);
  }

  std::string Push(const std::string& path, const std::string& text) {
    person->Write(path, text);
    return person->CommitAndPush("main", "change " + path);
  }

  Paths Changed() {
    core::Result<ports::TipChanges> tip = source->ChangesAtTip(snapshot);
    if (!tip) FAIL(tip.error().ToString());
    CHECK(tip->commit == testing::BranchTip(remote, "main"));
    return tip->changed;
  }
};

void TagOnRemote(const std::string& remote, const std::string& name, const std::string& commit,
                 bool annotated) {
  git_libgit2_init();
  git_repository* repo = nullptr;
  REQUIRE(git_repository_open(&repo, remote.c_str()) == 0);
  git_oid oid;
  REQUIRE(git_oid_fromstr(&oid, commit.c_str()) == 0);
  git_object* target = nullptr;
  REQUIRE(git_object_lookup(&target, repo, &oid, GIT_OBJECT_COMMIT) == 0);
  git_oid tag;
  if (annotated) {
    git_signature* who = nullptr;
    REQUIRE(git_signature_now(&who, "Person", "person@example.com") == 0);
    REQUIRE(git_tag_create(&tag, repo, name.c_str(), target, who, "release", 1) == 0);
    git_signature_free(who);
  } else {
    REQUIRE(git_tag_create_lightweight(&tag, repo, name.c_str(), target, 1) == 0);
  }
  git_object_free(target);
  git_repository_free(repo);
  git_libgit2_shutdown();
}

TEST_CASE("RemoteTip asks the remote for the branch's tip without fetching", "[git][tip]") {
  TipRepo repo;
  const int fetches = repo.workspace->fetches();
  auto same = repo.source->RemoteTip(repo.snapshot.ref);
  REQUIRE(same.ok());
  CHECK(*same == repo.snapshot.commit);

  const std::string pushed = repo.Push("README.md", "moved on\n");
  auto moved = repo.source->RemoteTip(repo.snapshot.ref);
  REQUIRE(moved.ok());
  CHECK(*moved == pushed);
  CHECK(repo.workspace->fetches() == fetches);  // nothing fetched: the clone is where it was
  auto local = repo.source->Read(repo.snapshot.commit);
  REQUIRE(local.ok());

  SECTION("a branch deleted on the remote is kNotFound") {
    repo.person->Write("x.txt", "x\n");
    repo.person->Commit("feature", "feature", "main");
    repo.person->Push("feature");
    auto feature = repo.source->Load("feature");
    REQUIRE(feature.ok());
    repo.person->DeleteRemoteBranch("feature");
    auto gone = repo.source->RemoteTip(feature->ref);
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.error().IsNotFound());
  }
  SECTION("a commit id and a revision are no refs: nothing can move under them") {
    for (const std::string& ref : {repo.snapshot.commit, std::string("main~1")}) {
      auto none = repo.source->RemoteTip(ref);
      REQUIRE(none.ok());
      CHECK_FALSE(none->has_value());
    }
  }
  SECTION("a tag names its commit, an annotated one too") {
    const bool annotated = GENERATE(false, true);
    TagOnRemote(repo.remote, "v1", repo.snapshot.commit, annotated);
    auto tag = repo.source->RemoteTip("refs/tags/v1");
    REQUIRE(tag.ok());
    CHECK(*tag == repo.snapshot.commit);
  }
}

TEST_CASE("A repository read in place has no remote to ask", "[git][tip]") {
  TipRepo repo;
  auto in_place = GitWorkspace::OpenInPlace(repo.remote);
  REQUIRE(in_place.ok());
  GitDesiredStateSource source(*in_place, {});
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  auto none = source.RemoteTip(snapshot->ref);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  none = source.RemoteTip("refs/heads/main");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("An unreachable remote fails RemoteTip as kTransient, like a fetch", "[git][tip]") {
  TipRepo repo;
  GitWorkspaceOptions options;
  options.repo = "http://127.0.0.1:1/nothing.git";
  options.cache_dir = repo.tmp.Sub("cache-unreachable");
  auto ws = GitWorkspace::Open(options);
  REQUIRE(ws.ok());
  GitDesiredStateSource source(*ws, {});
  auto tip = source.RemoteTip("refs/heads/main");
  REQUIRE_FALSE(tip.ok());
  CHECK(tip.error().IsTransient());
  CHECK_THAT(tip.error().message(), Catch::Contains("cannot list the refs of"));
}

TEST_CASE("ChangesAtTip names what of the desired state moved, and nothing else", "[git][tip]") {
  TipRepo repo;
  SECTION("the tip has not moved") { CHECK(repo.Changed().empty()); }
  SECTION("files no pass reads: a README, a note in the jobs folder, a hidden folder there") {
    repo.person->Write("README.md", "more\n");
    repo.person->Write("jobs/notes.txt", "not a spec\n");
    repo.person->Write("jobs/.drafts/c.yaml", Spec("sleep 3"));
    repo.person->Write("tools/other.py", "print('c')\n");  // no spec ships this folder
    repo.person->CommitAndPush("main", "docs");
    CHECK(repo.Changed().empty());
  }
  SECTION("a spec edited, one added, one removed") {
    repo.person->Write("jobs/b.yaml", Spec("sleep 22"));
    repo.person->Write("jobs/team/c.yml", Spec("sleep 3"));
    repo.person->CommitAndPush("main", "specs");
    CHECK(repo.Changed() == Paths{"jobs/b.yaml", "jobs/team/c.yml"});
    repo.person->Remove("jobs/b.yaml");
    repo.person->CommitAndPush("main", "removed");
    CHECK(repo.Changed() == Paths{"jobs/b.yaml", "jobs/team/c.yml"});
  }
  SECTION("the cluster file") {
    repo.Push("cluster.yaml", std::string(kClusterFile) + "shared_root: /x\n");
    CHECK(repo.Changed() == Paths{"cluster.yaml"});
  }
  SECTION("a code folder a spec ships") {
    repo.Push("src/train.py", "print('z')\n");
    CHECK(repo.Changed() == Paths{"src"});
  }
  SECTION("a link among the specs: more than spec files changed in the jobs folder") {
    repo.person->WriteSymlink("jobs/link.yaml", "../README.md");
    repo.person->CommitAndPush("main", "link");
    CHECK(repo.Changed() == Paths{"jobs"});
  }
  SECTION("the jobs folder removed") {
    repo.person->Remove("jobs/a.yaml");
    repo.person->Remove("jobs/b.yaml");
    repo.person->CommitAndPush("main", "no jobs");
    CHECK(repo.Changed() == Paths{"jobs"});
  }
  SECTION("a revert to the pass's own content is no change") {
    repo.Push("jobs/b.yaml", Spec("sleep 22"));
    repo.Push("jobs/b.yaml", Spec("sleep 2"));
    CHECK(repo.Changed().empty());
  }
}

TEST_CASE("Same-branch mode: status commits to the watched branch change no desired state",
          "[git][tip]") {
  GitDesiredStateOptions options;
  options.excluded_dir = "status";
  // The jobs folder beside the status folder, or the whole repository around it.
  options.jobs_dir = GENERATE(std::string("jobs"), std::string(""));
  TipRepo repo(options);
  repo.Push("status/a.yaml", "name: a\nphase: Running\n");
  CHECK(repo.Changed().empty());
  repo.Push("jobs/b.yaml", Spec("sleep 22"));
  CHECK(repo.Changed() == Paths{"jobs/b.yaml"});
}

TEST_CASE("code_ref: the code folder is compared at the ref as it resolves after the fetch",
          "[git][tip]") {
  testing::TestRemote remote;
  remote.person->Write("cluster.yaml", kClusterFile);
  remote.person->Write("src/train.py", "print('a')\n");
  const std::string v1 = remote.person->CommitAndPush("main", "code A");
  TagOnRemote(remote.remote, "v1", v1, false);
  remote.person->Write("jobs/pinned.yaml", Spec("python train.py", "code: src\ncode_ref: v1\n"));
  remote.person->Write("src/train.py", "print('b')\n");
  remote.person->CommitAndPush("main", "pinned to v1, code B on main");
  GitWorkspaceOptions ws;
  ws.repo = remote.remote;
  ws.cache_dir = remote.tmp.Sub("cache");
  auto opened = GitWorkspace::Open(ws);
  REQUIRE(opened.ok());
  GitDesiredStateSource source(*opened, {});
  auto snapshot = source.Load("main");
  REQUIRE(snapshot.ok());
  REQUIRE(snapshot->state.jobs.size() == 1);

  remote.person->Write("src/train.py", "print('c')\n");  // main's code moves; v1 does not
  remote.person->CommitAndPush("main", "code C on main");
  auto tip = source.ChangesAtTip(*snapshot);
  REQUIRE(tip.ok());
  CHECK(tip->changed.empty());

  TagOnRemote(remote.remote, "v1", testing::BranchTip(remote.remote, "main"), false);  // moved
  tip = source.ChangesAtTip(*snapshot);
  REQUIRE(tip.ok());
  CHECK(tip->changed == Paths{"src"});
}

}  // namespace
}  // namespace rg
