#include "reconciler/adapters/git_status_store.h"

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <future>
#include <optional>
#include <utility>
#include <vector>

#include "reconciler/adapters/git_common.h"
#include "reconciler/adapters/git_pack_writer.h"
#include "reconciler/adapters/parse_cache.h"
#include "reconciler/core/identity.h"
#include "reconciler/spec/status_codec.h"

namespace rg::adapters {
namespace {

// The number of files from which a status write puts its blobs in a pack, not loose.
constexpr size_t kPackFromFiles = 100;

std::string OneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// The tip of the branch as last fetched; nullopt when the branch does not exist.
core::Result<std::optional<git::Commit>> ReadTip(git_repository* repo, const std::string& ref) {
  git_reference* raw = nullptr;
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

// The tip's id in hex; "" when the branch does not exist.
std::string TipId(const std::optional<git::Commit>& tip) {
  return tip.has_value() ? git::OidHex(*git_commit_id(tip->get())) : std::string();
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
  if ((rc = git_tree_lookup(&raw, repo, &oid)) != 0) {
    return git::LastError(rc, "cannot read a tree");
  }
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

// Everything under status/ in one tree: the records that can be used, by name and of every
// owner, and the files that cannot (ports::SkippedStatusFile).
struct StatusFiles {
  core::Ledger records;
  std::vector<ports::SkippedStatusFile> skipped;

  const ports::SkippedStatusFile* SkippedAt(std::string_view path) const {
    for (const auto& file : skipped) {
      if (file.path == path) return &file;
    }
    return nullptr;
  }
};

// The decoder's message without the leading path, which SkippedStatusFile carries apart.
std::string ProblemOf(const std::string& message, const std::string& path) {
  std::string_view rest = message;
  if (rest.starts_with(path)) rest.remove_prefix(path.size());
  if (rest.starts_with(": ")) rest.remove_prefix(2);
  if (rest.starts_with(":")) rest.remove_prefix(1);
  return "not a status record: " + std::string(rest);
}

// What a status blob holds: nullopt when the blob cannot be read, else its record or why it is
// not one.
using StatusDecoder = std::function<std::optional<core::Result<core::StatusRecord>>(
    const git_oid& oid, const std::string& path)>;

// One entry of status/, copied out of its tree: reading the blobs of a copy needs no libgit2
// object of the repository alive (GitWorkspace::NoteBlobRead may reopen it among them).
struct StatusEntryAt {
  std::string file;
  git_oid id{};
  git_object_t type = GIT_OBJECT_INVALID;
  git_filemode_t mode = GIT_FILEMODE_UNREADABLE;
};

StatusEntryAt CopyStatusEntry(const git_tree_entry* entry) {
  return {git_tree_entry_name(entry), *git_tree_entry_id(entry), git_tree_entry_type(entry),
          git_tree_entry_filemode(entry)};
}

// Sorts one entry of status/ into a usable record or a skipped file. Only a blob named
// <job name>.yaml whose record has that name is a record: anything else would either be lost
// on the next write or, read under another name, take the place of that job's history.
void ReadStatusEntry(const StatusEntryAt& entry, const StatusDecoder& decode, StatusFiles& out) {
  const std::string& file = entry.file;
  const std::string path = std::string(spec::kStatusDir) + "/" + file;
  const std::string stem = file.ends_with(".yaml") ? file.substr(0, file.size() - 5) : "";
  const std::string name = core::IsValidJobName(stem) ? stem : "";
  auto skip = [&](std::string problem) { out.skipped.push_back({path, name, std::move(problem)}); };
  if (entry.type == GIT_OBJECT_TREE) return skip("a folder, not a status file");
  if (entry.type != GIT_OBJECT_BLOB) return skip("a submodule, not a status file");
  if (entry.mode == GIT_FILEMODE_LINK) return skip("a symbolic link, not a status file");
  if (!file.ends_with(".yaml")) return skip("not a status file (they are status/<job>.yaml)");
  if (name.empty()) return skip("not a status file: \"" + stem + "\" is not a valid job name");
  std::optional<core::Result<core::StatusRecord>> record = decode(entry.id, path);
  if (!record) return skip("cannot read the blob");
  if (!record->ok()) return skip(ProblemOf(record->error().message(), path));
  if ((*record)->name != name) {
    return skip("holds the record of \"" + (*record)->name + "\", not of \"" + name + "\"");
  }
  out.records.insert_or_assign(name, std::move(**record));
}

// status/ of a tree.
struct StatusDir {
  bool present = false;  // the tree has an entry named status
  bool folder = false;   // and it is a folder
  git::Tree tree;        // that folder, when it could be read
  // What STATUS.md rows of it are kept under (StatusRowCache::folder): its id in hex, "" when
  // there is no status/ (as good as an empty one), nullopt when it is no folder.
  std::optional<std::string> key;
};

StatusDir OpenStatusDir(git_repository* repo, git_tree* root) {
  StatusDir out;
  const git_tree_entry* entry = git_tree_entry_byname(root, std::string(spec::kStatusDir).c_str());
  if (entry == nullptr) {
    out.key = "";
    return out;
  }
  out.present = true;
  if (git_tree_entry_type(entry) != GIT_OBJECT_TREE) return out;
  out.folder = true;
  out.key = git::OidHex(*git_tree_entry_id(entry));
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, repo, git_tree_entry_id(entry)) != 0) {
    git_error_clear();
    return out;
  }
  out.tree = git::Tree(raw);
  return out;
}

// The key of status/ in the tree `tree_oid` (see StatusDir::key); nullopt when unreadable.
std::optional<std::string> StatusDirKey(git_repository* repo, const git_oid& tree_oid) {
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, repo, &tree_oid) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git::Tree tree(raw);
  const git_tree_entry* entry =
      git_tree_entry_byname(tree.get(), std::string(spec::kStatusDir).c_str());
  if (entry == nullptr) return "";
  if (git_tree_entry_type(entry) != GIT_OBJECT_TREE) return std::nullopt;
  return git::OidHex(*git_tree_entry_id(entry));
}

// Every entry of status/, copied out of its tree (nothing when there is none to read).
std::vector<StatusEntryAt> StatusEntries(const StatusDir& dir) {
  std::vector<StatusEntryAt> entries;
  if (!dir.folder || !dir.tree) return entries;
  const size_t count = git_tree_entrycount(dir.tree.get());
  entries.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    entries.push_back(CopyStatusEntry(git_tree_entry_byindex(dir.tree.get(), i)));
  }
  return entries;
}

