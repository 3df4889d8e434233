#include "reconciler/core/redaction.h"

#include <algorithm>
#include <array>
#include <utility>

#include "reconciler/core/escape.h"
#include "reconciler/core/markdown.h"
#include "reconciler/core/render.h"
#include "reconciler/core/value.h"

namespace rg::core {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The largest n <= limit such that text[0, n) ends on a UTF-8 character boundary.
size_t Utf8Boundary(std::string_view text, size_t limit) {
  if (limit >= text.size()) return text.size();
  size_t n = limit;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

bool IsSecretEnvName(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kWords = {
      "TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL",
  };
  const std::string upper = Upper(name);
  for (std::string_view word : kWords) {
    if (upper.find(word) != std::string::npos) return true;
  }
  return LooksLikeSecretName(name);
}

std::string FirstLineOfMessage(std::string_view message) {
  std::string_view line = Trim(message);
  if (size_t eol = line.find_first_of("\r\n"); eol != std::string_view::npos) {
    line = Trim(line.substr(0, eol));
  }
  if (line.size() <= kMaxMessageChars) return std::string(line);
  const size_t keep = Utf8Boundary(line, kMaxMessageChars - 3);
  return std::string(Trim(line.substr(0, keep))) + "...";
}

void Redactor::Add(std::string_view secret) {
  secret = Trim(secret);
  if (secret.size() < kMinSecretLength) return;
  if (!secrets_.emplace(secret).second) return;
  patterns_.emplace(secret);
  // Outputs are redacted after they are formatted: a secret shown escaped is still the secret.
  std::string json = ToPrettyJson(Value(std::string(secret)));  // "..."
  json = json.substr(1, json.size() - 2);
  for (std::string form : {EscapeText(secret), EscapeMarkdownText(secret), json}) {
    if (form.size() >= kMinSecretLength) patterns_.insert(std::move(form));
  }
}

void Redactor::AddEnvVars(const StringMap& env) {
  for (const auto& [name, value] : env) {
    if (IsSecretEnvName(name)) Add(value);
  }
}

void Redactor::AddDesiredState(const DesiredState& desired) {
  if (desired.cluster) AddEnvVars(desired.cluster->EnvVars());
  for (const JobSpec& spec : desired.jobs) AddEnvVars(spec.env_vars);
}

void Redactor::Merge(const Redactor& other) {
  for (const std::string& s : other.secrets_) Add(s);
}

std::string Redactor::Apply(std::string_view text) const {
  std::string out(text);
  ApplyInPlace(out);
  return out;
}

void Redactor::ApplyInPlace(std::string& text) const {
  for (const std::string& secret : patterns_) {
    size_t pos = text.find(secret);
    if (pos == std::string::npos) continue;
    std::string out;
    out.reserve(text.size());
    size_t from = 0;
    for (; pos != std::string::npos; pos = text.find(secret, from)) {
      out.append(text, from, pos - from);
      out += kRedacted;
      from = pos + secret.size();
    }
    out.append(std::string_view(text).substr(from));
    text = std::move(out);
  }
}

void RedactRecord(StatusRecord& record, const Redactor& redactor) {
  record.message = redactor.SafeMessage(record.message);
  for (std::string& e : record.errors) e = redactor.Apply(e);
  for (AttemptRecord& a : record.attempts) a.message = redactor.SafeMessage(a.message);
}

}  // namespace rg::core
