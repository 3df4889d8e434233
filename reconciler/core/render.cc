#include "reconciler/core/render.h"

#include <array>
#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reconciler/core/code_package.h"
#include "reconciler/core/identity.h"
#include "reconciler/core/pipeline.h"
#include "reconciler/core/redaction.h"
#include "reconciler/core/secrets.h"

// Quoting, in two layers (docs/jobspec.md, "Rendering").
//
// Hydra (HydraQuoteValue). Hydra 1.3's override grammar (OverrideLexer.g4, VALUE_MODE) reads an
// unquoted value as a run of ID, INT, FLOAT, BOOL, NULL, INTERPOLATION, COLON, ESC, WS and the
// UNQUOTED_CHARs / - \ + . $ % *. Everything else is either structure ( , = [ ] { } ( ) ), an
// escape (\), a lexer error (' " ~ @ # ! ? & ; | < > ` ^ and any non-ASCII or control byte), or
// whitespace that Hydra trims. A value is therefore left bare only when every character is in
// [A-Za-z0-9_/+.$%*:-] and it is not empty; otherwise it is written as a Hydra double-quoted
// string, in which `"` becomes `\"` and every run of backslashes that precedes a quote (an
// escaped one or the closing one) is doubled, as Hydra's grammar page prescribes. Inside the
// quotes everything else, newlines included, is taken literally. Values of string fields of the
// spec are also quoted when bare Hydra would type them (true, null, 10, 1e-5, inf), so that a
// path or model id named "10" stays the string "10".
//
// Shell (ShellQuote). Ray runs the entrypoint with a shell, so every token holding a character
// outside [A-Za-z0-9_./=:,@+%-] is single-quoted, with ' written as '\''. Nothing is special
// inside single quotes, so no spec value can reach the shell as syntax.

namespace rg::core {

std::optional<int> AttemptLabel(const RayJob& job) {
  const std::string text = job.Label(kMetaAttempt);
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size() || v < 0) {
    return std::nullopt;
  }
  return v;
}
namespace {

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool IsShellSafe(char c) {
  if (IsAsciiAlnum(c)) return true;
  switch (c) {
    case '_':
    case '.':
    case '/':
    case '=':
    case ':':
    case ',':
    case '@':
    case '+':
    case '%':
    case '-':
      return true;
    default:
      return false;
  }
}

bool IsHydraBare(char c) {
  if (IsAsciiAlnum(c)) return true;
  switch (c) {
    case '_':
    case '/':
    case '+':
    case '.':
    case '$':
    case '%':
    case '*':
    case ':':
    case '-':
      return true;
    default:
      return false;
  }
}

std::string LowerAscii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

char AsciiUpper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

std::string SpecHashOf(const JobSpec& spec) {
  if (!spec.spec_hash.empty() || !spec.document.is_object()) return spec.spec_hash;
  return ComputeSpecHash(spec.document);
}

// Replaces ${shared_root} in every string inside `value`.
Result<Value> InterpolateValue(const Value& value, const RayConfig& cluster) {
  if (value.is_string()) {
    auto text = InterpolateSharedRoot(value.as_string(), cluster);
    if (!text.ok()) return text.error();
    return Value(std::move(*text));
  }
  if (value.is_array()) {
    Value::Array out;
    for (const Value& item : value.as_array()) {
      auto interpolated = InterpolateValue(item, cluster);
      if (!interpolated.ok()) return interpolated.error();
      out.push_back(std::move(*interpolated));
    }
    return Value(std::move(out));
  }
  if (value.is_object()) {
    Value::Object out;
    for (const auto& [key, item] : value.as_object()) {
      auto interpolated = InterpolateValue(item, cluster);
      if (!interpolated.ok()) return interpolated.error();
      out.emplace(key, std::move(*interpolated));
    }
    return Value(std::move(out));
  }
  return value;
}

// The value as a Hydra double-quoted string: `"` escaped as `\"`, and every run of
// backslashes that precedes a quote doubled.
std::string HydraDoubleQuoted(std::string_view value) {
  std::string out = "\"";
  size_t backslashes = 0;
  auto flush_backslashes = [&](bool before_quote) {
    out.append(before_quote ? 2 * backslashes : backslashes, '\\');
    backslashes = 0;
  };
  for (char c : value) {
    if (c == '\\') {
      ++backslashes;
      continue;
    }
    flush_backslashes(c == '"');
    if (c == '"') out += '\\';
    out += c;
  }
  flush_backslashes(true);  // the closing quote follows
  out += '"';
  return out;
}

// True when Hydra would read the bare text as a bool, null, int or float rather than a string.
bool LooksLikeHydraScalar(std::string_view value) {
  std::string lower = LowerAscii(value);
  std::string_view unsigned_part = lower;
  if (!unsigned_part.empty() && (unsigned_part[0] == '+' || unsigned_part[0] == '-')) {
    unsigned_part.remove_prefix(1);
  }
  if (lower == "true" || lower == "false" || lower == "null" || unsigned_part == "inf" ||
      unsigned_part == "nan") {
    return true;
  }
  bool has_digit = false;
  for (char c : lower) {
    if (c >= '0' && c <= '9') {
      has_digit = true;
    } else if (c != '+' && c != '-' && c != '.' && c != '_' && c != 'e') {
      return false;
    }
  }
  return has_digit;
}

// A spec field that is a string stays a string for Hydra, even when it reads like a number.
std::string HydraQuoteString(std::string_view value) {
  std::string quoted = HydraQuoteValue(value);
  if (quoted.size() == value.size() && LooksLikeHydraScalar(value)) {
    return HydraDoubleQuoted(value);
  }
  return quoted;
}

// Collects the Hydra overrides of a verl trainer, each already quoted for Hydra and the shell.
class OverrideList {
 public:
  explicit OverrideList(const RayConfig& cluster) : cluster_(cluster) {}

