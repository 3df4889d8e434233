#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace rg::cli {

// One thread that runs the daemon's passes, one at a time, for the caller that waits on it.
//
// Why a thread of its own: the allocator (jemalloc or glibc, cli/heap.h) serves a thread's
// allocations from an arena of its own. A full pass allocates hundreds of MB of short-lived objects
// (parsed specs, records, the plan) while the loop keeps only its jobs' records. Built on the
// loop's thread, those records ended up scattered among the pass's holes, and the heap could not be
// given back around them (at 10,000 specs: 20 MB in use held 110 MB resident). With the pass here,
// the loop copies what it keeps into its own arena, and once the pass's result is freed,
// ReturnFreeMemory returns this arena's pages whole (docs/daemon.md, "Memory"). jemalloc is
// now configured with one arena for every thread (cli/heap.cc), so with it this separation no
// longer holds; only the copy and the purge after every pass do.
class PassThread {
 public:
  PassThread();
  ~PassThread();
  PassThread(const PassThread&) = delete;
  PassThread& operator=(const PassThread&) = delete;
  PassThread(PassThread&&) = delete;
  PassThread& operator=(PassThread&&) = delete;

  // Runs `task` on the thread and returns when it has; an exception it throws is rethrown here.
  void Run(const std::function<void()>& task);

 private:
  void Serve();

  std::mutex run_mu_;  // one Run at a time
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()>* task_ = nullptr;  // set by Run, cleared by the thread when done
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace rg::cli
