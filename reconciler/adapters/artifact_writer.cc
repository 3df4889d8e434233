#include "reconciler/adapters/artifact_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "reconciler/adapters/fd_io.h"
#include "reconciler/core/render.h"
#include "reconciler/core/time_format.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

bool IsSafePathComponent(std::string_view id) {
  if (id.empty() || id == "." || id == "..") return false;
  return std::ranges::all_of(id, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

core::Status WriteContent(int fd, std::string_view content, const fs::path& path) {
  if (WriteAll(fd, content)) return core::OkStatus();
  return core::Error::Fatal("cannot write " + path.string() + ": " + ErrnoText(errno));
}

// False when the file cannot be read (normally: it does not exist yet).
bool ReadFile(const fs::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *out = buffer.str();
  return true;
}

std::string IndentLines(std::string_view text, std::string_view indent) {
  std::string out;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    out += indent;
    out += text.substr(0, end);
    out += '\n';
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::string WithTrailingNewline(std::string text) {
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

// Creates `dir` and its missing parents, each mode 0755 whatever the umask: a run's folder is
// where verl, as the Ray workers' user, creates checkpoints/ and reads them back (DESIGN §1.3).
// Folders that exist are left as they are.
core::Status CreateArtifactFolders(const fs::path& dir) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(fs::symlink_status(p, ec));
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::reverse(missing.begin(), missing.end());  // outermost first
  for (const fs::path& folder : missing) {
    if (::mkdir(folder.c_str(), 0755) != 0) {
      if (errno == EEXIST) continue;  // another writer made it meanwhile
      return core::Error::Fatal("cannot create " + folder.string() + ": " + ErrnoText(errno));
    }
    // mkdir's mode is cut by the umask; this one is not.
    if (::chmod(folder.c_str(), 0755) != 0) {
      return core::Error::Fatal("cannot set the mode of " + folder.string() + ": " +
                                ErrnoText(errno));
    }
  }
  return core::OkStatus();
}

}  // namespace

core::Status WriteFileAtomically(const fs::path& path, std::string_view content) {
  static std::atomic<unsigned> counter{0};
  if (core::Status folders = CreateArtifactFolders(path.parent_path()); !folders.ok()) {
    return folders;
  }
  fs::path temp = path;
  temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return core::Error::Fatal("cannot create " + temp.string() + ": " + ErrnoText(errno));
  core::Status written = WriteContent(fd, content, temp);
  if (written.ok() && ::fsync(fd) != 0) {
    written = core::Error::Fatal("cannot flush " + temp.string() + ": " + ErrnoText(errno));
  }
  if (::close(fd) != 0 && written.ok()) {
    written = core::Error::Fatal("cannot close " + temp.string() + ": " + ErrnoText(errno));
  }
  if (written.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    written = core::Error::Fatal("cannot rename " + temp.string() + " to " + path.string() + ": " +
                                 ErrnoText(errno));
  }
  if (!written.ok()) ::unlink(temp.c_str());
  return written;
}

namespace {
core::Redactor RedactorOf(const std::vector<std::string>& secrets) {
  core::Redactor r;
  for (const std::string& s : secrets) r.Add(s);
  return r;
}
}  // namespace

ArtifactWriter::ArtifactWriter(fs::path root, const std::vector<std::string>& secrets,
                               NowFunction now)
    : ArtifactWriter(std::move(root), RedactorOf(secrets), std::move(now)) {}

ArtifactWriter::ArtifactWriter(fs::path root, core::Redactor redactor, NowFunction now)
    : root_(std::move(root)), redactor_(std::move(redactor)), now_(std::move(now)) {}

std::string LastOfDriverLog(std::string_view log, size_t max_bytes, size_t skipped_bytes) {
  if (log.size() <= max_bytes && skipped_bytes == 0) return std::string(log);
  size_t from = log.size() > max_bytes ? log.size() - max_bytes : 0;
  // Start at a line: a cut line (or a cut UTF-8 character) would read as garbage.
  const size_t newline = log.substr(from, ports::kDriverLogLineSearch).find('\n');
  if (newline != std::string_view::npos) from += newline + 1;
  return "[ray-gitops: the first " + std::to_string(skipped_bytes + from) +
         " bytes of this driver log are left out; logs/driver.log keeps at most " +
         std::to_string(max_bytes) + "]\n" + std::string(log.substr(from));
}

fs::path ArtifactWriter::JobDir(std::string_view submission_id) const {
  return root_ / "jobs" / std::string(submission_id);
}

std::string ArtifactWriter::Scrub(const std::string& text) const { return redactor_.Apply(text); }

core::Status ArtifactWriter::WriteDriverLog(std::string_view submission_id, std::string_view log,
                                            size_t skipped_bytes) {
  if (!IsSafePathComponent(submission_id)) {
    return core::Error::InvalidInput("submission id '" + std::string(submission_id) +
                                     "' cannot name an artifacts directory");
  }
  // Redacted whole before it is cut, so that no secret is left in part at the cut.
  std::string text(log);
  redactor_.ApplyInPlace(text);
  return WriteFileAtomically(JobDir(submission_id) / "logs" / "driver.log",
                             LastOfDriverLog(text, ports::kDriverLogMaxBytes, skipped_bytes));
}

core::Status ArtifactWriter::WriteSubmission(const ports::SubmissionRecord& record) {
  if (!IsSafePathComponent(record.submission_id)) {
    return core::Error::InvalidInput("submission id '" + record.submission_id +
                                     "' cannot name an artifacts directory");
  }
  const fs::path dir = JobDir(record.submission_id);

  // On adoption the run already exists: the files describing its creation stay as they are.
  auto write_unless_adopted = [&](const fs::path& path,
                                  const std::string& content) -> core::Status {
    std::error_code ec;
    if (record.adopted && fs::exists(path, ec)) return core::OkStatus();
    return WriteFileAtomically(path, Scrub(content));
  };

  const std::string payload =
      WithTrailingNewline(core::ToPrettyJson(core::RedactSecrets(record.submit_payload)));
  const std::array<std::pair<fs::path, std::string>, 4> kept_on_adoption = {{
      {dir / "config" / "ray_config.yaml", record.ray_config_text},
      {dir / "config" / "jobspec.yaml", record.jobspec_text},
      {dir / "config" / "submit_payload.json", payload},
      {dir / "debug" / "ray_status_pre.txt", WithTrailingNewline(record.cluster_status_pre)},
  }};
  for (const auto& [path, content] : kept_on_adoption) {
    if (core::Status s = write_unless_adopted(path, content); !s.ok()) return s;
  }

  if (core::Status s = WriteFileAtomically(dir / "debug" / "ray_job_list_post.txt",
                                           Scrub(WithTrailingNewline(record.job_list_post)));
      !s.ok()) {
    return s;
  }

  std::string entry;
  entry += "time: " + core::FormatRfc3339Seconds(now_()) + "\n";
  entry += "submission_id: " + record.submission_id + "\n";
  entry += std::string("outcome: ") + (record.adopted ? "adopted" : "submitted") + "\n";
  entry += "commit: " + (record.commit.empty() ? std::string("(none)") : record.commit) + "\n";
  // A run of a spec with `code`: the tree it got, and the commit the tree came from.
  if (const core::Value* metadata = record.submit_payload.Find("metadata");
      metadata != nullptr && metadata->is_object()) {
    const core::Value* tree = metadata->Find(core::kMetaCodeTree);
    if (tree != nullptr && tree->is_string()) {
      const core::Value* from = metadata->Find(core::kMetaCodeCommit);
      entry += "code_tree: " + tree->as_string() + "\n";
      entry += "code_commit: " +
               (from != nullptr && from->is_string() ? from->as_string() : std::string("(none)")) +
               "\n";
    }
  }
  entry += "ray_address: " + core::StripUrlCredentials(record.ray_address) + "\n";
  entry += "ray_answer:\n" + IndentLines(record.ray_answer, "  ");

  const fs::path log_path = dir / "logs" / "submit.out";
  std::string log;
  if (ReadFile(log_path, &log) && !log.empty()) log = WithTrailingNewline(std::move(log)) + "\n";
  log += entry;
  return WriteFileAtomically(log_path, Scrub(log));
}

}  // namespace rg::adapters