  // A bare token such as the program name.
  void Word(std::string_view word) { tokens_.push_back(ShellQuote(word)); }

  void String(std::string_view key, const std::optional<std::string>& value) {
    if (!value.has_value() || !status_.ok()) return;
    auto interpolated = InterpolateSharedRoot(*value, cluster_);
    if (!interpolated.ok()) {
      status_ = interpolated.error();
      return;
    }
    Text(key, *interpolated);
  }

  void Integer(std::string_view key, const std::optional<int64_t>& value) {
    if (value.has_value()) Pair(key, std::to_string(*value));
  }

  // A string value we produce ourselves (ids, paths, fixed settings).
  void Text(std::string_view key, std::string_view value) { Pair(key, HydraQuoteString(value)); }

  // A user override: already Hydra syntax, so it is only quoted for the shell.
  void UserOverride(std::string_view override_text) {
    if (!status_.ok()) return;
    auto interpolated = InterpolateSharedRoot(override_text, cluster_);
    if (!interpolated.ok()) {
      status_ = interpolated.error();
      return;
    }
    tokens_.push_back(ShellQuote(*interpolated));
  }

  Result<std::string> Join() const {
    if (!status_.ok()) return status_.error();
    std::string line;
    for (const std::string& token : tokens_) {
      if (!line.empty()) line += ' ';
      line += token;
    }
    return line;
  }

 private:
  void Pair(std::string_view key, std::string_view hydra_value) {
    std::string pair(key);
    pair += '=';
    pair += hydra_value;
    tokens_.push_back(ShellQuote(pair));
  }

  const RayConfig& cluster_;
  std::vector<std::string> tokens_;
  Status status_;
};

bool OverridesSetKey(const std::vector<std::string>& overrides, std::string_view key) {
  for (std::string_view item : overrides) {
    // Hydra's +key= (add) and ++key= (force add) set the key just as key= does.
    while (!item.empty() && item.front() == '+') item.remove_prefix(1);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      return true;
    }
  }
  return false;
}

