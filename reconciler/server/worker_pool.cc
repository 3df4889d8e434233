#include "reconciler/server/worker_pool.h"

#include <utility>

namespace rg::server {

WorkerPool::WorkerPool(size_t threads, size_t max_queued) : max_in_flight_(threads + max_queued) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkerPool::~WorkerPool() { Shutdown(); }

bool WorkerPool::TryPost(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (shutting_down_ || in_flight_ >= max_in_flight_) return false;
    queue_.push_back(std::move(task));
    ++in_flight_;
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Shutdown() {
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WorkerPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return shutting_down_ || !queue_.empty(); });
      if (queue_.empty()) return;  // shutting down with nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
    std::lock_guard lock(mu_);
    --in_flight_;
  }
}

}  // namespace rg::server
