#include "reconciler/cli/leave_to_exit.h"

#include <mutex>
#include <vector>

namespace rg::cli {

void LeaveToExitErased(std::shared_ptr<void> kept) {
  static std::mutex mu;
  // Never destroyed: a static pointer keeps what it holds reachable until the process ends.
  static auto* const kept_until_exit = new std::vector<std::shared_ptr<void>>();
  const std::lock_guard<std::mutex> lock(mu);
  kept_until_exit->push_back(std::move(kept));
}

}  // namespace rg::cli