Result<std::string> RenderVerlEntrypoint(const JobSpec& spec, const RayConfig& cluster,
                                         std::string_view submission_id, std::string_view run_id) {
  OverrideList line(cluster);
  line.Word("python3");
  line.Word("-m");
  if (spec.workload == Workload::kSft) {
    line.Word("verl.trainer.sft_trainer_ray");
  } else {
    line.Word("verl.trainer.main_ppo");
  }
  if (spec.workload == Workload::kGrpo) line.Text("algorithm.adv_estimator", "grpo");

  line.String("data.train_files", spec.trainer().train_file);
  line.String("data.val_files", spec.trainer().val_file);
  if (spec.workload == Workload::kSft) {
    line.String("model.path", spec.trainer().model_id);
  } else {
    line.String("actor_rollout_ref.model.path", spec.trainer().model_id);
    if (spec.workload == Workload::kPpo) line.String("critic.model.path", spec.trainer().model_id);
  }
  line.Integer("trainer.nnodes", spec.trainer().nnodes);
  line.Integer("trainer.n_gpus_per_node", spec.trainer().n_gpus_per_node);
  line.Integer("trainer.total_training_steps", spec.trainer().total_training_steps);
  line.Integer("trainer.save_freq", spec.trainer().save_freq);
  line.Integer("trainer.test_freq", spec.trainer().test_freq);
  line.Text("trainer.experiment_name", submission_id);
  if (cluster.shared_root.has_value()) {
    line.Text("trainer.default_local_dir", CheckpointDirectory(*cluster.shared_root, run_id));
  }
  // verl's SFT driver computes on trainer.device and the driver holds no GPU.
  if (spec.workload == Workload::kSft &&
      !OverridesSetKey(spec.trainer().overrides, "trainer.device")) {
    line.Text("trainer.device", "cpu");
  }
  for (const std::string& item : spec.trainer().overrides) line.UserOverride(item);
  return line.Join();
}

// Splits an env var name into words at non-alphanumerics and at lower-to-upper case steps,
// uppercased: "hfApi_TOKEN" -> {"HF", "API", "TOKEN"}.
std::vector<std::string> NameWords(std::string_view name) {
  std::vector<std::string> words;
  std::string current;
  char previous = '\0';
  for (char c : name) {
    if (!IsAsciiAlnum(c)) {
      if (!current.empty()) words.push_back(std::move(current));
      current.clear();
    } else {
      bool starts_word = (c >= 'A' && c <= 'Z') && (previous >= 'a' && previous <= 'z');
      if (starts_word && !current.empty()) {
        words.push_back(std::move(current));
        current.clear();
      }
      current += AsciiUpper(c);
    }
    previous = c;
  }
  if (!current.empty()) words.push_back(std::move(current));
  return words;
}

}  // namespace

std::string ShellQuote(std::string_view word) {
  bool safe = !word.empty();
  for (char c : word) safe = safe && IsShellSafe(c);
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string HydraQuoteValue(std::string_view value) {
  bool bare = !value.empty();
  for (char c : value) bare = bare && IsHydraBare(c);
  if (bare) return std::string(value);
  return HydraDoubleQuoted(value);
}

Result<std::string> InterpolateSharedRoot(std::string_view text, const RayConfig& cluster) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t at = text.find(kSharedRootVariable, start);
    if (at == std::string_view::npos) break;
    if (!cluster.shared_root.has_value()) {
      return Error::InvalidInput(NoSharedRootMessage(cluster.path));
    }
    out.append(text.substr(start, at - start));
    out += *cluster.shared_root;
    start = at + kSharedRootVariable.size();
  }
  out.append(text.substr(start));
  return out;
}

