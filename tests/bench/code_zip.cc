// Code packages (DESIGN 1.4) at size: a folder of 2,000 files totalling 50 MiB in a real
// repository, half text-like and half random, then the time to inspect it and to build its zip
// (median of 3), the zip's size against its bound, and the peak resident set.
//   code_zip [--files N] [--mib M]

#include <git2.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "reconciler/adapters/code_package.h"
#include "tests/support/git_test_repo.h"
#include "tests/support/test_files.h"

namespace {

// Peak resident set of this process so far, in MiB.
double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Median wall time of 3 runs of `run`, in milliseconds.
double MedianMs(const std::function<void()>& run) {
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[1];
}

// `size` bytes of file `index`: even files read like source code, odd ones are random.
std::string FileContent(size_t index, size_t size, std::mt19937& gen) {
  std::string out;
  out.reserve(size);
  if (index % 2 == 0) {
    static const char* const kWords[] = {
        "def ",   "return ",        "self.",       "tensor", "(x, y)", " = ", "for i in range(n):",
        "\n    ", "import torch\n", "# comment\n", "loss",   "0.001"};
    while (out.size() < size) out += kWords[gen() % (sizeof(kWords) / sizeof(kWords[0]))];
    out.resize(size);
  } else {
    out.resize(size);
    for (char& c : out) c = static_cast<char>(gen() & 0xFFU);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  size_t files = 2000;
  size_t mib = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--files") == 0) files = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--mib") == 0) mib = std::strtoul(argv[i + 1], nullptr, 10);
  }
  const rg::testing::TempDir tmp;
  const std::string remote = tmp.Sub("bench.git");
  rg::testing::InitBareRepository(remote);
  std::string commit;
  {
    rg::testing::GitTestClone person(remote, tmp.Sub("person.git"));
    std::mt19937 gen(42);
    const size_t total = mib << 20U;
    const size_t mean = total / files;
    size_t written = 0;
    size_t spread = 0;
    for (size_t i = 0; i < files; ++i) {
      // Sizes spread around the mean, each odd file making up for the even one before it; the
      // last file takes what is left.
      if (i % 2 == 0) spread = gen() % mean;
      const size_t size = i + 1 == files ? total - written
                          : i % 2 == 0   ? mean / 2 + spread
                                         : mean / 2 + (mean - spread);
      written += size;
      person.Write("src/trainer/m" + std::to_string(i % 20) + "/f" + std::to_string(i) + ".py",
                   FileContent(i, size, gen));
    }
    commit = person.Commit("main", "code");
  }
  std::printf("repository: %zu files, %zu MiB; peak RSS after making it %.1f MiB\n", files, mib,
              PeakRssMib());

  git_libgit2_init();
  git_repository* repo = nullptr;
  if (git_repository_open(&repo, tmp.Sub("person.git").c_str()) != 0) return 1;
  rg::adapters::CodeFolderInfo info;
  const double inspect_ms = MedianMs([&] {
    auto inspected = rg::adapters::InspectCodeFolder(repo, commit, "src/trainer");
    if (!inspected.ok()) std::abort();
    info = std::move(inspected).value();
  });
  std::string zip;
  const double zip_ms = MedianMs([&] {
    auto built = rg::adapters::BuildCodeZip(repo, info.tree_id);
    if (!built.ok()) std::abort();
    zip = std::move(built).value();
  });
  std::printf("InspectCodeFolder: %.1f ms (median of 3), %llu files, %llu bytes\n", inspect_ms,
              static_cast<unsigned long long>(info.files),
              static_cast<unsigned long long>(info.bytes));
  std::printf("BuildCodeZip:      %.1f ms (median of 3)\n", zip_ms);
  std::printf("zip: %zu bytes (%.1f%% of the files), bound %llu\n", zip.size(),
              100.0 * static_cast<double>(zip.size()) / static_cast<double>(info.bytes),
              static_cast<unsigned long long>(rg::adapters::ZipSizeUpperBound(info)));
  // Upload: the time to check and store the package in Ray's package store goes here, once
  // the job server port has its package calls (GET then PUT /api/packages/gcs/<name>).
  std::printf("peak RSS: %.1f MiB\n", PeakRssMib());
  git_repository_free(repo);
  git_libgit2_shutdown();
  return 0;
}
