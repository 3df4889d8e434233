#pragma once
// Entries of a desired-state repository that are not regular files: symbolic links, Git
// submodules and, on disk, anything else (a FIFO, a device). Such an entry is never read and
// never followed, in a commit or on disk, so a link cannot make `validate` print another file
// or a pass read one. Each is an error with the same words on disk and in a commit; under the
// jobs folder it is an invalid spec, so its job is frozen (nothing submitted or stopped).
//
// Which entries count: under the jobs folder, every link and every submodule outside hidden
// folders, whatever its name (a link or a submodule can hold a folder of specs that would be
// skipped without a word); other entries only when named *.yaml or *.yml. The cluster file and
// the jobs folder itself (and each folder above it) must be a regular file and folders.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/diagnostic.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::spec {

enum class EntryKind {
  kSymlink,
  kSubmodule,   // a gitlink in a commit; on disk, a folder holding .git
  kNotRegular,  // anything else where a regular file (or, for the jobs folder, a folder) belongs
};

enum class EntryRole { kSpec, kClusterFile, kJobsDir };

// "is a symbolic link; specs must be regular files (links are never followed)" and the like:
// the message of a diagnostic at the entry's path.
std::string EntryMessage(EntryKind kind, EntryRole role);

// True for every path under jobs_dir with no hidden component, whatever its extension: the
// entries whose links and submodules are errors.
bool IsUnderJobsDir(std::string_view path, std::string_view jobs_dir);

// An invalid spec for an entry under jobs_dir that is not a regular file: one diagnostic at its
// path, and the name derived from the path, for CheckDesiredStateSet.
LoadedSpecFile RejectedSpecEntry(const std::string& path, std::string_view jobs_dir,
                                 EntryKind kind);

// On disk: the first of `relative`'s components (from `root` down) that is a symbolic link, as
// a '/'-separated path relative to root; empty when there is none.
std::string FirstLinkAlong(const std::filesystem::path& root, std::string_view relative);

// A regular file's content, at most `limit` + 1 bytes of it (enough for the loader to reject a
// larger file); nullopt when it is not a regular file or cannot be read. The buffer is sized
// by the file, never by the limit. O_NOFOLLOW: a link put in place after a walk looked is
// refused, not followed; O_NONBLOCK: a FIFO put there cannot hang the read.
std::optional<std::string> ReadRegularFileBounded(const std::filesystem::path& path, size_t limit);

// The cluster file when it is not a regular file, as CheckDesiredStateSet takes it: invalid,
// one diagnostic at `path`.
Parsed<core::RayConfig> RejectedClusterEntry(const std::string& path, EntryKind kind);

}  // namespace rg::spec