Result<std::string> RenderEntrypoint(const JobSpec& spec, const RayConfig& cluster,
                                     std::string_view submission_id, std::string_view run_id) {
  if (spec.workload == Workload::kCustom) {
    // The user's own shell command: interpolated, never quoted.
    if (!spec.entrypoint.has_value()) {
      return Error::InvalidInput("workload custom needs an entrypoint");
    }
    return InterpolateSharedRoot(*spec.entrypoint, cluster);
  }
  return RenderVerlEntrypoint(spec, cluster, submission_id, run_id);
}

std::optional<std::string> VerlCheckpointDirectory(const JobSpec& spec, const RayConfig& cluster,
                                                   std::string_view run_id) {
  if (spec.workload == Workload::kCustom || !cluster.shared_root ||
      OverridesSetKey(spec.trainer().overrides, "trainer.default_local_dir")) {
    return std::nullopt;
  }
  return CheckpointDirectory(*cluster.shared_root, run_id);
}

namespace {

// The env_vars of the body: the cluster's, the job's runtime_env's, then the job's top-level
// env_vars, each over the one before.
Result<Value::Object> RenderEnvVars(const JobSpec& spec, const RayConfig& cluster,
                                    const Value& cluster_env, const Value& job_env) {
  Value::Object env_vars;
  auto take_env_vars = [&env_vars](const Value* vars) {
    if (vars == nullptr || !vars->is_object()) return;
    for (const auto& [key, value] : vars->as_object()) env_vars[key] = value;
  };
  take_env_vars(cluster_env.Find("env_vars"));
  take_env_vars(job_env.Find("env_vars"));
  for (const auto& [key, value] : spec.env_vars) {
    auto interpolated = InterpolateSharedRoot(value, cluster);
    if (!interpolated.ok()) return interpolated.error();
    env_vars.insert_or_assign(std::string(key), std::move(*interpolated));
  }
  return env_vars;
}

// PYTHONPATH = <code_path>:<user_code_path>:<inherited>, where the inherited part is an
// existing PYTHONPATH value or ${PYTHONPATH}, which Ray expands on the node.
Result<std::string> RenderPythonPath(const JobSpec& spec, const RayConfig& cluster,
                                     const Value::Object& env_vars) {
  std::vector<std::string> python_path;
  if (spec.trainer().code_path.has_value()) {
    auto code_path = InterpolateSharedRoot(*spec.trainer().code_path, cluster);
    if (!code_path.ok()) return code_path.error();
    python_path.push_back(std::move(*code_path));
  }
  if (cluster.user_code_path.has_value()) {
    auto user_code = InterpolateSharedRoot(*cluster.user_code_path, cluster);
    if (!user_code.ok()) return user_code.error();
    python_path.push_back(std::move(*user_code));
  } else if (cluster.shared_root.has_value()) {
    std::string user_code = *cluster.shared_root;
    if (user_code.empty() || user_code.back() != '/') user_code += '/';
    python_path.push_back(user_code + "user/code");
  }
  auto inherited = env_vars.find("PYTHONPATH");
  if (inherited != env_vars.end() && inherited->second.is_string()) {
    python_path.push_back(inherited->second.as_string());
  } else {
    python_path.emplace_back("${PYTHONPATH}");
  }
  std::string joined;
  for (const std::string& part : python_path) {
    if (!joined.empty()) joined += ':';
    joined += part;
  }
  return joined;
}

// Each secret the job gets, as an env var (RenderSubmission says which form it takes).
Status RenderSecrets(const JobSpec& spec, const RayConfig& cluster, const SecretValues* values,
                     Value::Object& env_vars) {
  for (const auto& [name, reference] : EffectiveSecrets(spec, cluster)) {
    std::string value;
    if (cluster.secret_delivery == SecretDelivery::kNode) {
      value = NodeSecretVariable(name);
    } else if (values == nullptr) {
      value = SecretPlaceholder(reference);
    } else if (auto it = values->find(reference); it != values->end()) {
      value = it->second;
    } else {
      return Error::NotFound("secrets." + std::string(name) + ": the secrets directory has no " +
                             std::string(reference));
    }
    env_vars.insert_or_assign(std::string(name), Value(std::move(value)));
  }
  return {};
}

// runtime_env: the cluster's, then the job's top-level keys over it; env_vars merged.
Result<Value> RenderRuntimeEnv(const JobSpec& spec, const RayConfig& cluster,
                               const SecretValues* secret_values) {
  auto cluster_env = InterpolateValue(cluster.runtime_env, cluster);
  if (!cluster_env.ok()) return cluster_env.error();
  auto job_env = InterpolateValue(spec.runtime_env, cluster);
  if (!job_env.ok()) return job_env.error();
  Value::Object runtime_env;
  if (cluster_env->is_object()) runtime_env = cluster_env->as_object();
  if (job_env->is_object()) {
    for (const auto& [key, value] : job_env->as_object()) runtime_env[key] = value;
  }
  Result<Value::Object> env_vars = RenderEnvVars(spec, cluster, *cluster_env, *job_env);
  if (!env_vars.ok()) return env_vars.error();
  Result<std::string> python_path = RenderPythonPath(spec, cluster, *env_vars);
  if (!python_path.ok()) return python_path.error();
  // A secret never reaches PYTHONPATH (validation refuses the name; this holds regardless).
  if (Status secrets = RenderSecrets(spec, cluster, secret_values, *env_vars); !secrets.ok()) {
    return secrets.error();
  }
  (*env_vars)["PYTHONPATH"] = std::move(*python_path);
  runtime_env["env_vars"] = Value(std::move(*env_vars));
  // The code folder is the run's working_dir, over any the cluster names (docs/jobspec.md).
  if (spec.has_code()) {
    if (spec.code().tree_id.empty()) {
      return Error::Fatal(spec.path + ": the tree of code folder " + spec.code().folder +
                          " was not read, so the run's working_dir is unknown");
    }
    runtime_env["working_dir"] = CodePackageUri(spec.code().tree_id);
  }
  return Value(std::move(runtime_env));
}

// The entrypoint resources: the spec's, else the cluster's.
void RenderEntrypointResources(const JobSpec& spec, const RayConfig& cluster, Value& body) {
  if (auto cpus =
          spec.entrypoint_num_cpus ? spec.entrypoint_num_cpus : cluster.entrypoint_num_cpus) {
    body["entrypoint_num_cpus"] = *cpus;
  }
  if (auto gpus =
          spec.entrypoint_num_gpus ? spec.entrypoint_num_gpus : cluster.entrypoint_num_gpus) {
    body["entrypoint_num_gpus"] = *gpus;
  }
  if (auto memory = spec.entrypoint_memory ? spec.entrypoint_memory : cluster.entrypoint_memory) {
    body["entrypoint_memory"] = *memory;
  }
  if (const auto& resources =
          spec.entrypoint_resources ? spec.entrypoint_resources : cluster.entrypoint_resources) {
    Value::Object out;
    for (const auto& [key, amount] : *resources) out.emplace(key, amount);
    body["entrypoint_resources"] = Value(std::move(out));
  }
}

Value RenderMetadata(const JobSpec& spec, const RenderContext& context) {
  Value::Object metadata;
  metadata.emplace(kMetaManagedBy, context.instance);
  metadata.emplace(kMetaName, spec.name);
  metadata.emplace(kMetaSpecPath, spec.path);
  metadata.emplace(kMetaSpecHash, SpecHashOf(spec));
  metadata.emplace(kMetaAttempt, std::to_string(context.attempt));
  if (!context.slot.empty()) metadata.emplace(kMetaSlot, context.slot);
  if (!context.commit.empty()) metadata.emplace(kMetaCommit, context.commit);
  if (spec.has_code() && !spec.code().tree_id.empty()) {
    metadata.emplace(kMetaCodeTree, spec.code().tree_id);
    if (!spec.code().commit.empty()) metadata.emplace(kMetaCodeCommit, spec.code().commit);
  }
  if (!context.repo_url.empty()) {
    metadata.emplace(kMetaRepo, StripUrlCredentials(context.repo_url));
  }
  return {std::move(metadata)};
}

}  // namespace

