#include "reconciler/core/secrets.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/spec_model.h"

namespace rg::core {

std::string_view SecretDeliveryName(SecretDelivery delivery) {
  return delivery == SecretDelivery::kNode ? "node" : "env";
}

std::optional<SecretDelivery> ParseSecretDelivery(std::string_view text) {
  if (text == "env") return SecretDelivery::kEnv;
  if (text == "node") return SecretDelivery::kNode;
  return std::nullopt;
}

std::string SecretPlaceholder(std::string_view reference) {
  std::string out = "<secret:";
  out.append(reference);
  out += '>';
  return out;
}

std::string NodeSecretVariable(std::string_view name) {
  std::string out = "${";
  out.append(name);
  out += '}';
  return out;
}

bool IsSecretStandIn(std::string_view name, std::string_view value) {
  constexpr std::string_view kOpen = "<secret:";
  if (value.starts_with(kOpen) && value.ends_with('>')) {
    return IsSecretReference(value.substr(kOpen.size(), value.size() - kOpen.size() - 1));
  }
  return value.size() == name.size() + 3 && value.starts_with("${") && value.ends_with('}') &&
         value.substr(2, name.size()) == name;
}

Value WithSecretPlaceholders(const Value& body, const StringMap& secrets) {
  Value out = body;
  if (secrets.empty() || !out.is_object()) return out;
  auto runtime_env = out.as_object().find("runtime_env");
  if (runtime_env == out.as_object().end() || !runtime_env->second.is_object()) return out;
  auto env_vars = runtime_env->second.as_object().find("env_vars");
  if (env_vars == runtime_env->second.as_object().end() || !env_vars->second.is_object()) {
    return out;
  }
  Value::Object& env = env_vars->second.as_object();
  for (const auto& [name, reference] : secrets) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    if (it->second.is_string() && it->second.as_string() == NodeSecretVariable(name)) continue;
    it->second = SecretPlaceholder(reference);
  }
  return out;
}

StringMap EffectiveSecrets(const JobSpec& spec, const RayConfig& cluster) {
  StringMap out = cluster.secrets;
  for (const auto& [name, reference] : spec.secrets()) out.insert_or_assign(name, reference);
  return out;
}

std::vector<std::string> NodeSecretNames(const DesiredState& desired) {
  std::vector<std::string> names;
  if (!desired.cluster || desired.cluster->secret_delivery != SecretDelivery::kNode) return names;
  StringMap all;
  for (const JobSpec& spec : desired.jobs) {
    for (const auto& [name, reference] : EffectiveSecrets(spec, *desired.cluster)) {
      all.insert_or_assign(name, reference);
    }
  }
  for (const auto& [name, reference] : all) names.emplace_back(name);
  return names;
}

