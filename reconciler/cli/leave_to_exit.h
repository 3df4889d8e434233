#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace rg::cli {

// A one-shot command (`plan`, `sync`) hands its largest structures (the opened repository
// with its parse cache, the pass's plan and records) to the process's exit
// instead of freeing them one small object at a time just before it: at 10,000 specs that
// freeing was a sixth of a `plan`. They stay reachable until the process ends, so a leak
// checker does not count them. Whatever must outlive them is done first by the caller (the
// parse cache saved, output flushed). The daemon never calls this.
void LeaveToExitErased(std::shared_ptr<void> kept);

template <typename T>
void LeaveToExit(T&& value) {
  LeaveToExitErased(std::make_shared<std::decay_t<T>>(std::forward<T>(value)));
}

// Runs `f` when the scope ends, however it ends (for the LeaveToExit calls of a command).
template <typename F>
class AtScopeEnd {
 public:
  explicit AtScopeEnd(F f) : f_(std::move(f)) {}
  // A destructor must not throw: if `f` does (out of memory while handing a structure to
  // the exit), the scope's objects are freed the usual way instead.
  ~AtScopeEnd() {
    try {
      f_();
    } catch (...) {  // see above: nothing more to do
    }
  }
  AtScopeEnd(const AtScopeEnd&) = delete;
  AtScopeEnd& operator=(const AtScopeEnd&) = delete;
  AtScopeEnd(AtScopeEnd&&) = delete;
  AtScopeEnd& operator=(AtScopeEnd&&) = delete;

 private:
  F f_;
};

}  // namespace rg::cli