// The records and skipped files of `entries`, the entries of status/ (`dir`); `after_each`,
// when given, is called after each entry is read, and the read stops where it answers false.
StatusFiles ReadStatusEntries(const StatusDir& dir, const std::vector<StatusEntryAt>& entries,
                              const StatusDecoder& decode,
                              const std::function<bool()>& after_each = {}) {
  StatusFiles out;
  if (dir.present && !dir.folder) {
    out.skipped.push_back(
        {std::string(spec::kStatusDir), "", "not a folder; status files are status/<job>.yaml"});
    return out;
  }
  for (const StatusEntryAt& entry : entries) {
    ReadStatusEntry(entry, decode, out);
    if (after_each && !after_each()) break;
  }
  return out;
}

// Every entry of status/.
StatusFiles ReadStatusFiles(const StatusDir& dir, const StatusDecoder& decode) {
  return ReadStatusEntries(dir, StatusEntries(dir), decode);
}

// The entries status/<name>.yaml of `names` alone, looked up by name (no walk of the folder),
// sorted as ReadStatusFiles sorts them; a name that is no job name has none. Nothing when
// status/ is no folder that could be read.
StatusFiles ReadStatusFilesOf(const StatusDir& dir, const std::vector<std::string>& names,
                              const StatusDecoder& decode) {
  StatusFiles out;
  if (!dir.tree) return out;
  for (const std::string& name : names) {
    if (!core::IsValidJobName(name)) continue;
    const std::string file = name + ".yaml";
    const git_tree_entry* entry = git_tree_entry_byname(dir.tree.get(), file.c_str());
    if (entry != nullptr) ReadStatusEntry(CopyStatusEntry(entry), decode, out);
  }
  return out;
}

std::string OwnerText(const core::StatusRecord& record) {
  return "instance " + (record.instance.empty() ? std::string("(any)") : record.instance) +
         " on cluster " + (record.ray_cluster.empty() ? std::string("(any)") : record.ray_cluster);
}

