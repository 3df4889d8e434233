#pragma once
// The desired-state model: RayConfig (cluster.yaml) and JobSpec (jobs/**.yaml), as in
// docs/jobspec.md. Values are kept as written: `${shared_root}` is substituted
// when a spec is rendered, so that the spec hash never depends on cluster.yaml.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/boxed.h"
#include "reconciler/core/cron.h"
#include "reconciler/core/secrets.h"
#include "reconciler/core/string_map.h"
#include "reconciler/core/value.h"

namespace rg::core {

// Written in a JobSpec's strings, kept as written (the spec hash never depends on the
// cluster file) and replaced by cluster.yaml's shared_root when the spec is rendered.
inline constexpr std::string_view kSharedRootVariable = "${shared_root}";

// What a spec that uses kSharedRootVariable is told when `cluster_path` sets no shared_root.
inline std::string NoSharedRootMessage(std::string_view cluster_path) {
  return std::string(kSharedRootVariable) + " is used but " + std::string(cluster_path) +
         " sets no shared_root";
}

// The default and ceiling of cluster.yaml's code_max_bytes: Ray's dashboard refuses request
// bodies over 100 MiB (docs/ray-jobs-api.md).
inline constexpr int64_t kMaxCodeBytes = int64_t{100} * 1024 * 1024;

struct SourcePos {
  int line = 0;    // 1-based
  int column = 0;  // 1-based

  friend bool operator==(const SourcePos&, const SourcePos&) = default;
};

using ResourceMap = std::map<std::string, double, std::less<>>;

struct RayConfig {
  std::string path = "cluster.yaml";
  // The cluster's identity in the ledger (docs/status-branch.md); unset: the address without
  // credentials. See RayClusterName in reconciler/core/identity.h.
  std::optional<std::string> name;
  std::string address;
  std::optional<std::string> shared_root;
  std::optional<double> entrypoint_num_cpus;
  std::optional<double> entrypoint_num_gpus;
  std::optional<int64_t> entrypoint_memory;
  std::optional<ResourceMap> entrypoint_resources;
  // runtime_env as written, env_vars included (an object; empty when absent).
  Value runtime_env = Value::Object{};
  std::optional<std::string> user_code_path;
  // The largest zip a spec's `code` folder may become (kMaxCodeBytes when unset).
  std::optional<int64_t> code_max_bytes;
  // `secrets`: ENV name -> reference, every job's (a job's own win per name; EffectiveSecrets).
  StringMap secrets;
  SecretDelivery secret_delivery = SecretDelivery::kEnv;
  // Deliver secrets with kEnv to a head whose Jobs API answers without credentials.
  bool allow_secrets_without_ray_auth = false;
  // Field name -> where it was written; also "secrets.<NAME>" and "runtime_env.env_vars.<NAME>"
  // -> where each entry's name was written.
  std::map<std::string, SourcePos, std::less<>> positions;

  // env_vars of runtime_env, or empty.
  StringMap EnvVars() const;

  friend bool operator==(const RayConfig&, const RayConfig&) = default;
};

enum class Workload { kPpo, kGrpo, kSft, kCustom };
std::string_view WorkloadName(Workload w);

enum class OnRemove { kStop, kKeep };
std::string_view OnRemoveName(OnRemove o);

// The fields of a JobSpec that a `custom` job mostly leaves out: code_path (any workload) and
// what ppo, grpo and sft take (docs/jobspec.md). Kept in a box on the JobSpec.
struct TrainerFields {
  std::optional<std::string> code_path;
  std::optional<std::string> model_id;
  std::optional<std::string> train_file;
  std::optional<std::string> val_file;
  std::optional<int64_t> nnodes;
  std::optional<int64_t> n_gpus_per_node;
  std::optional<int64_t> total_training_steps;
  std::optional<int64_t> save_freq;
  std::optional<int64_t> test_freq;
  std::vector<std::string> overrides;

