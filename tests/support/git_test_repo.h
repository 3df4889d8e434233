#pragma once
// Real Git repositories for tests, made with libgit2 in a temporary directory: a bare
// "remote" and any number of clones that stage files, commit and push, the way a person
// (or another ray-gitops) would. Clones are bare too: commits are built from the staged
// files in memory. Failures throw std::runtime_error, which Catch reports with the message.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/test_files.h"

namespace rg::testing {

// Creates an empty bare repository whose HEAD names refs/heads/<default_branch>.
void InitBareRepository(const std::string& path, const std::string& default_branch = "main");
// The same with a working directory (<path>/.git), like a developer's checkout.
void InitWorkingRepository(const std::string& path, const std::string& default_branch = "main");

class GitTestClone {
 public:
  // Clones (bare) `remote_url` into `path` and fetches every branch as local branches.
  GitTestClone(const std::string& remote_url, const std::string& path);
  // Commits straight into an existing repository (a developer's checkout: its branches, not
  // its working files), with no remote: Fetch and Push are not for this one.
  static std::unique_ptr<GitTestClone> OpenInPlace(const std::string& path);
  ~GitTestClone();
  GitTestClone(const GitTestClone&) = delete;
  GitTestClone& operator=(const GitTestClone&) = delete;

  // Makes local branches equal to the remote's.
  void Fetch();
  // Stages a file for the next Commit (paths relative to the repository root).
  void Write(const std::string& path, const std::string& content);
  // The same for an executable file (mode 100755).
  void WriteExecutable(const std::string& path, const std::string& content);
  // Stages a symlink at `path` pointing at `target`.
  void WriteSymlink(const std::string& path, const std::string& target);
  // Stages a submodule at `path` (a gitlink to `commit_id`; no .gitmodules is written).
  void WriteGitlink(const std::string& path, const std::string& commit_id);
  void Remove(const std::string& path);
  // Commits the staged changes on top of refs/heads/<branch>, or of refs/heads/<from> when
  // <branch> does not exist yet (a root commit when neither does), and returns the commit id.
  // The staged changes are cleared.
  std::string Commit(const std::string& branch, const std::string& message,
                     const std::string& from = "");
  // Pushes refs/heads/<branch>; throws when the remote refuses.
  void Push(const std::string& branch);
  // Deletes refs/heads/<branch> on the remote.
  void DeleteRemoteBranch(const std::string& branch);
  // Commit, then Push.
  std::string CommitAndPush(const std::string& branch, const std::string& message);

 private:
  GitTestClone();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A test's desired-state repository: a bare remote `<name>.git` in a fresh temp dir and a
// person's clone of it (person.git) to write, commit and push with.
struct TestRemote {
  explicit TestRemote(const std::string& name = "remote") : remote(tmp.Sub(name + ".git")) {
    InitBareRepository(remote);
    person = std::make_unique<GitTestClone>(remote, tmp.Sub("person.git"));
  }

  TempDir tmp;
  std::string remote;
  std::unique_ptr<GitTestClone> person;
};

// Read-only views of a repository (the bare remote, usually), opened afresh on each call.
int CountCommits(const std::string& repo_path, const std::string& branch);
std::optional<std::string> ReadFileAt(const std::string& repo_path, const std::string& branch,
                                      const std::string& path);
// Full messages, newest first.
std::vector<std::string> CommitMessages(const std::string& repo_path, const std::string& branch);
// Every path of every blob in the branch's tip tree, sorted.
std::vector<std::string> ListFiles(const std::string& repo_path, const std::string& branch);
std::string BranchTip(const std::string& repo_path, const std::string& branch);

}  // namespace rg::testing