// The records of `scope`. Another instance's records are left alone (a branch shared by two
// instances on purpose, or not); our instance's records of another cluster mean that two
// daemons of one instance on two clusters share this branch, and each would take the other's
// finished runs for its own: an error that names both clusters and the fix. kFatal, not
// kConflict: a pass that meets it has failed (the daemon turns unready) and only a person can
// change that.
// NOLINTNEXTLINE(performance-unnecessary-value-param): filtered in place and returned
core::Result<core::Ledger> LedgerOfScope(core::Ledger records, const ports::LedgerScope& scope,
                                         const std::string& branch) {
  std::vector<std::string> foreign;  // status/<name>.yaml (cluster)
  std::string foreign_cluster;
  // Filtered in place: at 50,000 records a second map would be built beside the first.
  for (auto it = records.begin(); it != records.end();) {
    switch (core::MatchLedger(it->second, scope.instance, scope.ray_cluster)) {
      case core::LedgerMatch::kOurs:
        ++it;
        break;
      case core::LedgerMatch::kOtherInstance:
        it = records.erase(it);
        break;
      case core::LedgerMatch::kOtherCluster:
        if (foreign_cluster.empty()) foreign_cluster = it->second.ray_cluster;
        foreign.push_back(spec::StatusFilePath(it->first));
        ++it;
        break;
    }
  }
  if (foreign.empty()) return records;
  std::string files = foreign.front();
  if (foreign.size() > 1) files += " and " + std::to_string(foreign.size() - 1) + " more";
  return core::Error::Fatal(
      "status branch " + branch + " holds the ledger of instance " + scope.instance +
      " on Ray cluster \"" + foreign_cluster + "\" (" + files +
      "), and this daemon reconciles Ray cluster \"" + scope.ray_cluster +
      "\": nothing is done or written until each cluster has its own ledger. Give each cluster "
      "its own --instance and --status-branch; if both are one cluster reached by two "
      "addresses, give them the same `name:` in cluster.yaml");
}

// Why `change` must not be written on top of `files`, or empty when it may be. The records
// of the writer are those of `scope` unless the record names its own owner.
// `files` as read: its records are those before this write (a name is written at most once).
std::string RefusalOf(const std::string& name, const std::optional<core::StatusRecord>& record,
                      const StatusFiles& files, const ports::LedgerScope& scope, bool& foreign) {
  if (!core::IsValidJobName(name)) {
    return "\"" + name + "\" is not a valid job name, so it has no status file";
  }
  if (record && record->name != name) {
    return "the record of \"" + record->name + "\" cannot be written as \"" + name + "\"";
  }
  const std::string path = spec::StatusFilePath(name);
  if (const ports::SkippedStatusFile* skipped = files.SkippedAt(path)) {
    return path + " is left as it is: " + skipped->problem + "; fix or delete it";
  }
  auto existing = files.records.find(name);
  if (existing == files.records.end()) return "";
  const bool own_owner = record && (!record->instance.empty() || !record->ray_cluster.empty());
  const std::string& instance = own_owner ? record->instance : scope.instance;
  const std::string& cluster = own_owner ? record->ray_cluster : scope.ray_cluster;
  if (core::MatchLedger(existing->second, instance, cluster) == core::LedgerMatch::kOurs) {
    return "";
  }
  foreign = true;
  return path + " is left as it is: it holds the record of " + OwnerText(existing->second) +
         "; give each instance and cluster its own --status-branch";
}

core::Error RefusedChanges(const std::vector<std::string>& refused, bool foreign) {
  std::string message = "status not recorded for " + std::to_string(refused.size()) +
                        (refused.size() == 1 ? " job: " : " jobs: ");
  // A shared branch refuses every job at once: 50,000 reasons made one log line of 9 MB.
  constexpr size_t kListed = 10;
  const size_t listed = std::min(refused.size(), kListed);
  for (size_t i = 0; i < listed; ++i) message += (i == 0 ? "" : "; ") + refused[i];
  if (refused.size() > listed) {
    message += "; and " + std::to_string(refused.size() - listed) + " more";
  }
  return foreign ? core::Error::Conflict(std::move(message))
                 : core::Error::InvalidInput(std::move(message));
}

std::vector<std::string> NamesOf(const ports::StatusChanges& changes) {
  std::vector<std::string> names;
  names.reserve(changes.size());
  for (const auto& [name, record] : changes) names.push_back(name);
  return names;
}

// What a write does to the status files.
struct PlannedChanges {
  // Per name whose record changed: the STATUS.md row of the record now in its file, or
  // nullopt when it is gone. (Rows, not records: at 50,000 changed jobs a copy of every
  // record was 60 MB.)
  std::vector<core::StatusMarkdownRows::Update> updates;
  std::vector<std::string> refused;  // why, per change left out
  bool foreign = false;              // a file of another owner was in the way
};

