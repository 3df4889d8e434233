#include "reconciler/adapters/code_package.h"

#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/git_test_repo.h"
#include "tests/support/test_files.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

// An open repository for the duration of a test.
struct OpenRepo {
  explicit OpenRepo(const std::string& path) {
    git_libgit2_init();
    REQUIRE(git_repository_open(&repo, path.c_str()) == 0);
  }
  ~OpenRepo() {
    git_repository_free(repo);
    git_libgit2_shutdown();
  }
  OpenRepo(const OpenRepo&) = delete;
  OpenRepo& operator=(const OpenRepo&) = delete;
  git_repository* repo = nullptr;
};

// A person's repository (a bare clone that commits without pushing).
struct Person {
  Person() : remote("code") {}
  std::string path() const { return remote.tmp.Sub("person.git"); }
  testing::TestRemote remote;
};

// One entry of a zip as read back with libzip.
struct ZipEntry {
  std::string name;
  std::string content;
  uint32_t mode = 0;
  uint8_t opsys = 0;
};

std::vector<ZipEntry> ReadZip(const std::string& bytes) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  REQUIRE(src != nullptr);
  zip_t* za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  REQUIRE(za != nullptr);
  std::vector<ZipEntry> entries;
  for (zip_int64_t i = 0; i < zip_get_num_entries(za, 0); ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    ZipEntry e;
    e.name = zip_get_name(za, index, ZIP_FL_ENC_RAW);
    zip_uint32_t attributes = 0;
    REQUIRE(zip_file_get_external_attributes(za, index, 0, &e.opsys, &attributes) == 0);
    e.mode = attributes >> 16U;
    zip_stat_t st;
    REQUIRE(zip_stat_index(za, index, 0, &st) == 0);
    e.content.resize(st.size);
    zip_file_t* f = zip_fopen_index(za, index, 0);
    REQUIRE(f != nullptr);
    if (st.size > 0) {
      REQUIRE(zip_fread(f, e.content.data(), st.size) == static_cast<zip_int64_t>(st.size));
    }
    zip_fclose(f);
    entries.push_back(std::move(e));
  }
  zip_close(za);
  zip_error_fini(&error);
  return entries;
}

uint16_t U16(const std::string& b, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[at]) |
                               (static_cast<unsigned char>(b[at + 1]) << 8U));
}
uint32_t U32(const std::string& b, size_t at) {
  return U16(b, at) | (static_cast<uint32_t>(U16(b, at + 2)) << 16U);
}

// Checks the raw headers: every local and central header has the 1980-01-01 00:00 time, no
// extra field, no data descriptor; central ones are "made by Unix"; a name that is not ASCII
// has the UTF-8 flag (bit 11), as `git archive` sets it, so that Ray's unzip (Python's
// zipfile) reads it as UTF-8 and not as code page 437. Returns the entry count.
size_t CheckRawHeaders(const std::string& b) {
  const size_t eocd = b.size() - 22;
  REQUIRE(U32(b, eocd) == 0x06054b50U);
  CHECK(U16(b, eocd + 20) == 0);  // no comment
  const size_t entries = U16(b, eocd + 10);
  size_t at = U32(b, eocd + 16);
  for (size_t i = 0; i < entries; ++i) {
    REQUIRE(U32(b, at) == 0x02014b50U);
    CHECK(U16(b, at + 4) >> 8U == 3);  // made by Unix
    CHECK((U16(b, at + 8) & 0x8U) == 0);
    CHECK(U16(b, at + 12) == 0);     // time 00:00:00
    CHECK(U16(b, at + 14) == 0x21);  // date 1980-01-01
    CHECK(U16(b, at + 30) == 0);     // no extra field
    CHECK(U16(b, at + 32) == 0);     // no comment
    const std::string name = b.substr(at + 46, U16(b, at + 28));
    const bool ascii = std::all_of(name.begin(), name.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    INFO(name);
    CHECK(((U16(b, at + 8) & 0x800U) != 0) == !ascii);
    const size_t local = U32(b, at + 42);
    REQUIRE(U32(b, local) == 0x04034b50U);
    CHECK(((U16(b, local + 6) & 0x800U) != 0) == !ascii);
    CHECK(U16(b, local + 10) == 0);
    CHECK(U16(b, local + 12) == 0x21);
    CHECK(U16(b, local + 28) == 0);
    at += 46 + U16(b, at + 28);
  }
  return entries;
}

// `git` on the command line, its output; empty when it fails.
std::string RunGit(const std::string& args) {
  const std::string command = "git " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  return pclose(pipe) == 0 ? out : "";
}

bool HaveGit() { return !RunGit("--version").empty(); }

void WriteDiskFile(const fs::path& path, const std::string& content, bool executable = false) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
  fs::permissions(path, executable ? fs::perms(0755) : fs::perms(0644));
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(gen() & 0xFFU);
  return out;
}

