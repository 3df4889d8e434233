#include "reconciler/spec/spec_loader.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string_view>
#include <utility>

#include "reconciler/core/cron.h"
#include "reconciler/core/duration.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/render.h"
#include "reconciler/spec/loaded_job_spec.h"
#include "reconciler/spec/status_codec.h"
#include "reconciler/spec/yaml_document.h"

namespace rg::spec {
namespace {

using core::SourcePos;

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string_view DidYouMean(std::string_view key, const std::vector<std::string_view>& known) {
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, key.size() / 3) + 1;
  for (std::string_view candidate : known) {
    const size_t distance = EditDistance(key, candidate);
    if (distance < best_distance) best = candidate, best_distance = distance;
  }
  return best;
}

namespace {

std::string UnknownKeyMessage(std::string_view key, const std::vector<std::string_view>& known) {
  std::string message = "unknown key \"" + std::string(key) + "\"";
  const std::string_view best = DidYouMean(key, known);
  if (!best.empty()) message += " (did you mean \"" + std::string(best) + "\"?)";
  return message;
}

bool IsEnvVarName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

// Reads typed fields out of the tree, reporting every problem instead of stopping at one.
class FieldReader {
 public:
  FieldReader(const std::string& path, core::Diagnostics* diagnostics)
      : path_(path), diagnostics_(diagnostics) {}

  void Error(SourcePos pos, std::string message) {
    diagnostics_->push_back({path_, pos.line, pos.column, std::move(message)});
  }

  void TypeError(std::string_view field, std::string_view requirement, const YamlNode& node) {
    Error(node.pos, std::string(field) + " must be " + std::string(requirement) + " (got " +
                        Describe(node) + ")");
  }

  std::optional<std::string> String(std::string_view field, const YamlNode& node) {
    if (!node.is_string() || node.scalar.as_string().empty()) {
      TypeError(field, "a non-empty string", node);
      return std::nullopt;
    }
    return node.scalar.as_string();
  }

  std::optional<int64_t> Integer(std::string_view field, const YamlNode& node, int64_t min,
                                 int64_t max, std::string_view requirement) {
    if (!node.is_scalar() || !node.scalar.is_int() || node.scalar.as_int() < min ||
        node.scalar.as_int() > max) {
      TypeError(field, requirement, node);
      return std::nullopt;
    }
    return node.scalar.as_int();
  }

  std::optional<double> NonNegativeNumber(std::string_view field, const YamlNode& node) {
    if (!node.is_scalar() || !node.scalar.is_number() || !std::isfinite(node.scalar.as_double()) ||
        node.scalar.as_double() < 0) {
      TypeError(field, "a number >= 0", node);
      return std::nullopt;
    }
    return node.scalar.as_double();
  }

  std::optional<int64_t> Memory(std::string_view field, const YamlNode& node) {
    return Integer(field, node, 0, INT64_MAX, "an integer number of bytes >= 0");
  }

