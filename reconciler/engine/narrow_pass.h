#pragma once
// Narrow passes (docs/daemon.md, "Passes that read only what changed"). When the daemon's last
// pass found the world at rest (engine/pass_memo.h) and since then only spec files changed
// (a push), while Ray's job list and the status branch stayed as they were, every job but
// those of the changed files would be planned exactly as before: nothing to do. A narrow pass
// reads, plans, applies and records only the jobs of the changed files: their old and new
// names, and any removed job whose content a new spec has (a rename). It reads the changed
// spec files (a tree diff), their jobs' runs from Ray's list and their status files, and
// hands them to the steps a full pass runs (engine/pass_steps.h), so the decisions are the
// same; the status commit is built from the previous tree.
//
// Anything the narrow view cannot decide as the full one would sends the daemon to a full
// pass: a changed cluster file, a link or submodule among the specs, an invalid spec, a name
// or pinned id already held by an unchanged file, more than kMaxNarrowFiles changed files,
// history rewritten, a run of those jobs from a newer commit, a status file of theirs that
// cannot be used, a pipeline (`after`) anywhere. After a narrow pass the next pass is a full one
// (the index describes the world as the full pass left it).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "reconciler/core/redaction.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/engine/pass_memo.h"
#include "reconciler/engine/reconcile_pass.h"
#include "reconciler/engine/warning.h"

namespace rg::engine {

inline constexpr size_t kMaxNarrowFiles = 64;

// What a narrow pass needs to know of the whole desired state, taken from the last full pass
// when it found the world at rest. About 200 bytes a spec.
struct PassIndex {
  PassMemo memo;  // the full pass's inputs; the index is valid only with it
  std::unordered_map<std::string, std::string> name_of_path;  // every valid spec
  std::unordered_map<std::string, std::string> path_of_name;
  std::unordered_map<std::string, std::string> path_of_pin;  // pinned submission ids
  // Spec hash -> names of removed jobs whose records (or attempts) have it.
  std::unordered_multimap<std::string, std::string> removed_by_hash;
  std::optional<core::RayConfig> cluster;  // the cluster file as the full pass read it
  std::vector<Warning> warnings;           // the full pass's (foreign jobs, clock skew)
  core::Redactor redactor;                 // every secret the full pass knew
  // Some spec has `after`: a job's plan then depends on other jobs' (its upstreams'), which a
  // narrow view does not hold, so every pass is a full one.
  bool pipelines = false;
  // Some spec has `code` (core::DesiredState::uses_code): its run follows files outside the
  // jobs folder, which a narrow view does not read, so every pass is a full one.
  bool code = false;

  bool valid() const { return memo.valid; }
};

// The index of a full pass: valid when RememberPass gives a valid memo, the pass kept a
// ledger (a store) and its snapshot, and its only warnings are about foreign jobs and the
// head's clock.
PassIndex IndexPass(const PassResult& result, const ports::StatusStore* store);

// Called once a narrow pass has read the changed specs and before it plans, with what it
// read: returns the artifact sink for its submits (null: none), made with the secrets of the
// changed specs too. Empty: deps.artifacts is used.
using NarrowArtifacts = std::function<ports::ArtifactSink*(const ports::DesiredSnapshot& changed)>;

// A narrow pass over what changed since `index` was taken, or nullopt when a full pass must
// run instead (see the file comment), and then `why_not` (when given) says why, for the
// daemon's debug log. Reads Ray's job list once, as a full pass does. The result's redactor
// holds the index's secrets, the changed specs' and options.secrets.
std::optional<PassResult> NarrowPass(const PassIndex& index, const ReconcileDeps& deps,
                                     const ReconcileOptions& options,
                                     const NarrowArtifacts& artifacts = {},
                                     std::string* why_not = nullptr);

}  // namespace rg::engine