// The trainer folder most tests use.
void StageTrainer(testing::GitTestClone& person) {
  person.Write("src/trainer/train.py", "print('train')\n");
  person.WriteExecutable("src/trainer/run.sh", "#!/bin/sh\npython train.py\n");
  person.Write("src/trainer/data/b.txt", std::string(5000, 'b'));
  person.Write("src/trainer/empty.txt", "");
  person.Write("src/trainer/Zeta.txt", "Z");
  person.Write("src/trainer/a-b", "dash");
  person.Write("src/trainer/a/x", "slash");
  person.Write("src/trainer/\xc3\xbc.txt", "umlaut");
  person.Write("jobs/train.yaml", "name: train\n");
}

TEST_CASE("the zip of a folder holds its files sorted, with modes, fixed times, no extras",
          "[code_package]") {
  Person p;
  StageTrainer(*p.remote.person);
  const std::string commit = p.remote.person->Commit("main", "code");
  OpenRepo r(p.path());
  const auto info = InspectCodeFolder(r.repo, commit, "src/trainer");
  INFO((info.ok() ? "" : info.error().message()));
  REQUIRE(info.ok());
  CHECK(info->tree_id.size() == 40);
  CHECK(info->files == 8);
  CHECK(info->bytes == 15 + 26 + 5000 + 0 + 1 + 4 + 5 + 6);
  REQUIRE(info->largest.size() == 5);
  CHECK(info->largest[0] == std::make_pair(std::string("data/b.txt"), uint64_t{5000}));
  CHECK(info->largest[1].first == "run.sh");
  CHECK(info->largest[4] == std::make_pair(std::string("a/x"), uint64_t{5}));

  const auto zip = BuildCodeZip(r.repo, info->tree_id);
  REQUIRE(zip.ok());
  const auto again = BuildCodeZip(r.repo, info->tree_id);
  REQUIRE(again.ok());
  CHECK(*zip == *again);
  CHECK(CheckRawHeaders(*zip) == 8);
  CHECK(zip->size() <= ZipSizeUpperBound(*info));

  const auto entries = ReadZip(*zip);
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name);
  CHECK(names == std::vector<std::string>{"Zeta.txt", "a-b", "a/x", "data/b.txt", "empty.txt",
                                          "run.sh", "train.py", "\xc3\xbc.txt"});
  for (const auto& e : entries) {
    INFO(e.name);
    CHECK(e.opsys == ZIP_OPSYS_UNIX);
    CHECK(e.mode == (e.name == "run.sh" ? 0100755U : 0100644U));
    CHECK(e.content == testing::ReadFileAt(p.path(), "main", "src/trainer/" + e.name));
  }
  const auto tree = InspectCodeTree(r.repo, info->tree_id);
  REQUIRE(tree.ok());
  CHECK(tree->files == info->files);
  CHECK(tree->bytes == info->bytes);
}

