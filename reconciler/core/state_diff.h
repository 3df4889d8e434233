#pragma once
// What merging one desired state over another does to runs (`ray-gitops diff`, and the diffs
// `plan` shows for the jobs it replaces): per job submit, replace, stop if active or unchanged,
// with the field diff and the rendered submission diff of every changed spec, and the jobs a
// cluster.yaml change reaches. Offline and pure: no Ray, no ledger; a run's identity is its
// spec (name and spec hash), so what Ray would be asked follows from the two states alone.

#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/code_change.h"
#include "reconciler/core/desired_state.h"
#include "reconciler/core/diagnostic.h"
#include "reconciler/core/spec_diff.h"
#include "reconciler/core/spec_model.h"

namespace rg::core {

inline constexpr int kDiffFormatVersion = 1;

enum class DiffAction {
  kSubmit,     // a new run: a new spec, a renamed one, a resumed one
  kReplace,    // the spec's content changed: the old run is stopped if active, a new one starts
  kStop,       // removed (on_remove: stop) or suspended: the run is stopped if active
  kUnchanged,  // no run changes (annotations or retries may still have changed)
  kInvalid,    // the spec is invalid at HEAD: frozen, nothing is submitted or stopped for it
};
std::string_view DiffActionName(DiffAction action);  // "submit", ..., "stop if active", ...

struct JobDiff {
  std::string name;
  DiffAction action = DiffAction::kUnchanged;
  std::string reason;               // one line for people
  std::string base_path;            // empty when the job is new
  std::string head_path;            // empty when the job was removed
  std::string base_submission_id;   // attempt 0 of the base spec; empty when none
  std::string head_submission_id;   // attempt 0 of the head spec; empty when none
  std::vector<FieldChange> fields;  // the spec as written, base -> head
  // The rendered submission, base (with the base cluster) -> head (with the head cluster),
  // every line; formats trim it to the changes. Empty when neither side renders.
  std::vector<DiffLine> rendered;
  std::string render_error;  // why a side could not be rendered, when one could not
  // The head cluster renders this job's submission differently from the base cluster: its
  // next submission (a retry, a replace) takes the change; a running run keeps what it has.
  bool reached_by_cluster = false;
  Diagnostics diagnostics;  // kInvalid: why

  bool ChangesRuns() const {
    return action == DiffAction::kSubmit || action == DiffAction::kReplace ||
           action == DiffAction::kStop;
  }
};

struct ClusterDiff {
  std::string path = "cluster.yaml";
  // `plan`: the commit the runs it reaches were submitted from (the base of this diff).
  std::string since;
  std::vector<FieldChange> fields;
  std::vector<std::string> reached;  // names of the jobs whose next submission changes
  Diagnostics diagnostics;           // the head cluster file is missing or invalid
};

struct StateDiff {
  std::string base_label;     // what BASE was, for the header ("main (1a2b3c4d5e)")
  std::string head_label;     // "working tree", a ref and commit
  std::vector<JobDiff> jobs;  // every job of either side, by name
  ClusterDiff cluster;

  // Exit 2 of `diff`: a run starts or stops, or the cluster change reaches a job's submission.
  bool RunsChange() const;
  // Exit 1 of `diff`: HEAD holds an invalid spec or cluster file.
  bool HasErrors() const;
  int Count(DiffAction action) const;
};

// The diff of one job between two versions of its spec (either may be null: new, removed),
// each rendered with its own cluster (null: not renderable). `instance` and attempt 0 make the
// submission ids. The action follows from the two specs alone.
JobDiff DiffJob(const JobSpec* base, const RayConfig* base_cluster, const JobSpec* head,
                const RayConfig* head_cluster, std::string_view instance);

// cluster.yaml `base` -> `head` (either may be null: missing), and which of `specs` it reaches:
// those whose submission renders differently under the two.
ClusterDiff DiffCluster(const RayConfig* base, const RayConfig* head,
                        const std::vector<const JobSpec*>& specs, std::string_view instance);

// The whole diff. Specs must already be bound to `instance` (BindSpecToInstance).
// A job whose code moved says so, with the files `code_changes` lists (when given).
StateDiff DiffStates(const DesiredState& base, const DesiredState& head, std::string_view instance,
                     const CodeChangeLister& code_changes = {});

// The rendered lines of `diff` as a reviewer reads them: the changes, two lines of context.
std::vector<DiffLine> RenderedChanges(const JobDiff& diff);

// Text for terminals; Markdown for a pull-request comment (a summary line, a table, a
// <details> block per changed job); JSON with a stable, versioned shape (docs/plan-format.md).
std::string FormatDiffText(const StateDiff& diff);
std::string FormatDiffMarkdown(const StateDiff& diff);
std::string FormatDiffJson(const StateDiff& diff);

// The parts `plan` reuses: a job's field and rendered diff as indented text lines, as a
// Markdown fragment, and as a JSON object.
std::string JobChangesText(const JobDiff& diff, std::string_view indent);
std::string JobChangesMarkdown(const JobDiff& diff);
Value JobChangesJson(const JobDiff& diff);
std::string ClusterChangesText(const ClusterDiff& cluster);
std::string ClusterChangesMarkdown(const ClusterDiff& cluster);
Value ClusterChangesJson(const ClusterDiff& cluster);

}  // namespace rg::core
