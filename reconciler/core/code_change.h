#pragma once
// How `plan` and `diff` say that a spec's code moved (docs/code-in-the-repository.md):
// "code changed: src/trainer (3 files: a.py, b.py, c.py)".

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/spec_model.h"

namespace rg::core {

// The files (relative to the folder) that differ between two trees of a code folder; empty
// when that cannot be told (a tree not in the local copy). Given by the caller that holds the
// Git objects (ports::DesiredStateSource::CodeChanges); core stays pure.
using CodeChangeLister = std::function<std::vector<std::string>(const std::string& from_tree,
                                                                const std::string& to_tree)>;

// The files listed shown at most; the rest are counted.
inline constexpr size_t kCodeChangeFilesShown = 5;

// "code changed: <folder> (<n> files: a, b, c, +2 more)", or with the trees' short ids when the
// files are not known: "code changed: <folder> (tree 1a2b3c4d5e -> 6f7a8b9c0d)".
std::string CodeChangeText(std::string_view folder, std::string_view from_tree,
                           std::string_view to_tree, const std::vector<std::string>& files);

// The same, with the files asked of `lister` (when there is one).
std::string DescribeCodeChange(std::string_view folder, const std::string& from_tree,
                               const std::string& to_tree, const CodeChangeLister& lister);

// "code src/trainer@1a2b3c4d5e, 12 files, 40.1 KiB": what a spec's code folder holds.
std::string CodeSummary(const CodeFields& code);

}  // namespace rg::core
