// Memory over SSH fetches: one GitWorkspace fetches the same SSH remote N times (200 by
// default) in one process and prints the resident set and the heap in use (glibc's
// mallinfo2) before the first fetch and after every N/2. Two ways to run it
// (ssh_fetch_memory.sh starts the sshd and runs both):
//   --private-home: as ray-gitops runs (adapters/ssh_host_keys.h): libgit2 reads a private
//                   home's known_hosts of one line per host;
//   without it:     libgit2 reads $HOME/.ssh/known_hosts itself, as it does without
//                   ray-gitops's private home. What libgit2 parsed is freed with its session
//                   (libssh2_knownhost_release.cc) unless --keep-lists, with which libgit2
//                   1.5.1 leaks it on every connection that succeeds: a large file then shows
//                   the leak avoided.
// The host key is checked against --known-hosts either way. Exits 1 when a fetch fails, or when
// the heap grew by more than --max-growth-kb between the middle and the end (when given).
//
// Usage: ssh_fetch_memory --url URL --key FILE --known-hosts FILE --cache-dir DIR
//          [--private-home] [--keep-lists] [--fetches N] [--max-growth-kb K]

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ssh_host_keys.h"

namespace {

long StatusKb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0)
      return std::strtol(line.c_str() + std::string(field).size(), nullptr, 10);
  }
  return -1;
}

long HeapKb() { return static_cast<long>(mallinfo2().uordblks / 1024); }

}  // namespace

int main(int argc, char** argv) {
  std::string url, key, known_hosts, cache_dir;
  bool private_home = false;
  int fetches = 200;
  long max_growth_kb = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--url" && has_value) {
      url = argv[++i];
    } else if (arg == "--key" && has_value) {
      key = argv[++i];
    } else if (arg == "--known-hosts" && has_value) {
      known_hosts = argv[++i];
    } else if (arg == "--cache-dir" && has_value) {
      cache_dir = argv[++i];
    } else if (arg == "--fetches" && has_value) {
      fetches = std::atoi(argv[++i]);
    } else if (arg == "--max-growth-kb" && has_value) {
      max_growth_kb = std::atol(argv[++i]);
    } else if (arg == "--private-home") {
      private_home = true;
    } else if (arg == "--keep-lists") {
      rg::adapters::SetKnownHostListRelease(false);
    } else {
      std::fprintf(stderr,
                   "usage: ssh_fetch_memory --url URL --key FILE --known-hosts FILE "
                   "--cache-dir DIR [--private-home] [--keep-lists] [--fetches N] "
                   "[--max-growth-kb K]\n");
      return 2;
    }
  }
  rg::adapters::SshHostKeyConfig config = rg::adapters::KnownHostsFromEnvironment(known_hosts);
  if (private_home) config.private_home = cache_dir + "/ssh-home";
  rg::adapters::ConfigureSshHostKeys(config);

  rg::adapters::GitWorkspaceOptions options;
  options.repo = url;
  options.cache_dir = cache_dir;
  options.ssh_key_file = key;
  auto workspace = rg::adapters::GitWorkspace::Open(options);
  if (!workspace.ok()) {
    std::fprintf(stderr, "%s\n", workspace.error().ToString().c_str());
    return 1;
  }
  std::printf("%s: libgit2 reads %s\n", private_home ? "private home" : "user's file",
              private_home ? "a one-line known_hosts" : "$HOME/.ssh/known_hosts");
  std::printf("%8s %10s %10s\n", "fetches", "rss_kb", "heap_kb");
  std::printf("%8d %10ld %10ld\n", 0, StatusKb("VmRSS:"), HeapKb());
  long middle_heap = 0;
  for (int i = 1; i <= fetches; ++i) {
    if (rg::core::Status fetched = (*workspace)->Fetch(); !fetched.ok()) {
      std::fprintf(stderr, "fetch %d: %s\n", i, fetched.error().ToString().c_str());
      return 1;
    }
    if (i == fetches / 2 || i == fetches) {
      std::printf("%8d %10ld %10ld\n", i, StatusKb("VmRSS:"), HeapKb());
      if (i == fetches / 2) middle_heap = HeapKb();
    }
  }
  std::printf("known_hosts lists libgit2 left behind, freed with their session: %llu\n",
              static_cast<unsigned long long>(rg::adapters::KnownHostListsReleased()));
  const long growth = HeapKb() - middle_heap;
  std::printf("heap growth over the last %d fetches: %ld KB (%.0f bytes a fetch)\n",
              fetches - fetches / 2, growth,
              static_cast<double>(growth) * 1024.0 / (fetches - fetches / 2));
  if (max_growth_kb >= 0 && growth > max_growth_kb) {
    std::fprintf(stderr, "FAIL: the heap grew by %ld KB, more than %ld KB\n", growth,
                 max_growth_kb);
    return 1;
  }
  return 0;
}