  std::optional<core::ResourceMap> Resources(std::string_view field, const YamlNode& node) {
    if (!node.is_mapping()) {
      TypeError(field, "a mapping of resource names to numbers", node);
      return std::nullopt;
    }
    core::ResourceMap out;
    bool ok = true;
    for (const auto& entry : node.entries) {
      if (entry.key.empty()) {
        Error(entry.key_pos, std::string(field) + " keys must not be empty");
        ok = false;
        continue;
      }
      auto amount = NonNegativeNumber(std::string(field) + "." + entry.key, entry.value);
      if (!amount) {
        ok = false;
        continue;
      }
      out.emplace(entry.key, *amount);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // Scalar values are kept as the text written: `HF_HUB_OFFLINE: 1` means "1".
  std::optional<core::StringMap> ScalarMap(std::string_view field, const YamlNode& node,
                                           bool env_var_names) {
    if (!node.is_mapping()) {
      TypeError(field, env_var_names ? "a mapping of variable names to values" : "a mapping", node);
      return std::nullopt;
    }
    std::map<std::string, std::string, std::less<>> out;
    bool ok = true;
    for (const auto& entry : node.entries) {
      if (env_var_names && !IsEnvVarName(entry.key)) {
        Error(entry.key_pos, std::string(field) + " key \"" + entry.key +
                                 "\" is not a valid environment variable name "
                                 "([A-Za-z_][A-Za-z0-9_]*)");
        ok = false;
        continue;
      }
      if (!entry.value.is_scalar() || entry.value.is_null()) {
        TypeError(std::string(field) + "." + entry.key, "a string, number or bool", entry.value);
        ok = false;
        continue;
      }
      out.emplace(entry.key, entry.value.text);
    }
    if (!ok) return std::nullopt;
    return core::StringMap(out);
  }

 private:
  const std::string& path_;
  core::Diagnostics* diagnostics_;
};

core::Value StringMapValue(const core::StringMap& map) {
  core::Value::Object object;
  for (const auto& [key, value] : map) object.emplace(std::string(key), std::string(value));
  return object;
}

// --- Secrets (docs/jobspec.md, "Secrets") ---------------------------------------------------

// `secrets`: ENV name -> reference. Calls `keep(name, reference, name_pos)` for each valid entry.
template <typename Keep>
void ReadSecretsMap(FieldReader& reader, const YamlEntry& e, Keep keep) {
  if (!e.value.is_mapping()) {
    reader.TypeError(e.key,
                     "a mapping of environment variable names to references (e.g. "
                     "WANDB_API_KEY: wandb-key)",
                     e.value);
    return;
  }
  for (const auto& entry : e.value.entries) {
    const std::string field = e.key + "." + entry.key;
    bool ok = true;
    if (!IsEnvVarName(entry.key)) {
      reader.Error(entry.key_pos, e.key + " key \"" + entry.key +
                                      "\" is not a valid environment variable name "
                                      "([A-Za-z_][A-Za-z0-9_]*)");
      ok = false;
    } else if (core::IsReservedEnvName(entry.key)) {
      reader.Error(entry.key_pos, field + " cannot be a secret: ray-gitops sets " + entry.key +
                                      " itself (code_path, then user_code_path)");
      ok = false;
    }
    const YamlNode& value = entry.value;
    if (!value.is_string() || value.scalar.as_string().empty()) {
      reader.TypeError(field,
                       "a reference: the name of a file in the daemon's secrets directory "
                       "(e.g. wandb-key; quote it if it reads as a number)",
                       value);
      ok = false;
    } else if (!core::IsSecretReference(value.scalar.as_string())) {
      reader.TypeError(field,
                       "a reference of 1 to 128 characters of [A-Za-z0-9_.-] starting with a "
                       "letter or digit (a file name in the secrets directory)",
                       value);
      ok = false;
    }
    if (ok) keep(entry.key, value.scalar.as_string(), entry.key_pos);
  }
}

// An env_vars value that holds a credential is an error at the value: it belongs in the secrets
// directory, named under `secrets:`, never in Git. `field` is the mapping's field as written
// ("env_vars", "runtime_env.env_vars").
void CheckCredentialValues(FieldReader& reader, std::string_view field, const YamlNode& env_vars) {
  if (!env_vars.is_mapping()) return;
  for (const auto& entry : env_vars.entries) {
    if (!entry.value.is_scalar() || entry.value.is_null()) continue;
    if (auto kind = core::CredentialKind(entry.key, entry.value.text)) {
      reader.Error(entry.value.pos,
                   std::string(field) + "." + entry.key + " looks like " + std::string(*kind) +
                       "; put it in the daemon's secrets directory and name it under secrets: "
                       "(docs/jobspec.md, \"Secrets\")");
    }
  }
}

// A name that is both a secret and a plain env var of one document is an error at the secret:
// which value the job would get would hang on a precedence rule nobody sees in the file.
void CheckSecretsBesideEnvVars(FieldReader& reader, std::string_view secrets_field,
                               const YamlEntry* secrets, std::string_view env_field,
                               const YamlEntry* env_vars) {
  if (secrets == nullptr || env_vars == nullptr || !secrets->value.is_mapping() ||
      !env_vars->value.is_mapping()) {
    return;
  }
  for (const auto& secret : secrets->value.entries) {
    for (const auto& env : env_vars->value.entries) {
      if (env.key != secret.key) continue;
      reader.Error(secret.key_pos,
                   std::string(secrets_field) + "." + secret.key + ": " + std::string(env_field) +
                       " also sets " + env.key + " (line " + std::to_string(env.key_pos.line) +
                       "); a variable is either a secret or a plain value: remove one of them");
    }
  }
}

// Checks the document is a mapping; reports and returns nullptr otherwise.
const YamlNode* RootMapping(const YamlParse& parse, FieldReader& reader) {
  if (!parse.root) return nullptr;
  const YamlNode& root = *parse.root;
  if (root.is_null()) {
    reader.Error(root.pos, "the document is empty (expected a mapping of fields)");
    return nullptr;
  }
  if (!root.is_mapping()) {
    reader.Error(root.pos, "the document must be a mapping of fields (got " + Describe(root) + ")");
    return nullptr;
  }
  return &root;
}

void SortDiagnostics(core::Diagnostics& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const auto& a, const auto& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
}

void CollectSharedRootUses(const YamlNode& node, std::vector<SourcePos>& out) {
  if (node.is_string() &&
      node.scalar.as_string().find(core::kSharedRootVariable) != std::string::npos) {
    out.push_back(node.pos);
  }
  for (const auto& item : node.items) CollectSharedRootUses(item, out);
  for (const auto& entry : node.entries) CollectSharedRootUses(entry.value, out);
}

std::optional<core::Workload> ParseWorkload(std::string_view text) {
  if (text == "ppo") return core::Workload::kPpo;
  if (text == "grpo") return core::Workload::kGrpo;
  if (text == "sft") return core::Workload::kSft;
  if (text == "custom") return core::Workload::kCustom;
  return std::nullopt;
}

const YamlEntry* FindEntry(const YamlNode& mapping, std::string_view key) {
  for (const auto& entry : mapping.entries) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

// --- One table per document kind -----------------------------------------------------------
// Each field of cluster.yaml and of a JobSpec is one row: its key and the function that reads
// it into the model. The rows drive the loading, the unknown-key check and its "did you mean"
// (which prefers the earlier row on a tie), and tests/unit/spec/document_fields_test.cc holds
// them against schema/. docs/architecture.md, "Adding a JobSpec field".

// What a row reads into: the document being built and where problems go.
struct ClusterFields {
  FieldReader& reader;
  core::RayConfig& doc;
  bool has_address = false;
};

struct JobFields {
  FieldReader& reader;
  core::JobSpec& doc;
  LoadedJobSpec& out;
  std::optional<core::Workload> workload;
  bool custom = false;
  std::string_view source;    // the file's text, to place an error inside a scalar
  bool has_schedule = false;  // `schedule` was written (valid or not)
  std::string_view jobs_dir;  // the jobs folder (--jobs-dir), for `code`
};

template <typename Fields>
struct FieldRule {
  std::string_view key;
  void (*read)(Fields& f, const YamlEntry& entry);
  bool trainer_only = false;  // JobSpec: shapes only the verl trainer command
};

// The entrypoint resources, which both documents take (the spec's win over the cluster's).
template <typename Fields>
void ReadEntrypointNumCpus(Fields& f, const YamlEntry& e) {
  f.doc.entrypoint_num_cpus = f.reader.NonNegativeNumber(e.key, e.value);
}
template <typename Fields>
void ReadEntrypointNumGpus(Fields& f, const YamlEntry& e) {
  f.doc.entrypoint_num_gpus = f.reader.NonNegativeNumber(e.key, e.value);
}
template <typename Fields>
void ReadEntrypointMemory(Fields& f, const YamlEntry& e) {
  f.doc.entrypoint_memory = f.reader.Memory(e.key, e.value);
}
template <typename Fields>
void ReadEntrypointResources(Fields& f, const YamlEntry& e) {
  f.doc.entrypoint_resources = f.reader.Resources(e.key, e.value);
}

// The cluster's identity in the ledger (docs/status-branch.md): it is written into every status
// file and compared as is, so a line break or an edge space could never match by eye.
void ReadClusterName(ClusterFields& f, const YamlEntry& e) {
  const YamlNode& value = e.value;
  const std::string name = value.is_string() ? value.scalar.as_string() : std::string();
  const bool ok = !name.empty() && name.size() <= 253 && name.front() != ' ' &&
                  name.back() != ' ' && std::none_of(name.begin(), name.end(), [](char c) {
                    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                  });
  if (ok) {
    f.doc.name = name;
  } else {
    f.reader.TypeError(e.key, "1 to 253 characters without control characters or edge spaces",
                       value);
  }
}

void ReadClusterAddress(ClusterFields& f, const YamlEntry& e) {
  const YamlNode& value = e.value;
  f.has_address = true;
  const bool url = value.is_string() && (value.scalar.as_string().starts_with("http://") ||
                                         value.scalar.as_string().starts_with("https://"));
  const size_t scheme = url && value.scalar.as_string()[4] == 's' ? 8 : 7;
  if (!url || value.scalar.as_string().size() <= scheme ||
      value.scalar.as_string().find_first_of(" \t\n") != std::string::npos) {
    f.reader.TypeError(e.key, "an http:// or https:// URL", value);
    return;
  }
  const std::string& address = value.scalar.as_string();
  const std::string_view rest = std::string_view(address).substr(scheme);
  if (rest.substr(0, rest.find_first_of("/?#")).find('@') != std::string_view::npos) {
    // Shown without them: the error goes to CI logs and review comments.
    f.reader.Error(value.pos,
                   "address must not hold credentials (user:password@): everyone who can read "
                   "the repository would read them; give the Ray token with --ray-token-file "
                   "and a proxy's credentials with --ray-header (got \"" +
                       core::StripUrlCredentials(address) + "\")");
  } else if (rest.find_first_of("?#") != std::string_view::npos) {
    f.reader.Error(value.pos,
                   "address must have no query or fragment (got " + Describe(value) + ")");
  } else {
    f.doc.address = address;
  }
}

void ReadSharedRoot(ClusterFields& f, const YamlEntry& e) {
  if (!e.value.is_string() || !e.value.scalar.as_string().starts_with('/')) {
    f.reader.TypeError(e.key, "an absolute path", e.value);
  } else {
    f.doc.shared_root = e.value.scalar.as_string();
  }
}

// A runtime_env mapping, its keys kept as written but `env_vars`, which `on_env_vars` reads
// into the object (or refuses).
template <typename Fields, typename OnEnvVars>
void ReadRuntimeEnv(Fields& f, const YamlEntry& e, OnEnvVars on_env_vars) {
  if (!e.value.is_mapping()) {
    f.reader.TypeError(e.key, "a mapping", e.value);
    return;
  }
  core::Value::Object runtime_env;
  for (const auto& inner : e.value.entries) {
    if (inner.key == "env_vars") {
      on_env_vars(inner, runtime_env);
    } else {
      runtime_env.emplace(inner.key, ToValue(inner.value));
    }
  }
  f.doc.runtime_env = std::move(runtime_env);
}

// The cluster's runtime_env may set env_vars for every job (their values read as text).
void ReadClusterRuntimeEnv(ClusterFields& f, const YamlEntry& e) {
  ReadRuntimeEnv(f, e, [&f](const YamlEntry& inner, core::Value::Object& runtime_env) {
    CheckCredentialValues(f.reader, "runtime_env.env_vars", inner.value);
    if (auto env = f.reader.ScalarMap("runtime_env.env_vars", inner.value, true)) {
      runtime_env.emplace(inner.key, StringMapValue(*env));
      for (const auto& entry : inner.value.entries) {
        f.doc.positions["runtime_env.env_vars." + entry.key] = entry.key_pos;
      }
    }
  });
}

void ReadClusterSecrets(ClusterFields& f, const YamlEntry& e) {
  ReadSecretsMap(f.reader, e,
                 [&f](const std::string& name, const std::string& reference, SourcePos pos) {
                   f.doc.secrets.insert_or_assign(name, reference);
                   f.doc.positions["secrets." + name] = pos;
                 });
}

void ReadSecretDelivery(ClusterFields& f, const YamlEntry& e) {
  const std::optional<core::SecretDelivery> delivery =
      e.value.is_string() ? core::ParseSecretDelivery(e.value.scalar.as_string()) : std::nullopt;
  if (delivery) {
    f.doc.secret_delivery = *delivery;
  } else {
    f.reader.TypeError(e.key,
                       "env (the value in the submission) or node (${NAME}, from the nodes' "
                       "environment)",
                       e.value);
  }
}

void ReadAllowSecretsWithoutRayAuth(ClusterFields& f, const YamlEntry& e) {
  if (!e.value.is_scalar() || !e.value.scalar.is_bool()) {
    f.reader.TypeError(e.key, "true or false", e.value);
  } else {
    f.doc.allow_secrets_without_ray_auth = e.value.scalar.as_bool();
  }
}

constexpr std::array<FieldRule<ClusterFields>, 13> kClusterFields = {{
    {"name", ReadClusterName},
    {"address", ReadClusterAddress},
    {"shared_root", ReadSharedRoot},
    {"entrypoint_num_cpus", ReadEntrypointNumCpus<ClusterFields>},
    {"entrypoint_num_gpus", ReadEntrypointNumGpus<ClusterFields>},
    {"entrypoint_memory", ReadEntrypointMemory<ClusterFields>},
    {"entrypoint_resources", ReadEntrypointResources<ClusterFields>},
    {"runtime_env", ReadClusterRuntimeEnv},
    {"user_code_path",
     [](ClusterFields& f, const YamlEntry& e) {
       f.doc.user_code_path = f.reader.String(e.key, e.value);
     }},
    // The ceiling is Ray's: its dashboard refuses larger request bodies.
    {"code_max_bytes",
     [](ClusterFields& f, const YamlEntry& e) {
       f.doc.code_max_bytes = f.reader.Integer(e.key, e.value, 1, core::kMaxCodeBytes,
                                               "an integer number of bytes from 1 to 104857600 "
                                               "(100 MiB, what Ray's dashboard accepts)");
     }},
    {"secrets", ReadClusterSecrets},
    {"secret_delivery", ReadSecretDelivery},
    {"allow_secrets_without_ray_auth", ReadAllowSecretsWithoutRayAuth},
}};

// Only a valid name is kept: an invalid one ("../x", "sub/dir") would become a status file's
// path, so the file keeps the name derived from its path.
void ReadJobName(JobFields& f, const YamlEntry& e) {
  if (e.value.is_string() && core::IsValidJobName(e.value.scalar.as_string())) {
    f.out.name = e.value.scalar.as_string();
    f.out.name_is_explicit = true;
    f.out.name_pos = e.value.pos;
  } else {
    f.reader.TypeError(e.key,
                       "1 to 63 characters of [a-z0-9._-] starting and ending with a letter "
                       "or digit",
                       e.value);
  }
}

void ReadPinnedSubmissionId(JobFields& f, const YamlEntry& e) {
  const YamlNode& value = e.value;
  if (value.is_string()) {
    f.out.pinned_id = value.scalar.as_string();
    f.out.pinned_id_pos = value.pos;
  }
  if (!value.is_string() || !core::IsValidPinnedSubmissionId(value.scalar.as_string())) {
    f.reader.TypeError(e.key,
                       "1 to 100 characters of [a-z0-9._-] starting and ending with a letter "
                       "or digit, and not 8 hex digits",
                       value);
  } else {
    f.doc.submission_id = value.scalar.as_string();
  }
}

std::optional<int64_t> ReadCount(JobFields& f, const YamlEntry& e) {
  return f.reader.Integer(e.key, e.value, 1, INT64_MAX, "an integer >= 1");
}

// verl reads -1 as "never".
std::optional<int64_t> ReadFrequency(JobFields& f, const YamlEntry& e) {
  return f.reader.Integer(e.key, e.value, -1, INT64_MAX, "an integer >= -1");
}

void ReadOverrides(JobFields& f, const YamlEntry& e) {
  if (!e.value.is_sequence()) {
    f.reader.TypeError(e.key, "a list of key=value strings", e.value);
    return;
  }
  for (size_t i = 0; i < e.value.items.size(); ++i) {
    const YamlNode& item = e.value.items[i];
    const size_t equals = item.is_string() ? item.scalar.as_string().find('=') : 0;
    // Hydra's ~key deletes a key and needs no value.
    const bool deletion = item.is_string() && item.scalar.as_string().size() > 1 &&
                          item.scalar.as_string().starts_with('~');
    if (!item.is_string() || equals == 0 || (equals == std::string::npos && !deletion)) {
      f.reader.TypeError("overrides[" + std::to_string(i) + "]", "a key=value string", item);
      continue;
    }
    f.doc.mutable_trainer().overrides.push_back(item.scalar.as_string());
  }
}

void ReadEntrypoint(JobFields& f, const YamlEntry& e) {
  if (f.workload && !f.custom) {
    f.reader.Error(e.key_pos, "entrypoint is only allowed with workload custom (workload " +
                                  std::string(core::WorkloadName(*f.workload)) +
                                  " builds its own command)");
    return;
  }
  f.doc.entrypoint = f.reader.String(e.key, e.value);
}

// A JobSpec's env vars are the top-level env_vars, never runtime_env's.
void ReadJobRuntimeEnv(JobFields& f, const YamlEntry& e) {
  ReadRuntimeEnv(f, e, [&f](const YamlEntry& inner, core::Value::Object& /*runtime_env*/) {
    CheckCredentialValues(f.reader, "runtime_env.env_vars", inner.value);
    f.reader.Error(inner.key_pos,
                   "runtime_env.env_vars is not allowed in a JobSpec; use the top-level "
                   "env_vars");
  });
}

void ReadEnvVars(JobFields& f, const YamlEntry& e) {
  CheckCredentialValues(f.reader, e.key, e.value);
  if (auto env = f.reader.ScalarMap(e.key, e.value, true)) {
    f.doc.env_vars = std::move(*env);
    // The run sees the text written, so `X: 1` and `X: "1"` are the same run.
    f.doc.document.as_object()[e.key] = StringMapValue(f.doc.env_vars);
  }
}

void ReadJobSecrets(JobFields& f, const YamlEntry& e) {
  core::SecretFields secrets;
  ReadSecretsMap(f.reader, e,
                 [&secrets](const std::string& name, const std::string& reference, SourcePos pos) {
                   secrets.references.insert_or_assign(name, reference);
                   secrets.name_pos[name] = pos;
                 });
  // Only a spec with secrets has the box made for them.
  if (!secrets.references.empty()) f.doc.mutable_secret_fields() = std::move(secrets);
}

void ReadSuspend(JobFields& f, const YamlEntry& e) {
  if (!e.value.is_scalar() || !e.value.scalar.is_bool()) {
    f.reader.TypeError(e.key, "true or false", e.value);
  } else {
    f.doc.suspend = e.value.scalar.as_bool();
  }
}

void ReadOnRemove(JobFields& f, const YamlEntry& e) {
  if (e.value.is_string() && e.value.scalar.as_string() == "stop") {
    f.doc.on_remove = core::OnRemove::kStop;
  } else if (e.value.is_string() && e.value.scalar.as_string() == "keep") {
    f.doc.on_remove = core::OnRemove::kKeep;
  } else {
    f.reader.TypeError(e.key, "stop or keep", e.value);
  }
}

void ReadDeadline(JobFields& f, const YamlEntry& e) {
  std::optional<int64_t> ms;
  if (e.value.is_string()) {
    ms = core::ParseDurationMs(e.value.scalar.as_string(), core::BareNumber::kRefused);
  }
  if (!ms) {
    f.reader.TypeError(e.key, "a duration such as 90m, 72h or 1h30m (units d, h, m, s, ms)",
                       e.value);
    return;
  }
  f.doc.mutable_lifecycle().deadline_ms = *ms;
}

// The schedule's box, made on first use by any of its fields (they may come in any order).
core::ScheduleFields& ScheduleOf(JobFields& f) {
  std::optional<core::ScheduleFields>& schedule = f.doc.mutable_lifecycle().schedule;
  if (!schedule) schedule.emplace();
  return *schedule;
}

// Where column `column` (1-based) of a scalar's value is in the file: the scalar starts at
// node.pos, at its quote when it is quoted. When the text written up to that column is not
// the value (escapes, a folded line, an anchor or a tag first), the scalar's own position.
SourcePos PosInScalar(std::string_view source, const YamlNode& node, int column) {
  size_t start = source.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  for (int line = 1; line < node.pos.line; ++line) {
    const size_t newline = source.find('\n', start);
    if (newline == std::string_view::npos) return node.pos;
    start = newline + 1;
  }
  const size_t at = start + static_cast<size_t>(node.pos.column - 1);
  if (column < 1 || at >= source.size()) return node.pos;
  std::string_view written = source.substr(at);
  int quote = 0;
  if (written.front() == '"' || written.front() == '\'') {
    quote = 1;
    written.remove_prefix(1);
  }
  const auto before = static_cast<size_t>(column - 1);
  if (before > node.text.size() || written.substr(0, before) != node.text.substr(0, before)) {
    return node.pos;
  }
  return {node.pos.line, node.pos.column + quote + column - 1};
}

// A 5-field cron expression; an error points at the bad token inside the scalar.
void ReadSchedule(JobFields& f, const YamlEntry& e) {
  f.has_schedule = true;
  if (!e.value.is_string() || e.value.scalar.as_string().empty()) {
    f.reader.TypeError(
        e.key, "a cron expression such as \"30 2 * * *\" (quote it: * starts an alias)", e.value);
    return;
  }
  int column = 0;
  core::Result<core::CronExpression> cron = core::ParseCron(e.value.scalar.as_string(), &column);
  if (!cron.ok()) {
    f.reader.Error(PosInScalar(f.source, e.value, column), "schedule: " + cron.error().message());
    return;
  }
  core::ScheduleFields& schedule = ScheduleOf(f);
  schedule.cron_text = e.value.scalar.as_string();
  schedule.cron = *cron;
  if (f.doc.positions.find("timezone") == f.doc.positions.end()) {
    schedule.timezone_pos = e.value.pos;
  }
}

// An IANA name; whether the zone exists is known only once it is looked up
// (adapters::ResolveScheduleZones), which reports at this position.
void ReadTimezone(JobFields& f, const YamlEntry& e) {
  if (auto zone = f.reader.String(e.key, e.value)) {
    core::ScheduleFields& schedule = ScheduleOf(f);
    schedule.timezone = std::move(*zone);
    schedule.timezone_pos = e.value.pos;
  }
}

void ReadConcurrency(JobFields& f, const YamlEntry& e) {
  const std::string text = e.value.is_string() ? e.value.scalar.as_string() : std::string();
  if (text == "forbid") {
    ScheduleOf(f).concurrency = core::Concurrency::kForbid;
  } else if (text == "replace") {
    ScheduleOf(f).concurrency = core::Concurrency::kReplace;
  } else if (text == "allow") {
    ScheduleOf(f).concurrency = core::Concurrency::kAllow;
  } else {
    f.reader.TypeError(e.key, "forbid, replace or allow", e.value);
  }
}

void ReadStartingDeadline(JobFields& f, const YamlEntry& e) {
  std::optional<int64_t> ms;
  if (e.value.is_string()) {
    ms = core::ParseDurationMs(e.value.scalar.as_string(), core::BareNumber::kRefused);
  }
  if (!ms) {
    f.reader.TypeError(e.key, "a duration such as 10m, 1h or 1h30m (units d, h, m, s, ms)",
                       e.value);
    return;
  }
  ScheduleOf(f).starting_deadline_ms = *ms;
}

// A free token: only a change of it matters (it is part of the spec hash, as written).
void ReadRerun(JobFields& f, const YamlEntry& e) {
  const bool token = e.value.is_scalar() && !e.value.is_null() &&
                     !(e.value.is_string() && e.value.scalar.as_string().empty());
  if (!token) f.reader.TypeError(e.key, "a non-empty token (a string or a number)", e.value);
}

// Why a code folder keeps apart from the jobs and status folders: its tree id is part of the
// spec's identity.
std::string RestartReason(std::string_view what) {
  return ": every " + std::string(what) +
         " would change the code's tree and start a new run; keep the code in a folder of its "
         "own";
}

// The jobs folder as written in messages.
std::string JobsFolderName(std::string_view jobs_dir) {
  while (jobs_dir.starts_with("./")) jobs_dir.remove_prefix(2);
  while (jobs_dir.ends_with('/')) jobs_dir.remove_suffix(1);
  return jobs_dir.empty() || jobs_dir == "." ? std::string("(the repository's root)")
                                             : std::string(jobs_dir);
}

// How code folder `folder` stands to the repository folder `other` ("" for the root): "is",
// "lies inside", "contains", or nullopt when they are apart.
std::optional<std::string_view> FolderOverlap(std::string_view folder, std::string_view other) {
  while (other.starts_with("./")) other.remove_prefix(2);
  while (other.ends_with('/')) other.remove_suffix(1);
  if (other == ".") other = {};
  if (folder == other) return "is";
  const auto under = [](std::string_view path, std::string_view dir) {
    return dir.empty() ||
           (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
  };
  if (under(folder, other)) return "lies inside";
  if (under(other, folder)) return "contains";
  return std::nullopt;
}

// A code folder may not be, contain or lie inside the jobs folder or the status folder. False
// (with the error at `code`) when it does.
bool CheckCodeBesideSpecs(JobFields& f, const YamlEntry& e, std::string_view folder) {
  struct Apart {
    std::string_view folder;
    std::string name;
    std::string_view edit;
  };
  const std::array<Apart, 2> folders{
      Apart{f.jobs_dir, "the jobs folder " + JobsFolderName(f.jobs_dir), "spec edit"},
      Apart{kStatusDir, "the status folder " + std::string(kStatusDir), "status commit"}};
  for (const Apart& other : folders) {
    if (const auto overlap = FolderOverlap(folder, other.folder)) {
      f.reader.Error(e.value.pos, "code: " + std::string(folder) + " " + std::string(*overlap) +
                                      " " + other.name + RestartReason(other.edit));
      return false;
    }
  }
  return true;
}

// `code`: a folder of this repository, relative to its root. Kept normalised ("./" and a
// trailing "/" dropped); whether it exists is known once the commit is read
// (adapters::ResolveCode).
void ReadCode(JobFields& f, const YamlEntry& e) {
  std::string folder = e.value.is_string() ? e.value.scalar.as_string() : std::string();
  while (folder.starts_with("./")) folder.erase(0, 2);
  while (folder.ends_with('/')) folder.pop_back();
  bool ok = !folder.empty() && !folder.starts_with('/') &&
            folder.find_first_of(std::string_view("\\\0", 2)) == std::string::npos;
  for (size_t start = 0; ok && start <= folder.size();) {
    size_t slash = folder.find('/', start);
    if (slash == std::string::npos) slash = folder.size();
    const std::string_view part = std::string_view(folder).substr(start, slash - start);
    ok = !part.empty() && part != "." && part != ".." && part != ".git";
    start = slash + 1;
  }
  if (e.value.is_string() && !e.value.scalar.as_string().empty() &&
      (folder.empty() || folder == ".")) {
    f.reader.Error(e.value.pos, "code cannot be the repository's root: it holds the jobs folder " +
                                    JobsFolderName(f.jobs_dir) + " and the status folder " +
                                    std::string(kStatusDir) +
                                    RestartReason("spec edit and status commit"));
    return;
  }
  if (!ok) {
    f.reader.TypeError(e.key,
                       "a folder of this repository, relative to its root (e.g. src/trainer; "
                       "not the root itself, no \"..\")",
                       e.value);
    return;
  }
  if (!CheckCodeBesideSpecs(f, e, folder)) return;
  core::CodeFields& code = f.doc.mutable_code();
  code.folder = std::move(folder);
  code.folder_pos = e.value.pos;
}

// `code_ref`: a tag, a branch or a commit id of this repository; resolved once the commit is
// read (adapters::ResolveCode).
void ReadCodeRef(JobFields& f, const YamlEntry& e) {
  const std::string ref = e.value.is_string() ? e.value.scalar.as_string() : std::string();
  const bool ok = !ref.empty() && !ref.starts_with('-') && ref.find("..") == std::string::npos &&
                  std::ranges::none_of(ref, [](char c) {
                    return static_cast<unsigned char>(c) <= ' ' || c == '~' || c == '^' ||
                           c == ':' || c == '?' || c == '*' || c == '[' || c == '\\';
                  });
  if (!ok) {
    f.reader.TypeError(e.key, "a tag, branch or commit id of this repository (e.g. v1)", e.value);
    return;
  }
  core::CodeFields& code = f.doc.mutable_code();
  code.ref = ref;
  code.ref_pos = e.value.pos;
}

// `after`: a list of job names, each once; the checks across files find them (CheckPipelines).
void ReadAfter(JobFields& f, const YamlEntry& e) {
  if (!e.value.is_sequence()) {
    f.reader.TypeError(e.key, "a list of job names, e.g. after: [sft-qwen]", e.value);
    return;
  }
  core::PipelineFields& p = f.doc.mutable_pipeline();
  for (size_t i = 0; i < e.value.items.size(); ++i) {
    const YamlNode& item = e.value.items[i];
    const std::string field = "after[" + std::to_string(i) + "]";
    if (!item.is_string() || !core::IsValidJobName(item.scalar.as_string())) {
      f.reader.TypeError(field, "a job name", item);
      continue;
    }
    const std::string& name = item.scalar.as_string();
    if (std::ranges::find(p.after, name) != p.after.end()) {
      std::string message = field;
      message.append(": ").append(name).append(" is listed twice");
      f.reader.Error(item.pos, std::move(message));
      continue;
    }
    p.after.push_back(name);
    p.after_pos.push_back(item.pos);
  }
}

// Every ${runs.<name>.dir} in the strings of `node` names a job of `after`.
void CheckRunsVariables(const YamlNode& node, const std::string& field, JobFields& f) {
  if (node.is_string()) {
    const std::vector<std::string>& after = f.doc.pipeline().after;
    for (const core::RunsVariableUse& use : core::FindRunsVariables(node.scalar.as_string())) {
      std::string message = field;
      message.append(": ").append(node.scalar.as_string(), use.begin, use.end - use.begin);
      if (!use.well_formed) {
        message += " is not a variable ray-gitops knows (write ${runs.<job name>.dir})";
        f.reader.Error(node.pos, std::move(message));
      } else if (std::ranges::find(after, use.name) == after.end()) {
        message.append(" names ").append(use.name);
        message.append(", which is not listed in after (add after: [").append(use.name);
        message += "])";
        f.reader.Error(node.pos, std::move(message));
      } else {
        f.out.root_uses.mutable_get().run_dirs.push_back(node.pos);
      }
    }
  }
  for (size_t i = 0; i < node.items.size(); ++i) {
    CheckRunsVariables(node.items[i], field + "[" + std::to_string(i) + "]", f);
  }
  for (const auto& entry : node.entries) {
    CheckRunsVariables(entry.value, field + "." + entry.key, f);
  }
}

using JobRule = FieldRule<JobFields>;
constexpr bool kTrainerOnly = true;

constexpr std::array<JobRule, 35> kJobFields = {{
    // Read before the others (the entrypoint and the trainer-only fields depend on it).
    {"workload", [](JobFields&, const YamlEntry&) {}},
    {"name", ReadJobName},
    {"submission_id", ReadPinnedSubmissionId},
    {"code_path",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().code_path = f.reader.String(e.key, e.value);
     }},
    {"model_id",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().model_id = f.reader.String(e.key, e.value);
     },
     kTrainerOnly},
    {"train_file",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().train_file = f.reader.String(e.key, e.value);
     },
     kTrainerOnly},
    {"val_file",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().val_file = f.reader.String(e.key, e.value);
     },
     kTrainerOnly},
    {"nnodes",
     [](JobFields& f, const YamlEntry& e) { f.doc.mutable_trainer().nnodes = ReadCount(f, e); },
     kTrainerOnly},
    {"n_gpus_per_node",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().n_gpus_per_node = ReadCount(f, e);
     },
     kTrainerOnly},
    {"total_training_steps",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().total_training_steps = ReadCount(f, e);
     },
     kTrainerOnly},
    {"save_freq",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().save_freq = ReadFrequency(f, e);
     },
     kTrainerOnly},
    {"test_freq",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.mutable_trainer().test_freq = ReadFrequency(f, e);
     },
     kTrainerOnly},
    {"overrides", ReadOverrides, kTrainerOnly},
    {"code", ReadCode},
    {"code_ref", ReadCodeRef},
    {"entrypoint", ReadEntrypoint},
    {"runtime_env", ReadJobRuntimeEnv},
    {"env_vars", ReadEnvVars},
    {"secrets", ReadJobSecrets},
    {"entrypoint_num_cpus", ReadEntrypointNumCpus<JobFields>},
    {"entrypoint_num_gpus", ReadEntrypointNumGpus<JobFields>},
    {"entrypoint_memory", ReadEntrypointMemory<JobFields>},
    {"entrypoint_resources", ReadEntrypointResources<JobFields>},
    {"retries",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.retries =
           f.reader.Integer(e.key, e.value, 0, 100, "an integer from 0 to 100").value_or(0);
     }},
    {"infra_retries",
     [](JobFields& f, const YamlEntry& e) {
       f.doc.infra_retries = f.reader.Integer(e.key, e.value, 0, 100, "an integer from 0 to 100")
                                 .value_or(core::kDefaultInfraRetries);
     }},
    {"suspend", ReadSuspend},
    {"on_remove", ReadOnRemove},
    {"deadline", ReadDeadline},
    {"rerun", ReadRerun},
    {"after", ReadAfter},
    {"schedule", ReadSchedule},
    {"timezone", ReadTimezone},
    {"concurrency", ReadConcurrency},
    {"starting_deadline", ReadStartingDeadline},
    {"annotations",
     [](JobFields& f, const YamlEntry& e) {
       if (auto annotations = f.reader.ScalarMap(e.key, e.value, false)) {
         f.doc.annotations = std::move(*annotations);
       }
     }},
}};