TEST_CASE("the same tree in two repositories at other times gives the same bytes",
          "[code_package]") {
  Person first;
  StageTrainer(*first.remote.person);
  const std::string c1 = first.remote.person->Commit("main", "code");
  std::string zip1;
  std::string tree1;
  {
    OpenRepo r(first.path());
    const auto info = InspectCodeFolder(r.repo, c1, "src/trainer");
    REQUIRE(info.ok());
    tree1 = info->tree_id;
    zip1 = BuildCodeZip(r.repo, tree1).value();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const char* old_tz = std::getenv("TZ");
  const std::string saved = old_tz != nullptr ? old_tz : "";
  const mode_t old_umask = ::umask(077);
  for (const char* tz : {"America/St_Johns", "Pacific/Kiritimati", "UTC"}) {
    INFO(tz);
    ::setenv("TZ", tz, 1);
    ::tzset();
    Person second;
    second.remote.person->Write("README.md", "another repository\n");
    StageTrainer(*second.remote.person);
    const std::string c2 = second.remote.person->Commit("release", "same code, other day");
    OpenRepo r(second.path());
    const auto info = InspectCodeFolder(r.repo, c2, "src/trainer");
    REQUIRE(info.ok());
    CHECK(info->tree_id == tree1);
    CHECK(BuildCodeZip(r.repo, info->tree_id).value() == zip1);
  }
  ::umask(old_umask);
  if (old_tz != nullptr) {
    ::setenv("TZ", saved.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
}

TEST_CASE("a change of one file changes the tree id and the bytes", "[code_package]") {
  Person p;
  StageTrainer(*p.remote.person);
  const std::string c1 = p.remote.person->Commit("main", "code");
  p.remote.person->Write("src/trainer/train.py", "print('train harder')\n");
  const std::string c2 = p.remote.person->Commit("main", "change");
  p.remote.person->Write("jobs/other.yaml", "name: other\n");
  const std::string c3 = p.remote.person->Commit("main", "outside the folder");
  OpenRepo r(p.path());
  const auto i1 = InspectCodeFolder(r.repo, c1, "src/trainer");
  const auto i2 = InspectCodeFolder(r.repo, c2, "src/trainer");
  const auto i3 = InspectCodeFolder(r.repo, c3, "src/trainer");
  REQUIRE((i1.ok() && i2.ok() && i3.ok()));
  CHECK(i1->tree_id != i2->tree_id);
  CHECK(i2->tree_id == i3->tree_id);
  CHECK(BuildCodeZip(r.repo, i1->tree_id).value() != BuildCodeZip(r.repo, i2->tree_id).value());
}

// A folder with export-ignore in play, the repository root's .gitattributes not counting.
void StageExportIgnore(testing::GitTestClone& person) {
  person.Write(".gitattributes", "*.txt export-ignore\n");
  person.Write("src/trainer/.gitattributes",
               "# build output\n"
               "*.log export-ignore\n"
               "/secret.env export-ignore\n"
               "docs/ export-ignore\n"
               "gen/**/*.bin export-ignore\n"
               "keep.log -export-ignore\n"
               "\"with space.tmp\" export-ignore\n"
               "link export-ignore\n"
               "vendor export-ignore\n");
  person.Write("src/trainer/train.py", "x");
  person.Write("src/trainer/notes.txt", "root rules do not count");
  person.Write("src/trainer/run.log", "x");
  person.Write("src/trainer/keep.log", "x");
  person.Write("src/trainer/secret.env", "x");
  person.Write("src/trainer/sub/secret.env", "not anchored here");
  person.Write("src/trainer/sub/deep.log", "x");
  person.Write("src/trainer/docs/index.md", "x");
  person.Write("src/trainer/docs/more/page.md", "x");
  person.Write("src/trainer/gen/a.bin", "x");
  person.Write("src/trainer/gen/x/y/b.bin", "x");
  person.Write("src/trainer/gen/keep.dat", "x");
  person.Write("src/trainer/with space.tmp", "x");
  person.Write("src/trainer/pkg/.gitattributes",
               "*.log !export-ignore\nlocal.py export-ignore\nmodel.bin export-ignore\n");
  person.Write("src/trainer/pkg/local.py", "x");
  person.Write("src/trainer/pkg/kept.log", "deeper file wins");
  person.Write("src/trainer/pkg/model.bin", "x");
  person.Write("src/trainer/pkg/sub/.gitattributes", "model.bin -export-ignore\n");
  person.Write("src/trainer/pkg/sub/model.bin", "deepest file unsets");
  person.WriteSymlink("src/trainer/link", "train.py");
  person.WriteGitlink("src/trainer/vendor", "0123456789abcdef0123456789abcdef01234567");
}

const std::set<std::string> kExportedNames = {
    ".gitattributes",         "train.py",         "notes.txt",          "keep.log",
    "sub/secret.env",         "gen/keep.dat",     "pkg/.gitattributes", "pkg/kept.log",
    "pkg/sub/.gitattributes", "pkg/sub/model.bin"};

TEST_CASE("export-ignore leaves files and folders out as git archive does", "[code_package]") {
  Person p;
  StageExportIgnore(*p.remote.person);
  const std::string commit = p.remote.person->Commit("main", "code");
  OpenRepo r(p.path());
  const auto info = InspectCodeFolder(r.repo, commit, "src/trainer");
  INFO((info.ok() ? "" : info.error().message()));
  REQUIRE(info.ok());
  const auto zip = BuildCodeZip(r.repo, info->tree_id);
  REQUIRE(zip.ok());
  std::set<std::string> names;
  for (const auto& e : ReadZip(*zip)) names.insert(e.name);
  // "gen/**/*.bin" takes gen/a.bin too: "/**/" may stand for no folder at all.
  CHECK(names == kExportedNames);
  CHECK(info->files == kExportedNames.size());
  if (!HaveGit()) return;
  const std::string listing =
      RunGit("-C '" + p.path() + "' archive --format=tar " + commit + ":src/trainer | tar -t");
  REQUIRE_FALSE(listing.empty());
  std::set<std::string> from_git;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() != '/') from_git.insert(line);
  }
  CHECK(names == from_git);
}

// `info` is a refusal of the input, with exactly `message`.
void CheckRefused(const core::Result<CodeFolderInfo>& info, const std::string& message) {
  REQUIRE_FALSE(info.ok());
  CHECK(info.error().IsInvalidInput());
  CHECK(info.error().message() == message);
}

TEST_CASE("symlinks, submodules, missing folders and files are refused with their paths",
          "[code_package]") {
  Person p;
  auto& person = *p.remote.person;
  person.Write("src/trainer/train.py", "x");
  person.WriteSymlink("src/trainer/link", "train.py");
  person.Write("src/tool/main.py", "x");
  person.WriteGitlink("src/tool/vendor", "0123456789abcdef0123456789abcdef01234567");
  person.Write("src/notes.md", "x");
  person.Write("src/ignored/.gitattributes", "* export-ignore\n");
  person.Write("src/ignored/a.py", "x");
  const std::string commit = person.Commit("main", "code");
  OpenRepo r(p.path());
  const auto expect_error = [&](const std::string& folder, const std::string& message) {
    INFO(folder);
    CheckRefused(InspectCodeFolder(r.repo, commit, folder), message);
  };
  expect_error("src/trainer", "src/trainer/link is a symlink; code folders hold files only");
  expect_error("src/tool", "src/tool/vendor is a submodule; code folders hold files only");
  expect_error("src/missing", "src/missing does not exist at commit " + commit.substr(0, 12));
  expect_error("src/notes.md", "src/notes.md is a file, not a folder");
  expect_error("src/trainer/link", "src/trainer/link is a symlink, not a folder");
  expect_error("src/tool/vendor", "src/tool/vendor is a submodule, not a folder");
  expect_error("src/ignored", "src/ignored holds no files once export-ignore is applied");
  for (const char* bad : {"src/", "/src", "src//trainer", "src/../src", "."}) {
    const auto info = InspectCodeFolder(r.repo, commit, bad);
    REQUIRE_FALSE(info.ok());
    CHECK_THAT(info.error().message(), Catch::StartsWith("bad code folder"));
  }
  const auto unknown = InspectCodeFolder(r.repo, std::string(40, 'a'), "src/trainer");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().IsNotFound());
}