// The edits of one status commit. git_tree_update points into `paths_`, a deque, so that the
// pointers stay valid as it grows. With a pack, blobs are written into it, not loose.
class TreeEdits {
 public:
  explicit TreeEdits(git_repository* repo, git::PackWriter* pack = nullptr)
      : repo_(repo), pack_(pack) {}

  core::Status Upsert(std::string path, const std::string& content) {
    git_oid id;
    if (pack_ != nullptr) {
      core::Result<git_oid> added = pack_->AddBlob(content);
      if (!added) {
        return core::Error(added.error().kind(),
                           "cannot write " + path + ": " + added.error().message());
      }
      id = *added;
    } else if (int rc = git_blob_create_from_buffer(&id, repo_, content.data(), content.size());
               rc != 0) {
      return git::LastError(rc, "cannot write " + path);
    }
    UpsertId(std::move(path), id);
    return core::OkStatus();
  }

  // A blob already written.
  void UpsertId(std::string path, const git_oid& id) {
    git_tree_update update{};
    update.id = id;
    paths_.push_back(std::move(path));
    update.action = GIT_TREE_UPDATE_UPSERT;
    update.filemode = GIT_FILEMODE_BLOB;
    update.path = paths_.back().c_str();
    updates_.push_back(update);
  }

  void Remove(std::string path) {
    paths_.push_back(std::move(path));
    git_tree_update update{};
    update.action = GIT_TREE_UPDATE_REMOVE;
    update.path = paths_.back().c_str();
    updates_.push_back(update);
  }

  bool empty() const { return updates_.empty(); }

  core::Result<git_oid> Apply(git_tree* base) {
    git_oid oid;
    if (int rc = git_tree_create_updated(&oid, repo_, base, updates_.size(), updates_.data());
        rc != 0) {
      return git::LastError(rc, "cannot build the status tree");
    }
    return oid;
  }

 private:
  git_repository* repo_;
  git::PackWriter* pack_;
  std::deque<std::string> paths_;
  std::vector<git_tree_update> updates_;
};

// The edits that write `changes` on `base` (STATUS.md aside), whose status files `files`
// holds: every one (a full write), or at least those of the changed names (an incremental
// write; both take the same decisions from them).
core::Result<PlannedChanges> PlanChanges(const ports::StatusChanges& changes,
                                         const StatusFiles& files, const ports::LedgerScope& scope,
                                         const core::StatusMarkdownHeader& header, git_tree* base,
                                         TreeEdits& edits) {
  PlannedChanges out;
  for (const auto& [name, record] : changes) {
    if (std::string why = RefusalOf(name, record, files, scope, out.foreign); !why.empty()) {
      out.refused.push_back(std::move(why));
      continue;
    }
    std::string path = spec::StatusFilePath(name);
    const auto existing = files.records.find(name);
    const bool exists = existing != files.records.end();
    if (!record) {
      if (exists) out.updates.emplace_back(name, std::nullopt);
      if (BlobIdAt(base, path)) edits.Remove(std::move(path));
      continue;
    }
    // Another writer of this ledger (a second replica) may have recorded more since this
    // pass read it: what either knew is kept (core::MergeRecords).
    const core::StatusRecord* now = &*record;
    core::StatusRecord merged;
    if (exists) {
      merged = core::MergeRecords(existing->second, *record);
      if (!core::MeaningfulChange(existing->second, merged)) continue;
      now = &merged;
    }
    if (auto st = edits.Upsert(std::move(path), spec::EncodeStatusYaml(*now)); !st) {
      return st.error();
    }
    out.updates.emplace_back(name, core::StatusMarkdownRowOf(*now, header));
  }
  return out;
}

core::StatusMarkdownRows RowsOf(const core::Ledger& ledger,
                                const core::StatusMarkdownHeader& header) {
  core::StatusMarkdownRows rows;
  for (const auto& [name, record] : ledger) {
    rows.Append(name, core::StatusMarkdownRowOf(record, header));
  }
  return rows;
}

// Keeps the rows of `records`, every record of the status folder `folder`, unless `cache`
// has them already.
void KeepRows(StatusRowCache& cache, const std::optional<std::string>& folder,
              const core::Ledger& records, const core::StatusMarkdownHeader& header) {
  if (!folder) return;
  if (cache.folder == folder && core::SameRowHeader(cache.header, header)) return;
  cache.rows = RowsOf(records, header);
  cache.header = header;
  cache.folder = folder;
}

