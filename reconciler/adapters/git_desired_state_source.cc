#include "reconciler/adapters/git_desired_state_source.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "reconciler/adapters/code_package.h"
#include "reconciler/adapters/git_common.h"
#include "reconciler/adapters/parse_cache.h"
#include "reconciler/core/identity.h"
#include "reconciler/spec/spec_entry.h"

namespace rg::adapters {
namespace {

std::string TrimDir(std::string_view dir) {
  while (!dir.empty() && dir.back() == '/') dir.remove_suffix(1);
  while (dir.starts_with("./")) dir.remove_prefix(2);
  if (dir == ".") return "";
  return std::string(dir);
}

bool IsUnder(std::string_view path, std::string_view dir) {
  return !dir.empty() && path.size() > dir.size() && path.starts_with(dir) &&
         path[dir.size()] == '/';
}

bool LooksLikeCommitId(std::string_view ref) {
  return ref.size() == GIT_OID_HEXSZ &&
         std::all_of(ref.begin(), ref.end(), [](char c) { return std::isxdigit(c) != 0; });
}

struct BlobAt {
  std::string path;
  git_oid oid;
};

struct RejectedAt {
  std::string path;
  spec::EntryKind kind;
};

struct WalkState {
  std::string prefix;  // the walked subtree's path, with a trailing '/' unless empty
  std::string jobs_dir;
  std::string excluded_dir;
  std::string cluster_file;
  std::vector<BlobAt> blobs;
  std::vector<RejectedAt> rejected;  // links and submodules: never read, each an invalid spec
};

// What a tree entry that is not a regular file is; nullopt for a blob or a folder.
std::optional<spec::EntryKind> IrregularKind(const git_tree_entry* entry) {
  const git_filemode_t mode = git_tree_entry_filemode(entry);
  if (mode == GIT_FILEMODE_LINK) return spec::EntryKind::kSymlink;
  if (mode == GIT_FILEMODE_COMMIT) return spec::EntryKind::kSubmodule;
  return std::nullopt;
}

int CollectSpec(const char* root, const git_tree_entry* entry, void* payload) {
  auto* state = static_cast<WalkState*>(payload);
  const std::string dir = state->prefix + root;
  const char* name = git_tree_entry_name(entry);
  if (git_tree_entry_type(entry) == GIT_OBJECT_TREE) {
    // Skip hidden folders and the excluded one without descending into them.
    if (name[0] == '.') return 1;
    if (!state->excluded_dir.empty() &&
        (dir + name == state->excluded_dir || IsUnder(dir + name, state->excluded_dir))) {
      return 1;
    }
    return 0;
  }
  std::string path = dir + name;
  if (IsUnder(path, state->excluded_dir) || path == state->cluster_file) return 0;
  if (std::optional<spec::EntryKind> kind = IrregularKind(entry)) {
    // A link's blob is its target's path: it is never read, whatever the entry is named.
    if (spec::IsUnderJobsDir(path, state->jobs_dir)) {
      state->rejected.push_back({std::move(path), *kind});
    }
    return 0;
  }
  const git_filemode_t mode = git_tree_entry_filemode(entry);
  if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE) return 0;
  if (!spec::IsSpecPath(path, state->jobs_dir)) return 0;
  state->blobs.push_back({std::move(path), *git_tree_entry_id(entry)});
  return 0;
}

// At most kMaxSpecFileBytes + 1 bytes: enough for the loader to reject a larger file without
// holding all of it.
core::Result<std::string> ReadSpecBlob(git_repository* repo, const git_oid& oid,
                                       const std::string& path) {
  git_blob* raw = nullptr;
  if (int rc = git_blob_lookup(&raw, repo, &oid); rc != 0) {
    return git::LastError(rc, "cannot read " + path);
  }
  git::Blob blob(raw);
  const auto* data = static_cast<const char*>(git_blob_rawcontent(blob.get()));
  const auto size = static_cast<size_t>(git_blob_rawsize(blob.get()));
  return std::string(data, std::min(size, spec::kMaxSpecFileBytes + 1));
}

// Something other than a folder at the jobs folder's path or at a folder above it (a link, a
// submodule, a file); nullopt when the path is a folder or holds nothing.
std::optional<core::Diagnostic> JobsDirProblem(git_tree* root, const std::string& jobs_dir) {
  for (size_t end = jobs_dir.find('/');; end = jobs_dir.find('/', end + 1)) {
    const std::string prefix = jobs_dir.substr(0, end);
    git_tree_entry* raw = nullptr;
    if (git_tree_entry_bypath(&raw, root, prefix.c_str()) != 0) {
      git_error_clear();
      return std::nullopt;
    }
    git::TreeEntry entry(raw);
    if (git_tree_entry_type(entry.get()) != GIT_OBJECT_TREE) {
      const spec::EntryKind kind =
          IrregularKind(entry.get()).value_or(spec::EntryKind::kNotRegular);
      return core::Diagnostic{prefix, 0, 0, spec::EntryMessage(kind, spec::EntryRole::kJobsDir)};
    }
    if (end == std::string::npos) return std::nullopt;
  }
}

// Every JobSpec blob under the jobs folder of `tree` (or the whole tree), and the entries that
// cannot be specs. A jobs folder that is a link or a file is an error: read as "no specs", it
// would stop every run as removed.
core::Result<WalkState> ListSpecBlobs(git_repository* repo, git_tree* tree,
                                      const GitDesiredStateOptions& options,
                                      const std::string& commit) {
  WalkState walk;
  walk.jobs_dir = options.jobs_dir;
  walk.excluded_dir = options.excluded_dir;
  walk.cluster_file = options.cluster_file;
  git::Tree jobs_tree;
  git_tree* walk_root = tree;
  if (!options.jobs_dir.empty()) {
    if (std::optional<core::Diagnostic> problem = JobsDirProblem(tree, options.jobs_dir)) {
      return core::Error::InvalidInput(problem->ToString() + " (in " + commit + ")");
    }
    walk.prefix = options.jobs_dir + "/";
    walk_root = nullptr;
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree, options.jobs_dir.c_str()) == 0) {
      git::TreeEntry entry(raw_entry);
      git_object* object = nullptr;
      if (git_tree_entry_type(entry.get()) == GIT_OBJECT_TREE &&
          git_tree_entry_to_object(&object, repo, entry.get()) == 0) {
        jobs_tree.reset(reinterpret_cast<git_tree*>(object));
        walk_root = jobs_tree.get();
      }
    }
    git_error_clear();
  }
  if (walk_root != nullptr) {
    if (int rc = git_tree_walk(walk_root, GIT_TREEWALK_PRE, CollectSpec, &walk); rc != 0) {
      return git::LastError(rc, "cannot list " + options.jobs_dir + " in " + commit);
    }
  }
  return walk;
}