  friend bool operator==(const TrainerFields&, const TrainerFields&) = default;
};

class TimeZone;

// `concurrency` of a scheduled job: what a slot does while a run of an earlier slot (of the
// same spec hash) is still active (docs/jobspec.md, "Schedules").
enum class Concurrency { kForbid, kReplace, kAllow };
std::string_view ConcurrencyName(Concurrency c);

// `starting_deadline` when the spec sets none: a slot missed for longer is skipped.
inline constexpr int64_t kDefaultStartingDeadlineMs = int64_t{3'600'000};

// `schedule` and the fields that only a scheduled job takes (DESIGN §3.4, "Schedules").
struct ScheduleFields {
  std::string cron_text;  // the expression as written
  CronExpression cron;
  std::string timezone = "UTC";  // an IANA name, as written
  // Where `timezone` was written (else `schedule`): the spec's positions map is dropped in the
  // daemon, and an unknown zone is reported at this place once the zone is looked up.
  SourcePos timezone_pos;
  Concurrency concurrency = Concurrency::kForbid;
  int64_t starting_deadline_ms = kDefaultStartingDeadlineMs;
  // The zone of `timezone`, filled after loading (adapters::ResolveScheduleZones; core stays
  // pure). Null until then: the planner never submits a slot of a spec without its zone.
  std::shared_ptr<const TimeZone> zone;

  // The zone is left out: it is what `timezone` names, looked up again after a cache read.
  friend bool operator==(const ScheduleFields& a, const ScheduleFields& b) {
    return a.cron_text == b.cron_text && a.cron == b.cron && a.timezone == b.timezone &&
           a.timezone_pos == b.timezone_pos && a.concurrency == b.concurrency &&
           a.starting_deadline_ms == b.starting_deadline_ms;
  }
};

// The fields of a JobSpec about the course of its runs rather than what they run
// (docs/jobspec.md, "Lifecycle"): policy fields, never part of the spec hash. Most specs set
// none of them; kept in a box on the JobSpec.
struct LifecycleFields {
  // `deadline`: a run PENDING or RUNNING for longer than this, counted from Ray's start_time
  // (the submission), is stopped and not retried (phase DeadlineExceeded).
  std::optional<int64_t> deadline_ms;
  // `schedule` and its fields: set for a scheduled job only (one run per slot).
  std::optional<ScheduleFields> schedule;

  friend bool operator==(const LifecycleFields&, const LifecycleFields&) = default;
};

// A job's place in a pipeline (docs/jobspec.md, "Pipelines"): the jobs whose current run must
// have SUCCEEDED before this one runs. Part of its identity (BindDesiredState, core/pipeline.h).
// Most specs set none; kept in a box on the JobSpec.
struct PipelineFields {
  std::vector<std::string> after;    // job names, as written
  std::vector<SourcePos> after_pos;  // where each name was written (after_pos[i] for after[i])

  friend bool operator==(const PipelineFields&, const PipelineFields&) = default;
};

// `code` and `code_ref` (docs/code-in-the-repository.md): a folder of this repository whose
// Git tree is the run's working_dir, shipped to Ray's package store as a zip. Part of the
// run's identity through the tree id (core::BindDesiredState). Most specs set none; kept in a
// box on the JobSpec.
struct CodeFields {
  std::string folder;  // repo-relative, as written but normalised: no "./", no trailing "/"
  SourcePos folder_pos;
  std::optional<std::string> ref;  // `code_ref`: a tag, branch or commit id
  SourcePos ref_pos;
  // Filled after loading, from the commit read or the working tree (adapters::ResolveCode;
  // core stays pure). Empty until then: such a spec is never rendered for a submit.
  std::string tree_id;  // the folder's Git tree id (hex)
  std::string commit;   // the commit the tree was taken from (code_ref's, or the one read);
                        // empty for a working tree
  uint64_t files = 0;   // files the zip holds
  uint64_t bytes = 0;   // their size, uncompressed

  friend bool operator==(const CodeFields&, const CodeFields&) = default;
};

// `secrets` of a JobSpec (docs/jobspec.md, "Secrets"): ENV name -> reference, as written.
// Part of the spec hash through the document (names and references; values never exist here).
// Most specs set none; kept in a box on the JobSpec.
struct SecretFields {
  StringMap references;
  std::map<std::string, SourcePos, std::less<>> name_pos;  // where each name was written

