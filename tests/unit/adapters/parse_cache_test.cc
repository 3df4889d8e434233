// The persistent parse cache on disk: what is saved is found again by a new process, a file
// that cannot be trusted is rebuilt (never fatal), saving is atomic and happens only on a
// change, and the file stays bounded.

#include "reconciler/adapters/parse_cache.h"

#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "reconciler/spec/parse_cache_codec.h"
#include "tests/support/test_files.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

constexpr const char* kVersion = "ray-gitops test";

std::string SpecText(int i) {
  return "workload: ppo\nname: job-" + std::to_string(i) +
         "\ncode_path: ${shared_root}/code/verl\nmodel_id: ${shared_root}/models/Qwen2.5-0.5B\n"
         "train_file: ${shared_root}/data/gsm8k/train.parquet\n"
         "val_file: ${shared_root}/data/gsm8k/test.parquet\nnnodes: 1\nn_gpus_per_node: 2\n"
         "total_training_steps: 100\nretries: 1\noverrides:\n  - trainer.logger=[console]\n"
         "  - actor_rollout_ref.rollout.gpu_memory_utilization=0.4\n"
         "env_vars:\n  WANDB_MODE: offline\n";
}

std::string BlobId(int i) {
  std::string id = std::to_string(i);
  return std::string(40 - id.size(), '0') + id;
}

std::string SpecPath(int i) { return "jobs/ppo/job-" + std::to_string(i) + ".yaml"; }

std::shared_ptr<const spec::LoadedJobSpec> Parse(int i) {
  return spec::ParseSpecFileForDesiredState(SpecText(i), SpecPath(i), "jobs");
}

core::StatusRecord Record(int i) {
  core::StatusRecord r;
  r.name = "job-" + std::to_string(i);
  r.phase = core::Phase::kRunning;
  r.attempt = 0;
  r.attempts.push_back({});
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

// A cache file with one spec, one cluster file and one status record.
std::string SaveThree(const std::string& path) {
  ParseCache cache(path, kVersion);
  cache.PutSpec(BlobId(1), SpecPath(1), "jobs", *Parse(1));
  spec::Parsed<core::RayConfig> cluster = spec::LoadRayConfig("address: http://h:8265\n", "c.yaml");
  cache.PutCluster(BlobId(2), "c.yaml", "address: http://h:8265\n", cluster);
  cache.PutStatus(BlobId(3), Record(3));
  REQUIRE(cache.Save().ok());
  return ReadFile(path);
}

void RequireThreeFound(const std::string& path) {
  ParseCache cache(path, kVersion);
  CHECK(cache.load_problem().empty());
  std::optional<CachedSpecFile> spec = cache.FindSpec(BlobId(1), SpecPath(1), "jobs");
  REQUIRE(spec);
  CHECK(*spec->loaded == *Parse(1));
  std::optional<CachedClusterFile> cluster = cache.FindCluster(BlobId(2), "c.yaml");
  REQUIRE(cluster);
  CHECK(cluster->parsed == spec::LoadRayConfig("address: http://h:8265\n", "c.yaml"));
  std::optional<core::StatusRecord> record = cache.FindStatus(BlobId(3));
  REQUIRE(record);
  CHECK(*record == Record(3));
}

TEST_CASE("what one process saves, the next finds by blob id, path and jobs folder") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("cache/repo.parse-cache");  // the folder is created
  SaveThree(path);
  RequireThreeFound(path);

  ParseCache cache(path, kVersion);
  CHECK_FALSE(cache.FindSpec(BlobId(1), SpecPath(2), "jobs"));   // another path
  CHECK_FALSE(cache.FindSpec(BlobId(1), SpecPath(1), "specs"));  // another jobs folder
  CHECK_FALSE(cache.FindSpec(BlobId(9), SpecPath(1), "jobs"));   // another blob
  CHECK_FALSE(cache.FindCluster(BlobId(2), "other.yaml"));
  CHECK_FALSE(cache.FindStatus(BlobId(1)));  // a spec's blob id is no status record
}

