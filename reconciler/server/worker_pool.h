#pragma once
// A fixed set of threads running tasks from a bounded queue. Unlike an unbounded pool, a full
// queue refuses the task at once, so the caller can answer "busy" instead of letting requests
// pile up behind slow ones. Thread-safe.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rg::server {

class WorkerPool {
 public:
  // REQUIRES: threads > 0.
  WorkerPool(size_t threads, size_t max_queued);
  ~WorkerPool();  // Shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; false (and the task is dropped) when every thread has a task and
  // `max_queued` more are waiting, or the pool is shut down.
  bool TryPost(std::function<void()> task);
  // Runs the tasks already queued, then joins the threads. Idempotent.
  void Shutdown();

 private:
  void Work();

  const size_t max_in_flight_;  // threads + max_queued
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t in_flight_ = 0;  // queued or running
  bool shutting_down_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rg::server
