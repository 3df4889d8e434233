// Where artifacts go, decided in one place for `sync`, the daemon and `submit`.

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "reconciler/cli/pass_runner.h"
#include "tests/support/test_files.h"

namespace rg::cli {
namespace {

TEST_CASE("artifacts go under --artifacts-root, else an existing shared_root, else nowhere") {
  testing::TempDir tmp;
  const std::string shared = tmp.Sub("shared");
  std::filesystem::create_directories(shared);
  core::RayConfig cluster;
  std::string why;

  SECTION("--no-artifacts wins over everything") {
    cluster.shared_root = shared;
    CHECK(MakeArtifactWriter(true, tmp.path(), &cluster, {}, &why) == nullptr);
    CHECK(why == "--no-artifacts");
  }
  SECTION("an existing shared_root") {
    cluster.shared_root = shared;
    CHECK(MakeArtifactWriter(false, "", &cluster, {}, &why) != nullptr);
    CHECK(why.empty());
  }
  SECTION("--artifacts-root stands in for a shared_root this machine lacks") {
    cluster.shared_root = tmp.Sub("not-here");
    CHECK(MakeArtifactWriter(false, tmp.Sub("elsewhere"), &cluster, {}, &why) != nullptr);
    CHECK(why.empty());
  }
  SECTION("a shared_root that is not a directory here is named") {
    cluster.shared_root = tmp.Sub("not-here");
    CHECK(MakeArtifactWriter(false, "", &cluster, {}, &why) == nullptr);
    CHECK(why == "shared_root " + tmp.Sub("not-here") + " is not a directory on this machine");
  }
  SECTION("no shared_root, or no cluster file at all") {
    CHECK(MakeArtifactWriter(false, "", &cluster, {}, &why) == nullptr);
    CHECK(why == "the cluster file has no shared_root");
    why.clear();
    CHECK(MakeArtifactWriter(false, "", nullptr, {}, &why) == nullptr);
    CHECK(why == "the cluster file has no shared_root");
  }
}

}  // namespace
}  // namespace rg::cli
