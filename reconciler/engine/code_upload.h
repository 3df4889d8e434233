#pragma once
// Ships the code of specs with `code` to Ray's package store before they are submitted
// (docs/code-in-the-repository.md): the package of a tree is looked up (GET) before every
// submit, and uploaded (PUT) when Ray does not hold it; its zip is built once per uploader,
// whatever the number of specs or attempts sharing the tree. One uploader serves one pass.
//
// A package Ray holds under our name is used only when it is ours ("Whose package it is"):
// Ray gives neither a package's bytes nor its digest back, and a node keeps a package it
// unpacked by its name, so ours must be known from our own records: this process uploaded it,
// or the ledger records a run of ours with its tree.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "reconciler/core/result.h"
#include "reconciler/core/status_model.h"
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

// The packages known to be ours, by name: those this process uploaded, with the SHA-256 of
// the bytes sent, and those of the code trees a full pass found in the ledger (sha256 empty),
// so that a narrow pass, which reads a few records, still knows them. One set lives as long as
// the daemon (its passes share it). Thread-safe.
class KnownPackages {
 public:
  void Add(std::string name, std::string sha256);
  bool Contains(std::string_view name) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string, std::less<>> sha256_by_name_;
};

// The code trees of the runs the ledger records as ours: for each record whose latest run is
// one of its recorded attempts (a run ray-gitops submitted or adopted), the tree that run got.
std::set<std::string, std::less<>> RecordedCodeTrees(const core::Ledger& ledger);

// Whose a package is: ours when `known` holds its name or `recorded_trees` its tree.
struct PackageOwners {
  KnownPackages* known = nullptr;
  const std::set<std::string, std::less<>>* recorded_trees = nullptr;

  bool Owns(const std::string& tree_id) const;
};

// Why a package found in Ray is not used: it names the package and how to resolve it.
std::string ForeignPackageMessage(const std::string& tree_id);

class CodeUploader {
 public:
  // The zip of a tree (ports::DesiredStateSource::CodeZip, or a working tree's).
  using ZipSource = std::function<core::Result<std::string>(const std::string& tree_id)>;

  // `known` (not owned; may be null: the uploader keeps its own) gets every package it
  // uploads; `recorded_trees` are the trees the ledger records runs of ours with.
  explicit CodeUploader(ZipSource zips, KnownPackages* known = nullptr,
                        std::set<std::string, std::less<>> recorded_trees = {});

  // Makes sure `server`'s package store holds our package of `tree_id`: a GET, then the zip's
  // PUT when it is missing. A package Ray already holds that is not ours (PackageOwners) is
  // kConflict (ForeignPackageMessage): never replaced, never submitted with. Thread-safe:
  // concurrent callers for one tree build its zip once.
  core::Status Ensure(ports::JobServer& server, const std::string& tree_id);

  CodeUploadStats stats() const;

 private:
  struct Tree {
    std::mutex mu;    // held while the zip is built and sent
    std::string zip;  // built on first need
    bool built = false;
  };
  ZipSource zips_;
  KnownPackages own_known_;
  KnownPackages* known_;
  std::set<std::string, std::less<>> recorded_trees_;
  std::mutex build_mu_;  // one zip at a time: the source is not thread-safe
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Tree>, std::less<>> trees_;
  CodeUploadStats stats_;
};

}  // namespace rg::engine