// Writes the same folder on disk as StageTrainer commits, with ignored and export-ignored files.
void WriteTrainerOnDisk(const fs::path& root) {
  WriteDiskFile(root / "src/trainer/train.py", "print('train')\n");
  WriteDiskFile(root / "src/trainer/run.sh", "#!/bin/sh\npython train.py\n", true);
  WriteDiskFile(root / "src/trainer/data/b.txt", std::string(5000, 'b'));
  WriteDiskFile(root / "src/trainer/empty.txt", "");
  WriteDiskFile(root / "src/trainer/Zeta.txt", "Z");
  WriteDiskFile(root / "src/trainer/a-b", "dash");
  WriteDiskFile(root / "src/trainer/a/x", "slash");
  WriteDiskFile(root / "src/trainer/\xc3\xbc.txt", "umlaut");
  WriteDiskFile(root / "src/trainer/.gitattributes", "*.ckpt export-ignore\n");
  WriteDiskFile(root / "src/trainer/model.ckpt", RandomBytes(3000, 7));
  WriteDiskFile(root / "src/trainer/__pycache__/train.cpython-311.pyc", "ignored");
  WriteDiskFile(root / "src/trainer/out/run.log", "ignored folder");
  WriteDiskFile(root / ".gitignore", "__pycache__/\n*.log\n");
  fs::create_directories(root / "src/trainer/empty-folder");
  fs::create_symlink("train.py", root / "src/trainer/latest.ckpt");  // export-ignored symlink
}

TEST_CASE("a working tree gives the tree id and the zip that committing it gives",
          "[code_package]") {
  if (!HaveGit()) return;
  const testing::TempDir tmp;
  const std::string dir = tmp.Sub("checkout");
  testing::InitWorkingRepository(dir);
  WriteTrainerOnDisk(dir);
  std::string tree_id;
  std::string disk_zip;
  {
    OpenRepo r(dir);
    const auto info = InspectCodeFolderOnDisk(r.repo, dir, "src/trainer");
    INFO((info.ok() ? "" : info.error().message()));
    REQUIRE(info.ok());
    tree_id = info->tree_id;
    CHECK(info->files == 9);  // the trainer's 8 and its .gitattributes
    auto zip = BuildCodeZipFromDisk(r.repo, dir, "src/trainer");
    REQUIRE(zip.ok());
    disk_zip = std::move(zip).value();
  }
  const std::string git = "-C '" + dir + "' ";
  REQUIRE_FALSE(RunGit(git + "add -A && echo ok").empty());
  REQUIRE_FALSE(
      RunGit(git + "-c user.name=T -c user.email=t@example.com commit -qm code && echo ok")
          .empty());
  const std::string committed = RunGit(git + "rev-parse HEAD:src/trainer");
  CHECK(committed == tree_id + "\n");
  OpenRepo r(dir);
  CHECK(BuildCodeZip(r.repo, tree_id).value() == disk_zip);
  std::set<std::string> names;
  for (const auto& e : ReadZip(disk_zip)) names.insert(e.name);
  CHECK(names.count("model.ckpt") == 0);
  CHECK(names.count("latest.ckpt") == 0);
  CHECK(names.count(".gitattributes") == 1);

  // Without a repository: no ignore rules, so only a folder without ignored files compares.
  fs::remove_all(fs::path(dir) / "src/trainer/__pycache__");
  fs::remove_all(fs::path(dir) / "src/trainer/out");
  const auto bare = InspectCodeFolderOnDisk(nullptr, dir, "src/trainer");
  REQUIRE(bare.ok());
  CHECK(bare->tree_id == tree_id);
  CHECK(BuildCodeZipFromDisk(nullptr, dir, "src/trainer").value() == disk_zip);
}

TEST_CASE("a working tree's symlinks, nested repositories and non-folders are refused",
          "[code_package]") {
  const testing::TempDir tmp;
  const fs::path dir = tmp.Sub("checkout");
  WriteDiskFile(dir / "src/trainer/train.py", "x");
  fs::create_symlink("train.py", dir / "src/trainer/link");
  WriteDiskFile(dir / "src/tool/main.py", "x");
  testing::InitWorkingRepository((dir / "src/tool/vendor").string());
  WriteDiskFile(dir / "src/notes.md", "x");
  const auto expect_error = [&](const std::string& folder, const std::string& message) {
    INFO(folder);
    CheckRefused(InspectCodeFolderOnDisk(nullptr, dir.string(), folder), message);
  };
  expect_error("src/trainer", "src/trainer/link is a symlink; code folders hold files only");
  expect_error("src/tool", "src/tool/vendor is a submodule; code folders hold files only");
  expect_error("src/missing", "src/missing does not exist in the working tree");
  expect_error("src/notes.md", "src/notes.md is a file, not a folder");
  expect_error("src/tool/vendor", "src/tool/vendor is a submodule, not a folder");
}