// The rows of the folder a write makes, in `cache` (its folder left unset until it is known):
// the cached rows (incremental) or those of `ledger`, every record of the base (full), with
// the updates' rows.
void UpdateRows(StatusRowCache& cache, bool incremental, PlannedChanges& planned,
                const core::Ledger& ledger, const core::StatusMarkdownHeader& header) {
  cache.folder.reset();
  if (!incremental) {
    cache.rows = RowsOf(ledger, header);
    cache.header = header;
  }
  cache.rows.Apply(std::move(planned.updates));
}

// Writes `content` as a blob through a repository handle of its own (libgit2 wants one per
// thread), for a thread that writes beside the one building trees in `repo_path`.
core::Result<git_oid> WriteBlobApart(const std::string& repo_path, const std::string& content) {
  git_repository* raw = nullptr;
  if (int rc = git_repository_open(&raw, repo_path.c_str()); rc != 0) {
    if (std::optional<std::string> foreign = git::ForeignOwnerProblem(rc, repo_path)) {
      return core::Error::InvalidInput(*foreign);
    }
    return git::LastError(rc, "cannot open " + repo_path);
  }
  git::Repository repo(raw);
  git_oid id;
  if (int rc = git_blob_create_from_buffer(&id, repo.get(), content.data(), content.size());
      rc != 0) {
    return git::LastError(rc, "cannot write a blob");
  }
  return id;
}

// The tree `edits` make of `base`, then the same with `path` set to `content`. The blob of
// `content` (STATUS.md: megabytes at 10,000 jobs) is written on another thread while the
// edits are applied (the status folder's tree, as large).
core::Result<git_oid> ApplyWithFile(git_repository* repo, git_tree* base, TreeEdits& edits,
                                    const std::string& path, const std::string& content) {
  std::future<core::Result<git_oid>> blob =
      std::async(std::launch::async, WriteBlobApart, std::string(git_repository_path(repo)),
                 std::cref(content));
  core::Result<git_oid> edited = edits.Apply(base);
  core::Result<git_oid> written = blob.get();
  if (!edited) return edited.error();
  if (!written) {
    return core::Error(written.error().kind(),
                       "cannot write " + path + ": " + written.error().message());
  }
  git_tree* raw = nullptr;
  if (int rc = git_tree_lookup(&raw, repo, &*edited); rc != 0) {
    return git::LastError(rc, "cannot read the status tree");
  }
  git::Tree tree(raw);
  TreeEdits file(repo);
  file.UpsertId(path, *written);
  return file.Apply(tree.get());
}

// Where a write of `files` status files puts its blobs: a pack for 100 files or more, as git
// keeps a fetch of 100 objects or more as a pack (transfer.unpackLimit); null (loose) for fewer.
core::Result<std::unique_ptr<git::PackWriter>> PackFor(git_repository* repo, size_t files) {
  if (files < kPackFromFiles) return std::unique_ptr<git::PackWriter>();
  return git::PackWriter::Create(repo);
}

// A commit of `tree_oid` on top of `parent` (none: a root commit); its id in hex.
core::Result<std::string> CreateCommit(git_repository* repo, const git_oid& tree_oid,
                                       git_commit* parent, const GitStatusStoreOptions& options,
                                       const std::string& text) {
  git_tree* raw_tree = nullptr;
  if (int rc = git_tree_lookup(&raw_tree, repo, &tree_oid); rc != 0) {
    return git::LastError(rc, "cannot read the status tree");
  }
  git::Tree tree(raw_tree);
  git_signature* raw_sig = nullptr;
  if (int rc =
          git_signature_now(&raw_sig, options.author_name.c_str(), options.author_email.c_str());
      rc != 0) {
    return git::LastError(rc, "invalid author");
  }
  git::Signature signature(raw_sig);
  std::array<const git_commit*, 1> parents = {parent};
  git_oid commit_oid;
  if (int rc =
          git_commit_create(&commit_oid, repo, nullptr, signature.get(), signature.get(), nullptr,
                            text.c_str(), tree.get(), parent != nullptr ? 1 : 0, parents.data());
      rc != 0) {
    return git::LastError(rc, "cannot create the status commit");
  }
  return git::OidHex(commit_oid);
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
    // The trailer block: Spec-Commit, Ray-Cluster, then any other in name order.
    out += "\n\n";
    const auto add = [&out](const std::string& key, const std::string& value) {
      out += OneLine(key) + ": " + OneLine(value) + "\n";
    };
    for (const char* key : {"Spec-Commit", "Ray-Cluster"}) {
      if (auto it = message.trailers.find(key); it != message.trailers.end()) add(key, it->second);
    }
    for (const auto& [key, value] : message.trailers) {
      if (key != "Spec-Commit" && key != "Ray-Cluster") add(key, value);
    }
    out.pop_back();
  }
  return out + "\n";
}

