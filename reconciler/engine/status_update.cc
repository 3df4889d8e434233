#include "reconciler/engine/status_update.h"

#include <charconv>
#include <set>
#include <utility>

#include "reconciler/core/render.h"

namespace rg::engine {
namespace {

std::string MetaOr(const core::RayJob& job, std::string_view key) {
  auto it = job.metadata.find(key);
  return it == job.metadata.end() ? std::string() : it->second;
}

std::optional<int> AttemptLabel(const core::RayJob& job) {
  const std::string text = MetaOr(job, core::kMetaAttempt);
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

bool IsActive(core::RayJobStatus s) {
  return s == core::RayJobStatus::kPending || s == core::RayJobStatus::kRunning;
}

core::AttemptRecord* FindAttempt(core::StatusRecord& rec, std::string_view id) {
  for (auto& a : rec.attempts) {
    if (a.submission_id == id) return &a;
  }
  return nullptr;
}

void RefreshAttempt(core::AttemptRecord& a, const core::RayJob& job) {
  a.status = job.status;
  a.phase = core::PhaseForRayStatus(job.status);
  a.start_time_ms = job.start_time_ms;
  a.end_time_ms = job.end_time_ms;
  a.message = job.message;
}

void SetRayFields(core::StatusRecord& rec, const core::RayJob& job) {
  rec.status = job.status;
  rec.error_type = job.error_type;
  rec.job_id = job.job_id;
  rec.start_time_ms = job.start_time_ms;
  rec.end_time_ms = job.end_time_ms;
  rec.driver_exit_code = job.driver_exit_code;
}

// The cluster whose ledger the records are in: the same RayClusterName the pass reads the
// ledger for, so that what it writes it reads back as its own.
std::string LedgerCluster(const StatusInputs& in) {
  if (!in.ray_cluster.empty()) return in.ray_cluster;
  if (in.desired != nullptr && in.desired->cluster) {
    return core::RayClusterName(*in.desired->cluster, in.ray_address);
  }
  return core::StripUrlCredentials(in.ray_address);
}

void ClearRayFields(core::StatusRecord& rec) {
  rec.status = core::RayJobStatus::kUnknown;
  rec.error_type.reset();
  rec.job_id.reset();
  rec.start_time_ms.reset();
  rec.end_time_ms.reset();
  rec.driver_exit_code.reset();
}

}  // namespace

std::string DashboardUrl(const std::string& ray_address, const std::string& submission_id) {
  if (ray_address.empty() || submission_id.empty()) return "";
  std::string base = core::StripUrlCredentials(ray_address);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/#/jobs/" + submission_id;
}

StatusUpdate BuildStatusUpdate(const StatusInputs& in) {
  StatusUpdate update;
  const core::Ledger empty_ledger;
  const core::Ledger& ledger = in.ledger != nullptr ? *in.ledger : empty_ledger;
  const std::string ray_cluster = LedgerCluster(in);

  // What this pass did, per submission id.
  std::map<std::string, const ActionOutcome*, std::less<>> submitted;  // ok submits
  std::map<std::string, const ActionOutcome*, std::less<>> failed_submit;
  std::map<std::string, const ActionOutcome*, std::less<>> stopped;  // ok stops
  for (const auto& o : in.outcomes) {
    if (o.action.kind == core::ActionKind::kSubmit) {
      (o.ok ? submitted : failed_submit)[o.action.submission_id] = &o;
    } else if (o.ok) {
      stopped[o.action.submission_id] = &o;
    }
  }

  // Our jobs in Ray, by name.
  std::map<std::string, std::vector<const core::RayJob*>, std::less<>> ours_by_name;
  for (const auto& [id, job] : in.ray_jobs) {
    if (job.type == "DRIVER" || MetaOr(job, core::kMetaManagedBy) != in.instance) continue;
    ours_by_name[MetaOr(job, core::kMetaName)].push_back(&job);
  }

  for (const core::JobPlan& jp : in.plan->jobs) {
    const auto old = ledger.find(jp.name);
    if (jp.forget) {
      if (old != ledger.end()) update.forget.push_back(jp.name);
      continue;
    }
    core::StatusRecord rec;
    if (old != ledger.end()) rec = old->second;
    rec.name = jp.name;
    rec.instance = in.instance;
    rec.ray_cluster = ray_cluster;
    if (!jp.spec_path.empty()) rec.spec_path = jp.spec_path;
    rec.spec_commit = in.spec_commit;
    rec.phase = jp.phase;
    rec.errors.clear();

    const core::JobSpec* spec = nullptr;
    for (const auto& s : in.desired->jobs) {
      if (s.name == jp.name) spec = &s;
    }
    if (spec != nullptr) {
      rec.spec_hash = spec->spec_hash;
      rec.on_remove = spec->on_remove;
    } else if (jp.phase == core::Phase::kInvalid) {
      rec.spec_hash.clear();  // the file cannot be read: its hash is unknown
      for (const auto& bad : in.desired->invalid) {
        if (bad.name != jp.name && bad.path != jp.spec_path) continue;
        for (const auto& d : bad.diagnostics) rec.errors.push_back(d.ToString());
      }
    }

    // Every attempt of ours Ray reports for this name, refreshed or added.
    if (auto it = ours_by_name.find(jp.name); it != ours_by_name.end()) {
      for (const core::RayJob* job : it->second) {
        core::AttemptRecord* a = FindAttempt(rec, job->submission_id);
        if (a == nullptr) {
          core::AttemptRecord fresh;
          fresh.submission_id = job->submission_id;
          fresh.spec_hash = MetaOr(*job, core::kMetaSpecHash);
          fresh.attempt = AttemptLabel(*job).value_or(0);
          rec.attempts.push_back(std::move(fresh));
          a = &rec.attempts.back();
        }
        RefreshAttempt(*a, *job);
      }
    }
    // Attempts the ledger remembers as active that Ray no longer has: lost.
    if (in.ray_jobs_complete) {
      for (auto& a : rec.attempts) {
        if (IsActive(a.status) && a.phase != core::Phase::kLost &&
            !in.ray_jobs.contains(a.submission_id) && !submitted.contains(a.submission_id)) {
          a.phase = core::Phase::kLost;
        }
      }
    }
    // Attempts this pass started or stopped.
    for (const auto& [id, o] : submitted) {
      if (o->action.name != jp.name || FindAttempt(rec, id) != nullptr) continue;
      core::AttemptRecord fresh;
      fresh.attempt = o->action.attempt;
      fresh.submission_id = id;
      fresh.spec_hash = spec != nullptr ? spec->spec_hash : "";
      fresh.status = core::RayJobStatus::kPending;
      fresh.phase = core::Phase::kPending;
      rec.attempts.push_back(std::move(fresh));
    }
    for (const auto& [id, o] : stopped) {
      if (o->action.name != jp.name) continue;
      core::AttemptRecord* a = FindAttempt(rec, id);
      if (a == nullptr) {
        core::AttemptRecord fresh;
        fresh.attempt = o->action.attempt;
        fresh.submission_id = id;
        rec.attempts.push_back(std::move(fresh));
        a = &rec.attempts.back();
      }
      a->stop_reason = o->action.stop_reason;
      if (in.now_ms != 0) a->stop_sent_ms = in.now_ms;
    }

    // The latest attempt, as Ray last reported it.
    const bool same_attempt = rec.submission_id == jp.submission_id;
    rec.submission_id = jp.submission_id;
    rec.attempt = jp.attempt;
    std::optional<std::string> ray_message;
    if (auto it = in.ray_jobs.find(jp.submission_id); it != in.ray_jobs.end()) {
      SetRayFields(rec, it->second);
      ray_message = it->second.message;
    } else if (submitted.contains(jp.submission_id)) {
      ClearRayFields(rec);
      rec.status = core::RayJobStatus::kPending;
    } else if (!same_attempt) {
      ClearRayFields(rec);
    }
    if (auto it = submitted.find(jp.submission_id); it != submitted.end() && it->second->adopted) {
      rec.message = "adopted " + jp.submission_id + ", which Ray already had";
    } else if (ray_message &&
               (jp.phase == core::Phase::kPending || jp.phase == core::Phase::kRunning ||
                jp.phase == core::Phase::kSucceeded || jp.phase == core::Phase::kFailed)) {
      // Ray's own words while the run follows its course: the planner's reason for a submit
      // ("new job") would otherwise turn into Ray's message one pass later, a commit of noise.
      rec.message = *ray_message;
    } else {
      rec.message = jp.message;
    }
    if (auto it = failed_submit.find(jp.submission_id); it != failed_submit.end()) {
      const core::Error& e = *it->second->error;
      if (e.IsConflict()) rec.phase = core::Phase::kConflict;
      rec.message = "submit of " + jp.submission_id + " failed: " + e.ToString();
    }
    for (const auto& o : in.outcomes) {
      if (o.action.kind == core::ActionKind::kStop && !o.ok && o.action.name == jp.name) {
        rec.message = "stop of " + o.action.submission_id + " failed: " + o.error->ToString();
      }
    }
    rec.dashboard_url = DashboardUrl(in.ray_address, rec.submission_id);
    update.records[jp.name] = std::move(rec);
  }
  return update;
}

StatusDiff DiffAgainstLedger(const StatusUpdate& update, const core::Ledger& ledger) {
  StatusDiff diff;
  std::map<std::string, std::string> lines;
  for (const auto& [name, rec] : update.records) {
    auto old = ledger.find(name);
    const core::StatusRecord* before = old == ledger.end() ? nullptr : &old->second;
    if (before != nullptr && !core::MeaningfulChange(*before, rec)) continue;
    diff.changes[name] = rec;
    lines[name] = core::DescribeTransition(before, &rec);
  }
  for (const auto& name : update.forget) {
    auto old = ledger.find(name);
    if (old == ledger.end()) continue;
    diff.changes[name] = std::nullopt;
    lines[name] = core::DescribeTransition(&old->second, nullptr);
  }
  for (auto& [name, line] : lines) diff.transitions.push_back(std::move(line));
  return diff;
}

ports::StatusCommit MakeStatusCommit(const StatusDiff& diff, const std::string& spec_commit,
                                     const std::string& ray_address) {
  ports::StatusCommit commit;
  const size_t n = diff.changes.size();
  commit.subject = "ray-gitops: " + std::to_string(n) + (n == 1 ? " change" : " changes");
  commit.body_lines = diff.transitions;
  if (!spec_commit.empty()) commit.trailers["Spec-Commit"] = spec_commit;
  if (!ray_address.empty()) commit.trailers["Ray-Cluster"] = core::StripUrlCredentials(ray_address);
  return commit;
}

}  // namespace rg::engine