TEST_CASE("the size bound holds for incompressible files of any size", "[code_package]") {
  Person p;
  uint32_t seed = 1;
  for (const size_t size : {size_t{0}, size_t{1}, size_t{100}, size_t{65535}, size_t{65536},
                            size_t{1} << 20U, (size_t{3} << 20U) + 17}) {
    p.remote.person->Write("code/r" + std::to_string(size) + ".bin", RandomBytes(size, seed++));
  }
  for (int i = 0; i < 300; ++i) {
    p.remote.person->Write("code/small/" + std::to_string(i), RandomBytes(i * 7, seed++));
  }
  const std::string commit = p.remote.person->Commit("main", "random");
  OpenRepo r(p.path());
  const auto info = InspectCodeFolder(r.repo, commit, "code");
  REQUIRE(info.ok());
  const auto zip = BuildCodeZip(r.repo, info->tree_id);
  REQUIRE(zip.ok());
  const uint64_t bound = ZipSizeUpperBound(*info);
  INFO("zip " << zip->size() << " bound " << bound << " bytes " << info->bytes);
  CHECK(zip->size() <= bound);
  CHECK(bound - zip->size() < info->bytes / 100 + 8 * info->files + 64);
}

// ---- A folder is read inside the repository only ----

// A commit of the root tree `root` (no parent, no branch).
std::string CommitTree(git_repository* repo, const git_oid& root) {
  git_tree* tree = nullptr;
  REQUIRE(git_tree_lookup(&tree, repo, &root) == 0);
  git_signature* sig = nullptr;
  REQUIRE(git_signature_new(&sig, "T", "t@example.com", 1700000000, 0) == 0);
  git_oid commit;
  REQUIRE(git_commit_create(&commit, repo, nullptr, sig, sig, nullptr, "odd", tree, 0, nullptr) ==
          0);
  git_signature_free(sig);
  git_tree_free(tree);
  return git_oid_tostr_s(&commit);
}

struct RawEntry {
  uint32_t mode;
  std::string name;
  git_oid id;
};

// A tree object holding `entries` byte for byte, whatever their names (git's own tools refuse
// to write some of them; a pushed object can hold them all).
git_oid WriteRawTree(git_repository* repo, const std::vector<RawEntry>& entries) {
  std::string bytes;
  for (const RawEntry& e : entries) {
    std::ostringstream mode;
    mode << std::oct << e.mode;
    bytes += mode.str() + " " + e.name;
    bytes += '\0';
    bytes.append(reinterpret_cast<const char*>(e.id.id), GIT_OID_RAWSZ);
  }
  git_odb* odb = nullptr;
  REQUIRE(git_repository_odb(&odb, repo) == 0);
  git_oid oid;
  REQUIRE(git_odb_write(&oid, odb, bytes.data(), bytes.size(), GIT_OBJECT_TREE) == 0);
  git_odb_free(odb);
  return oid;
}

git_oid WriteBlob(git_repository* repo, const std::string& content) {
  git_oid oid;
  REQUIRE(git_blob_create_from_buffer(&oid, repo, content.data(), content.size()) == 0);
  return oid;
}

TEST_CASE("a symlink anywhere on a code folder's path is named, at every depth, in Git",
          "[code_package]") {
  Person p;
  auto& person = *p.remote.person;
  person.Write("a/b/c/d/train.py", "x");
  person.WriteSymlink("l", "/outside");
  person.WriteSymlink("a/l", "/outside");
  person.WriteSymlink("a/b/l", "..");
  person.WriteSymlink("a/b/c/l", "d");
  person.WriteGitlink("a/m", "0123456789abcdef0123456789abcdef01234567");
  person.Write("a/f", "a file");
  const std::string commit = person.Commit("main", "links on the way");
  OpenRepo r(p.path());
  const auto expect_error = [&](const std::string& folder, const std::string& message) {
    INFO(folder);
    CheckRefused(InspectCodeFolder(r.repo, commit, folder), message);
  };
  const std::string never =
      "; a code folder is read inside the repository only, never through a link";
  expect_error("l/secretdir", "l is a symlink on the path to l/secretdir" + never);
  expect_error("a/l/x/y", "a/l is a symlink on the path to a/l/x/y" + never);
  expect_error("a/b/l/c", "a/b/l is a symlink on the path to a/b/l/c" + never);
  expect_error("a/b/c/l/x", "a/b/c/l is a symlink on the path to a/b/c/l/x" + never);
  expect_error("a/b/c/l", "a/b/c/l is a symlink, not a folder");
  expect_error("a/m/x",
               "a/m is a submodule on the path to a/m/x; its files are not in this "
               "repository");
  expect_error("a/f/x",
               "a/f/x does not exist at commit " + commit.substr(0, 12) + " (a/f is a file)");
  CHECK(InspectCodeFolder(r.repo, commit, "a/b/c/d").ok());
}