TEST_CASE("a blob id in hex and one given otherwise never share an entry") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  // A SHA-1 in hex is kept as its 20 bytes; these 20 characters are those very bytes.
  const std::string hex = "7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a";
  const std::string bytes(20, 'z');
  {
    ParseCache cache(path, kVersion);
    cache.PutStatus(hex, Record(1));
    cache.PutStatus(bytes, Record(2));
    cache.PutStatus("ABCDEF0123456789ABCDEF0123456789ABCDEF01", Record(3));  // not lower case
    REQUIRE(cache.Save().ok());
  }
  ParseCache cache(path, kVersion);
  CHECK(cache.FindStatus(hex)->name == "job-1");
  CHECK(cache.FindStatus(bytes)->name == "job-2");
  CHECK(cache.FindStatus("ABCDEF0123456789ABCDEF0123456789ABCDEF01")->name == "job-3");
  CHECK_FALSE(cache.FindStatus("abcdef0123456789abcdef0123456789abcdef01"));
  CHECK(cache.size() == 3);
}

TEST_CASE("payloads are read from the file as loaded: a rewrite by another process changes none") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("cache/repo.parse-cache");
  SaveThree(path);
  ParseCache cache(path, kVersion);
  REQUIRE(cache.load_problem().empty());
  // Another process replaces the file (a temporary file renamed into place) with other entries.
  {
    ParseCache other(path + ".other", kVersion);
    other.PutSpec(BlobId(7), SpecPath(7), "jobs", *Parse(7));
    REQUIRE(other.Save().ok());
  }
  REQUIRE(::rename((path + ".other").c_str(), path.c_str()) == 0);
  std::optional<CachedSpecFile> spec = cache.FindSpec(BlobId(1), SpecPath(1), "jobs");
  REQUIRE(spec);
  CHECK(*spec->loaded == *Parse(1));
  CHECK_FALSE(cache.FindSpec(BlobId(7), SpecPath(7), "jobs"));
}

TEST_CASE("a file truncated under a loaded cache gives misses, never a bad entry") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("cache/repo.parse-cache");
  SaveThree(path);
  ParseCache cache(path, kVersion);
  REQUIRE(cache.load_problem().empty());
  REQUIRE(::truncate(path.c_str(), 0) == 0);
  CHECK_FALSE(cache.FindSpec(BlobId(1), SpecPath(1), "jobs"));
  CHECK_FALSE(cache.FindStatus(BlobId(3)));
  // Dropped, so the next save writes a whole file again, which the next process can use.
  cache.PutStatus(BlobId(4), Record(4));
  REQUIRE(cache.Save().ok());
  ParseCache next(path, kVersion);
  CHECK(next.load_problem().empty());
  CHECK(next.FindStatus(BlobId(4)));
  // The cluster file's entry was in the cut file too: left out of the new one, not written
  // empty.
  CHECK_FALSE(next.FindCluster(BlobId(2), "c.yaml"));
  CHECK(next.size() == 1);
}

// At 50,000 specs the file is over 100 MB: a save streams it out and keeps only the index.
TEST_CASE("after a save the entries are read from the file written, not held in memory") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("cache/repo.parse-cache");
  ParseCache cache(path, kVersion);
  for (int i = 0; i < 300; ++i) cache.PutSpec(BlobId(i), SpecPath(i), "jobs", *Parse(i));
  cache.PutStatus(BlobId(1000), Record(1000));
  REQUIRE(cache.Save().ok());
  // The file as written is the one a new process reads whole.
  {
    ParseCache next(path, kVersion);
    CHECK(next.load_problem().empty());
    CHECK(next.size() == 301);
    std::optional<CachedSpecFile> last = next.FindSpec(BlobId(299), SpecPath(299), "jobs");
    REQUIRE(last);
    CHECK(*last->loaded == *Parse(299));
  }
  std::optional<CachedSpecFile> found = cache.FindSpec(BlobId(7), SpecPath(7), "jobs");
  REQUIRE(found);
  CHECK(*found->loaded == *Parse(7));
  // Cut in place: what this process saved is read from the file, so it is gone too.
  REQUIRE(::truncate(path.c_str(), 0) == 0);
  CHECK_FALSE(cache.FindSpec(BlobId(7), SpecPath(7), "jobs"));
  CHECK_FALSE(cache.FindStatus(BlobId(1000)));
}

