#pragma once
// What changed between two versions of one document, for people reviewing a change (`diff`,
// `plan`): the fields as written, old -> new, and the rendered submission as lines (the
// entrypoint one word per line), compared line by line. Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/spec_model.h"
#include "reconciler/core/value.h"

namespace rg::core {

// One leaf that differs. A list item that was inserted or removed has `item` set and one of
// before/after unset: lists are compared as sequences, so one override added in the middle of
// twenty is one change, not nineteen.
struct FieldChange {
  std::string field;                  // dotted path as written: "trainer.nnodes", "overrides"
  std::optional<std::string> before;  // nullopt: absent
  std::optional<std::string> after;   // nullopt: absent
  bool item = false;                  // a list item added or removed

  friend bool operator==(const FieldChange&, const FieldChange&) = default;
};

// "total_training_steps: 100 -> 200", "save_freq: (unset) -> 10", "overrides: + a=b",
// "overrides: - a=b".
std::string FormatFieldChange(const FieldChange& change);

// A scalar as people read it in a change: a string as is ("" for the empty string), numbers,
// booleans and null as JSON; lists and mappings as compact JSON.
std::string ShowValue(const Value& value);

// Every leaf that differs between `before` and `after`, in key order. Mappings are walked key
// by key; lists of any kind are compared as sequences (longest common subsequence).
std::vector<FieldChange> DiffFields(const Value& before, const Value& after);

// The words of a shell command line as written (quotes kept), split at blanks outside quotes.
std::vector<std::string> SplitShellWords(std::string_view command);

// A submission body as lines for a diff: the entrypoint's words one per line, then every leaf
// of runtime_env ("runtime_env.env_vars.HF_HOME: /x") and the entrypoint_* resources
// ("entrypoint_num_gpus: 1"). The submission id and the metadata are left out: they change with
// every run and say nothing about what it does.
std::vector<std::string> SubmissionLines(const Value& body);

struct DiffLine {
  char op = ' ';  // '+' added, '-' removed, ' ' unchanged
  std::string text;

  friend bool operator==(const DiffLine&, const DiffLine&) = default;
};

// A line diff of `before` -> `after` (longest common subsequence; removals before additions
// within a change).
std::vector<DiffLine> DiffLines(const std::vector<std::string>& before,
                                const std::vector<std::string>& after);

// True when some line of `lines` is added or removed.
bool HasChanges(const std::vector<DiffLine>& lines);

// The changed lines of `lines`, each with up to `context` unchanged lines around it; a gap
// between two such runs is one line {' ', "..."}.
std::vector<DiffLine> TrimToContext(const std::vector<DiffLine>& lines, int context);

// cluster.yaml as a document, for its field diff: the fields it sets, as written.
Value ClusterDocument(const RayConfig& cluster);

}  // namespace rg::core