TEST_CASE("a symlink anywhere on a code folder's path is named, at every depth, on disk",
          "[code_package]") {
  const testing::TempDir tmp;
  const fs::path dir = tmp.Sub("checkout");
  const fs::path outside = tmp.Sub("outside");
  WriteDiskFile(outside / "secretdir/secret.txt", "secret");
  WriteDiskFile(outside / "x/y/secret.txt", "secret");
  WriteDiskFile(dir / "a/b/c/d/train.py", "x");
  fs::create_symlink(outside, dir / "l");
  fs::create_symlink(outside, dir / "a/l");
  fs::create_symlink(outside, dir / "a/b/l");
  fs::create_symlink("d", dir / "a/b/c/l");
  WriteDiskFile(dir / "a/f", "a file");
  const std::string never =
      "; a code folder is read inside the repository only, never through a link";
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"l/secretdir", "l is a symlink on the path to l/secretdir" + never},
      {"a/l/x/y", "a/l is a symlink on the path to a/l/x/y" + never},
      {"a/b/l/x", "a/b/l is a symlink on the path to a/b/l/x" + never},
      {"a/b/c/l", "a/b/c/l is a symlink, not a folder"},
      {"a/f/x", "a/f/x does not exist in the working tree (a/f is a file)"},
  };
  for (const auto& [folder, message] : rows) {
    INFO(folder);
    const auto info = InspectCodeFolderOnDisk(nullptr, dir.string(), folder);
    REQUIRE_FALSE(info.ok());
    CHECK(info.error().message() == message);
    const auto zip = BuildCodeZipFromDisk(nullptr, dir.string(), folder);
    REQUIRE_FALSE(zip.ok());
    CHECK(zip.error().message() == message);
    // Nothing of the folder is read through the link either.
    CHECK_FALSE(ReadCodeFileOnDisk(dir.string(), folder, "secret.txt", 1024).has_value());
  }
  CHECK(InspectCodeFolderOnDisk(nullptr, dir.string(), "a/b/c/d").ok());
}

TEST_CASE("a working tree is read without following a link, export-ignored ones included",
          "[code_package]") {
  const testing::TempDir tmp;
  const fs::path dir = tmp.Sub("checkout");
  const fs::path outside = tmp.Sub("outside");
  WriteDiskFile(outside / "verl/trainer/config/ppo_trainer.yaml", "outside: true\n");
  WriteDiskFile(outside / "attributes", "train.py export-ignore\n");
  WriteDiskFile(dir / "src/train.py", "x");
  WriteDiskFile(dir / "src/.gitattributes", "verl export-ignore\nlinked.txt export-ignore\n");
  fs::create_symlink(outside / "verl", dir / "src/verl");
  fs::create_symlink(outside / "attributes", dir / "src/linked.txt");
  const auto info = InspectCodeFolderOnDisk(nullptr, dir.string(), "src");
  INFO((info.ok() ? "" : info.error().message()));
  REQUIRE(info.ok());
  CHECK(info->files == 2);  // train.py and .gitattributes: the links are left out, not followed
  CHECK_FALSE(
      ReadCodeFileOnDisk(dir.string(), "src", "verl/trainer/config/ppo_trainer.yaml", 1024));
  CHECK_FALSE(ReadCodeFileOnDisk(dir.string(), "src", "linked.txt", 1024));
  CHECK(ReadCodeFileOnDisk(dir.string(), "src", "train.py", 1024) == "x");
  CHECK(ReadCodeFileOnDisk(dir.string(), "src", "train.py", 0) == "x");  // max_bytes + 1

  // A .gitattributes that is a link is never read, whatever it points at.
  fs::remove(dir / "src/.gitattributes");
  fs::create_symlink(outside / "attributes", dir / "src/.gitattributes");
  const auto linked = InspectCodeFolderOnDisk(nullptr, dir.string(), "src");
  REQUIRE_FALSE(linked.ok());
  CHECK(linked.error().message() ==
        "src/.gitattributes is a symlink; Git's rules are read from the repository only, never "
        "through a link");
  // Nor a .gitignore, which libgit2 would read on its own.
  fs::remove(dir / "src/.gitattributes");
  fs::create_symlink(outside / "attributes", dir / "src/.gitignore");
  const auto ignore = InspectCodeFolderOnDisk(nullptr, dir.string(), "src");
  REQUIRE_FALSE(ignore.ok());
  CHECK_THAT(ignore.error().message(), Catch::StartsWith("src/.gitignore is a symlink"));
  // Above the folder too.
  fs::remove(dir / "src/.gitignore");
  fs::create_symlink(outside / "attributes", dir / ".gitattributes");
  const auto above = InspectCodeFolderOnDisk(nullptr, dir.string(), "src");
  REQUIRE_FALSE(above.ok());
  CHECK_THAT(above.error().message(), Catch::StartsWith(".gitattributes is a symlink"));
}

