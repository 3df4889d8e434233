#include "reconciler/adapters/git_status_store.h"

#include <optional>
#include <utility>
#include <vector>

#include "reconciler/adapters/git_common.h"
#include "reconciler/spec/status_codec.h"

namespace rg::adapters {
namespace {

std::string OneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// The tip of the branch as last fetched; nullopt when the branch does not exist.
core::Result<std::optional<git::Commit>> ReadTip(git_repository* repo, const std::string& branch) {
  git_reference* raw = nullptr;
  const std::string ref = GitWorkspace::TrackingRef(branch);
  int rc = git_reference_lookup(&raw, repo, ref.c_str());
  git::Reference reference(raw);
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return std::optional<git::Commit>();
  }
  if (rc != 0) return git::LastError(rc, "cannot read " + ref);
  git_object* peeled = nullptr;
  rc = git_reference_peel(&peeled, reference.get(), GIT_OBJECT_COMMIT);
  if (rc != 0) return git::LastError(rc, ref + " does not point at a commit");
  return std::optional<git::Commit>(git::Commit(reinterpret_cast<git_commit*>(peeled)));
}

core::Result<git::Tree> TreeOf(git_commit* commit) {
  git_tree* raw = nullptr;
  if (int rc = git_commit_tree(&raw, commit); rc != 0) {
    return git::LastError(rc, "cannot read a commit's tree");
  }
  return git::Tree(raw);
}

core::Result<git::Tree> EmptyTree(git_repository* repo) {
  git_treebuilder* builder = nullptr;
  int rc = git_treebuilder_new(&builder, repo, nullptr);
  if (rc != 0) return git::LastError(rc, "cannot build a tree");
  git_oid oid;
  rc = git_treebuilder_write(&oid, builder);
  git_treebuilder_free(builder);
  if (rc != 0) return git::LastError(rc, "cannot write a tree");
  git_tree* raw = nullptr;
  if ((rc = git_tree_lookup(&raw, repo, &oid)) != 0)
    return git::LastError(rc, "cannot read a tree");
  return git::Tree(raw);
}

// The blob id at `path` in `tree`, or nullopt when there is no blob there.
std::optional<git_oid> BlobIdAt(git_tree* tree, const std::string& path) {
  if (tree == nullptr) return std::nullopt;
  git_tree_entry* raw = nullptr;
  if (git_tree_entry_bypath(&raw, tree, path.c_str()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git::TreeEntry entry(raw);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  return *git_tree_entry_id(entry.get());
}

struct StatusFiles {
  core::Ledger ledger;
  std::vector<std::string> problems;
  int files = 0;
};

StatusFiles ReadStatusFiles(git_repository* repo, git_tree* tree) {
  StatusFiles out;
  git_tree_entry* raw = nullptr;
  const std::string dir(spec::kStatusDir);
  if (git_tree_entry_bypath(&raw, tree, dir.c_str()) != 0) {
    git_error_clear();
    return out;
  }
  git::TreeEntry dir_entry(raw);
  git_object* object = nullptr;
  if (git_tree_entry_type(dir_entry.get()) != GIT_OBJECT_TREE ||
      git_tree_entry_to_object(&object, repo, dir_entry.get()) != 0) {
    git_error_clear();
    return out;
  }
  git::Tree status_tree(reinterpret_cast<git_tree*>(object));
  const size_t count = git_tree_entrycount(status_tree.get());
  for (size_t i = 0; i < count; ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(status_tree.get(), i);
    const std::string name = git_tree_entry_name(entry);
    if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB || !name.ends_with(".yaml")) continue;
    ++out.files;
    const std::string path = dir + "/" + name;
    auto text = git::ReadBlob(repo, *git_tree_entry_id(entry));
    if (!text) {
      out.problems.push_back(path + ": cannot read the blob");
      continue;
    }
    auto record = spec::DecodeStatusYaml(*text, path);
    if (!record) {
      out.problems.push_back(record.error().message());
      continue;
    }
    std::string key = record->name;
    out.ledger.insert_or_assign(std::move(key), std::move(*record));
  }
  return out;
}

}  // namespace

GitStatusStore::GitStatusStore(std::shared_ptr<GitWorkspace> workspace,
                               GitStatusStoreOptions options)
    : workspace_(std::move(workspace)), options_(std::move(options)) {
  if (options_.max_push_attempts < 1) options_.max_push_attempts = 1;
}

std::string GitStatusStore::FormatCommitMessage(const ports::StatusCommit& message) {
  std::string out = OneLine(message.subject);
  if (!message.body_lines.empty()) {
    out += "\n\n";
    for (const auto& line : message.body_lines) out += OneLine(line) + "\n";
    out.pop_back();
  }
  if (!message.trailers.empty()) {
    out += "\n\n";
    for (const auto& [key, value] : message.trailers)
      out += OneLine(key) + ": " + OneLine(value) + "\n";
    out.pop_back();
  }
  return out + "\n";
}

core::Result<core::Ledger> GitStatusStore::ReadLedger(const ports::LedgerScope& /*scope*/) {
  if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
  git_repository* repo = workspace_->repository();
  auto tip = ReadTip(repo, options_.branch);
  if (!tip) return tip.error();
  if (!tip->has_value()) return core::Ledger{};
  auto tree = TreeOf(tip->value().get());
  if (!tree) return tree.error();
  StatusFiles files = ReadStatusFiles(repo, tree->get());
  if (files.ledger.empty() && !files.problems.empty()) {
    std::string message = "no status file of " + options_.branch + " can be read:";
    for (const auto& p : files.problems) message += "\n  " + p;
    return core::Error::InvalidInput(std::move(message));
  }
  return std::move(files.ledger);
}

core::Result<std::string> GitStatusStore::Write(const ports::StatusChanges& changes,
                                                const ports::StatusCommit& message) {
  git_repository* repo = workspace_->repository();
  const std::string text = FormatCommitMessage(message);
  core::StatusMarkdownHeader header = options_.markdown_header;
  if (auto it = message.trailers.find("Spec-Commit");
      header.spec_commit.empty() && it != message.trailers.end()) {
    header.spec_commit = it->second;
  }
  for (int attempt = 0; attempt < options_.max_push_attempts; ++attempt) {
    if (attempt > 0) {
      if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
    }
    auto tip = ReadTip(repo, options_.branch);
    if (!tip) return tip.error();
    auto base = tip->has_value() ? TreeOf(tip->value().get()) : EmptyTree(repo);
    if (!base) return base.error();

    core::Ledger ledger = ReadStatusFiles(repo, base->get()).ledger;
    std::vector<std::string> paths;  // git_tree_update points into these
    std::vector<git_tree_update> updates;
    paths.reserve(changes.size() + 1);
    updates.reserve(changes.size() + 1);
    auto upsert = [&](std::string path, const std::string& content) -> core::Status {
      git_tree_update update{};
      if (int rc = git_blob_create_from_buffer(&update.id, repo, content.data(), content.size());
          rc != 0) {
        return git::LastError(rc, "cannot write " + path);
      }
      paths.push_back(std::move(path));
      update.action = GIT_TREE_UPDATE_UPSERT;
      update.filemode = GIT_FILEMODE_BLOB;
      update.path = paths.back().c_str();
      updates.push_back(update);
      return core::OkStatus();
    };

    for (const auto& [name, record] : changes) {
      std::string path = spec::StatusFilePath(name);
      auto existing = ledger.find(name);
      if (record) {
        if (existing != ledger.end() && !core::MeaningfulChange(existing->second, *record)) {
          continue;
        }
        if (auto st = upsert(std::move(path), spec::EncodeStatusYaml(*record)); !st) {
          return st.error();
        }
        ledger.insert_or_assign(name, *record);
      } else {
        if (existing != ledger.end()) ledger.erase(existing);
        if (!BlobIdAt(base->get(), path)) continue;
        paths.push_back(std::move(path));
        git_tree_update update{};
        update.action = GIT_TREE_UPDATE_REMOVE;
        update.path = paths.back().c_str();
        updates.push_back(update);
      }
    }
    if (updates.empty()) return std::string();
    if (auto st = upsert(options_.markdown_path, core::RenderStatusMarkdown(ledger, header)); !st) {
      return st.error();
    }

    git_oid tree_oid;
    if (int rc =
            git_tree_create_updated(&tree_oid, repo, base->get(), updates.size(), updates.data());
        rc != 0) {
      return git::LastError(rc, "cannot build the status tree");
    }
    if (git_oid_equal(&tree_oid, git_tree_id(base->get())) != 0) return std::string();

    git_tree* raw_tree = nullptr;
    if (int rc = git_tree_lookup(&raw_tree, repo, &tree_oid); rc != 0) {
      return git::LastError(rc, "cannot read the status tree");
    }
    git::Tree tree(raw_tree);
    git_signature* raw_sig = nullptr;
    if (int rc = git_signature_now(&raw_sig, options_.author_name.c_str(),
                                   options_.author_email.c_str());
        rc != 0) {
      return git::LastError(rc, "invalid author");
    }
    git::Signature signature(raw_sig);
    const git_commit* parents[1] = {tip->has_value() ? tip->value().get() : nullptr};
    git_oid commit_oid;
    if (int rc =
            git_commit_create(&commit_oid, repo, nullptr, signature.get(), signature.get(), nullptr,
                              text.c_str(), tree.get(), tip->has_value() ? 1 : 0, parents);
        rc != 0) {
      return git::LastError(rc, "cannot create the status commit");
    }
    const std::string commit_hex = git::OidHex(commit_oid);

    if (options_.before_push) options_.before_push(attempt);
    ++push_attempts_;
    core::Status pushed = workspace_->PushCommit(commit_hex, options_.branch);
    if (pushed) return commit_hex;
    if (!pushed.error().IsConflict()) return pushed.error();
  }
  return core::Error::Conflict("gave up pushing " + options_.branch + " after " +
                               std::to_string(options_.max_push_attempts) +
                               " attempts: another writer keeps moving it");
}

core::Result<std::vector<ports::StatusHistoryEntry>> GitStatusStore::History(
    const std::string& name) {
  if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
  git_repository* repo = workspace_->repository();
  auto tip = ReadTip(repo, options_.branch);
  if (!tip) return tip.error();
  std::vector<ports::StatusHistoryEntry> out;
  if (!tip->has_value()) return out;

  git_revwalk* raw_walk = nullptr;
  if (int rc = git_revwalk_new(&raw_walk, repo); rc != 0) {
    return git::LastError(rc, "cannot walk " + options_.branch);
  }
  git::RevWalk walk(raw_walk);
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
  if (int rc = git_revwalk_push(walk.get(), git_commit_id(tip->value().get())); rc != 0) {
    return git::LastError(rc, "cannot walk " + options_.branch);
  }
  const std::string path = spec::StatusFilePath(name);
  git_oid oid;
  while (git_revwalk_next(&oid, walk.get()) == 0) {
    git_commit* raw_commit = nullptr;
    if (int rc = git_commit_lookup(&raw_commit, repo, &oid); rc != 0) {
      return git::LastError(rc, "cannot read commit " + git::OidHex(oid));
    }
    git::Commit commit(raw_commit);
    auto tree = TreeOf(commit.get());
    if (!tree) return tree.error();
    const std::optional<git_oid> here = BlobIdAt(tree->get(), path);
    std::optional<git_oid> before;
    if (git_commit_parentcount(commit.get()) > 0) {
      git_commit* raw_parent = nullptr;
      if (git_commit_parent(&raw_parent, commit.get(), 0) == 0) {
        git::Commit parent(raw_parent);
        auto parent_tree = TreeOf(parent.get());
        if (!parent_tree) return parent_tree.error();
        before = BlobIdAt(parent_tree->get(), path);
      }
    }
    const bool same =
        here.has_value() == before.has_value() && (!here || git_oid_equal(&*here, &*before) != 0);
    if (same) continue;

    ports::StatusHistoryEntry entry;
    entry.commit = git::OidHex(oid);
    entry.time_ms = static_cast<int64_t>(git_commit_time(commit.get())) * 1000;
    const char* summary = git_commit_summary(commit.get());
    entry.subject = summary != nullptr ? summary : "";
    if (here) {
      auto text = git::ReadBlob(repo, *here);
      if (!text) continue;
      auto record = spec::DecodeStatusYaml(*text, path);
      if (!record) continue;  // a file that cannot be read tells nothing about the run
      entry.record = std::move(*record);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace rg::adapters
