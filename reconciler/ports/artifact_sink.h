#pragma once
// Where the record of a submission goes (docs/artifacts.md): the files that let a person see, long
// after the fact, exactly what was sent to Ray, from which inputs, and what Ray said. The
// adapter in adapters/artifact_writer.h writes them under <root>/jobs/<submission_id>/.

#include <cstddef>
#include <string>
#include <string_view>

#include "reconciler/core/result.h"
#include "reconciler/core/value.h"

namespace rg::ports {

// Everything one submission leaves behind. Texts are recorded as given; the sink never
// sees the Ray token.
struct SubmissionRecord {
  std::string submission_id;
  // True when the job already existed with the same spec and was adopted, not sent again.
  bool adopted = false;
  std::string ray_config_text;     // cluster.yaml as read
  std::string jobspec_text;        // the JobSpec as read
  core::Value submit_payload;      // the POST /api/jobs/ body as sent (the sink redacts secrets)
  std::string ray_address;         // the sink strips credentials before recording it
  std::string commit;              // the commit the spec came from; empty when not from Git
  std::string ray_answer;          // what Ray said to the submit, one or more lines
  std::string cluster_status_pre;  // `ray status` text before the submit, or why it is missing
  std::string job_list_post;       // the job list right after the submit, one line per job
};

// The most of a run's driver log that logs/driver.log keeps: its last 8 MiB.
inline constexpr size_t kDriverLogMaxBytes = size_t{8} << 20;
// How far past the cut a kept log looks for the start of a line (a reader of the log reads
// this much more than it keeps).
inline constexpr size_t kDriverLogLineSearch = 4096;

class ArtifactSink {
 public:
  virtual ~ArtifactSink() = default;

  // Records one submission. A failure here never undoes the submission: callers report it
  // and go on. REQUIRES: record.submission_id is a valid submission id (no '/', not "." or
  // "..").
  virtual core::Status WriteSubmission(const SubmissionRecord& record) = 0;

  // Keeps the driver log of a run that ended (logs/driver.log, replaced whole): `log` is the
  // end of it, after `skipped_bytes` bytes that were not read (0: the whole log). Secrets
  // redacted, then at most its last kDriverLogMaxBytes, after a first line that says how much
  // was left out. REQUIRES: as WriteSubmission.
  virtual core::Status WriteDriverLog(std::string_view submission_id, std::string_view log,
                                      size_t skipped_bytes) = 0;
};

}  // namespace rg::ports