LocalLedgerRef ChooseLocalLedgerRef(git_repository* repo, const std::string& branch) {
  const std::string local = GitWorkspace::TrackingRef(branch);
  const std::string tracking = "refs/remotes/origin/" + branch;
  auto local_tip = ReadTip(repo, local);
  auto tracking_tip = ReadTip(repo, tracking);
  const bool has_local = local_tip.ok() && local_tip->has_value();
  const bool has_tracking = tracking_tip.ok() && tracking_tip->has_value();
  if (!has_local && !has_tracking) return {};
  if (!has_tracking) return {local, "the local branch " + branch};
  if (!has_local) return {tracking, "origin/" + branch + " as last fetched"};
  const git_oid* l = git_commit_id(local_tip->value().get());
  const git_oid* t = git_commit_id(tracking_tip->value().get());
  if (git_oid_equal(l, t) != 0 || git_graph_descendant_of(repo, l, t) == 1) {
    return {local, "the local branch " + branch + " (it contains origin/" + branch + ")"};
  }
  if (git_graph_descendant_of(repo, t, l) == 1) {
    return {tracking, "origin/" + branch + " (it contains the local branch)"};
  }
  git_error_clear();
  return {tracking, "origin/" + branch + ": the local branch " + branch +
                        " has diverged from it, and the remote is the truth"};
}

core::Result<core::Ledger> GitStatusStore::ReadLedger(const ports::LedgerScope& scope) {
  skipped_.clear();
  scope_ = scope;
  if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
  git_repository* repo = workspace_->repository();
  auto tip = ReadTip(repo, ReadRef());
  if (!tip) return tip.error();
  found_branch_ = tip->has_value();
  known_tip_ = TipId(*tip);
  // Else no rows or records are kept for a write or a pass to come.
  const bool writes = options_.read_ref.empty() && !options_.read_only;
  if (!tip->has_value()) {
    if (writes) KeepRows(row_cache_, std::string(), {}, RowHeader());
    return core::Ledger{};
  }
  auto tree = TreeOf(tip->value().get());
  if (!tree) return tree.error();
  StatusDir dir = OpenStatusDir(repo, tree->get());
  const std::vector<StatusEntryAt> entries = StatusEntries(dir);
  // From here on only blobs are read, by id: the clone may be reopened among them.
  dir.tree.reset();
  tree->reset();
  tip->reset();
  // Records of this tree only are kept in memory for the next pass, when no parse cache
  // keeps them: with one, a second copy of every record would only spare the write decoding
  // the few it changes (from the cache too).
  std::unordered_map<std::string, core::StatusRecord> used;
  ++full_status_reads_;
  const bool keep = writes && options_.parse_cache == nullptr;
  int parses_seen = status_parses_;
  std::optional<core::Error> reopen_failed;
  StatusFiles files = ReadStatusEntries(dir, entries, DecoderInto(keep ? &used : nullptr), [&]() {
    if (status_parses_ == parses_seen) return true;  // found decoded, or in the parse cache
    parses_seen = status_parses_;
    core::Result<bool> reopened = workspace_->NoteBlobRead();
    if (!reopened) reopen_failed = reopened.error();
    return reopened.ok();
  });
  // No clone to read the rest from: the ledger is unknown, not short of the files left.
  if (reopen_failed) return *reopen_failed;
  decoded_ = std::move(used);
  skipped_ = std::move(files.skipped);
  // The rows of every record, of every owner: what a full Write would render. Skipped files
  // have no row either way.
  if (writes) KeepRows(row_cache_, dir.key, files.records, RowHeader());
  return LedgerOfScope(std::move(files.records), scope, options_.branch);
}