template <typename Fields, size_t N>
const FieldRule<Fields>* FindRule(const std::array<FieldRule<Fields>, N>& table,
                                  std::string_view key) {
  for (const FieldRule<Fields>& rule : table) {
    if (rule.key == key) return &rule;
  }
  return nullptr;
}

template <typename Fields, size_t N>
std::vector<std::string_view> KeysOf(const std::array<FieldRule<Fields>, N>& table) {
  std::vector<std::string_view> keys;
  keys.reserve(N);
  for (const FieldRule<Fields>& rule : table) keys.push_back(rule.key);
  return keys;
}

}  // namespace

std::vector<std::string_view> RayConfigKeys() { return KeysOf(kClusterFields); }
std::vector<std::string_view> JobSpecKeys() { return KeysOf(kJobFields); }

Parsed<core::RayConfig> LoadRayConfig(std::string_view text, const std::string& path) {
  Parsed<core::RayConfig> out;
  YamlParse parse = ParseYamlDocument(text, path);
  out.diagnostics = std::move(parse.diagnostics);
  FieldReader reader(path, &out.diagnostics);
  const YamlNode* root = RootMapping(parse, reader);
  if (root == nullptr) {
    SortDiagnostics(out.diagnostics);
    return out;
  }

  core::RayConfig config;
  config.path = path;
  ClusterFields fields{reader, config};
  for (const auto& entry : root->entries) {
    const FieldRule<ClusterFields>* rule = FindRule(kClusterFields, entry.key);
    if (rule == nullptr) {
      reader.Error(entry.key_pos, UnknownKeyMessage(entry.key, KeysOf(kClusterFields)));
      continue;
    }
    config.positions[entry.key] = entry.key_pos;
    rule->read(fields, entry);
  }
  if (!fields.has_address) reader.Error(root->pos, "missing required key \"address\"");
  const YamlEntry* secrets = FindEntry(*root, "secrets");
  const YamlEntry* runtime_env = FindEntry(*root, "runtime_env");
  const YamlEntry* env_vars = runtime_env != nullptr && runtime_env->value.is_mapping()
                                  ? FindEntry(runtime_env->value, "env_vars")
                                  : nullptr;
  CheckSecretsBesideEnvVars(reader, "secrets", secrets, "runtime_env.env_vars", env_vars);

  SortDiagnostics(out.diagnostics);
  if (out.diagnostics.empty()) out.value = std::move(config);
  return out;
}

