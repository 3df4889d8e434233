#include "tests/support/in_memory_ports.h"

#include <set>
#include <utility>

#include "reconciler/spec/spec_loader.h"

namespace rg::testing {

void InMemoryDesiredStateSource::SetFiles(std::map<std::string, std::string> files,
                                          std::string commit) {
  files_ = std::move(files);
  commit_ = std::move(commit);
}

void InMemoryDesiredStateSource::SetFile(const std::string& path, std::string text,
                                         std::string commit) {
  files_[path] = std::move(text);
  commit_ = std::move(commit);
}

void InMemoryDesiredStateSource::RemoveFile(const std::string& path, std::string commit) {
  files_.erase(path);
  commit_ = std::move(commit);
}

core::Result<ports::DesiredSnapshot> InMemoryDesiredStateSource::Load(const std::string& ref) {
  ++loads_;
  if (on_load_) on_load_();
  if (error_) return *error_;
  ports::DesiredSnapshot snap;
  snap.commit = commit_;
  snap.ref = ref;
  snap.repo_url = "file:///in-memory/repo.git";
  std::optional<spec::SourceFile> cluster;
  std::vector<spec::SourceFile> specs;
  for (const auto& [path, text] : files_) {
    snap.texts[path] = text;
    if (path == "cluster.yaml") {
      cluster = spec::SourceFile{path, text};
    } else if (spec::IsSpecPath(path, "jobs")) {
      specs.push_back(spec::SourceFile{path, text});
    }
  }
  snap.state = spec::LoadDesiredState(cluster, specs, "jobs");
  if (on_state_) on_state_(snap.state);
  return snap;
}

core::Result<std::optional<std::string>> InMemoryDesiredStateSource::Head(
    const std::string& /*ref*/) {
  if (error_) return *error_;
  return std::optional<std::string>(commit_);
}

core::Result<std::optional<std::string>> InMemoryDesiredStateSource::RemoteTip(
    const std::string& /*ref*/) {
  ++remote_tips_;
  if (!remote_) return std::optional<std::string>();
  if (on_remote_tip_) on_remote_tip_();
  if (remote_error_) return *remote_error_;
  return std::optional<std::string>(commit_);
}

core::Result<ports::TipChanges> InMemoryDesiredStateSource::ChangesAtTip(
    const ports::DesiredSnapshot& snapshot) {
  if (error_) return *error_;
  ports::TipChanges tip;
  tip.commit = commit_;
  std::set<std::string> paths;
  auto read = [](const std::string& path) {
    return path == "cluster.yaml" || spec::IsSpecPath(path, "jobs");
  };
  for (const auto& [path, text] : files_) {
    auto it = snapshot.texts.find(path);
    if (read(path) && (it == snapshot.texts.end() || it->second != text)) paths.insert(path);
  }
  for (const auto& [path, text] : snapshot.texts) {
    if (read(path) && !files_.contains(path)) paths.insert(path);
  }
  tip.changed.assign(paths.begin(), paths.end());
  return tip;
}

core::Result<core::Ledger> InMemoryStatusStore::ReadLedger(const ports::LedgerScope& /*scope*/) {
  if (read_error_) return *read_error_;
  return ledger_;
}

core::Result<std::string> InMemoryStatusStore::Write(const ports::StatusChanges& changes,
                                                     const ports::StatusCommit& message) {
  core::Ledger next = ledger_;
  for (const auto& [name, rec] : changes) {
    if (rec) {
      next[name] = *rec;
    } else {
      next.erase(name);
    }
  }
  if (next == ledger_) return std::string();
  ledger_ = std::move(next);
  Commit c;
  c.id = "status-" + std::to_string(commits_.size() + 1);
  c.changes = changes;
  c.message = message;
  c.after = ledger_;
  commits_.push_back(std::move(c));
  return commits_.back().id;
}

core::Result<std::vector<ports::StatusHistoryEntry>> InMemoryStatusStore::History(
    const std::string& name) {
  std::vector<ports::StatusHistoryEntry> out;
  for (auto it = commits_.rbegin(); it != commits_.rend(); ++it) {
    if (!it->changes.contains(name)) continue;
    ports::StatusHistoryEntry e;
    e.commit = it->id;
    e.time_ms = static_cast<int64_t>(std::distance(it, commits_.rend())) * 1000;
    e.subject = it->message.subject;
    if (auto rec = it->after.find(name); rec != it->after.end()) e.record = rec->second;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace rg::testing