core::Result<std::optional<core::Ledger>> GitStatusStore::ReadLedgerOf(
    const ports::LedgerScope& scope, const std::vector<std::string>& names) {
  skipped_.clear();
  scope_ = scope;
  git_repository* repo = workspace_->repository();
  auto tip = ReadTip(repo, ReadRef());
  if (!tip) return tip.error();
  found_branch_ = tip->has_value();
  known_tip_ = TipId(*tip);
  if (!tip->has_value()) return std::optional<core::Ledger>(core::Ledger{});
  auto tree = TreeOf(tip->value().get());
  if (!tree) return tree.error();
  const StatusDir dir = OpenStatusDir(repo, tree->get());
  // status/ that is no folder (ReadLedger reports it) or that cannot be read.
  if (dir.present && !dir.tree) return std::optional<core::Ledger>();
  StatusFiles files = ReadStatusFilesOf(dir, names, NarrowDecoder());
  if (!files.skipped.empty()) return std::optional<core::Ledger>();
  auto ledger = LedgerOfScope(std::move(files.records), scope, options_.branch);
  // Our instance's record of another cluster: ReadLedger's error says which and what to do.
  if (!ledger) return std::optional<core::Ledger>();
  return std::optional<core::Ledger>(std::move(*ledger));
}

core::StatusMarkdownHeader GitStatusStore::RowHeader() const {
  core::StatusMarkdownHeader header = options_.markdown_header;
  if (header.status_branch.empty()) header.status_branch = options_.branch;
  // The watched branch as STATUS.md links to it: --ref HEAD reads the remote's default branch.
  std::string watched = header.watched_branch;
  if (watched.empty() || watched == "HEAD") watched = workspace_->remote_head();
  if (watched.starts_with("refs/heads/")) watched.erase(0, std::string_view("refs/heads/").size());
  header.watched_branch = watched;
  return header;
}

core::Result<std::string> GitStatusStore::Write(const ports::StatusChanges& changes,
                                                const ports::StatusCommit& message) {
  const std::string text = FormatCommitMessage(message);
  core::StatusMarkdownHeader header = RowHeader();
  if (auto it = message.trailers.find("Spec-Commit");
      header.spec_commit.empty() && it != message.trailers.end()) {
    header.spec_commit = it->second;
  }
  for (int attempt = 0; attempt < options_.max_push_attempts; ++attempt) {
    if (attempt > 0) {
      if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
    }
    auto written = WriteOnce(changes, header, text, attempt);
    if (!written) return written.error();
    if (written->has_value()) return std::move(**written);
  }
  return core::Error::Conflict("gave up pushing " + options_.branch + " after " +
                               std::to_string(options_.max_push_attempts) +
                               " attempts; the last refusal: " + last_refusal_);
}

core::Result<std::optional<std::string>> GitStatusStore::WriteOnce(
    const ports::StatusChanges& changes, const core::StatusMarkdownHeader& header,
    const std::string& text, int attempt) {
  git_repository* repo = workspace_->repository();
  auto tip = ReadTip(repo, ReadRef());
  if (!tip) return tip.error();
  auto base = tip->has_value() ? TreeOf(tip->value().get()) : EmptyTree(repo);
  if (!base) return base.error();

  const StatusDir dir = OpenStatusDir(repo, base->get());
  // The rows of this very folder are known: only the changed names' files are read.
  const bool incremental = dir.key && row_cache_.folder == dir.key &&
                           core::SameRowHeader(row_cache_.header, header) &&
                           (!dir.present || dir.tree);
  StatusFiles files = incremental ? ReadStatusFilesOf(dir, NamesOf(changes), WriteDecoder())
                                  : ReadStatusFiles(dir, WriteDecoder());
  if (incremental) {
    ++incremental_writes_;
  } else {
    ++full_status_reads_;
  }
  auto pack = PackFor(repo, changes.size());
  if (!pack) return pack.error();
  TreeEdits edits(repo, pack->get());
  auto planned = PlanChanges(changes, files, scope_, header, base->get(), edits);
  if (!planned) return planned.error();
  UpdateRows(row_cache_, incremental, *planned, files.records, header);
  // What could not be written is reported after what could is published: one job's bad name
  // or unreadable file must not hold back every other job's status.
  const auto done = [&](std::string commit) -> core::Result<std::optional<std::string>> {
    known_tip_ = commit.empty() ? TipId(*tip) : commit;
    if (!planned->refused.empty()) return RefusedChanges(planned->refused, planned->foreign);
    return std::optional<std::string>(std::move(commit));
  };
  if (edits.empty()) {
    row_cache_.folder = dir.key;
    return done("");
  }
  const std::string markdown = core::AssembleStatusMarkdown(row_cache_.rows, header);
  if (*pack) {
    // Before the trees: libgit2 checks that every blob a tree names exists.
    if (core::Status finished = (*pack)->Finish(); !finished) return finished.error();
    if ((*pack)->count() > 0) ++packed_writes_;
  }
  auto tree_oid = ApplyWithFile(repo, base->get(), edits, options_.markdown_path, markdown);
  if (!tree_oid) return tree_oid.error();
  // The rows are those of the folder just built, pushed or not (a tree id names its content).
  row_cache_.folder = StatusDirKey(repo, *tree_oid);
  if (git_oid_equal(&*tree_oid, git_tree_id(base->get())) != 0) return done("");
  auto commit = CreateCommit(repo, *tree_oid, tip->has_value() ? tip->value().get() : nullptr,
                             options_, text);
  if (!commit) return commit.error();

  if (options_.before_push) options_.before_push(attempt);
  ++push_attempts_;
  core::Status pushed = workspace_->PushCommit(*commit, options_.branch);
  if (pushed) return done(*commit);
  if (!pushed.error().IsConflict()) return pushed.error();
  last_refusal_ = pushed.error().message();
  return std::optional<std::string>();  // refused: fetch and build again
}

