#include "reconciler/engine/tip_check.h"

#include <algorithm>
#include <utility>

namespace rg::engine {

namespace {

// A log line names the first few paths that changed, not a whole new jobs folder.
constexpr size_t kPathsShown = 5;

core::Error Explained(const core::Error& e, const std::string& ref) {
  return {e.kind(), "cannot check the tip of " + ref +
                        " before stopping runs; nothing was done: " + e.message()};
}

}  // namespace

TipCheck CheckTipBeforeStops(ports::DesiredStateSource& source,
                             const ports::DesiredSnapshot& snapshot, const core::Plan& plan) {
  TipCheck check;
  const bool stops = std::ranges::any_of(
      plan.actions, [](const core::Action& a) { return a.kind == core::ActionKind::kStop; });
  if (!stops) return check;
  core::Result<std::optional<std::string>> tip = source.RemoteTip(snapshot.ref);
  if (!tip.ok()) {
    check.error = Explained(tip.error(), snapshot.ref);
    return check;
  }
  if (!tip->has_value() || **tip == snapshot.commit) return check;
  // Moved: the new tip's objects are fetched only now, and compared by tree.
  core::Result<ports::TipChanges> changes = source.ChangesAtTip(snapshot);
  if (!changes.ok()) {
    check.error = Explained(changes.error(), snapshot.ref);
    return check;
  }
  if (changes->changed.empty()) return check;
  check.moved = TipMoved{snapshot.ref, snapshot.commit, std::move(changes->commit),
                         std::move(changes->changed)};
  return check;
}

std::string ChangedPathsText(const TipMoved& moved) {
  std::string text;
  const size_t shown = std::min(moved.changed.size(), kPathsShown);
  for (size_t i = 0; i < shown; ++i) {
    text += i == 0 ? "" : ", ";
    text += moved.changed[i];
  }
  if (moved.changed.size() > shown) {
    text += " and " + std::to_string(moved.changed.size() - shown) + " more";
  }
  return text;
}

std::string TipMovedSummary(const TipMoved& moved) {
  return moved.ref + " moved from " + moved.from.substr(0, 12) + " to " + moved.to.substr(0, 12) +
         " (" + ChangedPathsText(moved) + " changed)";
}

}  // namespace rg::engine
