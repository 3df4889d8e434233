// The daemon's pass thread (runs each pass on one thread of its own) and LeaveToExit (a
// one-shot command's structures are never destroyed).

#include "reconciler/cli/pass_thread.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "reconciler/cli/leave_to_exit.h"

namespace rg::cli {
namespace {

TEST_CASE("PassThread runs every task on one thread that is not the caller's, in turn") {
  PassThread thread;
  std::vector<std::thread::id> ran_on;
  int done = 0;
  for (int i = 0; i < 5; ++i) {
    thread.Run([&]() {
      ran_on.push_back(std::this_thread::get_id());
      ++done;
    });
    CHECK(done == i + 1);  // Run returns once the task has run
  }
  REQUIRE(ran_on.size() == 5);
  CHECK(ran_on.front() != std::this_thread::get_id());
  for (const std::thread::id& id : ran_on) CHECK(id == ran_on.front());
}

TEST_CASE("PassThread hands a task's exception back to the caller and keeps serving") {
  PassThread thread;
  CHECK_THROWS_AS(thread.Run([]() { throw std::runtime_error("pass failed"); }),
                  std::runtime_error);
  bool ran = false;
  thread.Run([&]() { ran = true; });
  CHECK(ran);
}

TEST_CASE("PassThread serves callers from several threads one at a time") {
  PassThread thread;
  int in_task = 0;
  int most_at_once = 0;
  int total = 0;
  std::vector<std::thread> callers;
  callers.reserve(4);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&]() {
      for (int i = 0; i < 50; ++i) {
        thread.Run([&]() {
          ++in_task;
          most_at_once = std::max(most_at_once, in_task);
          ++total;
          --in_task;
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(total == 200);
  CHECK(most_at_once == 1);
}

struct CountsDestruction {
  explicit CountsDestruction(int* destroyed) : destroyed_(destroyed) {}
  CountsDestruction(CountsDestruction&& other) noexcept
      : destroyed_(std::exchange(other.destroyed_, nullptr)) {}
  CountsDestruction(const CountsDestruction&) = delete;
  CountsDestruction& operator=(const CountsDestruction&) = delete;
  CountsDestruction& operator=(CountsDestruction&&) = delete;
  ~CountsDestruction() {
    if (destroyed_ != nullptr) ++*destroyed_;
  }
  int* destroyed_;
};

TEST_CASE("LeaveToExit keeps what it is given alive: no destructor runs before the exit") {
  int destroyed = 0;
  {
    CountsDestruction kept(&destroyed);
    const AtScopeEnd leave([&]() { LeaveToExit(std::move(kept)); });
  }
  CHECK(destroyed == 0);
  { const CountsDestruction freed(&destroyed); }
  CHECK(destroyed == 1);  // the counter itself works
}

TEST_CASE("AtScopeEnd runs its function when the scope is left by an exception") {
  int ran = 0;
  try {
    const AtScopeEnd count([&]() { ++ran; });
    throw std::runtime_error("left early");
  } catch (const std::runtime_error&) {
  }
  CHECK(ran == 1);
}

}  // namespace
}  // namespace rg::cli