// What to do about a commit that cannot be found, when the repository is a shallow clone (the
// default of common CI checkouts): its history ends early, so older commits are not there.
std::string ShallowHint(git_repository* repo) {
  if (git_repository_is_shallow(repo) != 1) return "";
  return " (this is a shallow clone: its history stops early; fetch full history with `git "
         "fetch --unshallow`, or check out with fetch-depth: 0)";
}

// The tree of commit `hex`; nullopt when it cannot be read.
std::optional<git::Tree> CommitTree(git_repository* repo, const std::string& hex) {
  std::optional<git_oid> oid = git::ParseOid(hex);
  git_commit* raw_commit = nullptr;
  if (!oid || git_commit_lookup(&raw_commit, repo, &*oid) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git::Commit commit(raw_commit);
  git_tree* raw_tree = nullptr;
  if (git_commit_tree(&raw_tree, commit.get()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  return git::Tree(raw_tree);
}

// The entry at `path` of `tree` (nullptr when there is none).
git::TreeEntry EntryAt(git_tree* tree, const std::string& path) {
  git_tree_entry* raw = nullptr;
  if (git_tree_entry_bypath(&raw, tree, path.c_str()) != 0) {
    git_error_clear();
    return {};
  }
  return git::TreeEntry(raw);
}

// Both trees hold the same thing at `path`: nothing, or one object with one mode.
bool SameEntry(git_tree* before, git_tree* after, const std::string& path) {
  const git::TreeEntry a = EntryAt(before, path);
  const git::TreeEntry b = EntryAt(after, path);
  if (!a || !b) return !a && !b;
  return git_tree_entry_filemode(a.get()) == git_tree_entry_filemode(b.get()) &&
         git_oid_equal(git_tree_entry_id(a.get()), git_tree_entry_id(b.get())) != 0;
}

// The jobs folder of `tree` as a tree (the root itself when jobs_dir is empty); nullopt when
// it has none.
std::optional<git::Tree> JobsTree(git_repository* repo, git_tree* tree,
                                  const std::string& jobs_dir) {
  if (jobs_dir.empty()) {
    git_tree* copy = nullptr;
    if (git_tree_dup(&copy, tree) != 0) return std::nullopt;
    return git::Tree(copy);
  }
  const git::TreeEntry entry = EntryAt(tree, jobs_dir);
  git_object* object = nullptr;
  if (!entry || git_tree_entry_type(entry.get()) != GIT_OBJECT_TREE ||
      git_tree_entry_to_object(&object, repo, entry.get()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  return git::Tree(reinterpret_cast<git_tree*>(object));
}

// The spec files that differ between two jobs folders: old paths modified or removed, new
// paths added or modified (with their blobs). False when anything else differs under the
// folder that Load would read (a link, a submodule), or when git cannot say.
struct SpecDelta {
  std::vector<std::string> gone;
  std::vector<BlobAt> added;
};

bool Irregular(uint32_t mode) { return mode == GIT_FILEMODE_LINK || mode == GIT_FILEMODE_COMMIT; }

bool DiffJobsTrees(git_repository* repo, git_tree* before, git_tree* after, const WalkState& filter,
                   SpecDelta& out) {
  git_diff_options options{};
  git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION);
  options.flags = GIT_DIFF_SKIP_BINARY_CHECK;
  git_diff* raw = nullptr;
  if (git_diff_tree_to_tree(&raw, repo, before, after, &options) != 0) {
    git_error_clear();
    return false;
  }
  const std::unique_ptr<git_diff, decltype(&git_diff_free)> diff(raw, git_diff_free);
  const size_t count = git_diff_num_deltas(diff.get());
  for (size_t i = 0; i < count; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    for (const git_diff_file* file : {&delta->old_file, &delta->new_file}) {
      if ((file->flags & GIT_DIFF_FLAG_EXISTS) == 0) continue;
      const std::string path = filter.prefix + file->path;
      if (IsUnder(path, filter.excluded_dir) || path == filter.cluster_file) continue;
      if (Irregular(file->mode)) {
        if (spec::IsUnderJobsDir(path, filter.jobs_dir)) return false;
        continue;
      }
      if (!spec::IsSpecPath(path, filter.jobs_dir)) continue;
      if (file == &delta->old_file) {
        out.gone.push_back(path);
      } else {
        out.added.push_back({path, file->id});
      }
    }
  }
  return true;
}

}  // namespace

GitDesiredStateSource::GitDesiredStateSource(std::shared_ptr<GitWorkspace> workspace,
                                             GitDesiredStateOptions options)
    : workspace_(std::move(workspace)),
      options_(std::move(options)),
      zones_(options_.zoneinfo_dir) {
  options_.jobs_dir = TrimDir(options_.jobs_dir);
  options_.excluded_dir = TrimDir(options_.excluded_dir);
}

core::Result<GitDesiredStateSource::ResolvedRef> GitDesiredStateSource::Resolve(
    const std::string& ref) {
  git_repository* repo = workspace_->repository();
  if (workspace_->in_place()) {
    // The user's own repository: revisions mean what they mean to git there.
    if (std::optional<std::string> commit = git::RevparseCommit(repo, ref.empty() ? "HEAD" : ref)) {
      return ResolvedRef{ref.empty() ? "HEAD" : ref, *commit};
    }
    return core::Error::NotFound("no branch, tag or commit \"" + ref + "\" in " +
                                 workspace_->url() + ShallowHint(repo));
  }
  std::vector<std::pair<std::string, std::string>> candidates;  // (ref to look up, reported)
  if (ref.empty() || ref == "HEAD") {
    if (workspace_->remote_head().empty()) {
      return core::Error::NotFound("the remote " + workspace_->url() + " has no HEAD branch");
    }
    candidates.emplace_back(GitWorkspace::TrackingRef(workspace_->remote_head()),
                            workspace_->remote_head());
  } else if (ref.starts_with("refs/heads/")) {
    candidates.emplace_back(GitWorkspace::TrackingRef(ref), ref);
  } else if (ref.starts_with("refs/")) {
    candidates.emplace_back(ref, ref);
  } else {
    candidates.emplace_back(GitWorkspace::TrackingRef(ref), "refs/heads/" + ref);
    candidates.emplace_back("refs/tags/" + ref, "refs/tags/" + ref);
  }
  for (const auto& [lookup, reported] : candidates) {
    git_reference* raw = nullptr;
    int rc = git_reference_lookup(&raw, repo, lookup.c_str());
    git::Reference reference(raw);
    if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC) continue;
    if (rc != 0) return git::LastError(rc, "cannot read " + lookup);
    git_object* peeled = nullptr;
    rc = git_reference_peel(&peeled, reference.get(), GIT_OBJECT_COMMIT);
    git::Object commit(peeled);
    if (rc != 0) return git::LastError(rc, lookup + " does not point at a commit");
    return ResolvedRef{reported, git::OidHex(*git_object_id(commit.get()))};
  }
  if (LooksLikeCommitId(ref)) {
    auto oid = git::ParseOid(ref);
    git_commit* raw = nullptr;
    if (oid && git_commit_lookup(&raw, repo, &*oid) == 0) {
      git_commit_free(raw);
      return ResolvedRef{git::OidHex(*oid), git::OidHex(*oid)};
    }
  }
  git_error_clear();
  // Anything else git understands: main~1, a short commit id, refs of the remote's remotes.
  if (std::optional<std::string> commit = git::RevparseCommit(repo, ref)) {
    return ResolvedRef{ref, *commit};
  }
  return core::Error::NotFound("no branch, tag or commit \"" + ref + "\" in " + workspace_->url());
}

core::Result<GitDesiredStateSource::CachedSpec> GitDesiredStateSource::ParseSpecBlob(
    git_repository* repo, const git_oid& oid, const std::string& blob_id, const std::string& path) {
  ParseCache* cache = options_.parse_cache.get();
  if (cache != nullptr) {
    if (std::optional<CachedSpecFile> hit = cache->FindSpec(blob_id, path, options_.jobs_dir)) {
      return CachedSpec{std::move(hit->loaded)};
    }
  }
  auto text = ReadSpecBlob(repo, oid, path);
  if (!text) return text.error();
  ++spec_parses_;
  auto loaded = spec::ParseSpecFileForDesiredState(*text, path, options_.jobs_dir);
  if (cache != nullptr) cache->PutSpec(blob_id, path, options_.jobs_dir, *loaded);
  return CachedSpec{std::move(loaded)};
}

std::shared_ptr<const spec::LoadedJobSpec> GitDesiredStateSource::ForPass(
    std::shared_ptr<const spec::LoadedJobSpec> loaded, bool lean) const {
  if (!lean || !options_.lean_instance || !loaded || !loaded->parsed.value) return loaded;
  // Lean already (this source's own map keeps lean specs): nothing to bind or let go.
  if (!loaded->parsed.value->document.is_object()) return loaded;
  std::shared_ptr<spec::LoadedJobSpec> own = spec::OwnLoadedSpec(std::move(loaded));
  core::JobSpec& spec = *own->parsed.value;
  core::BindSpecToInstance(spec, *options_.lean_instance);  // needs the document
  // A job with `after` keeps it: its hash takes in its upstreams' in every pass
  // (core::BindDesiredState); so does a job with `code`, whose hash takes in its code's tree.
  if (!spec.pipeline().after.empty() || spec.has_code()) return own;
  spec.document = core::Value();
  spec.positions.clear();
  return own;
}

core::Result<GitDesiredStateSource::CachedSpec> GitDesiredStateSource::SpecFile(
    git_repository* repo, const git_oid& oid, const std::string& path,
    std::map<std::string, CachedSpec>& next_cache) {
  const std::string blob_id = git::OidHex(oid);
  if (options_.parse_cache) return ParseSpecBlob(repo, oid, blob_id, path);
  std::string key = blob_id;
  key += '\0';
  key += path;
  auto it = spec_cache_.find(key);
  if (it == spec_cache_.end()) {
    auto parsed = ParseSpecBlob(repo, oid, blob_id, path);
    if (!parsed) return parsed.error();
    parsed->loaded = ForPass(std::move(parsed->loaded), true);
    it = spec_cache_.emplace(key, std::move(*parsed)).first;
  }
  next_cache.insert(*it);
  return it->second;
}

core::Result<GitDesiredStateSource::CachedCluster> GitDesiredStateSource::ParseClusterBlob(
    git_repository* repo, const git_oid& oid, const std::string& blob_id) {
  ParseCache* cache = options_.parse_cache.get();
  if (cache != nullptr) {
    if (std::optional<CachedClusterFile> hit = cache->FindCluster(blob_id, options_.cluster_file)) {
      return CachedCluster{std::move(hit->text), std::move(hit->parsed)};
    }
  }
  auto text = ReadSpecBlob(repo, oid, options_.cluster_file);
  if (!text) return text.error();
  ++cluster_parses_;
  auto parsed = spec::LoadRayConfig(*text, options_.cluster_file);
  if (cache != nullptr) cache->PutCluster(blob_id, options_.cluster_file, *text, parsed);
  return CachedCluster{std::move(*text), std::move(parsed)};
}

core::Result<std::optional<spec::Parsed<core::RayConfig>>> GitDesiredStateSource::ReadClusterFile(
    git_repository* repo, git_tree* tree, ports::DesiredSnapshot& snapshot,
    std::map<std::string, CachedCluster>& next_cache, bool keep) {
  std::optional<spec::Parsed<core::RayConfig>> cluster;
  git_tree_entry* raw_entry = nullptr;
  if (git_tree_entry_bypath(&raw_entry, tree, options_.cluster_file.c_str()) != 0) {
    git_error_clear();
    return cluster;
  }
  git::TreeEntry entry(raw_entry);
  if (std::optional<spec::EntryKind> kind = IrregularKind(entry.get())) {
    return std::optional(spec::RejectedClusterEntry(options_.cluster_file, *kind));
  }
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return cluster;
  const git_oid& oid = *git_tree_entry_id(entry.get());
  const std::string key = git::OidHex(oid);
  auto it = cluster_cache_.find(key);
  if (it == cluster_cache_.end()) {
    auto parsed = ParseClusterBlob(repo, oid, key);
    if (!parsed) return parsed.error();
    it = cluster_cache_.emplace(key, std::move(*parsed)).first;
  } else if (options_.parse_cache && keep) {
    options_.parse_cache->KeepCluster(key, options_.cluster_file);
  }
  snapshot.texts.emplace(options_.cluster_file, it->second.text);
  next_cache.insert(*it);
  return std::optional(it->second.parsed);
}

core::Result<ports::DesiredSnapshot> GitDesiredStateSource::Load(const std::string& ref) {
  if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
  return Read(ref);
}

core::Result<ports::DesiredSnapshot> GitDesiredStateSource::Read(const std::string& ref) {
  return ReadCommit(ref, true);
}

core::Result<ports::DesiredSnapshot> GitDesiredStateSource::ReadWhole(const std::string& ref) {
  return ReadCommit(ref, false);
}

void GitDesiredStateSource::PutPendingSpecs() {
  if (options_.parse_cache) {
    for (const PendingSpec& p : pending_specs_) {
      options_.parse_cache->PutSpec(p.blob_id, p.path, options_.jobs_dir, *p.loaded);
    }
  }
  pending_specs_.clear();
}

core::Result<ports::DesiredSnapshot> GitDesiredStateSource::ReadCommit(const std::string& ref,
                                                                       bool lean) {
  auto resolved = Resolve(ref);
  if (!resolved) return resolved.error();

  git_repository* repo = workspace_->repository();
  const git_oid commit_oid = *git::ParseOid(resolved->commit);
  git_commit* raw_commit = nullptr;
  if (int rc = git_commit_lookup(&raw_commit, repo, &commit_oid); rc != 0) {
    return git::LastError(rc, "cannot read commit " + resolved->commit + ShallowHint(repo));
  }
  git::Commit commit(raw_commit);
  git_tree* raw_tree = nullptr;
  if (int rc = git_commit_tree(&raw_tree, commit.get()); rc != 0) {
    return git::LastError(rc, "cannot read the tree of " + resolved->commit);
  }
  git::Tree tree(raw_tree);

  ports::DesiredSnapshot snapshot;
  snapshot.commit = resolved->commit;
  snapshot.ref = resolved->name;
  snapshot.repo_url = workspace_->recorded_url();
  snapshot.repo_aliases = workspace_->aliases();

  PutPendingSpecs();
  std::map<std::string, CachedCluster> next_cluster_cache;
  auto cluster = ReadClusterFile(repo, tree.get(), snapshot, next_cluster_cache);
  if (!cluster.ok()) return cluster.error();
  core::Result<WalkState> walk = ListSpecBlobs(repo, tree.get(), options_, resolved->commit);
  if (!walk.ok()) return walk.error();
  // From here on only blobs are read, by id: nothing of the repository is held between two
  // reads, so the workspace may reopen it among them (GitWorkspace::NoteBlobRead).
  tree.reset();
  commit.reset();
  std::map<std::string, CachedSpec> next_spec_cache;
  std::vector<spec::LoadedSpecFile> files;
  files.reserve(walk->blobs.size() + walk->rejected.size());
  for (const RejectedAt& entry : walk->rejected) {
    files.push_back(spec::RejectedSpecEntry(entry.path, options_.jobs_dir, entry.kind));
  }
  // A whole read of a lean source leaves its own map alone: the map holds lean specs.
  const bool own_map = lean || !options_.lean_instance;
  for (const BlobAt& blob : walk->blobs) {
    const int parses_before = spec_parses_;
    core::Result<CachedSpec> spec =
        own_map ? SpecFile(repo, blob.oid, blob.path, next_spec_cache)
                : ParseSpecBlob(repo, blob.oid, git::OidHex(blob.oid), blob.path);
    if (!spec) return spec.error();
    if (spec_parses_ != parses_before) {
      core::Result<bool> reopened = workspace_->NoteBlobRead();
      if (!reopened) return reopened.error();
      if (*reopened) repo = workspace_->repository();
    }
    files.push_back({blob.path, ForPass(std::move(spec->loaded), lean)});
  }
  if (own_map) spec_cache_ = std::move(next_spec_cache);
  cluster_cache_ = std::move(next_cluster_cache);

  snapshot.state = spec::CheckDesiredStateSet(*cluster, options_.cluster_file, std::move(files));
  ResolveAfterLoading(snapshot.state, resolved->commit);
  return snapshot;
}

void GitDesiredStateSource::ResolveAfterLoading(core::DesiredState& state,
                                                const std::string& commit) {
  ResolveScheduleZones(state, zones_);
  code_folders_.ResolveAtCommit(state, workspace_->repository(), commit,
                                [this](const std::string& ref) -> core::Result<std::string> {
                                  core::Result<ResolvedRef> resolved = Resolve(ref);
                                  if (!resolved.ok()) return resolved.error();
                                  return resolved->commit;
                                });
}

core::Result<std::string> GitDesiredStateSource::CodeZip(const std::string& tree_id) {
  return BuildCodeZip(workspace_->repository(), tree_id);
}

core::Result<std::vector<std::string>> GitDesiredStateSource::CodeChanges(
    const std::string& from_tree, const std::string& to_tree) {
  git_repository* repo = workspace_->repository();
  std::optional<git_oid> from = git::ParseOid(from_tree);
  std::optional<git_oid> to = git::ParseOid(to_tree);
  git_tree* raw_from = nullptr;
  git_tree* raw_to = nullptr;
  if (!from || !to || git_tree_lookup(&raw_from, repo, &*from) != 0) {
    git_error_clear();
    return core::Error::NotFound("code tree " + from_tree + " is not in the local copy");
  }
  git::Tree before(raw_from);
  if (git_tree_lookup(&raw_to, repo, &*to) != 0) {
    git_error_clear();
    return core::Error::NotFound("code tree " + to_tree + " is not in the local copy");
  }
  git::Tree after(raw_to);
  git_diff_options options{};
  git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION);
  options.flags = GIT_DIFF_SKIP_BINARY_CHECK;
  git_diff* raw = nullptr;
  if (int rc = git_diff_tree_to_tree(&raw, repo, before.get(), after.get(), &options); rc != 0) {
    return git::LastError(rc, "cannot compare code trees");
  }
  const std::unique_ptr<git_diff, decltype(&git_diff_free)> diff(raw, git_diff_free);
  std::vector<std::string> paths;
  const size_t count = git_diff_num_deltas(diff.get());
  for (size_t i = 0; i < count; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    const git_diff_file& file =
        (delta->new_file.flags & GIT_DIFF_FLAG_EXISTS) != 0 ? delta->new_file : delta->old_file;
    paths.emplace_back(file.path);
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

core::Result<std::optional<std::string>> GitDesiredStateSource::Head(const std::string& ref) {
  if (core::Status fetched = workspace_->Fetch(); !fetched) return fetched.error();
  auto resolved = Resolve(ref);
  if (!resolved) return resolved.error();
  return std::optional<std::string>(resolved->commit);
}

ports::CommitRelation GitDesiredStateSource::Relate(const std::string& commit,
                                                    const std::string& pass_commit) {
  if (commit == pass_commit) return ports::CommitRelation::kAncestorOrSame;
  git_repository* repo = workspace_->repository();
  git_oid run{};
  git_oid pass{};
  if (commit.size() != GIT_OID_HEXSZ || git_oid_fromstrn(&run, commit.data(), commit.size()) != 0 ||
      git_oid_fromstrn(&pass, pass_commit.data(), pass_commit.size()) != 0) {
    return ports::CommitRelation::kUnknown;
  }
  git_odb* odb = nullptr;
  bool present = false;
  if (git_repository_odb(&odb, repo) == 0) {
    present = git_odb_exists(odb, &run) == 1;
    git_odb_free(odb);
  }
  ports::CommitRelation relation = ports::CommitRelation::kUnknown;
  if (present) {
    if (git_graph_descendant_of(repo, &pass, &run) == 1) {
      return ports::CommitRelation::kAncestorOrSame;
    }
    relation = git_graph_descendant_of(repo, &run, &pass) == 1 ? ports::CommitRelation::kDescendant
                                                               : ports::CommitRelation::kDiverged;
  }
  if (relation == ports::CommitRelation::kDiverged) return relation;
  // Outside the view: seen so before a fetch that has happened since, it is off the branch.
  auto [since, fresh] = outside_view_since_.try_emplace(commit, workspace_->fetches());
  if (!fresh && since->second < workspace_->fetches()) return ports::CommitRelation::kDiverged;
  return relation;
}

}  // namespace rg::adapters

namespace rg::adapters {

core::Result<std::optional<ports::SpecChanges>> GitDesiredStateSource::LoadChanges(
    const std::string& ref, const std::string& since, size_t max_files) {
  const std::optional<ports::SpecChanges> cannot;
  auto resolved = Resolve(ref);
  if (!resolved) return resolved.error();
  git_repository* repo = workspace_->repository();
  std::optional<git::Tree> before = CommitTree(repo, since);
  std::optional<git::Tree> after = CommitTree(repo, resolved->commit);
  if (!before || !after || !SameEntry(before->get(), after->get(), options_.cluster_file)) {
    return cannot;
  }
  if (!options_.jobs_dir.empty() && JobsDirProblem(after->get(), options_.jobs_dir)) return cannot;
  ports::SpecChanges changes;
  ports::DesiredSnapshot& snapshot = changes.snapshot;
  snapshot.commit = resolved->commit;
  snapshot.ref = resolved->name;
  snapshot.repo_url = workspace_->recorded_url();
  snapshot.repo_aliases = workspace_->aliases();
  std::map<std::string, CachedCluster> next_cluster_cache;
  // The persistent cache is left alone: loading it would cost more than the narrow pass.
  auto cluster = ReadClusterFile(repo, after->get(), snapshot, next_cluster_cache, false);
  if (!cluster.ok()) return cluster.error();
  cluster_cache_ = std::move(next_cluster_cache);

  WalkState filter;
  filter.jobs_dir = options_.jobs_dir;
  filter.excluded_dir = options_.excluded_dir;
  filter.cluster_file = options_.cluster_file;
  filter.prefix = options_.jobs_dir.empty() ? "" : options_.jobs_dir + "/";
  std::optional<git::Tree> old_jobs = JobsTree(repo, before->get(), options_.jobs_dir);
  std::optional<git::Tree> new_jobs = JobsTree(repo, after->get(), options_.jobs_dir);
  if (!old_jobs || !new_jobs) return cannot;
  SpecDelta delta;
  if (!DiffJobsTrees(repo, old_jobs->get(), new_jobs->get(), filter, delta) ||
      std::max(delta.gone.size(), delta.added.size()) > max_files) {
    return cannot;
  }
  std::vector<spec::LoadedSpecFile> files;
  for (const BlobAt& blob : delta.added) {
    auto text = ReadSpecBlob(repo, blob.oid, blob.path);
    if (!text) return text.error();
    ++spec_parses_;
    std::shared_ptr<const spec::LoadedJobSpec> loaded =
        spec::ParseSpecFileForDesiredState(*text, blob.path, options_.jobs_dir);
    if (options_.parse_cache) pending_specs_.push_back({git::OidHex(blob.oid), blob.path, loaded});
    files.push_back({blob.path, ForPass(std::move(loaded), true)});
    snapshot.texts.emplace(blob.path, std::move(*text));
  }
  snapshot.state = spec::CheckDesiredStateSet(*cluster, options_.cluster_file, std::move(files));
  ResolveAfterLoading(snapshot.state, resolved->commit);
  changes.gone = std::move(delta.gone);
  return std::optional(std::move(changes));
}

namespace {

// The blob at `path` in commit `commit`; nullopt when there is none (or not a regular file).
std::optional<git_oid> BlobAtPath(git_repository* repo, const std::string& commit,
                                  const std::string& path) {
  std::optional<git::Tree> tree = CommitTree(repo, commit);
  git_tree_entry* raw = nullptr;
  if (!tree || git_tree_entry_bypath(&raw, tree->get(), path.c_str()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git::TreeEntry entry(raw);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB || IrregularKind(entry.get())) {
    return std::nullopt;
  }
  return *git_tree_entry_id(entry.get());
}

}  // namespace

std::string GitDesiredStateSource::SpecText(const ports::DesiredSnapshot& snapshot,
                                            const std::string& path) {
  if (auto it = snapshot.texts.find(path); it != snapshot.texts.end()) return it->second;
  git_repository* repo = workspace_->repository();
  std::optional<git_oid> oid = BlobAtPath(repo, snapshot.commit, path);
  if (!oid) return "";
  core::Result<std::string> text = ReadSpecBlob(repo, *oid, path);
  return text.ok() ? std::move(*text) : std::string();
}

core::Result<std::optional<core::JobSpec>> GitDesiredStateSource::ReadWholeSpec(
    const std::string& commit, const std::string& path) {
  git_repository* repo = workspace_->repository();
  std::optional<git_oid> oid = BlobAtPath(repo, commit, path);
  if (!oid) return std::optional<core::JobSpec>();
  core::Result<CachedSpec> spec = ParseSpecBlob(repo, *oid, git::OidHex(*oid), path);
  if (!spec) return spec.error();
  const spec::Parsed<core::JobSpec>& parsed = spec->loaded->parsed;
  if (!parsed.diagnostics.empty() || !parsed.value) return std::optional<core::JobSpec>();
  return std::optional(*parsed.value);
}

}  // namespace rg::adapters

namespace rg::adapters {
namespace {

// The Git tree at `folder` of `tree` (`tree` itself for ""), hex; empty when there is none.
std::string FolderTreeId(git_tree* tree, const std::string& folder) {
  if (folder.empty()) return git::OidHex(*git_tree_id(tree));
  const git::TreeEntry entry = EntryAt(tree, folder);
  if (!entry || git_tree_entry_type(entry.get()) != GIT_OBJECT_TREE) return "";
  return git::OidHex(*git_tree_entry_id(entry.get()));
}

std::string FolderName(const std::string& folder) { return folder.empty() ? "." : folder; }

// The spec files that differ between the jobs folders of two trees, as Load reads them: other
// files, hidden folders and the excluded folder do not count. The folder itself when it came
// or went, or when something but spec files changed in it (a link, a submodule).
std::vector<std::string> ChangedSpecFiles(git_repository* repo, git_tree* before, git_tree* after,
                                          const GitDesiredStateOptions& options) {
  const std::optional<git::Tree> old_jobs = JobsTree(repo, before, options.jobs_dir);
  const std::optional<git::Tree> new_jobs = JobsTree(repo, after, options.jobs_dir);
  if (!old_jobs || !new_jobs) {
    if (!old_jobs && !new_jobs) return {};
    return {FolderName(options.jobs_dir)};
  }
  if (git_oid_equal(git_tree_id(old_jobs->get()), git_tree_id(new_jobs->get())) != 0) return {};
  WalkState filter;
  filter.jobs_dir = options.jobs_dir;
  filter.excluded_dir = options.excluded_dir;
  filter.cluster_file = options.cluster_file;
  filter.prefix = options.jobs_dir.empty() ? "" : options.jobs_dir + "/";
  SpecDelta delta;
  if (!DiffJobsTrees(repo, old_jobs->get(), new_jobs->get(), filter, delta)) {
    return {FolderName(options.jobs_dir)};
  }
  std::vector<std::string> paths = std::move(delta.gone);
  for (BlobAt& blob : delta.added) paths.push_back(std::move(blob.path));
  return paths;
}

}  // namespace

core::Result<std::optional<std::string>> GitDesiredStateSource::RemoteTip(const std::string& ref) {
  if (workspace_->in_place() || !ref.starts_with("refs/")) return std::optional<std::string>();
  const std::string peeled = ref + "^{}";
  core::Result<std::map<std::string, std::string>> refs = workspace_->RemoteRefs({ref, peeled});
  if (!refs.ok()) return refs.error();
  for (const std::string& name : {peeled, ref}) {
    if (auto it = refs->find(name); it != refs->end()) return std::optional(it->second);
  }
  return core::Error::NotFound("the remote " + workspace_->url() + " no longer has " + ref);
}

core::Result<ports::TipChanges> GitDesiredStateSource::ChangesAtTip(
    const ports::DesiredSnapshot& snapshot) {
  core::Result<std::optional<std::string>> head = Head(snapshot.ref);
  if (!head.ok()) return head.error();
  ports::TipChanges tip;
  tip.commit = head->value_or(snapshot.commit);
  if (tip.commit == snapshot.commit) return tip;
  git_repository* repo = workspace_->repository();
  const std::optional<git::Tree> before = CommitTree(repo, snapshot.commit);
  const std::optional<git::Tree> after = CommitTree(repo, tip.commit);
  if (!before || !after) {
    tip.changed.emplace_back("the desired state");
    return tip;
  }
  std::set<std::string> changed;
  if (!SameEntry(before->get(), after->get(), options_.cluster_file)) {
    changed.insert(options_.cluster_file);
  }
  for (std::string& path : ChangedSpecFiles(repo, before->get(), after->get(), options_)) {
    changed.insert(std::move(path));
  }
  // Each spec's code: the tree the pass would ship against the one the tip gives.
  for (const core::JobSpec& spec : snapshot.state.jobs) {
    if (!spec.has_code()) continue;
    const core::CodeFields& code = spec.code();
    std::optional<git::Tree> ref_tree;
    git_tree* tree = after->get();
    if (code.ref) {
      core::Result<ResolvedRef> resolved = Resolve(*code.ref);
      if (resolved.ok()) ref_tree = CommitTree(repo, resolved->commit);
      tree = ref_tree ? ref_tree->get() : nullptr;
    }
    if (tree == nullptr || FolderTreeId(tree, code.folder) != code.tree_id) {
      changed.insert(FolderName(code.folder));
    }
  }
  tip.changed.assign(changed.begin(), changed.end());
  return tip;
}

}  // namespace rg::adapters