TEST_CASE("entries named . or .., holding a slash, or not in UTF-8 are refused in Git trees",
          "[code_package]") {
  Person p;
  p.remote.person->Write("jobs/a.yaml", "name: a\n");
  p.remote.person->Commit("main", "start");
  OpenRepo r(p.path());
  const git_oid blob = WriteBlob(r.repo, "x");
  const git_oid good = WriteRawTree(r.repo, {{0100644, "ok.py", blob}});
  struct Row {
    std::vector<RawEntry> entries;
    std::string message;
  };
  const std::vector<Row> rows = {
      {{{0100644, "..", blob}},
       "src/..: an entry named \"..\" is no file name (a zip would unpack it outside its "
       "folder)"},
      {{{040000, "..", good}},
       "src/..: an entry named \"..\" is no file name (a zip would unpack it outside its "
       "folder)"},
      {{{0100644, ".", blob}},
       "src/.: an entry named \".\" is no file name (a zip would unpack it outside its folder)"},
      {{{0100644, "a/../../x", blob}}, "src/a/../../x: an entry name holds a '/' or a NUL"},
      {{{040000, ".git", good}},
       "src/.git: an entry named \".git\" is Git's own folder, never part of a tree"},
      {{{040000, ".GiT", good}},
       "src/.GiT: an entry named \".GiT\" is Git's own folder, never part of a tree"},
      {{{0100644, "\xff\xfe.txt", blob}},
       "\"src/\\377\\376.txt\" is not named in UTF-8 (Ray would unpack it under another name)"},
      {{{0100644, "ok.py", blob},
        {040000, "sub", WriteRawTree(r.repo, {{0100644, "\xc3(", blob}})}},
       "\"src/sub/\\303(\" is not named in UTF-8 (Ray would unpack it under another name)"},
  };
  for (const Row& row : rows) {
    const git_oid folder = WriteRawTree(r.repo, row.entries);
    const git_oid root = WriteRawTree(r.repo, {{040000, "src", folder}});
    const std::string commit = CommitTree(r.repo, root);
    INFO(row.message);
    const auto info = InspectCodeFolder(r.repo, commit, "src");
    REQUIRE_FALSE(info.ok());
    CHECK(info.error().IsInvalidInput());
    CHECK(info.error().message() == row.message);
    // The zip of the tree is refused too: no entry "../x" can reach Ray.
    const auto zip = BuildCodeZip(r.repo, git_oid_tostr_s(&folder));
    REQUIRE_FALSE(zip.ok());
    CHECK(zip.error().IsInvalidInput());
  }
}

TEST_CASE("a file not named in UTF-8 on disk is refused with its name quoted", "[code_package]") {
  const testing::TempDir tmp;
  const fs::path dir = tmp.Sub("checkout");
  WriteDiskFile(dir / "src/train.py", "x");
  WriteDiskFile(dir / "src/\xe9t\xe9.txt", "latin-1");
  const auto info = InspectCodeFolderOnDisk(nullptr, dir.string(), "src");
  REQUIRE_FALSE(info.ok());
  CHECK(info.error().message() ==
        "\"src/\\351t\\351.txt\" is not named in UTF-8 (Ray would unpack it under another name)");
}

TEST_CASE("folders nested past 256 levels are refused, in Git and on disk", "[code_package]") {
  Person p;
  std::string deep = "src";
  for (int i = 0; i < 260; ++i) deep += "/d";
  p.remote.person->Write(deep + "/x.py", "x");
  const std::string commit = p.remote.person->Commit("main", "deep");
  OpenRepo r(p.path());
  const auto info = InspectCodeFolder(r.repo, commit, "src");
  REQUIRE_FALSE(info.ok());
  CHECK_THAT(info.error().message(),
             Catch::EndsWith("lies more than 256 folders deep in the code folder"));
  const testing::TempDir tmp;
  const fs::path dir = tmp.Sub("checkout");
  WriteDiskFile(dir / deep / "x.py", "x");
  const auto disk = InspectCodeFolderOnDisk(nullptr, dir.string(), "src");
  REQUIRE_FALSE(disk.ok());
  CHECK_THAT(disk.error().message(),
             Catch::EndsWith("lies more than 256 folders deep in the code folder"));
}

// `git archive <commit>:<folder>`'s file names, or nullopt without git.
std::optional<std::set<std::string>> GitArchiveNames(const std::string& repo,
                                                     const std::string& treeish) {
  if (!HaveGit()) return std::nullopt;
  const std::string listing =
      RunGit("-C '" + repo + "' archive --format=tar " + treeish + " 2>/dev/null | tar -t");
  std::set<std::string> names;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() != '/') names.insert(line);
  }
  return names;
}

std::set<std::string> ZipNames(git_repository* repo, const std::string& tree_id) {
  std::set<std::string> names;
  const auto zip = BuildCodeZip(repo, tree_id);
  REQUIRE(zip.ok());
  for (const auto& e : ReadZip(*zip)) names.insert(e.name);
  return names;
}