std::optional<core::Result<core::StatusRecord>> GitStatusStore::DecodeStatusBlob(
    const git_oid& oid, const std::string& path,
    std::unordered_map<std::string, core::StatusRecord>* used, ParseCache* cache) {
  const std::string blob_id = git::OidHex(oid);
  if (auto it = decoded_.find(blob_id); it != decoded_.end()) {
    if (cache != nullptr) cache->KeepStatus(blob_id);
    if (used != nullptr && used != &decoded_) used->insert_or_assign(blob_id, it->second);
    return it->second;
  }
  if (cache != nullptr) {
    if (std::optional<core::StatusRecord> hit = cache->FindStatus(blob_id)) {
      if (used != nullptr) used->insert_or_assign(blob_id, *hit);
      return std::move(*hit);
    }
  }
  std::optional<std::string> text = git::ReadBlob(workspace_->repository(), oid);
  if (!text) return std::nullopt;
  ++status_parses_;
  core::Result<core::StatusRecord> record = spec::DecodeStatusYaml(*text, path);
  if (record.ok()) {
    if (cache != nullptr) cache->PutStatus(blob_id, *record);
    if (used != nullptr) used->insert_or_assign(blob_id, *record);
  }
  return record;
}

core::Result<std::optional<std::string>> GitStatusStore::Tip() {
  if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
  auto tip = ReadTip(workspace_->repository(), ReadRef());
  if (!tip) return tip.error();
  return std::optional<std::string>(TipId(*tip));
}

StatusDecoder GitStatusStore::DecoderInto(
    std::unordered_map<std::string, core::StatusRecord>* used) {
  return [this, used](const git_oid& oid, const std::string& path) {
    return DecodeStatusBlob(oid, path, used, options_.parse_cache.get());
  };
}

StatusDecoder GitStatusStore::WriteDecoder() {
  // A cache let go of (the daemon at rest, then a narrow pass) is not read back for a few files.
  ParseCache* cache = options_.parse_cache.get();
  if (cache != nullptr && !cache->held()) cache = nullptr;
  return [this, cache](const git_oid& oid, const std::string& path) {
    return DecodeStatusBlob(oid, path, cache == nullptr ? &decoded_ : nullptr, cache);
  };
}

StatusDecoder GitStatusStore::NarrowDecoder() {
  return [this](const git_oid& oid, const std::string& path) {
    return DecodeStatusBlob(oid, path, &decoded_, nullptr);
  };
}

core::Result<std::vector<ports::StatusHistoryEntry>> GitStatusStore::History(
    const std::string& name) {
  if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
  git_repository* repo = workspace_->repository();
  auto tip = ReadTip(repo, ReadRef());
  if (!tip) return tip.error();
  found_branch_ = tip->has_value();
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
      auto record = DecodeStatusBlob(*here, path, nullptr, options_.parse_cache.get());
      // A file that cannot be read tells nothing about the run.
      if (!record || !record->ok()) continue;
      entry.record = std::move(**record);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace rg::adapters