Result<Value> RenderSubmission(const JobSpec& spec, const RayConfig& cluster,
                               const RenderContext& context) {
  if (context.upstream_runs && !spec.pipeline().after.empty()) {
    Result<JobSpec> resolved = ResolveRunsVariables(spec, *context.upstream_runs, cluster);
    if (!resolved.ok()) return resolved.error();
    RenderContext rest = context;
    rest.upstream_runs.reset();
    return RenderSubmission(*resolved, cluster, rest);
  }
  std::string submission_id = SubmissionIdForSlot(spec, context.slot, context.attempt);
  auto entrypoint =
      RenderEntrypoint(spec, cluster, submission_id, SubmissionIdForSlot(spec, context.slot, 0));
  if (!entrypoint.ok()) return entrypoint.error();
  Result<Value> runtime_env = RenderRuntimeEnv(spec, cluster, context.secret_values);
  if (!runtime_env.ok()) return runtime_env.error();

  Value body = Value::Object{};
  body["submission_id"] = submission_id;
  body["entrypoint"] = std::move(*entrypoint);
  body["runtime_env"] = std::move(*runtime_env);
  RenderEntrypointResources(spec, cluster, body);
  body["metadata"] = RenderMetadata(spec, context);
  return body;
}

std::string StripUrlCredentials(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);  // git@host:path, paths
  size_t authority_start = scheme_end + 3;
  size_t authority_end = url.find_first_of("/?#", authority_start);
  if (authority_end == std::string_view::npos) authority_end = url.size();
  std::string_view authority = url.substr(authority_start, authority_end - authority_start);
  size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  std::string_view user_info = authority.substr(0, at);

  // For SSH a bare user name (ssh://git@host/x) names the account to log in as; the key is
  // elsewhere, so it is kept. Anything with a password, and any user info over HTTP(S), goes.
  std::string scheme = LowerAscii(url.substr(0, scheme_end));
  bool ssh = scheme == "ssh" || scheme == "git+ssh" || scheme == "ssh+git";
  if (ssh && user_info.find(':') == std::string_view::npos) return std::string(url);

  std::string out(url.substr(0, authority_start));
  out.append(url.substr(authority_start + at + 1));
  return out;
}