TEST_CASE("entries put past the spill bound are written out before the save, and kept by it") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("cache/repo.parse-cache");
  {
    ParseCache cold(path, kVersion);
    cold.set_spill_bytes(4096);
    for (int i = 0; i < 200; ++i) cold.PutSpec(BlobId(i), SpecPath(i), "jobs", *Parse(i));
    CHECK(cold.spills() > 1);  // the file written afresh, then segments appended
    CHECK(cold.saves() == 0);
    // What was written out is read back from the file, and another process finds it there.
    std::optional<CachedSpecFile> early = cold.FindSpec(BlobId(3), SpecPath(3), "jobs");
    REQUIRE(early);
    CHECK(*early->loaded == *Parse(3));
    ParseCache peek(path, kVersion);
    CHECK(peek.load_problem().empty());
    CHECK(peek.size() > 100);
    REQUIRE(cold.Save().ok());
    CHECK(cold.saves() == 1);
  }
  ParseCache warm(path, kVersion);
  CHECK(warm.load_problem().empty());
  CHECK(warm.size() == 200);
  std::optional<CachedSpecFile> last = warm.FindSpec(BlobId(199), SpecPath(199), "jobs");
  REQUIRE(last);
  CHECK(*last->loaded == *Parse(199));
  // A warm cache appends what it spills, and drops nothing there: the entries not used yet in
  // this period are still found, and the save keeps the used ones plus the spare bound.
  warm.set_spill_bytes(4096);
  for (int i = 200; i < 300; ++i) warm.PutSpec(BlobId(i), SpecPath(i), "jobs", *Parse(i));
  CHECK(warm.spills() > 0);
  CHECK(warm.FindSpec(BlobId(150), SpecPath(150), "jobs"));
  REQUIRE(warm.Save().ok());
  ParseCache next(path, kVersion);
  CHECK(next.load_problem().empty());
  CHECK(next.size() == 300);
  std::optional<CachedSpecFile> spilled = next.FindSpec(BlobId(250), SpecPath(250), "jobs");
  REQUIRE(spilled);
  CHECK(*spilled->loaded == *Parse(250));
}

TEST_CASE("a file written by another build is not used and is rebuilt") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  SaveThree(path);
  ParseCache other(path, "ray-gitops 9.9.9");
  CHECK_FALSE(other.load_problem().empty());
  CHECK(other.size() == 0);
  CHECK_FALSE(other.FindStatus(BlobId(3)));
  other.PutStatus(BlobId(4), Record(4));
  REQUIRE(other.Save().ok());
  ParseCache again(path, "ray-gitops 9.9.9");
  CHECK(again.load_problem().empty());
  CHECK(again.FindStatus(BlobId(4)));
  CHECK_FALSE(again.FindStatus(BlobId(3)));
}

TEST_CASE("a damaged file is never trusted: the run goes on without it and it is rebuilt") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  const std::string good = SaveThree(path);
  std::vector<std::pair<std::string, std::string>> damaged = {
      {"empty", ""},
      {"cut in half", good.substr(0, good.size() / 2)},
      {"cut by one byte", good.substr(0, good.size() - 1)},
      {"not a cache file", "hello\n"},
  };
  for (size_t at :
       {size_t{0}, size_t{9}, size_t{13}, size_t{30}, good.size() / 2, good.size() - 1}) {
    std::string flipped = good;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x20);
    damaged.emplace_back("byte " + std::to_string(at) + " flipped", flipped);
  }
  std::string version = good;
  version[8] = static_cast<char>(version[8] + 1);  // the format version, after the magic
  damaged.emplace_back("another format version", version);

  for (const auto& [what, bytes] : damaged) {
    SECTION(what) {
      WriteFile(path, bytes);
      ParseCache cache(path, kVersion);
      CHECK(cache.size() == 0);
      CHECK_FALSE(cache.FindSpec(BlobId(1), SpecPath(1), "jobs"));
      CHECK_FALSE(cache.FindStatus(BlobId(3)));
      if (!bytes.empty()) CHECK_FALSE(cache.load_problem().empty());
      // Rebuilt by the run that parses again.
      cache.PutSpec(BlobId(1), SpecPath(1), "jobs", *Parse(1));
      spec::Parsed<core::RayConfig> cluster =
          spec::LoadRayConfig("address: http://h:8265\n", "c.yaml");
      cache.PutCluster(BlobId(2), "c.yaml", "address: http://h:8265\n", cluster);
      cache.PutStatus(BlobId(3), Record(3));
      REQUIRE(cache.Save().ok());
      RequireThreeFound(path);
    }
  }
}

