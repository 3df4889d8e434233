#include "reconciler/engine/finished_runs.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

namespace rg::engine {
namespace {

// The ledger's record of the attempt `job` is, or nullptr.
const core::AttemptRecord* LedgerAttempt(const core::Ledger& ledger, const core::RayJob& job) {
  auto it = ledger.find(job.LabelView(core::kMetaName));
  return it == ledger.end() ? nullptr : it->second.FindAttempt(job.submission_id);
}

bool Ours(const core::RayJob& job, const core::Ownership& owner) {
  return job.type != "DRIVER" && !job.submission_id.empty() &&
         core::IsOurs(core::ClassifyJob(job, owner));
}

}  // namespace

std::vector<std::string> RunsEndedSinceLedger(const core::RayJobsById& ray_jobs,
                                              const core::Ledger& ledger,
                                              const core::Ownership& owner,
                                              const std::vector<ActionOutcome>& outcomes) {
  std::set<std::string_view, std::less<>> submitted;
  for (const ActionOutcome& o : outcomes) {
    if (o.ok && !o.adopted && o.action.kind == core::ActionKind::kSubmit) {
      submitted.insert(o.action.submission_id);
    }
  }
  std::vector<std::string> ids;
  for (const auto& [id, job] : ray_jobs) {
    if (!core::IsTerminal(job->status) || !Ours(*job, owner)) continue;
    const core::AttemptRecord* known = LedgerAttempt(ledger, *job);
    if ((known != nullptr && !core::IsTerminal(known->status)) || submitted.contains(id)) {
      ids.emplace_back(id);
    }
  }
  return ids;  // in the map's order: sorted
}

void KeepDriverLogs(ports::JobServer& server, ports::ArtifactSink& sink,
                    const std::vector<std::string>& ids, PassResult& result) {
  for (const std::string& id : ids) {
    // Its end only, and a little more for the sink to start at a line: a log of any length.
    core::Result<ports::LogTail> log =
        server.TailLogs(id, ports::kDriverLogMaxBytes + ports::kDriverLogLineSearch);
    core::Status kept = log.ok() ? core::OkStatus() : core::Status(log.error());
    if (log.ok()) {
      const size_t skipped = log->total_bytes - log->tail.size();  // before redaction
      // Every secret of the pass (the process's, the webhook's, the specs'), before the sink's.
      result.redactor.ApplyInPlace(log->tail);
      kept = sink.WriteDriverLog(id, log->tail, skipped);
    }
    if (kept.ok()) {
      result.driver_logs_kept.push_back(id);
    } else {
      result.warnings.push_back(
          {std::string(kWarnDriverLog),
           "cannot keep the driver log of " + id + ": " + kept.error().message()});
    }
  }
}

FinishedRuns FinishedRunsToDelete(const core::RayJobsById& ray_jobs, const core::Ledger& ledger,
                                  const core::Ownership& owner, int64_t after_ms, int64_t now_ms) {
  FinishedRuns out;
  for (const auto& [id, job] : ray_jobs) {
    if (!core::IsTerminal(job->status) || !job->end_time_ms || !Ours(*job, owner)) continue;
    const core::AttemptRecord* known = LedgerAttempt(ledger, *job);
    if (known == nullptr || !core::IsTerminal(known->status)) continue;  // end not committed
    const int64_t due = *job->end_time_ms + after_ms;
    if (due > now_ms) {
      if (!out.next_due_ms || due < *out.next_due_ms) out.next_due_ms = due;
    } else if (out.due.size() < kMaxDeletesPerPass) {
      out.due.emplace_back(id);
    }
  }
  return out;
}

void DeleteFinishedRuns(ports::JobServer& server, const std::vector<std::string>& ids,
                        PassResult& result) {
  for (const std::string& id : ids) {
    core::Result<bool> deleted = server.Delete(id);
    if (deleted.ok() || deleted.error().IsNotFound()) {
      result.deleted.push_back(id);
    } else {
      result.warnings.push_back(
          {std::string(kWarnGcFinished),
           "cannot delete the finished run " + id + " from Ray: " + deleted.error().message()});
    }
  }
}

}  // namespace rg::engine
