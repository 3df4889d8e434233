#include "reconciler/engine/code_upload.h"

#include <chrono>
#include <utility>

#include "reconciler/core/code_package.h"
#include "reconciler/core/identity.h"

namespace rg::engine {
namespace {

int64_t MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace

void KnownPackages::Add(std::string name, std::string sha256) {
  const std::lock_guard<std::mutex> lock(mu_);
  sha256_by_name_.insert_or_assign(std::move(name), std::move(sha256));
}

bool KnownPackages::Contains(std::string_view name) const {
  const std::lock_guard<std::mutex> lock(mu_);
  return sha256_by_name_.contains(name);
}

std::set<std::string, std::less<>> RecordedCodeTrees(const core::Ledger& ledger) {
  std::set<std::string, std::less<>> trees;
  for (const auto& [name, record] : ledger) {
    const std::string& tree = record.code.get().tree;
    if (!tree.empty() && record.FindAttempt(record.submission_id) != nullptr) trees.insert(tree);
  }
  return trees;
}

bool PackageOwners::Owns(const std::string& tree_id) const {
  return (recorded_trees != nullptr && recorded_trees->contains(tree_id)) ||
         (known != nullptr && known->Contains(core::CodePackageName(tree_id)));
}

std::string ForeignPackageMessage(const std::string& tree_id) {
  return "code package " + core::CodePackageUri(tree_id) +
         " was found in Ray under the name ray-gitops would upload this code to, but ray-gitops "
         "did not upload it; it is not used, and it cannot be replaced (Ray's nodes keep a "
         "package by its name): change a file of the code folder to get a new name, or wait "
         "until Ray drops the package (once no job uses it)";
}

CodeUploader::CodeUploader(ZipSource zips, KnownPackages* known,
                           std::set<std::string, std::less<>> recorded_trees)
    : zips_(std::move(zips)),
      known_(known != nullptr ? known : &own_known_),
      recorded_trees_(std::move(recorded_trees)) {}

core::Status CodeUploader::Ensure(ports::JobServer& server, const std::string& tree_id) {
  const std::string name = core::CodePackageName(tree_id);
  std::shared_ptr<Tree> tree;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Tree>& slot = trees_[tree_id];
    if (!slot) slot = std::make_shared<Tree>();
    tree = slot;
    ++stats_.checks;
  }
  // One caller per tree at a time: a second spec of the tree waits for the first one's upload,
  // and then finds the package there.
  const std::lock_guard<std::mutex> tree_lock(tree->mu);
  core::Result<bool> held = server.HasPackage(name);
  if (!held.ok()) {
    return core::Error(held.error().kind(),
                       "cannot look up code package " + name + ": " + held.error().message());
  }
  if (*held) {
    if (PackageOwners{known_, &recorded_trees_}.Owns(tree_id)) return {};
    return core::Error::Conflict(ForeignPackageMessage(tree_id));
  }
  if (!tree->built) {
    const auto start = std::chrono::steady_clock::now();
    core::Result<std::string> zip = [&] {
      const std::lock_guard<std::mutex> build(build_mu_);
      return zips_(tree_id);
    }();
    if (!zip.ok()) {
      return core::Error(zip.error().kind(),
                         "cannot pack code tree " + tree_id + ": " + zip.error().message());
    }
    tree->zip = std::move(*zip);
    tree->built = true;
    const std::lock_guard<std::mutex> lock(mu_);
    ++stats_.zips;
    stats_.zip_ms += MsSince(start);
  }
  const auto start = std::chrono::steady_clock::now();
  if (core::Status sent = server.UploadPackage(name, tree->zip); !sent.ok()) {
    return core::Error(sent.error().kind(),
                       "cannot upload code package " + name + ": " + sent.error().message());
  }
  known_->Add(name, core::Sha256Hex(tree->zip));
  const std::lock_guard<std::mutex> lock(mu_);
  ++stats_.uploads;
  stats_.bytes += tree->zip.size();
  stats_.upload_ms += MsSince(start);
  return {};
}

CodeUploadStats CodeUploader::stats() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace rg::engine
