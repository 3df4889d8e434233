#include "reconciler/core/status_transitions.h"

#include <algorithm>
#include <utility>

namespace rg::core {
namespace {

// The name on one line: a record read from a file could hold anything.
std::string OneLineName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = ' ';
  }
  return out;
}

std::string PhaseText(Phase p) { return std::string(PhaseName(p)); }

Transition AttemptTransition(const StatusRecord& rec, const AttemptRecord& a, std::string from) {
  Transition t;
  t.name = rec.name;
  t.attempt = a.attempt;
  t.submission_id = a.submission_id;
  t.from = std::move(from);
  t.to = PhaseText(a.phase);
  t.status = a.status;
  if (a.phase == Phase::kFailed || a.phase == Phase::kLost) {
    t.error_type = a.ending.get().error_type;
    t.failure_class = a.failure_class;
  }
  const std::string& stop_commit = a.ending.get().stop_commit;
  if (!stop_commit.empty() && (IsTerminal(a.status) || a.phase == Phase::kLost)) {
    t.commit = stop_commit;
  } else if (t.from == kNewState || a.phase == Phase::kPending) {
    t.commit = a.commit;
  }
  return t;
}

// ", JOB_SUPERVISOR_ACTOR_DIED, infra": how a failed or lost attempt ended, for a detail list.
std::string EndingDetail(const Transition& t) {
  std::string out;
  if (!t.error_type.empty()) out += ", " + OneLineName(t.error_type);
  if (t.failure_class != FailureClass::kNone) {
    out += ", ";
    out += FailureClassName(t.failure_class);
  }
  return out;
}

Transition JobTransition(const StatusRecord& rec, std::string from, std::string to) {
  Transition t;
  t.name = rec.name;
  t.attempt = rec.attempt;
  t.submission_id = rec.submission_id;
  t.from = std::move(from);
  t.to = std::move(to);
  t.status = rec.status;
  return t;
}

// True when one of `ts` already moved the record's latest run to the record's phase.
bool ExplainsJobPhase(const std::vector<Transition>& ts, const StatusRecord& rec) {
  const std::string phase = PhaseText(rec.phase);
  return std::ranges::any_of(ts, [&](const Transition& t) {
    return t.submission_id == rec.submission_id && t.to == phase;
  });
}

// A record that had no owner and gets one, its phase unchanged (DescribeTransition's case).
bool GetsOwner(const StatusRecord& before, const StatusRecord& after) {
  return before.instance.empty() && before.ray_cluster.empty() &&
         (!after.instance.empty() || !after.ray_cluster.empty());
}

// What changed in a record whose phase did not: the first of these that differs.
std::string WhatChanged(const StatusRecord& before, const StatusRecord& after) {
  if (before.submission_id != after.submission_id || before.attempt != after.attempt) {
    return "run changed";
  }
  if (before.status != after.status) return "Ray status changed";
  if (before.errors != after.errors) return "errors changed";
  if (before.attempts != after.attempts) return "attempts changed";
  if (before.message != after.message) return "message changed";
  if (before.spec_hash != after.spec_hash || before.spec_path != after.spec_path) {
    return "spec changed";
  }
  return "updated";
}

// The length of the longest prefix of `text` no longer than `max` bytes that ends on a UTF-8
// character boundary.
size_t Utf8Cut(std::string_view text, size_t max) {
  if (text.size() <= max) return text.size();
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;
  return cut;
}

std::string JoinItems(const std::vector<std::string>& items, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += (i == 0 ? "" : ", ") + items[i];
  return out;
}

std::string MoreSuffix(size_t rest) {
  return rest == 0 ? std::string() : " +" + std::to_string(rest) + " more";
}

}  // namespace

std::vector<Transition> RecordTransitions(const StatusRecord* before, const StatusRecord* after) {
  std::vector<Transition> out;
  if (after == nullptr) {
    if (before != nullptr) {
      out.push_back(JobTransition(*before, PhaseText(before->phase), std::string(kDeletedState)));
    }
    return out;
  }
  for (const AttemptRecord& a : after->attempts) {
    const AttemptRecord* was = before != nullptr ? before->FindAttempt(a.submission_id) : nullptr;
    if (was == nullptr) {
      out.push_back(AttemptTransition(*after, a, std::string(kNewState)));
    } else if (was->phase != a.phase) {
      out.push_back(AttemptTransition(*after, a, PhaseText(was->phase)));
    }
  }
  const std::string from = before != nullptr ? PhaseText(before->phase) : std::string(kNewState);
  if (from != PhaseText(after->phase) && !ExplainsJobPhase(out, *after)) {
    out.push_back(JobTransition(*after, from, PhaseText(after->phase)));
  }
  return out;
}

