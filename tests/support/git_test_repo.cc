#include "tests/support/git_test_repo.h"

#include <git2.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace rg::testing {
namespace {

void Init() {
  static const bool initialised = [] {
    git_libgit2_init();
    return true;
  }();
  (void)initialised;
}

void Check(int rc, const std::string& what) {
  if (rc >= 0) return;
  const git_error* e = git_error_last();
  throw std::runtime_error(what + ": " + (e != nullptr ? e->message : std::to_string(rc)));
}

git_repository* Open(const std::string& path) {
  Init();
  git_repository* repo = nullptr;
  Check(git_repository_open(&repo, path.c_str()), "open " + path);
  return repo;
}

// The tip commit of refs/heads/<branch>, or nullptr when the branch does not exist.
git_commit* Tip(git_repository* repo, const std::string& branch) {
  git_oid oid;
  const std::string ref = "refs/heads/" + branch;
  if (git_reference_name_to_id(&oid, repo, ref.c_str()) != 0) return nullptr;
  git_commit* commit = nullptr;
  Check(git_commit_lookup(&commit, repo, &oid), "lookup " + ref);
  return commit;
}

int CollectBlob(const char* root, const git_tree_entry* entry, void* payload) {
  if (git_tree_entry_type(entry) == GIT_OBJECT_BLOB) {
    static_cast<std::vector<std::string>*>(payload)->push_back(std::string(root) +
                                                               git_tree_entry_name(entry));
  }
  return 0;
}

}  // namespace

