// Frees the known_hosts list that libgit2 1.5.1 parses for every SSH connection and keeps after
// a connection that succeeds (ssh_host_keys.h). libgit2 makes the list with
// libssh2_knownhost_init(session) and frees it only on its error path; the session itself is
// always freed with libssh2_session_free. This file defines those three libssh2 functions in
// the executable, where the dynamic linker finds them before libssh2's own (libgit2 calls them
// through its PLT), forwards each to libssh2's (dlsym RTLD_NEXT), and frees what a session's
// lists still hold just before the session goes. Nothing else changes: every list is freed
// exactly once, by libgit2 or here. KnownHostListsReleased counts the lists freed here; the
// memory benchmark (tests/bench/ssh_fetch_memory.cc) prints it, and its ctest fails when the
// heap grows, which is what would show if a libgit2 built otherwise bypassed these
// definitions.

#include <dlfcn.h>
#include <libssh2.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "reconciler/adapters/ssh_host_keys.h"

namespace rg::adapters {
namespace {

template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// The lists each live session made. Never destroyed: sessions may be freed during exit.
struct OpenLists {
  std::mutex mu;
  std::unordered_map<LIBSSH2_SESSION*, std::vector<LIBSSH2_KNOWNHOSTS*>> by_session;
  std::atomic<uint64_t> released{0};
  std::atomic<bool> enabled{true};
};

OpenLists& Lists() {
  static auto* const lists = new OpenLists();
  return *lists;
}

using KnownhostInit = LIBSSH2_KNOWNHOSTS* (*)(LIBSSH2_SESSION*);
using KnownhostFree = void (*)(LIBSSH2_KNOWNHOSTS*);
using SessionFree = int (*)(LIBSSH2_SESSION*);

KnownhostFree RealKnownhostFree() {
  static const auto real = Next<KnownhostFree>("libssh2_knownhost_free");
  return real;
}

}  // namespace

uint64_t KnownHostListsReleased() { return Lists().released.load(); }

void SetKnownHostListRelease(bool on) { Lists().enabled = on; }

}  // namespace rg::adapters

extern "C" {

LIBSSH2_KNOWNHOSTS* libssh2_knownhost_init(LIBSSH2_SESSION* session) {
  static const auto real =
      rg::adapters::Next<rg::adapters::KnownhostInit>("libssh2_knownhost_init");
  LIBSSH2_KNOWNHOSTS* hosts = real(session);
  if (hosts != nullptr && rg::adapters::Lists().enabled.load()) {
    rg::adapters::OpenLists& lists = rg::adapters::Lists();
    std::lock_guard<std::mutex> lock(lists.mu);
    lists.by_session[session].push_back(hosts);
  }
  return hosts;
}

void libssh2_knownhost_free(LIBSSH2_KNOWNHOSTS* hosts) {
  {
    rg::adapters::OpenLists& lists = rg::adapters::Lists();
    std::lock_guard<std::mutex> lock(lists.mu);
    for (auto it = lists.by_session.begin(); it != lists.by_session.end(); ++it) {
      auto& open = it->second;
      if (auto found = std::find(open.begin(), open.end(), hosts); found != open.end()) {
        open.erase(found);
        if (open.empty()) lists.by_session.erase(it);
        break;
      }
    }
  }
  rg::adapters::RealKnownhostFree()(hosts);
}

int libssh2_session_free(LIBSSH2_SESSION* session) {
  static const auto real = rg::adapters::Next<rg::adapters::SessionFree>("libssh2_session_free");
  std::vector<LIBSSH2_KNOWNHOSTS*> left;
  {
    rg::adapters::OpenLists& lists = rg::adapters::Lists();
    std::lock_guard<std::mutex> lock(lists.mu);
    if (auto it = lists.by_session.find(session); it != lists.by_session.end()) {
      left = std::move(it->second);
      lists.by_session.erase(it);
    }
  }
  for (LIBSSH2_KNOWNHOSTS* hosts : left) rg::adapters::RealKnownhostFree()(hosts);
  rg::adapters::Lists().released += left.size();
  return real(session);
}

}  // extern "C"
