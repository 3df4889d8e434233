#include "reconciler/adapters/code_folders.h"

#include <git2.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reconciler/adapters/git_common.h"
#include "reconciler/core/byte_size.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/spec/spec_loader.h"
#include "reconciler/spec/verl_config.h"

namespace rg::adapters {

namespace fs = std::filesystem;
namespace {

// "code: <what is wrong>", unless the message names its field already.
std::string FieldMessage(std::string_view field, const std::string& message) {
  if (message.starts_with(std::string(field) + ":")) return message;
  return std::string(field) + ": " + message;
}

}  // namespace

core::Status CodeFolders::CheckSize(const core::JobSpec& spec, const CodeFolderInfo& info,
                                    int64_t max_bytes, const ZipSize& zip_size) {
  const auto limit = static_cast<uint64_t>(max_bytes);
  // The files themselves first: their sizes are known without reading any of them, and a
  // folder that only compresses well (a file of zeros) would unpack past the limit on the node.
  if (info.bytes > limit) {
    return FolderTooLarge(spec.code().folder, info.bytes, limit, info.largest);
  }
  if (ZipSizeUpperBound(info) <= limit) return {};
  std::string key = info.tree_id;
  key.append("\n").append(std::to_string(max_bytes));
  if (auto it = size_checked_.find(key); it != size_checked_.end()) return it->second;
  // Over the bound, which assumes nothing compresses: only the zip itself can tell.
  core::Status verdict;
  core::Result<uint64_t> zip = zip_size(spec, info);
  if (!zip.ok()) return zip.error();  // not kept: a read that failed may succeed next time
  if (*zip > limit) {
    std::string message = spec.code().folder + " would be a zip of " + core::HumanBytes(*zip) +
                          ", over the limit of " + core::HumanBytes(limit) +
                          " (code_max_bytes in the cluster file; Ray's dashboard takes at most "
                          "100 MiB); its largest files: ";
    for (size_t i = 0; i < info.largest.size(); ++i) {
      if (i > 0) message += ", ";
      message.append(spec.code().folder).append("/").append(info.largest[i].first);
      message.append(" (").append(core::HumanBytes(info.largest[i].second)).append(")");
    }
    message +=
        ". Keep data and checkpoints out of the code folder (shared_root, or export-ignore "
        "in its .gitattributes)";
    verdict = core::Error::InvalidInput(std::move(message));
  }
  size_checked_.insert_or_assign(std::move(key), verdict);
  return verdict;
}

void CodeFolders::Resolve(core::DesiredState& state, const Inspect& inspect,
                          const ZipSize& zip_size, const RefResolver& resolve_ref,
                          const std::string& head_commit) {
  const int64_t max_bytes = state.cluster && state.cluster->code_max_bytes
                                ? *state.cluster->code_max_bytes
                                : core::kMaxCodeBytes;
  std::vector<core::InvalidSpec> moved;
  std::vector<bool> failed(state.jobs.size(), false);
  // Specs sharing a folder at one commit are inspected once.
  std::map<std::string, core::Result<CodeFolderInfo>, std::less<>> inspected;
  for (size_t i = 0; i < state.jobs.size(); ++i) {
    core::JobSpec& spec = state.jobs[i];
    if (!spec.has_code()) continue;
    state.uses_code = true;
    core::CodeFields& code = spec.mutable_code();
    auto fail = [&](core::SourcePos pos, std::string message) {
      core::InvalidSpec bad;
      bad.path = spec.path;
      bad.name = spec.name;
      bad.diagnostics.push_back({spec.path, pos.line, pos.column, std::move(message)});
      moved.push_back(std::move(bad));
      failed[i] = true;
    };
    std::string commit = head_commit;
    if (code.ref) {
      core::Result<std::string> resolved = resolve_ref(*code.ref);
      if (!resolved.ok()) {
        fail(code.ref_pos, FieldMessage("code_ref", resolved.error().message()));
        continue;
      }
      commit = *resolved;
    }
    std::string key = commit;
    key.append("\n").append(code.folder);
    auto it = inspected.find(key);
    if (it == inspected.end()) {
      ++inspections_;
      it = inspected.emplace(std::move(key), inspect(spec, commit, max_bytes)).first;
    }
    const core::Result<CodeFolderInfo>& info = it->second;
    if (!info.ok()) {
      fail(code.folder_pos, FieldMessage("code", info.error().message()));
      continue;
    }
    if (core::Status fits = CheckSize(spec, *info, max_bytes, zip_size); !fits.ok()) {
      fail(code.folder_pos, FieldMessage("code", fits.error().message()));
      continue;
    }
    code.tree_id = info->tree_id;
    code.commit = commit;
    code.files = info->files;
    code.bytes = info->bytes;
  }
  core::MoveToInvalid(state, failed, std::move(moved));
}

namespace {

// Trees whose inspection is kept; past it the map starts again (a daemon sees few trees).
constexpr size_t kKeptInspections = 256;

}  // namespace

core::Result<CodeFolderInfo> CodeFolders::InspectAtCommit(git_repository* repo,
                                                          const std::string& commit,
                                                          const std::string& folder) {
  // A folder that is not one is left to the full inspection, which says why.
  const core::Result<std::string> tree = CodeFolderTreeId(repo, commit, folder);
  if (tree.ok()) {
    if (auto it = inspected_trees_.find(*tree); it != inspected_trees_.end()) return it->second;
  }
  ++folder_reads_;
  core::Result<CodeFolderInfo> info = InspectCodeFolder(repo, commit, folder);
  if (info.ok()) {
    if (inspected_trees_.size() >= kKeptInspections) inspected_trees_.clear();
    inspected_trees_.insert_or_assign(info->tree_id, *info);
  }
  return info;
}

void CodeFolders::ResolveAtCommit(core::DesiredState& state, git_repository* repo,
                                  const std::string& commit, const RefResolver& resolve_ref) {
  Resolve(
      state,
      [this, repo](const core::JobSpec& spec, const std::string& at, int64_t) {
        return InspectAtCommit(repo, at, spec.code().folder);
      },
      [repo](const core::JobSpec&, const CodeFolderInfo& info) {
        return CodeZipSize(repo, info.tree_id);
      },
      resolve_ref, commit);
}

void CodeFolders::FailAll(core::DesiredState& state, const core::Error& why) {
  Resolve(
      state,
      [&why](const core::JobSpec&, const std::string&, int64_t) -> core::Result<CodeFolderInfo> {
        return why;
      },
      [&why](const core::JobSpec&, const CodeFolderInfo&) -> core::Result<uint64_t> { return why; },
      [&why](const std::string&) -> core::Result<std::string> { return why; },
      /*head_commit=*/"");
}

void CodeFolders::ResolveOnDisk(core::DesiredState& state, git_repository* repo,
                                const std::string& workdir, const RefResolver& resolve_ref) {
  Resolve(
      state,
      [repo, &workdir](const core::JobSpec& spec, const std::string& at,
                       int64_t max_bytes) -> core::Result<CodeFolderInfo> {
        if (at.empty()) {
          // Sized before anything is read: a folder over the limit is refused unread.
          return InspectCodeFolderOnDisk(repo, workdir, spec.code().folder,
                                         static_cast<uint64_t>(max_bytes));
        }
        return InspectCodeFolder(repo, at, spec.code().folder);
      },
      [repo, &workdir](const core::JobSpec& spec,
                       const CodeFolderInfo& info) -> core::Result<uint64_t> {
        if (!spec.code().ref) {
          // Sized against the limit already by the inspection (whose sizes are the filtered
          // ones, which line-ending filters make smaller than the files on disk).
          return CodeZipSizeFromDisk(repo, workdir, spec.code().folder,
                                     static_cast<uint64_t>(core::kMaxCodeBytes));
        }
        return CodeZipSize(repo, info.tree_id);
      },
      [repo, &resolve_ref](const std::string& ref) -> core::Result<std::string> {
        if (repo == nullptr) {
          return core::Error::InvalidInput("code_ref: " + ref +
                                           " cannot be read: the folder is not a Git checkout");
        }
        return resolve_ref(ref);
      },
      /*head_commit=*/"");
}

namespace {

// The checkout at `repo_dir`; null when it is none. A checkout Git refuses to open (another
// user owns it) is an error: read as plain files, its code would not be what a commit holds.
core::Result<git::Repository> OpenCheckout(const std::string& repo_dir) {
  git::EnsureLibraryInitialised();
  git_repository* raw = nullptr;
  if (const int rc =
          git_repository_open_ext(&raw, repo_dir.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
      rc != 0) {
    std::optional<std::string> foreign = git::ForeignOwnerProblem(rc, repo_dir);
    git_error_clear();
    if (foreign) return core::Error::InvalidInput(std::move(*foreign));
    raw = nullptr;
  }
  return git::Repository(raw);
}

}  // namespace

void ResolveCodeOnDisk(core::DesiredState& state, const std::string& repo_dir) {
  if (std::ranges::none_of(state.jobs, [](const core::JobSpec& s) { return s.has_code(); })) {
    return;
  }
  core::Result<git::Repository> repo = OpenCheckout(repo_dir);
  CodeFolders folders;
  if (!repo.ok()) {
    folders.FailAll(state, repo.error());
    return;
  }
  git_repository* r = repo->get();
  folders.ResolveOnDisk(
      state, r, repo_dir, [r](const std::string& ref) -> core::Result<std::string> {
        if (std::optional<std::string> commit = git::RevparseCommit(r, ref)) return *commit;
        return core::Error::NotFound("no branch, tag or commit \"" + ref + "\" in this repository");
      });
}

core::Result<std::string> CodeZipOnDisk(const core::JobSpec& spec, const std::string& repo_dir) {
  core::Result<git::Repository> repo = OpenCheckout(repo_dir);
  if (!repo.ok()) return repo.error();
  if (spec.code().ref) {
    if (!*repo) return core::Error::InvalidInput(repo_dir + " is not a Git checkout");
    return BuildCodeZip(repo->get(), spec.code().tree_id);
  }
  return BuildCodeZipFromDisk(repo->get(), repo_dir, spec.code().folder);
}

CodeFileReader CodeFileReaderOnDisk(const core::JobSpec& spec, const std::string& repo_dir) {
  // Read as the zip would be: inside the working tree, never through a link (an export-ignored
  // one included).
  if (!spec.code().ref) {
    return [repo_dir, folder = spec.code().folder](const std::string& path) {
      return ReadCodeFileOnDisk(repo_dir, folder, path, spec::kMaxSpecFileBytes);
    };
  }
  core::Result<git::Repository> opened = OpenCheckout(repo_dir);
  // A checkout that does not open failed its spec in ResolveCodeOnDisk: nothing is read.
  auto repo = std::make_shared<git::Repository>(opened.ok() ? std::move(*opened) : nullptr);
  const std::optional<git_oid> tree_oid = git::ParseOid(spec.code().tree_id);
  return [repo, tree_oid](const std::string& path) -> std::optional<std::string> {
    if (!*repo || !tree_oid) return std::nullopt;
    git_tree* raw_tree = nullptr;
    if (git_tree_lookup(&raw_tree, repo->get(), &*tree_oid) != 0) {
      git_error_clear();
      return std::nullopt;
    }
    git::Tree tree(raw_tree);
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str()) != 0) {
      git_error_clear();
      return std::nullopt;
    }
    git::TreeEntry entry(raw_entry);
    const git_filemode_t mode = git_tree_entry_filemode(entry.get());
    if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE) return std::nullopt;
    // A blob over the parser's limit is not read whole: its first bytes tell the parser so.
    size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    git_odb* odb = nullptr;
    if (git_repository_odb(&odb, repo->get()) != 0) {
      git_error_clear();
      return std::nullopt;
    }
    const git::Odb owned_odb(odb);
    if (git_odb_read_header(&size, &type, odb, git_tree_entry_id(entry.get())) != 0) {
      git_error_clear();
      return std::nullopt;
    }
    if (size > spec::kMaxSpecFileBytes) return std::string(spec::kMaxSpecFileBytes + 1, '#');
    return git::ReadBlob(repo->get(), *git_tree_entry_id(entry.get()));
  };
}

}  // namespace rg::adapters