TEST_CASE("an entry that does not decode is dropped and the others are still found") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  std::string bytes = SaveThree(path);
  // Garble the status record's payload (its name) and make the checksum right again, as a
  // file written by a faulty encoder would be.
  const size_t at = bytes.find("job-3");
  REQUIRE(at != std::string::npos);
  bytes[at - 4] = '\x7f';  // the name's length: now far beyond the payload
  spec::ByteWriter sum;
  sum.U64(spec::Hash64(std::string_view(bytes).substr(28)));
  bytes.replace(12, 8, sum.bytes());
  WriteFile(path, bytes);

  ParseCache cache(path, kVersion);
  REQUIRE(cache.load_problem().empty());
  CHECK_FALSE(cache.FindStatus(BlobId(3)));
  CHECK(cache.FindSpec(BlobId(1), SpecPath(1), "jobs"));
  CHECK(cache.size() == 2);
  REQUIRE(cache.Save().ok());  // the bad entry is gone from the file too
  CHECK(ParseCache(path, kVersion).size() == 2);
}

TEST_CASE("a folder in the file's place is not fatal, and an empty one is replaced") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  fs::create_directories(path + "/inside");
  {
    ParseCache cache(path, kVersion);
    CHECK_FALSE(cache.load_problem().empty());
    cache.PutStatus(BlobId(3), Record(3));
    CHECK_FALSE(cache.Save().ok());  // a folder with something in it is never removed
    CHECK(fs::exists(path + "/inside"));
    CHECK(cache.FindStatus(BlobId(3)));
  }
  fs::remove(path + "/inside");
  ParseCache cache(path, kVersion);
  cache.PutStatus(BlobId(3), Record(3));
  REQUIRE(cache.Save().ok());
  CHECK(ParseCache(path, kVersion).FindStatus(BlobId(3)));
}

TEST_CASE("a run that changes nothing does not write the file") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  const std::string three = SaveThree(path);
  const ino_t before = Inode(path);
  ParseCache cache(path, kVersion);
  CHECK(cache.FindSpec(BlobId(1), SpecPath(1), "jobs"));
  cache.KeepStatus(BlobId(3));
  CHECK_FALSE(cache.FindSpec(BlobId(7), SpecPath(7), "jobs"));  // a miss alone changes nothing
  REQUIRE(cache.Save().ok());
  CHECK(cache.saves() == 0);
  CHECK(Inode(path) == before);
  CHECK(ReadFile(path) == three);

  cache.PutStatus(BlobId(4), Record(4));
  REQUIRE(cache.Save().ok());
  CHECK(cache.saves() == 1);
  REQUIRE(cache.Save().ok());
  CHECK(cache.saves() == 1);
}

TEST_CASE("a save that only adds entries appends them, and a new process finds them all") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  const std::string three = SaveThree(path);
  const ino_t before = Inode(path);
  {
    ParseCache cache(path, kVersion);
    cache.PutStatus(BlobId(4), Record(4));
    REQUIRE(cache.Save().ok());
    cache.PutSpec(BlobId(5), SpecPath(5), "jobs", *Parse(5));
    REQUIRE(cache.Save().ok());
    CHECK(cache.saves() == 2);
  }
  // Written in place: the file as it was, then the new entries only.
  const std::string grown = ReadFile(path);
  CHECK(Inode(path) == before);
  CHECK(grown.substr(0, three.size()) == three);
  ParseCache cache(path, kVersion);
  CHECK(cache.load_problem().empty());
  CHECK(cache.size() == 5);
  RequireThreeFound(path);
  CHECK(cache.FindStatus(BlobId(4)) == Record(4));
  std::optional<CachedSpecFile> spec = cache.FindSpec(BlobId(5), SpecPath(5), "jobs");
  REQUIRE(spec);
  CHECK(*spec->loaded == *Parse(5));
}

TEST_CASE("an appended segment cut short or damaged is ignored, and the next save rewrites it") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  const std::string three = SaveThree(path);
  {
    ParseCache cache(path, kVersion);
    cache.PutStatus(BlobId(4), Record(4));
    REQUIRE(cache.Save().ok());
  }
  const std::string grown = ReadFile(path);
  const size_t segment = grown.size() - three.size();
  std::vector<std::pair<std::string, std::string>> damaged = {
      {"one byte of a segment", three + grown.substr(three.size(), 1)},
      {"cut by one byte", grown.substr(0, grown.size() - 1)},
      {"cut in half", grown.substr(0, three.size() + segment / 2)},
      {"a byte added", grown + "x"},
  };
  for (size_t at : {size_t{0}, size_t{9}, segment / 2, segment - 1}) {
    std::string flipped = grown;
    flipped[three.size() + at] = static_cast<char>(flipped[three.size() + at] ^ 0x20);
    damaged.emplace_back("segment byte " + std::to_string(at) + " flipped", flipped);
  }
  for (const auto& [what, bytes] : damaged) {
    SECTION(what) {
      WriteFile(path, bytes);
      const ino_t before = Inode(path);
      {
        ParseCache cache(path, kVersion);
        CHECK(cache.load_problem().empty());  // the base stands
        RequireThreeFound(path);
        // A damaged segment is never used; a whole one before the damage is.
        CHECK(cache.FindStatus(BlobId(4)).has_value() == (what == "a byte added"));
        REQUIRE(cache.Save().ok());  // nothing put, but the file is set right
        CHECK(Inode(path) != before);
      }
      ParseCache cache(path, kVersion);
      CHECK(cache.load_problem().empty());
      CHECK(cache.size() == (what == "a byte added" ? 4 : 3));
      REQUIRE(cache.Save().ok());
      CHECK(cache.saves() == 0);  // nothing left to set right
    }
  }
}

