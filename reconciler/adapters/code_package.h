#pragma once
// The code package of DESIGN §1.4: a folder of the repository packed into a deterministic zip,
// from a commit's tree in the object database (no checkout) or from a working tree on disk
// (`render` and `validate` on a checkout, before anything is committed).
//
// The zip holds one entry per file, paths relative to the folder, sorted bytewise, no folder
// entries, every time 1980-01-01 00:00:00, no extra fields, the Unix mode (0100644 or 0100755)
// in the external attributes, deflate at a fixed level (empty files stored). Files that a
// .gitattributes inside the folder marks export-ignore are left out, as `git archive
// <commit>:<folder>` leaves them out. The same tree gives the same bytes, whatever the time,
// time zone or umask.

#include <git2.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/core/spec_model.h"

namespace rg::adapters {

// What a code folder holds, without its contents being read.
struct CodeFolderInfo {
  std::string tree_id;  // hex, the Git tree of the folder
  uint64_t files = 0;   // files in the zip (export-ignored ones left out)
  uint64_t bytes = 0;   // their total uncompressed size
  // The largest files (at most 5), path relative to the folder and size, largest first, ties
  // by path.
  std::vector<std::pair<std::string, uint64_t>> largest;
  uint64_t path_bytes = 0;  // the lengths of the files' paths added up, for ZipSizeUpperBound
};

// The folder `folder` (repository-relative, no trailing slash, "" for the whole tree) of the
// tree of commit `commit_id`, resolved one component at a time. Blob sizes come from the object
// headers; no file is read but the .gitattributes files (at most 1 MiB each). Errors
// (kInvalidInput, naming the repository-relative path): the folder does not exist at the
// commit, is a file, has a symlink or a submodule on its path or inside it (export-ignored ones
// inside are no error: they are not archived), holds an entry named ".", ".." or ".git" (in
// any case), holding '/' or NUL, or not in UTF-8, nests folders more than 256 deep, or holds no
// file once export-ignore is applied; kNotFound for an unknown commit.
core::Result<CodeFolderInfo> InspectCodeFolder(git_repository* repo, std::string_view commit_id,
                                               std::string_view folder);

// The Git tree id (hex) of `folder` at commit `commit_id`, with the errors InspectCodeFolder
// gives for a folder that is not one; reads one path of the commit's tree, nothing more.
core::Result<std::string> CodeFolderTreeId(git_repository* repo, std::string_view commit_id,
                                           std::string_view folder);

// The same from the folder's tree id (paths in errors are relative to that tree).
core::Result<CodeFolderInfo> InspectCodeTree(git_repository* repo, std::string_view tree_id);

// The zip of tree `tree_id`, built from the object database into a temporary file (one file's
// bytes held at a time) and returned in memory. A tree whose files add up to more than Ray's
// 100 MiB is refused before any is read.
core::Result<std::string> BuildCodeZip(git_repository* repo, std::string_view tree_id);

// The size of that zip, built into a temporary file and never held in memory.
core::Result<uint64_t> CodeZipSize(git_repository* repo, std::string_view tree_id);

// A size the zip of a folder described by `info` never exceeds: every file in deflate's worst
// case (stored blocks), plus the local and central headers of each entry and the end record
// (and the Zip64 records when the counts or sizes need them). A caller can tell whether the
// zip fits a limit without building it; when the bound does not fit, only building tells.
uint64_t ZipSizeUpperBound(const CodeFolderInfo& info);

// The folder `folder` of the working tree `workdir` as `git add -A <folder>` would commit it:
// files ignored by .gitignore left out (unless already in the index), blob ids with the
// repository's filters applied (line endings and the like), the tree id computed without
// writing any object. `repo` is the repository of `workdir`, or null when the directory is no
// Git checkout (no ignore rules, no filters). Nothing is opened through a link: every folder and
// file is opened component by component with O_NOFOLLOW. The files are listed and sized (lstat)
// first: when they add up to more than `max_bytes` the folder is refused (FolderTooLarge)
// before any is read. Errors as InspectCodeFolder, a nested repository counting as a
// submodule, and a .gitattributes or .gitignore in the folder or above it that is a link or over
// 1 MiB; kTransient when a file cannot be read or changes while it is.
core::Result<CodeFolderInfo> InspectCodeFolderOnDisk(
    git_repository* repo, const std::string& workdir, std::string_view folder,
    uint64_t max_bytes = static_cast<uint64_t>(core::kMaxCodeBytes));

// The zip of that folder: the same bytes BuildCodeZip gives for the tree that would be
// committed.
core::Result<std::string> BuildCodeZipFromDisk(git_repository* repo, const std::string& workdir,
                                               std::string_view folder);

// The size of that zip, built into a temporary file and never held in memory; the folder's
// files may add up to at most `max_bytes`.
core::Result<uint64_t> CodeZipSizeFromDisk(git_repository* repo, const std::string& workdir,
                                           std::string_view folder, uint64_t max_bytes);

// The paths (relative to the folder) that differ between tree `from_tree_id` of `repo` and the
// folder `folder` of the working tree `workdir` as `git add -A <folder>` would commit it:
// added, removed, or changed in content or mode; sorted, as a diff of the two trees would list
// them. Errors as InspectCodeFolderOnDisk; kNotFound when `from_tree_id` is not in `repo`.
core::Result<std::vector<std::string>> CodeChangesOnDisk(
    git_repository* repo, std::string_view from_tree_id, const std::string& workdir,
    std::string_view folder, uint64_t max_bytes = static_cast<uint64_t>(core::kMaxCodeBytes));

// The file `path` (relative to the code folder `folder` of the working tree `workdir`), read
// without following a link anywhere on its path, at most `max_bytes` + 1 bytes of it; nullopt
// when it is no regular file there (a folder, a symlink, nothing) or cannot be read.
std::optional<std::string> ReadCodeFileOnDisk(const std::string& workdir, std::string_view folder,
                                              const std::string& path, uint64_t max_bytes);

// The error of a folder whose files add up to `bytes`, over `limit`: its size and its largest
// files (paths relative to the folder), human-readable.
core::Error FolderTooLarge(std::string_view folder, uint64_t bytes, uint64_t limit,
                           const std::vector<std::pair<std::string, uint64_t>>& largest);

}  // namespace rg::adapters