namespace {

void InitRepository(const std::string& path, const std::string& default_branch, bool bare) {
  Init();
  git_repository_init_options opts{};
  git_repository_init_options_init(&opts, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
  opts.flags = GIT_REPOSITORY_INIT_MKPATH;
  if (bare) opts.flags |= GIT_REPOSITORY_INIT_BARE;
  const std::string head = "refs/heads/" + default_branch;
  opts.initial_head = head.c_str();
  git_repository* repo = nullptr;
  Check(git_repository_init_ext(&repo, path.c_str(), &opts), "init " + path);
  git_repository_free(repo);
}

}  // namespace

void InitBareRepository(const std::string& path, const std::string& default_branch) {
  InitRepository(path, default_branch, true);
}

void InitWorkingRepository(const std::string& path, const std::string& default_branch) {
  InitRepository(path, default_branch, false);
}

struct GitTestClone::Impl {
  git_repository* repo = nullptr;
  // In memory, made once: git_remote_create and git_remote_lookup leak in libgit2 1.5 (see
  // ApplyInsteadOf in reconciler/adapters/git_workspace.cc), which fails the asan preset.
  git_remote* remote = nullptr;
  // A staged entry: blob contents (or the commit id of a gitlink) and mode.
  struct Entry {
    std::string content;
    git_filemode_t mode = GIT_FILEMODE_BLOB;
  };
  std::map<std::string, std::optional<Entry>> staged;  // nullopt: remove
};

GitTestClone::GitTestClone(const std::string& remote_url, const std::string& path)
    : impl_(std::make_unique<Impl>()) {
  Init();
  Check(git_repository_init(&impl_->repo, path.c_str(), 1), "init " + path);
  git_remote_create_options opts{};
  git_remote_create_options_init(&opts, GIT_REMOTE_CREATE_OPTIONS_VERSION);
  opts.repository = impl_->repo;
  opts.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
  Check(git_remote_create_with_opts(&impl_->remote, remote_url.c_str(), &opts), "remote");
  Fetch();
}

GitTestClone::GitTestClone() : impl_(std::make_unique<Impl>()) {}

std::unique_ptr<GitTestClone> GitTestClone::OpenInPlace(const std::string& path) {
  std::unique_ptr<GitTestClone> clone(new GitTestClone());
  clone->impl_->repo = Open(path);
  return clone;
}

GitTestClone::~GitTestClone() {
  git_remote_free(impl_->remote);
  git_repository_free(impl_->repo);
}

void GitTestClone::Fetch() {
  char spec[] = "+refs/heads/*:refs/heads/*";
  char* specs[] = {spec};
  const git_strarray refspecs{specs, 1};
  git_fetch_options opts{};
  git_fetch_options_init(&opts, GIT_FETCH_OPTIONS_VERSION);
  opts.prune = GIT_FETCH_PRUNE;
  Check(git_remote_fetch(impl_->remote, &refspecs, &opts, nullptr), "fetch");
}

void GitTestClone::Write(const std::string& path, const std::string& content) {
  impl_->staged[path] = Impl::Entry{content, GIT_FILEMODE_BLOB};
}

void GitTestClone::WriteExecutable(const std::string& path, const std::string& content) {
  impl_->staged[path] = Impl::Entry{content, GIT_FILEMODE_BLOB_EXECUTABLE};
}

void GitTestClone::WriteSymlink(const std::string& path, const std::string& target) {
  impl_->staged[path] = Impl::Entry{target, GIT_FILEMODE_LINK};
}

void GitTestClone::WriteGitlink(const std::string& path, const std::string& commit_id) {
  impl_->staged[path] = Impl::Entry{commit_id, GIT_FILEMODE_COMMIT};
}

void GitTestClone::Remove(const std::string& path) { impl_->staged[path] = std::nullopt; }

std::string GitTestClone::Commit(const std::string& branch, const std::string& message,
                                 const std::string& from) {
  git_repository* repo = impl_->repo;
  git_commit* parent = Tip(repo, branch);
  if (parent == nullptr && !from.empty()) parent = Tip(repo, from);
  git_tree* base = nullptr;
  if (parent != nullptr) {
    Check(git_commit_tree(&base, parent), "tree");
  } else {
    git_treebuilder* builder = nullptr;
    Check(git_treebuilder_new(&builder, repo, nullptr), "treebuilder");
    git_oid empty;
    Check(git_treebuilder_write(&empty, builder), "write empty tree");
    git_treebuilder_free(builder);
    Check(git_tree_lookup(&base, repo, &empty), "lookup empty tree");
  }
  std::vector<git_tree_update> updates;
  for (const auto& [path, content] : impl_->staged) {
    git_tree_update u{};
    u.path = path.c_str();
    if (content && content->mode == GIT_FILEMODE_COMMIT) {
      Check(git_oid_fromstr(&u.id, content->content.c_str()), "gitlink id");
      u.action = GIT_TREE_UPDATE_UPSERT;
      u.filemode = content->mode;
    } else if (content) {
      Check(git_blob_create_from_buffer(&u.id, repo, content->content.data(),
                                        content->content.size()),
            "blob");
      u.action = GIT_TREE_UPDATE_UPSERT;
      u.filemode = content->mode;
    } else {
      u.action = GIT_TREE_UPDATE_REMOVE;
    }
    updates.push_back(u);
  }
  git_oid tree_oid;
  Check(git_tree_create_updated(&tree_oid, repo, base, updates.size(), updates.data()),
        "update tree");
  git_tree_free(base);
  impl_->staged.clear();
  git_tree* tree = nullptr;
  Check(git_tree_lookup(&tree, repo, &tree_oid), "lookup tree");
  git_signature* sig = nullptr;
  Check(git_signature_now(&sig, "Test Person", "person@example.com"), "signature");
  const git_commit* parents[1] = {parent};
  git_oid commit_oid;
  const std::string ref = "refs/heads/" + branch;
  const int rc = git_commit_create(&commit_oid, repo, ref.c_str(), sig, sig, nullptr,
                                   message.c_str(), tree, parent != nullptr ? 1 : 0, parents);
  git_signature_free(sig);
  git_tree_free(tree);
  git_commit_free(parent);
  Check(rc, "commit");
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof(hex), &commit_oid);
  return hex;
}

void GitTestClone::Push(const std::string& branch) {
  const std::string spec = "refs/heads/" + branch + ":refs/heads/" + branch;
  char* specs[] = {const_cast<char*>(spec.c_str())};
  const git_strarray refspecs{specs, 1};
  git_push_options opts{};
  git_push_options_init(&opts, GIT_PUSH_OPTIONS_VERSION);
  Check(git_remote_push(impl_->remote, &refspecs, &opts), "push " + branch);
}