TEST_CASE("a segment another build appended is not used, and the file is rewritten") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  SaveThree(path);
  {
    ParseCache ours(path, kVersion);
    ours.PutStatus(BlobId(4), Record(4));
    REQUIRE(ours.Save().ok());
  }
  std::string bytes = ReadFile(path);
  const size_t version_at = bytes.rfind(kVersion);
  REQUIRE(version_at != std::string::npos);
  bytes[version_at] = 'R';  // the segment now names another build; its checksum made right
  const size_t segment_at = bytes.rfind("RGPSEG1\n");
  REQUIRE(segment_at != std::string::npos);
  spec::ByteWriter sum;
  sum.U64(spec::Hash64(std::string_view(bytes).substr(segment_at + 24)));
  bytes.replace(segment_at + 8, 8, sum.bytes());
  WriteFile(path, bytes);
  ParseCache cache(path, kVersion);
  CHECK(cache.load_problem().empty());
  CHECK_FALSE(cache.FindStatus(BlobId(4)));
  CHECK(cache.size() == 3);
  const ino_t before = Inode(path);
  REQUIRE(cache.Save().ok());
  CHECK(Inode(path) != before);
  CHECK(ReadFile(path).find("RGPSEG1") == std::string::npos);
}

TEST_CASE("a file another process wrote since this one read it is rewritten, not appended to") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  SaveThree(path);
  ParseCache mine(path, kVersion);
  {
    ParseCache theirs(path, kVersion);
    theirs.PutStatus(BlobId(8), Record(8));
    REQUIRE(theirs.Save().ok());  // appended: the file is longer than `mine` read it
  }
  mine.PutStatus(BlobId(4), Record(4));
  const ino_t before = Inode(path);
  REQUIRE(mine.Save().ok());
  CHECK(Inode(path) != before);  // a whole new file, by rename
  ParseCache cache(path, kVersion);
  CHECK(cache.FindStatus(BlobId(4)));
  CHECK(cache.size() == 4);  // what `mine` held: the other's entry was not seen by it
}

TEST_CASE("appended segments are folded into one file when they outgrow the rest") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  SaveThree(path);
  ParseCache cache(path, kVersion);
  std::vector<ino_t> inodes = {Inode(path)};
  for (int i = 10; i < 70; ++i) {
    cache.PutStatus(BlobId(i), Record(i));
    REQUIRE(cache.Save().ok());
    if (Inode(path) != inodes.back()) inodes.push_back(Inode(path));
  }
  CHECK(inodes.size() >= 3);  // rewritten several times, as the segments doubled the file
  ParseCache again(path, kVersion);
  CHECK(again.size() == 63);
  // The header names the base's size: what follows it (the segments) is never larger.
  const std::string bytes = ReadFile(path);
  spec::ByteReader header(std::string_view(bytes).substr(20, 8));
  const uint64_t base = 28 + header.U64();
  CHECK(bytes.size() - base <= base);
}