TEST_CASE("[attr] macros decide export-ignore as git archive decides it", "[code_package]") {
  Person p;
  auto& person = *p.remote.person;
  // Macros above the folder do not count: the folder's own .gitattributes is the top level.
  person.Write(".gitattributes", "[attr]top export-ignore\n");
  person.Write("f/.gitattributes",
               "[attr]skip export-ignore\n"
               "[attr]chain skip\n"
               "[attr]binary export-ignore\n"
               "[attr]cyc1 cyc2\n"
               "[attr]cyc2 cyc1 export-ignore\n"
               "secret.txt skip\n"
               "chained.txt chain\n"
               "bin.dat binary\n"
               "unset.txt skip\n"
               "unset.txt -skip\n"
               "late.txt -skip\n"
               "late.txt skip\n"
               "val.txt skip=1\n"
               "usetop.txt top\n"
               "order1.txt -export-ignore skip\n"
               "order2.txt skip -export-ignore\n"
               "cyc.txt cyc1\n"
               "gen/ skip\n");
  person.Write("f/sub/.gitattributes", "[attr]subm export-ignore\nlocal.txt subm\nuse.txt skip\n");
  for (const char* name :
       {"secret", "chained", "unset", "late", "val", "usetop", "order1", "order2", "cyc", "keep"}) {
    person.Write(std::string("f/") + name + ".txt", "x");
  }
  person.Write("f/bin.dat", "x");
  person.Write("f/gen/out.py", "x");
  person.Write("f/sub/local.txt", "x");
  person.Write("f/sub/use.txt", "x");
  // Built-in binary leaves export-ignore alone.
  person.Write("g/.gitattributes", "bin.dat binary\n");
  person.Write("g/bin.dat", "x");
  // A .gitattributes that is a link is no attributes file, whatever its target says.
  person.WriteSymlink("h/.gitattributes", "secret.txt export-ignore");
  person.Write("h/secret.txt", "x");
  person.Write("h/.gitignore", "x");
  person.Write("h2/.gitattributes", ".gitattributes export-ignore\n");
  const std::string commit = person.Commit("main", "macros");
  OpenRepo r(p.path());
  const std::map<std::string, std::set<std::string>> expected = {
      {"f",
       {".gitattributes", "keep.txt", "order2.txt", "sub/.gitattributes", "sub/local.txt",
        "unset.txt", "usetop.txt", "val.txt"}},
      {"g", {".gitattributes", "bin.dat"}},
  };
  for (const auto& [folder, names] : expected) {
    INFO(folder);
    const auto info = InspectCodeFolder(r.repo, commit, folder);
    INFO((info.ok() ? "" : info.error().message()));
    REQUIRE(info.ok());
    const std::set<std::string> ours = ZipNames(r.repo, info->tree_id);
    CHECK(ours == names);
    if (auto git = GitArchiveNames(p.path(), commit + ":" + folder)) CHECK(ours == *git);
  }
  // h's link is a symlink in the folder: refused, and its target was not read as rules.
  const auto linked = InspectCodeFolder(r.repo, commit, "h");
  REQUIRE_FALSE(linked.ok());
  CHECK(linked.error().message() == "h/.gitattributes is a symlink; code folders hold files only");
}

TEST_CASE("a large export-ignored file under Git's filters is taken from the index while unchanged",
          "[code_package]") {
  if (!HaveGit()) return;
  const testing::TempDir tmp;
  const std::string dir = tmp.Sub("checkout");
  testing::InitWorkingRepository(dir);
  WriteDiskFile(fs::path(dir) / ".gitattributes", "* text=auto\n");
  WriteDiskFile(fs::path(dir) / "src/.gitattributes", "*.ckpt export-ignore\n");
  WriteDiskFile(fs::path(dir) / "src/train.py", "print('train')\r\n");
  {
    std::ofstream big(fs::path(dir) / "src/model.ckpt", std::ios::binary);
    big.seekp((std::streamoff{101} << 20) - 1);
    big.put('\0');
  }
  const std::string git = "-C '" + dir + "' -c core.compression=1 ";
  REQUIRE_FALSE(RunGit(git + "add -A && echo ok").empty());
  REQUIRE_FALSE(
      RunGit(git + "-c user.name=T -c user.email=t@example.com commit -qm code && echo ok")
          .empty());
  const std::string committed = RunGit(git + "rev-parse HEAD:src");
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  {
    OpenRepo r(dir);
    const auto info = InspectCodeFolderOnDisk(r.repo, dir, "src");
    INFO((info.ok() ? "" : info.error().message()));
    REQUIRE(info.ok());
    CHECK(info->tree_id + "\n" == committed);
    CHECK(info->files == 2);
  }
  // Touched since the index was written: it would have to be read whole, so it is refused.
  fs::last_write_time(
      fs::path(dir) / "src/model.ckpt",
      fs::last_write_time(fs::path(dir) / "src/model.ckpt") + std::chrono::hours(1));
  OpenRepo r(dir);
  const auto touched = InspectCodeFolderOnDisk(r.repo, dir, "src");
  REQUIRE_FALSE(touched.ok());
  CHECK_THAT(touched.error().message(),
             Catch::StartsWith("src/model.ckpt is larger than 100.0 MiB and Git's filters apply"));
}

}  // namespace
}  // namespace rg::adapters