namespace {

bool IsTokenDigit(char c) { return c >= '0' && c <= '9'; }
bool IsTokenUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsTokenLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsTokenAlnum(char c) { return IsTokenDigit(c) || IsTokenUpper(c) || IsTokenLower(c); }
bool IsTokenHex(char c) {
  return IsTokenDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
// A character a token may continue with: a token must start and end beside none of them.
bool IsTokenChar(char c) { return IsTokenAlnum(c) || c == '_' || c == '-'; }

enum class Charset { kAlnum, kAlnumUnderscore, kAlnumUnderscoreDash, kAlnumDash, kUpperDigit };

bool InCharset(Charset set, char c) {
  switch (set) {
    case Charset::kAlnum:
      return IsTokenAlnum(c);
    case Charset::kAlnumUnderscore:
      return IsTokenAlnum(c) || c == '_';
    case Charset::kAlnumUnderscoreDash:
      return IsTokenChar(c);
    case Charset::kAlnumDash:
      return IsTokenAlnum(c) || c == '-';
    case Charset::kUpperDigit:
      return IsTokenUpper(c) || IsTokenDigit(c);
  }
  return false;
}

// One issuer's token: the prefix, then `min_body` to `max_body` characters of `body`. `mixed`:
// the body also holds an upper-case letter, a lower-case letter and a digit, as a random token
// does and a word, a path or a package name rarely does (for the short prefix "sk-").
struct TokenShape {
  std::string_view prefix;
  std::string_view kind;
  Charset body;
  size_t min_body;
  size_t max_body;
  bool mixed = false;
};

constexpr size_t kNoMax = 4096;

constexpr std::array<TokenShape, 13> kTokenShapes = {{
    {"hf_", "a Hugging Face token", Charset::kAlnum, 30, kNoMax},
    {"ghp_", "a GitHub token", Charset::kAlnum, 36, 251},
    {"gho_", "a GitHub token", Charset::kAlnum, 36, 251},
    {"ghu_", "a GitHub token", Charset::kAlnum, 36, 251},
    {"ghs_", "a GitHub token", Charset::kAlnum, 36, 251},
    {"ghr_", "a GitHub token", Charset::kAlnum, 36, 251},
    {"github_pat_", "a GitHub token", Charset::kAlnumUnderscore, 50, kNoMax},
    {"glpat-", "a GitLab token", Charset::kAlnumUnderscoreDash, 20, kNoMax},
    {"sk-", "an API key (sk-...)", Charset::kAlnumUnderscoreDash, 32, kNoMax, true},
    {"xoxb-", "a Slack token", Charset::kAlnumDash, 20, kNoMax},
    {"xoxp-", "a Slack token", Charset::kAlnumDash, 20, kNoMax},
    {"AKIA", "an AWS access key id", Charset::kUpperDigit, 16, 16},
    {"ASIA", "an AWS access key id", Charset::kUpperDigit, 16, 16},
}};

bool IsMixed(std::string_view body) {
  bool upper = false;
  bool lower = false;
  bool digit = false;
  for (char c : body) {
    upper = upper || IsTokenUpper(c);
    lower = lower || IsTokenLower(c);
    digit = digit || IsTokenDigit(c);
  }
  return upper && lower && digit;
}

// True when a token of `shape` starts at `at` of `value` (a token boundary) and ends at one.
bool TokenAt(std::string_view value, size_t at, const TokenShape& shape) {
  if (value.substr(at, shape.prefix.size()) != shape.prefix) return false;
  const size_t start = at + shape.prefix.size();
  size_t end = start;
  while (end < value.size() && InCharset(shape.body, value[end])) ++end;
  if (end < value.size() && IsTokenChar(value[end])) return false;
  const size_t length = end - start;
  if (length < shape.min_body || length > shape.max_body) return false;
  return !shape.mixed || IsMixed(value.substr(start, length));
}

// The words of an env var name, upper-cased, split at "_".
std::vector<std::string> UpperWords(std::string_view name) {
  std::vector<std::string> words(1);
  for (char c : name) {
    if (c == '_') {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    words.back() += IsTokenLower(c) ? static_cast<char>(c - 'a' + 'A') : c;
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

// A W&B API key is 40 hex digits; so is a Git commit id, which a name about a commit holds.
bool IsWandbKey(std::string_view name, std::string_view value) {
  if (value.size() != 40) return false;
  for (char c : value) {
    if (!IsTokenHex(c)) return false;
  }
  bool wandb = false;
  for (const std::string& word : UpperWords(name)) {
    if (word == "COMMIT" || word == "SHA" || word == "HASH" || word == "REV" ||
        word == "REVISION") {
      return false;
    }
    wandb = wandb || word.find("WANDB") != std::string::npos;
  }
  return wandb;
}

}  // namespace

bool IsSecretReference(std::string_view reference) {
  if (reference.empty() || reference.size() > 128 || !IsTokenAlnum(reference.front())) return false;
  return std::ranges::all_of(
      reference, [](char c) { return IsTokenAlnum(c) || c == '_' || c == '.' || c == '-'; });
}

bool IsReservedEnvName(std::string_view name) { return name == "PYTHONPATH"; }

std::optional<std::string_view> CredentialKind(std::string_view name, std::string_view value) {
  if (IsWandbKey(name, value)) return "a Weights & Biases API key";
  for (size_t at = 0; at < value.size(); ++at) {
    if (at > 0 && IsTokenChar(value[at - 1])) continue;
    for (const TokenShape& shape : kTokenShapes) {
      if (TokenAt(value, at, shape)) return shape.kind;
    }
  }
  return std::nullopt;
}

}  // namespace rg::core
