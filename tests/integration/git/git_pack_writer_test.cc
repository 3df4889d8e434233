// Blobs written as one pack (adapters/git_pack_writer.h) against real repositories: read back
// by another handle, written once when added twice, nothing left behind on failure or when
// nothing was added, and large blobs across the writer's buffer.

#include "reconciler/adapters/git_pack_writer.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "reconciler/adapters/git_common.h"
#include "tests/support/test_files.h"

namespace rg {
namespace {

using adapters::git::PackWriter;

struct Repo {
  testing::TempDir tmp;
  git_repository* repo = nullptr;
  Repo() {
    git_libgit2_init();
    REQUIRE(git_repository_init(&repo, tmp.Sub("r.git").c_str(), 1) == 0);
  }
  ~Repo() {
    git_repository_free(repo);
    git_libgit2_shutdown();
  }
  Repo(const Repo&) = delete;
  Repo& operator=(const Repo&) = delete;

  std::vector<std::string> PackFolder() const {
    std::vector<std::string> names;
    for (const auto& f : std::filesystem::directory_iterator(tmp.Sub("r.git/objects/pack"))) {
      names.push_back(f.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  int LooseObjects() const {
    int n = 0;
    for (const auto& d : std::filesystem::directory_iterator(tmp.Sub("r.git/objects"))) {
      if (d.path().filename().string().size() != 2) continue;
      for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(d.path())) ++n;
    }
    return n;
  }
};

// The blob's content as a freshly opened repository reads it; "<missing>" when it cannot.
std::string ReadFresh(const std::string& path, const git_oid& id) {
  git_repository* fresh = nullptr;
  REQUIRE(git_repository_open(&fresh, path.c_str()) == 0);
  git_blob* blob = nullptr;
  std::string out = "<missing>";
  if (git_blob_lookup(&blob, fresh, &id) == 0) {
    out.assign(static_cast<const char*>(git_blob_rawcontent(blob)),
               static_cast<size_t>(git_blob_rawsize(blob)));
    git_blob_free(blob);
  }
  git_repository_free(fresh);
  return out;
}

std::string Varied(size_t size, unsigned seed) {
  std::string s(size, '\0');
  unsigned x = seed;
  for (char& c : s) {
    x = x * 1103515245U + 12345U;
    c = static_cast<char>(x >> 16U);
  }
  return s;
}

TEST_CASE("blobs written as one pack are read back by another handle, each once", "[git][pack]") {
  Repo r;
  auto writer = PackWriter::Create(r.repo);
  REQUIRE(writer.ok());
  std::vector<std::string> contents = {"",
                                       "a",
                                       std::string(15, 'x'),
                                       std::string(16, 'y'),
                                       "name: job-1\nphase: Running\n",
                                       Varied(3 << 20, 7)};  // 3 MiB of noise: several buffers
  for (int i = 0; i < 500; ++i) contents.push_back("name: job-" + std::to_string(i) + "\n");
  std::vector<git_oid> ids;
  for (const std::string& c : contents) {
    auto id = (*writer)->AddBlob(c);
    REQUIRE(id.ok());
    git_oid expected;
    REQUIRE(git_odb_hash(&expected, c.data(), c.size(), GIT_OBJECT_BLOB) == 0);
    CHECK(git_oid_equal(&*id, &expected) == 1);
    ids.push_back(*id);
  }
  REQUIRE((*writer)->AddBlob("a").ok());  // again: not written twice
  CHECK((*writer)->count() == contents.size());
  REQUIRE((*writer)->Finish().ok());

  // One pack and its index, nothing else, no loose object.
  const std::vector<std::string> files = r.PackFolder();
  REQUIRE(files.size() == 2);
  CHECK(files[0].ends_with(".idx"));
  CHECK(files[1].ends_with(".pack"));
  CHECK(r.LooseObjects() == 0);
  for (size_t i = 0; i < contents.size(); ++i) {
    INFO("blob " << i << " of " << contents[i].size() << " bytes");
    CHECK(ReadFresh(r.tmp.Sub("r.git"), ids[i]) == contents[i]);
  }
  // The handle that wrote finds them too.
  git_blob* blob = nullptr;
  REQUIRE(git_blob_lookup(&blob, r.repo, &ids[4]) == 0);
  git_blob_free(blob);
}

TEST_CASE("a pack writer leaves nothing behind unless finished with blobs", "[git][pack]") {
  Repo r;
  git_oid id;
  {
    auto writer = PackWriter::Create(r.repo);
    REQUIRE(writer.ok());
    auto added = (*writer)->AddBlob("never installed");
    REQUIRE(added.ok());
    id = *added;
    CHECK(r.PackFolder().size() == 1);  // the file being written
  }
  CHECK(r.PackFolder().empty());
  CHECK(ReadFresh(r.tmp.Sub("r.git"), id) == "<missing>");
  {
    auto writer = PackWriter::Create(r.repo);
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Finish().ok());
    CHECK_FALSE((*writer)->AddBlob("after").ok());
    CHECK_FALSE((*writer)->Finish().ok());
  }
  CHECK(r.PackFolder().empty());
  CHECK(r.LooseObjects() == 0);
}

TEST_CASE("packs are read through windows of 4 MiB, 8 MiB of them mapped at most", "[git][pack]") {
  adapters::git::EnsureLibraryInitialised();
  size_t window = 0;
  size_t limit = 0;
  REQUIRE(git_libgit2_opts(GIT_OPT_GET_MWINDOW_SIZE, &window) == 0);
  REQUIRE(git_libgit2_opts(GIT_OPT_GET_MWINDOW_MAPPED_LIMIT, &limit) == 0);
  CHECK(window == size_t{4} << 20U);
  CHECK(limit == size_t{8} << 20U);
}

}  // namespace
}  // namespace rg