std::string RayClusterName(const RayConfig& cluster, std::string_view address) {
  if (cluster.name && !cluster.name->empty()) return *cluster.name;
  return StripUrlCredentials(address.empty() ? std::string_view(cluster.address) : address);
}

bool LooksLikeSecretName(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kSecretWords = {
      "TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH",
  };
  for (const std::string& word : NameWords(name)) {
    for (std::string_view secret : kSecretWords) {
      if (word == secret) return true;
      if (word.size() == secret.size() + 1 && word.back() == 'S' &&
          std::string_view(word).substr(0, secret.size()) == secret) {
        return true;  // plurals: KEYS, TOKENS, CREDENTIALS
      }
    }
  }
  return false;
}

Value RedactSecrets(const Value& body) {
  Value out = body;
  if (!out.is_object()) return out;
  auto& object = out.as_object();
  auto runtime_env = object.find("runtime_env");
  if (runtime_env == object.end() || !runtime_env->second.is_object()) return out;
  auto& env_object = runtime_env->second.as_object();
  auto env_vars = env_object.find("env_vars");
  if (env_vars == env_object.end() || !env_vars->second.is_object()) return out;
  for (auto& [key, value] : env_vars->second.as_object()) {
    if (IsSecretEnvName(key) && !(value.is_string() && IsSecretStandIn(key, value.as_string()))) {
      value = "<redacted>";
    }
  }
  return out;
}

}  // namespace rg::core