namespace {

// `workload` first: the entrypoint and the trainer-only fields depend on it.
std::optional<core::Workload> ReadWorkload(const YamlNode& root, FieldReader& reader) {
  const YamlEntry* entry = FindEntry(root, "workload");
  if (entry == nullptr) {
    reader.Error(root.pos, "missing required key \"workload\"");
    return std::nullopt;
  }
  std::optional<core::Workload> workload =
      entry->value.is_string() ? ParseWorkload(entry->value.scalar.as_string()) : std::nullopt;
  if (!workload) reader.TypeError("workload", "one of ppo, grpo, sft, custom", entry->value);
  return workload;
}

void ReadJobEntries(const YamlNode& root, JobFields& fields) {
  for (const auto& entry : root.entries) {
    const JobRule* rule = FindRule(kJobFields, entry.key);
    if (rule == nullptr) {
      fields.reader.Error(entry.key_pos, UnknownKeyMessage(entry.key, KeysOf(kJobFields)));
      continue;
    }
    fields.doc.positions[entry.key] = entry.key_pos;
    if (fields.custom && rule->trainer_only) {
      fields.reader.Error(entry.key_pos, entry.key + " is ignored by workload custom; remove it");
      continue;
    }
    rule->read(fields, entry);
  }
}

// The fields only a scheduled job takes need `schedule`; a scheduled job runs once per slot,
// each run with its own id, so its id cannot be pinned.
void CheckScheduleFields(const YamlNode& root, const JobFields& fields) {
  if (!fields.has_schedule) {
    for (std::string_view key : {"timezone", "concurrency", "starting_deadline"}) {
      if (const YamlEntry* entry = FindEntry(root, key)) {
        fields.reader.Error(entry->key_pos, std::string(key) +
                                                " applies to a scheduled job only: it needs "
                                                "schedule");
      }
    }
    // Only a box that holds a schedule is touched: most specs keep none (a box made for every
    // spec was 9 MB at 50,000 specs).
    if (fields.doc.lifecycle().schedule) fields.doc.mutable_lifecycle().schedule.reset();
    return;
  }
  if (const YamlEntry* pin = FindEntry(root, "submission_id")) {
    fields.reader.Error(pin->key_pos,
                        "submission_id cannot be pinned on a scheduled job: every slot has its "
                        "own id (<name>-<spec_hash>-<YYYYMMDDHHMM>)");
  }
}

// `code_ref` needs `code`; `code` is the run's working_dir, so runtime_env cannot name another.
void CheckCodeFields(const YamlNode& root, const JobFields& fields) {
  const YamlEntry* code = FindEntry(root, "code");
  if (const YamlEntry* ref = FindEntry(root, "code_ref"); ref != nullptr && code == nullptr) {
    fields.reader.Error(ref->key_pos,
                        "code_ref applies to code only: it needs code: <folder of this "
                        "repository>");
  }
  const YamlEntry* runtime_env = FindEntry(root, "runtime_env");
  if (code == nullptr || runtime_env == nullptr || !runtime_env->value.is_mapping()) return;
  if (const YamlEntry* dir = FindEntry(runtime_env->value, "working_dir")) {
    fields.reader.Error(dir->key_pos,
                        "runtime_env.working_dir cannot be set with code: the code folder is "
                        "the run's working_dir (remove one of them)");
  }
}

// What only the whole document can show: a custom workload without its entrypoint, a name
// that must be written because the path gives none.
void CheckJobDocument(const YamlNode& root, JobFields& fields) {
  // ${runs.<name>.dir} in what is rendered (annotations are not).
  for (const auto& entry : root.entries) {
    if (entry.key != "annotations") CheckRunsVariables(entry.value, entry.key, fields);
  }
  if (fields.custom && FindEntry(root, "entrypoint") == nullptr) {
    fields.reader.Error(root.pos, "missing required key \"entrypoint\" (workload custom needs it)");
  }
  // A name written but invalid has its own error; the derived one is then beside the point.
  if (FindEntry(root, "name") == nullptr && !core::IsValidJobName(fields.out.name)) {
    fields.reader.Error({1, 1}, "the name derived from the path (\"" + fields.out.name +
                                    "\") is not a valid job name; set name: explicitly");
  }
  CheckScheduleFields(root, fields);
  CheckCodeFields(root, fields);
  const YamlEntry* secrets = FindEntry(root, "secrets");
  const YamlEntry* env_vars = FindEntry(root, "env_vars");
  CheckSecretsBesideEnvVars(fields.reader, "secrets", secrets, "env_vars", env_vars);
}

}  // namespace

