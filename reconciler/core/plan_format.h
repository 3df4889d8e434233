#pragma once
// A plan as people and programs read it (docs/plan-format.md): a text table for terminals,
// Markdown for a pull-request comment, and JSON with a stable, versioned shape. Pure.

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/planner.h"
#include "reconciler/core/render.h"
#include "reconciler/core/state_diff.h"
#include "reconciler/core/status_model.h"

namespace rg::core {

inline constexpr int kPlanFormatVersion = 1;

struct PlanView {
  const Plan* plan = nullptr;             // required
  const DesiredState* desired = nullptr;  // required: the specs to render, the diagnostics
  const Ledger* ledger = nullptr;         // optional
  std::string commit;                     // the commit planned from
  RenderContext context;                  // instance and repo for the rendered submissions
  // What changed in each replaced job, by name: its spec at the commit its run came from
  // against the spec now (DiffJob). A submit without an entry shows its rendered submission.
  std::map<std::string, JobDiff, std::less<>> job_changes = {};
  // cluster.yaml against the one active runs were submitted with, and which of them the
  // change reaches on their next submission; one per such commit.
  std::vector<ClusterDiff> cluster_changes = {};
  // Set when no status branch was found: every job is planned as never run before, and the
  // plan says so.
  std::string ledger_note = {};
};

// A plan's actions by job name, for what asks about every job (a plan of 50,000 submits has as
// many actions: a look through them per job would be quadratic). Points into the plan.
class PlanActionIndex {
 public:
  explicit PlanActionIndex(const Plan& plan);
  // What the plan does to the job, for the tables: "submit", "stop", "replace" (stop the old
  // run, submit the new one), "blocked" (a guard held its stop back), "wait" (Waiting: `after`)
  // or "keep".
  std::string JobActionName(const JobPlan& job) const;
  // Whether any action names the job.
  bool Acted(std::string_view name) const { return by_name_.contains(name); }
  // The stop actions of the job, in plan order.
  std::vector<const Action*> Stops(std::string_view name) const;

 private:
  std::unordered_map<std::string_view, std::vector<const Action*>> by_name_;
};

// What the plan says about whose runs are whose (docs/operations.md), one line each: every other
// repository using this instance on the cluster (core::ForeignJobsMessage), then "adopting N
// runs recorded under <URL>" for every --previous-repo URL with runs.
std::vector<std::string> OwnershipNotices(const Plan& plan);

std::string FormatPlanText(const PlanView& view);
std::string FormatPlanMarkdown(const PlanView& view);
std::string FormatPlanJson(const PlanView& view);

}  // namespace rg::core