std::string TransitionLine(const Transition& t) {
  std::string out = OneLineName(t.name) + ": " + t.from + " -> " + t.to;
  std::string detail;
  if (t.attempt && *t.attempt > 0) detail = "attempt " + std::to_string(*t.attempt);
  if (!t.submission_id.empty()) {
    detail += (detail.empty() ? "" : ", ") + OneLineName(t.submission_id);
  }
  detail += EndingDetail(t);
  if (detail.starts_with(", ")) detail.erase(0, 2);
  if (!detail.empty()) out += " (" + detail + ")";
  return out;
}

std::string TransitionTarget(const Transition& t) {
  std::string detail = EndingDetail(t);
  if (detail.empty()) return t.to;
  return t.to + " (" + detail.substr(2) + ")";
}

std::vector<std::string> ChangeLines(const StatusRecord* before, const StatusRecord* after) {
  std::vector<std::string> lines;
  for (const Transition& t : RecordTransitions(before, after)) lines.push_back(TransitionLine(t));
  if (!lines.empty() || before == nullptr || after == nullptr) return lines;
  if (GetsOwner(*before, *after)) return {DescribeTransition(before, after)};
  std::string line = OneLineName(after->name) + ": " + PhaseText(after->phase);
  if (!after->submission_id.empty()) line += " (" + OneLineName(after->submission_id) + ")";
  lines.push_back(line + ", " + WhatChanged(*before, *after));
  return lines;
}

std::string SubjectItem(const StatusRecord* before, const StatusRecord* after) {
  if (after == nullptr) {
    if (before == nullptr) return "";
    return OneLineName(before->name) + " " + PhaseText(before->phase) + " -> " +
           std::string(kDeletedState);
  }
  const std::string name = OneLineName(after->name);
  std::vector<std::string> states = {before != nullptr ? PhaseText(before->phase)
                                                       : std::string(kNewState)};
  // How earlier runs ended on the way (attempt 0 Failed before attempt 1 Pending; the
  // replaced run Stopped), then the job's phase.
  for (const Transition& t : RecordTransitions(before, after)) {
    if (t.submission_id != after->submission_id && t.to != states.back()) states.push_back(t.to);
  }
  if (PhaseText(after->phase) != states.back()) states.push_back(PhaseText(after->phase));
  if (states.size() == 1) {
    const std::string what =
        GetsOwner(*before, *after) ? "owner recorded" : WhatChanged(*before, *after);
    return name + " " + states.front() + " (" + what + ")";
  }
  std::string out = name + " " + states.front();
  for (size_t i = 1; i < states.size(); ++i) out += " -> " + states[i];
  return out;
}

std::string StatusCommitSubject(const std::vector<std::string>& items, size_t max_length) {
  const std::string prefix(kSubjectPrefix);
  if (items.empty()) return prefix + "no changes";
  // The most items that fit with their "+N more" (which shortens as items are added, so the
  // most that fit is not always one more than the fewest that do not): every count's length
  // from running sums, then the subject built once. A commit of 50,000 changes has as many.
  size_t best = 0;
  size_t joined = 0;  // the length of the first `count` items joined with ", "
  for (size_t count = 1; count <= items.size(); ++count) {
    joined += items[count - 1].size() + (count > 1 ? 2 : 0);
    if (prefix.size() + joined + MoreSuffix(items.size() - count).size() <= max_length) {
      best = count;
    }
    if (prefix.size() + joined > max_length) break;  // more items only make it longer
  }
  if (best > 0) return prefix + JoinItems(items, best) + MoreSuffix(items.size() - best);
  // Not even the first item fits: it is cut.
  const std::string more = MoreSuffix(items.size() - 1);
  const std::string ellipsis = "...";
  const size_t fixed = prefix.size() + more.size() + ellipsis.size();
  const size_t room = max_length > fixed ? max_length - fixed : 0;
  const std::string& first = items.front();
  return prefix + first.substr(0, Utf8Cut(first, room)) + ellipsis + more;
}

std::vector<HistoryRow> JobHistory(const std::vector<RecordVersion>& versions) {
  std::vector<HistoryRow> rows;
  const StatusRecord* previous = nullptr;
  for (const RecordVersion& v : versions) {
    const StatusRecord* current = v.record ? &*v.record : nullptr;
    const StatusRecord* holder = current != nullptr ? current : previous;
    for (Transition& t : RecordTransitions(previous, current)) {
      HistoryRow row;
      row.time_ms = v.time_ms;
      row.status_commit = v.commit;
      if (holder != nullptr) {
        row.spec_commit = t.commit.empty() ? holder->spec_commit : t.commit;
        row.code_folder = holder->code.get().folder;
        row.code_tree = holder->code.get().tree;
        row.code_commit = holder->code.get().commit;
      }
      row.transition = std::move(t);
      rows.push_back(std::move(row));
    }
    previous = current;
  }
  return rows;
}

}  // namespace rg::core