LoadedJobSpec LoadJobSpecForDesiredState(std::string_view text, const std::string& path,
                                         std::string_view jobs_dir) {
  LoadedJobSpec out;
  out.name = core::DefaultJobName(path, jobs_dir);
  core::Diagnostics& diagnostics = out.parsed.diagnostics;
  YamlParse parse = ParseYamlDocument(text, path);
  diagnostics = std::move(parse.diagnostics);
  FieldReader reader(path, &diagnostics);
  const YamlNode* root = RootMapping(parse, reader);
  if (root == nullptr) {
    SortDiagnostics(diagnostics);
    return out;
  }
  std::vector<SourcePos> shared_root_uses;
  CollectSharedRootUses(*root, shared_root_uses);
  if (!shared_root_uses.empty()) {
    out.root_uses.mutable_get().shared_root = std::move(shared_root_uses);
  }

  core::JobSpec spec;
  spec.path = path;
  spec.document = ToValue(*root);
  const std::optional<core::Workload> workload = ReadWorkload(*root, reader);
  JobFields fields{reader,
                   spec,
                   out,
                   workload,
                   workload == core::Workload::kCustom,
                   /*source=*/text,
                   /*has_schedule=*/false,
                   jobs_dir};
  if (fields.workload) spec.workload = *fields.workload;
  ReadJobEntries(*root, fields);
  CheckJobDocument(*root, fields);

  spec.name = out.name;
  spec.spec_hash = core::ComputeSpecHash(spec.document);
  if (std::string legacy = core::ComputeLegacySpecHash(spec.document); !legacy.empty()) {
    spec.legacy_spec_hashes.push_back(std::move(legacy));
  }
  SortDiagnostics(diagnostics);
  if (diagnostics.empty()) {
    out.parsed.value = std::move(spec);
  } else {
    out.invalid_after.set(spec.pipeline());
  }
  return out;
}

Parsed<core::JobSpec> LoadJobSpec(std::string_view text, const std::string& path,
                                  std::string_view jobs_dir) {
  return LoadJobSpecForDesiredState(text, path, jobs_dir).parsed;
}

}  // namespace rg::spec