void GitTestClone::DeleteRemoteBranch(const std::string& branch) {
  const std::string spec = ":refs/heads/" + branch;
  char* specs[] = {const_cast<char*>(spec.c_str())};
  const git_strarray refspecs{specs, 1};
  git_push_options opts{};
  git_push_options_init(&opts, GIT_PUSH_OPTIONS_VERSION);
  Check(git_remote_push(impl_->remote, &refspecs, &opts), "delete " + branch);
}

std::string GitTestClone::CommitAndPush(const std::string& branch, const std::string& message) {
  std::string id = Commit(branch, message);
  Push(branch);
  return id;
}

int CountCommits(const std::string& repo_path, const std::string& branch) {
  git_repository* repo = Open(repo_path);
  int count = 0;
  git_commit* tip = Tip(repo, branch);
  if (tip != nullptr) {
    git_revwalk* walk = nullptr;
    Check(git_revwalk_new(&walk, repo), "revwalk");
    Check(git_revwalk_push(walk, git_commit_id(tip)), "revwalk push");
    git_oid oid;
    while (git_revwalk_next(&oid, walk) == 0) ++count;
    git_revwalk_free(walk);
    git_commit_free(tip);
  }
  git_repository_free(repo);
  return count;
}

std::vector<std::string> CommitMessages(const std::string& repo_path, const std::string& branch) {
  git_repository* repo = Open(repo_path);
  std::vector<std::string> out;
  git_commit* tip = Tip(repo, branch);
  if (tip != nullptr) {
    git_revwalk* walk = nullptr;
    Check(git_revwalk_new(&walk, repo), "revwalk");
    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
    Check(git_revwalk_push(walk, git_commit_id(tip)), "revwalk push");
    git_oid oid;
    while (git_revwalk_next(&oid, walk) == 0) {
      git_commit* c = nullptr;
      Check(git_commit_lookup(&c, repo, &oid), "lookup");
      out.emplace_back(git_commit_message(c));
      git_commit_free(c);
    }
    git_revwalk_free(walk);
    git_commit_free(tip);
  }
  git_repository_free(repo);
  return out;
}

std::optional<std::string> ReadFileAt(const std::string& repo_path, const std::string& branch,
                                      const std::string& path) {
  git_repository* repo = Open(repo_path);
  std::optional<std::string> out;
  git_commit* tip = Tip(repo, branch);
  if (tip != nullptr) {
    git_tree* tree = nullptr;
    Check(git_commit_tree(&tree, tip), "tree");
    git_tree_entry* entry = nullptr;
    if (git_tree_entry_bypath(&entry, tree, path.c_str()) == 0) {
      git_blob* blob = nullptr;
      if (git_blob_lookup(&blob, repo, git_tree_entry_id(entry)) == 0) {
        out = std::string(static_cast<const char*>(git_blob_rawcontent(blob)),
                          static_cast<size_t>(git_blob_rawsize(blob)));
        git_blob_free(blob);
      }
      git_tree_entry_free(entry);
    }
    git_tree_free(tree);
    git_commit_free(tip);
  }
  git_repository_free(repo);
  return out;
}

std::vector<std::string> ListFiles(const std::string& repo_path, const std::string& branch) {
  git_repository* repo = Open(repo_path);
  std::vector<std::string> out;
  git_commit* tip = Tip(repo, branch);
  if (tip != nullptr) {
    git_tree* tree = nullptr;
    Check(git_commit_tree(&tree, tip), "tree");
    Check(git_tree_walk(tree, GIT_TREEWALK_PRE, CollectBlob, &out), "walk");
    git_tree_free(tree);
    git_commit_free(tip);
  }
  git_repository_free(repo);
  std::sort(out.begin(), out.end());
  return out;
}

std::string BranchTip(const std::string& repo_path, const std::string& branch) {
  git_repository* repo = Open(repo_path);
  git_oid oid;
  const std::string ref = "refs/heads/" + branch;
  std::string out;
  if (git_reference_name_to_id(&oid, repo, ref.c_str()) == 0) {
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof(hex), &oid);
    out = hex;
  }
  git_repository_free(repo);
  return out;
}

}  // namespace rg::testing