  friend bool operator==(const SecretFields&, const SecretFields&) = default;
};

// The fields most specs set none of, in one box (JobSpec::extras): a box each made a JobSpec 16
// bytes larger, and 50,000 specs an array of jemalloc's next size class (32 MiB, not 28).
struct SpecExtras {
  LifecycleFields lifecycle;
  PipelineFields pipeline;
  CodeFields code;
  SecretFields secrets;

  friend bool operator==(const SpecExtras&, const SpecExtras&) = default;
};

// Written in a JobSpec's strings: `${runs.<name>.dir}` is the run folder
// (<shared_root>/jobs/<run id>, core/pipeline.h) of the current successful run of the job
// <name>, which the spec must list in `after`.
inline constexpr std::string_view kRunsVariablePrefix = "${runs.";
inline constexpr std::string_view kRunsVariableSuffix = ".dir}";

// `infra_retries` when the spec sets none.
inline constexpr int64_t kDefaultInfraRetries = 3;

struct JobSpec {
  std::string path;  // repo-relative, e.g. "jobs/ppo/qwen.yaml"
  Workload workload = Workload::kCustom;
  bool suspend = false;
  OnRemove on_remove = OnRemove::kStop;
  std::string name;                          // explicit or derived from the path
  std::optional<std::string> submission_id;  // a pin
  // code_path and the trainer's fields, apart: most specs set none of them (trainer()).
  Boxed<TrainerFields> trainer_fields;
  std::optional<std::string> entrypoint;
  Value runtime_env = Value::Object{};
  StringMap env_vars;
  std::optional<double> entrypoint_num_cpus;
  std::optional<double> entrypoint_num_gpus;
  std::optional<int64_t> entrypoint_memory;
  std::optional<ResourceMap> entrypoint_resources;
  int64_t retries = 0;
  // `infra_retries`: resubmit a run that failed for the cluster's reasons, or was Lost, up to
  // this many times, counted apart from `retries` (DESIGN §3.1).
  int64_t infra_retries = kDefaultInfraRetries;
  StringMap annotations;
  // deadline and schedule (lifecycle()), after (pipeline()), code and code_ref (code();
  // has_code()), secrets (secrets()), apart: most specs set none of them.
  Boxed<SpecExtras> extras;

  // The document as parsed (YAML scalars resolved to their types); the hash input.
  Value document = Value::Object{};
  // First 10 hex digits of SHA-256 over the canonical JSON of `document` without `name`
  // and the policy fields (docs/jobspec.md, "The spec hash and submission ids").
  std::string spec_hash;
  // Hashes of earlier rules that differ from spec_hash: runs recorded under them are still
  // current, so upgrading ray-gitops restarts nothing (ComputeLegacySpecHash; for a
  // non-default instance also the hash without the instance, BindSpecToInstance).
  std::vector<std::string> legacy_spec_hashes;

  // True when a run labelled with `hash` is a run of this spec's content.
  bool IsCurrentHash(std::string_view hash) const {
    if (hash.empty()) return false;
    if (hash == spec_hash) return true;
    return std::ranges::any_of(legacy_spec_hashes,
                               [hash](const std::string& legacy) { return hash == legacy; });
  }
  std::map<std::string, SourcePos, std::less<>> positions;  // field name -> where it was written

  const TrainerFields& trainer() const { return trainer_fields.get(); }
  TrainerFields& mutable_trainer() { return trainer_fields.mutable_get(); }
  const LifecycleFields& lifecycle() const { return extras.get().lifecycle; }
  LifecycleFields& mutable_lifecycle() { return extras.mutable_get().lifecycle; }
  const PipelineFields& pipeline() const { return extras.get().pipeline; }
  PipelineFields& mutable_pipeline() { return extras.mutable_get().pipeline; }
  const CodeFields& code() const { return extras.get().code; }
  CodeFields& mutable_code() { return extras.mutable_get().code; }
  // `secrets`: ENV name -> reference (empty when the spec sets none).
  const StringMap& secrets() const { return extras.get().secrets.references; }
  const SecretFields& secret_fields() const { return extras.get().secrets; }
  SecretFields& mutable_secret_fields() { return extras.mutable_get().secrets; }
  // True when the spec ships a folder of the repository as its working_dir.
  bool has_code() const { return !extras.empty() && !code().folder.empty(); }

  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

}  // namespace rg::core