TEST_CASE("saving leaves no temporary file, and writers racing never leave a torn file") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0};
  std::thread reader([&] {
    while (!done) {
      ParseCache cache(path, kVersion);
      if (!cache.load_problem().empty()) ++bad_reads;
    }
  });
  // Both writers open the file before either saves (had one opened it after the other's
  // first save, it would hold that entry too and the count below would not be one writer's).
  ParseCache cache_a(path, kVersion);
  ParseCache cache_b(path, kVersion);
  auto writer = [&](ParseCache& cache, int base) {
    for (int i = 0; i < 30; ++i) {
      cache.PutSpec(BlobId(base + i), SpecPath(base + i), "jobs", *Parse(base + i));
      REQUIRE(cache.Save().ok());
    }
  };
  std::thread a(writer, std::ref(cache_a), 0);
  std::thread b(writer, std::ref(cache_b), 1000);
  a.join();
  b.join();
  done = true;
  reader.join();
  CHECK(bad_reads == 0);
  ParseCache last(path, kVersion);
  CHECK(last.load_problem().empty());
  CHECK(last.size() == 30);  // one writer's whole file: the last rename won
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    names.push_back(entry.path().filename().string());
  }
  CHECK(names == std::vector<std::string>{"repo.parse-cache"});
}

TEST_CASE("the file keeps the entries used plus the most recent others, up to a bound") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  {
    ParseCache cache(path, kVersion);
    for (int i = 0; i < 3000; ++i) cache.PutStatus(BlobId(i), Record(i));
    REQUIRE(cache.Save().ok());
  }
  {
    // A run that uses 100 of them and parses one more: 101 used, 1,101 others kept.
    ParseCache cache(path, kVersion);
    REQUIRE(cache.size() == 3000);
    for (int i = 0; i < 100; ++i) REQUIRE(cache.FindStatus(BlobId(i)));
    cache.PutStatus(BlobId(5000), Record(5000));
    REQUIRE(cache.Save().ok());
  }
  {
    ParseCache cache(path, kVersion);
    CHECK(cache.size() == 101 + 101 + ParseCache::kSpareEntries);
    // One new entry only: of the others, the ones used most recently stay.
    cache.PutStatus(BlobId(6000), Record(6000));
    REQUIRE(cache.Save().ok());
  }
  ParseCache cache(path, kVersion);
  CHECK(cache.size() == 1 + 1 + ParseCache::kSpareEntries);
  for (int i = 0; i < 100; ++i) CHECK(cache.FindStatus(BlobId(i)));
  CHECK(cache.FindStatus(BlobId(5000)));
}

// Not run by default (hidden tag): the load time at 10,000 specs, for a Release build.
//   parse_cache_tests "[.bench]"
TEST_CASE("loading 10,000 specs from the cache", "[.bench]") {
  testing::TempDir tmp;
  const std::string path = tmp.Sub("repo.parse-cache");
  constexpr int kSpecs = 10000;
  {
    ParseCache cache(path, kVersion);
    for (int i = 0; i < kSpecs; ++i) {
      cache.PutSpec(BlobId(i), SpecPath(i), "jobs", *Parse(i));
    }
    REQUIRE(cache.Save().ok());
  }
  const auto start = std::chrono::steady_clock::now();
  ParseCache cache(path, kVersion);
  const auto opened = std::chrono::steady_clock::now();
  for (int i = 0; i < kSpecs; ++i) REQUIRE(cache.FindSpec(BlobId(i), SpecPath(i), "jobs"));
  const auto found = std::chrono::steady_clock::now();
  using ms = std::chrono::duration<double, std::milli>;
  std::cout << "file " << fs::file_size(path) << " bytes; open " << ms(opened - start).count()
            << " ms; 10,000 FindSpec " << ms(found - opened).count() << " ms; total "
            << ms(found - start).count() << " ms\n";
  const auto parse_start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSpecs; ++i) Parse(i);
  std::cout << "parsing the same 10,000 texts: "
            << ms(std::chrono::steady_clock::now() - parse_start).count() << " ms\n";
}

TEST_CASE("a released cache gives its memory back and reads the file again when next used") {
  testing::TempDir tmp;
  const std::string path = tmp.path() + "/repo.parse-cache";
  SaveThree(path);
  ParseCache cache(path, kVersion);
  REQUIRE(cache.size() == 3);
  cache.Release();
  // The entries come back from the file, as they were.
  std::optional<CachedSpecFile> spec = cache.FindSpec(BlobId(1), SpecPath(1), "jobs");
  REQUIRE(spec);
  CHECK(*spec->loaded == *Parse(1));
  CHECK(cache.size() == 3);

  // What is not saved yet is never dropped.
  cache.PutStatus(BlobId(9), Record(9));
  cache.Release();
  REQUIRE(cache.FindStatus(BlobId(9)));
  REQUIRE(cache.Save().ok());
  cache.Release();
  CHECK(cache.FindStatus(BlobId(9)));
  CHECK(cache.size() == 4);
}

}  // namespace
}  // namespace rg::adapters
