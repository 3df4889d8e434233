#pragma once
// ports::ArtifactSink on a filesystem (docs/artifacts.md):
//
//   <root>/jobs/<submission_id>/
//     config/ray_config.yaml  config/jobspec.yaml  config/submit_payload.json
//     logs/submit.out  logs/driver.log  debug/ray_status_pre.txt  debug/ray_job_list_post.txt
//
// Every file is written to a temporary name in its own directory and renamed over the final
// name, so a reader sees the old content or the new, never a torn file. A fresh submission
// replaces every file; an adoption keeps the config and ray_status_pre files that describe
// the submission that created the run (filling in any that are missing), appends a record to
// logs/submit.out and replaces the job list. Thread-compatible.

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/redaction.h"
#include "reconciler/ports/artifact_sink.h"

namespace rg::adapters {

class ArtifactWriter : public ports::ArtifactSink {
 public:
  using NowFunction = std::function<std::chrono::system_clock::time_point()>;

  // `root` stands for shared_root. Every occurrence of a string in `secrets` (e.g. the Ray
  // token) is replaced by "<redacted>" in every file, whatever field it hides in.
  explicit ArtifactWriter(std::filesystem::path root, const std::vector<std::string>& secrets = {},
                          NowFunction now = std::chrono::system_clock::now);
  // The same with the process's one redaction step (docs/security.md): every value `redactor`
  // knows is replaced in every file.
  ArtifactWriter(std::filesystem::path root, core::Redactor redactor,
                 NowFunction now = std::chrono::system_clock::now);

  core::Status WriteSubmission(const ports::SubmissionRecord& record) override;
  core::Status WriteDriverLog(std::string_view submission_id, std::string_view log,
                              size_t skipped_bytes) override;

  // <root>/jobs/<submission_id>
  std::filesystem::path JobDir(std::string_view submission_id) const;

 private:
  std::string Scrub(const std::string& text) const;

  std::filesystem::path root_;
  core::Redactor redactor_;
  NowFunction now_;
};

// The last `max_bytes` of `log`, the end of a driver log after `skipped_bytes` bytes not read
// (from the start of a line when one starts within ports::kDriverLogLineSearch of the cut),
// after a line saying how many bytes were left out; `log` itself when it is whole and fits.
std::string LastOfDriverLog(std::string_view log, size_t max_bytes, size_t skipped_bytes = 0);

// Writes `content` to `path` through a temporary file in the same directory, flushed to disk
// and renamed over `path`. Creates missing parent directories, mode 0755 whatever the umask
// (the file itself is 0644 less the umask).
core::Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content);

}  // namespace rg::adapters
