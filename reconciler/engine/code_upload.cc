#include "reconciler/engine/code_upload.h"

#include <chrono>
#include <utility>

#include "reconciler/core/code_package.h"

namespace rg::engine {
namespace {

int64_t MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace

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
  if (*held) return {};
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
