#include "reconciler/engine/pass_memo.h"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "reconciler/engine/head_clock.h"

namespace rg::engine {

core::SipHasher::Key RandomDigestKey() {
  std::random_device random;
  auto word = [&random]() {
    return (static_cast<uint64_t>(random()) << 32) ^ static_cast<uint64_t>(random());
  };
  return {word(), word()};
}

bool IsFixpoint(const PassResult& r) {
  if (!r.planned || r.stale || !r.errors.empty() || !r.diagnostics.empty() || r.blocked) {
    return false;
  }
  if (!r.plan.actions.empty() || !r.outcomes.empty() || r.actions_not_started != 0) return false;
  if (!r.transitions.empty() || !r.status_commit.empty() || !r.ray_digest) return false;
  // A PENDING run's message follows the cluster's resources, a Stopping one the clock.
  return std::ranges::none_of(r.records, [](const core::StatusRecord& record) {
    return record.phase == core::Phase::kPending || record.phase == core::Phase::kStopping;
  });
}

PassMemo RememberPass(const PassResult& result, const ports::StatusStore* store) {
  PassMemo memo;
  if (!IsFixpoint(result)) return memo;
  if (store != nullptr) {
    std::optional<std::string> tip = store->KnownTip();
    if (!tip) return memo;
    memo.ledger_tip = *tip;
  }
  memo.spec_commit = result.spec_commit;
  memo.ray_digest = *result.ray_digest;
  memo.valid_until_ms = result.plan.recheck_at_ms;
  memo.head_clock_offset_ms = result.head_clock_offset_ms;
  memo.valid = true;
  return memo;
}

bool MemoHolds(const PassMemo& memo, int64_t now_ms) {
  return memo.valid && (!memo.valid_until_ms || now_ms < *memo.valid_until_ms);
}

std::optional<PassResult> UnchangedPass(const PassMemo& memo, ports::DesiredStateSource& source,
                                        ports::StatusStore* store, ports::JobServer& server,
                                        const std::string& ref, const core::SipHasher::Key& key,
                                        int64_t now_ms) {
  if (!MemoHolds(memo, now_ms)) return std::nullopt;
  core::Result<std::optional<std::string>> head = source.Head(ref);
  if (!head.ok() || !head->has_value() || **head != memo.spec_commit) return std::nullopt;
  if (store != nullptr) {
    core::Result<std::optional<std::string>> tip = store->Tip();
    if (!tip.ok() || !tip->has_value() || **tip != memo.ledger_tip) return std::nullopt;
  }
  core::Result<uint64_t> digest = server.ListDigest(key);
  if (!digest.ok() || *digest != memo.ray_digest) return std::nullopt;
  const std::optional<int64_t> offset = server.HeadClockOffsetMs();
  if (offset.has_value() != memo.head_clock_offset_ms.has_value() ||
      (offset && std::llabs(*offset - *memo.head_clock_offset_ms) > kClockSkewStepMs)) {
    return std::nullopt;
  }
  PassResult result;
  result.unchanged = true;
  result.spec_commit = memo.spec_commit;
  result.ray_digest = memo.ray_digest;
  return result;
}

}  // namespace rg::engine
