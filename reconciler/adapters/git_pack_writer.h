#pragma once
// Internal to the libgit2 adapters: blobs written into a repository as one pack.

#include <git2.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>

#include "reconciler/core/result.h"

namespace rg::adapters::git {

// The name of a pack file being written starts so, in objects/pack. One left by a process that
// died while writing is of no use: the clone's compaction removes it.
inline constexpr std::string_view kPackTempPrefix = "tmp_rg_pack_";

// Blobs written into a repository as one pack, without loose objects: each blob is compressed
// and appended to a file as it comes (nothing is held but a 1 MiB buffer), and Finish hands the
// file to libgit2's indexer, which installs the pack and its index in objects/pack. A loose
// object costs a file created, linked and unlinked, after a look for it in every pack that
// reads the pack folder again: at 1,000 status files, most of a sync's time. The pack is not
// delta-compressed: it serves this clone, a repack (GitWorkspace::Compact) compresses it, and a
// push builds the pack it sends anew in any case.
//
// The blobs can be read through the repository once Finish has returned; a writer destroyed
// before that leaves nothing behind.
class PackWriter {
 public:
  static core::Result<std::unique_ptr<PackWriter>> Create(git_repository* repo);
  ~PackWriter();
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  // The blob's id; a blob added twice is written once.
  core::Result<git_oid> AddBlob(std::string_view content);
  // Blobs in the pack so far.
  size_t count() const { return ids_.size(); }
  // Installs the pack (nothing when no blob was added) and removes the file written.
  core::Status Finish();

 private:
  PackWriter() = default;
  bool Flush();
  core::Status Fail(const std::string& what);
  // The file completed (its count written) and indexed into objects/pack.
  core::Status Install();
  // The file and its SHA-1 trailer, to the indexer.
  core::Status FeedIndexer(git_indexer* indexer);

  git_repository* repo_ = nullptr;
  std::string path_;  // the file written, in objects/pack
  int fd_ = -1;
  struct Deflater;  // zlib's stream, kept from blob to blob
  struct DeflaterFree {
    void operator()(Deflater* d) const;
  };
  std::unique_ptr<Deflater, DeflaterFree> zlib_;
  std::string buffer_;
  std::unordered_set<std::string> ids_;  // raw ids of the blobs written
};

}  // namespace rg::adapters::git
