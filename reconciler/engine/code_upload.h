#pragma once
// Ships the code of specs with `code` to Ray's package store before they are submitted
// (docs/code-in-the-repository.md): the package of a tree is looked up (GET) before every
// submit, and uploaded (PUT) when Ray does not hold it; its zip is built once per uploader,
// whatever the number of specs or attempts sharing the tree. One uploader serves one pass.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "reconciler/core/result.h"
#include "reconciler/ports/job_server.h"

namespace rg::engine {

// What an uploader did, for the pass's log line and metrics.
struct CodeUploadStats {
  int checks = 0;         // GETs of a package
  int zips = 0;           // zips built
  int uploads = 0;        // PUTs that succeeded
  uint64_t bytes = 0;     // bytes uploaded
  int64_t zip_ms = 0;     // time spent building zips
  int64_t upload_ms = 0;  // time spent in PUTs
};

class CodeUploader {
 public:
  // The zip of a tree (ports::DesiredStateSource::CodeZip, or a working tree's).
  using ZipSource = std::function<core::Result<std::string>(const std::string& tree_id)>;

  explicit CodeUploader(ZipSource zips) : zips_(std::move(zips)) {}

  // Makes sure `server`'s package store holds the package of `tree_id`: a GET, then the zip's
  // PUT when it is missing. Thread-safe: concurrent callers for one tree build its zip once.
  core::Status Ensure(ports::JobServer& server, const std::string& tree_id);

  CodeUploadStats stats() const;

 private:
  struct Tree {
    std::mutex mu;    // held while the zip is built and sent
    std::string zip;  // built on first need
    bool built = false;
  };
  ZipSource zips_;
  std::mutex build_mu_;  // one zip at a time: the source is not thread-safe
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Tree>, std::less<>> trees_;
  CodeUploadStats stats_;
};

}  // namespace rg::engine
