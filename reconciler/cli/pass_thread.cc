#include "reconciler/cli/pass_thread.h"

#include <utility>

namespace rg::cli {

PassThread::PassThread() : thread_([this]() { Serve(); }) {}

PassThread::~PassThread() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PassThread::Run(const std::function<void()>& task) {
  const std::lock_guard<std::mutex> one_at_a_time(run_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  task_ = &task;
  error_ = nullptr;
  cv_.notify_all();
  cv_.wait(lock, [this]() { return task_ == nullptr; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void PassThread::Serve() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this]() { return task_ != nullptr || stopping_; });
    if (task_ == nullptr) return;  // stopping, nothing asked
    const std::function<void()>* task = task_;
    lock.unlock();
    std::exception_ptr error;
    try {
      (*task)();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    task_ = nullptr;
    cv_.notify_all();
  }
}

}  // namespace rg::cli
