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

// The value inside the quotes of its JSON string (ToPrettyJson's escapes).
std::string JsonEscaped(std::string_view value) {
  std::string json = ToPrettyJson(Value(std::string(value)));
  return json.substr(1, json.size() - 2);
}

// `escaped` (a JSON string's inside) with every non-ASCII character as \uXXXX (UTF-16, lower-case
// hex), as Python's json.dumps writes it by default; empty when `escaped` is not UTF-8.
std::string AsciiJson(std::string_view escaped) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  auto unit = [&out](uint32_t u) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(u >> shift) & 0xF];
  };
  for (size_t i = 0; i < escaped.size();) {
    const auto lead = static_cast<unsigned char>(escaped[i]);
    if (lead < 0x80) {
      out += static_cast<char>(lead);
      ++i;
      continue;
    }
    const size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (n == 0 || i + n > escaped.size()) return {};
    uint32_t cp = lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto cont = static_cast<unsigned char>(escaped[i + k]);
      if ((cont & 0xC0) != 0x80) return {};
      cp = (cp << 6) | (cont & 0x3F);
    }
    i += n;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      unit(0xD800 + (cp >> 10));
      unit(0xDC00 + (cp & 0x3FF));
    } else {
      unit(cp);
    }
  }
  return out;
}

bool Unreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// Percent-encoding (RFC 3986): bytes outside the unreserved set (and `keep`) as %XX; with
// `plus`, ' ' as '+' (HTML forms).
std::string PercentEncoded(std::string_view value, std::string_view keep, bool plus, bool lower) {
  const std::string_view hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  for (char c : value) {
    const auto b = static_cast<unsigned char>(c);
    if (Unreserved(c) || keep.find(c) != std::string_view::npos) {
      out += c;
    } else if (plus && c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += hex[b >> 4];
      out += hex[b & 0xF];
    }
  }
  return out;
}

// The base64 characters any base64 text holding `value` shows, whatever comes before it: for
// each of the three offsets it can have in a 3-byte group, its bytes from the next group
// boundary on, in whole groups.
void AddBase64Forms(std::string_view value, bool url_safe, std::vector<std::string>& forms) {
  forms.push_back(Base64(value, url_safe));
  for (size_t skip = 0; skip < 3 && skip < value.size(); ++skip) {
    const std::string_view rest = value.substr(skip);
    forms.push_back(Base64(rest.substr(0, rest.size() / 3 * 3), url_safe));
  }
}

}  // namespace

std::string Base64(std::string_view bytes, bool url_safe) {
  const std::string_view alphabet =
      url_safe ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
               : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) {
      group = (group << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (size_t k = 0; k < 4; ++k) {
      out += k <= n ? alphabet[(group >> (18 - 6 * k)) & 0x3F] : '=';
    }
  }
  return out;
}

std::vector<std::string> SecretValueForms(std::string_view value) {
  std::vector<std::string> forms;
  AddBase64Forms(value, false, forms);
  AddBase64Forms(value, true, forms);
  for (bool lower : {false, true}) {
    forms.push_back(PercentEncoded(value, "", false, lower));
    forms.push_back(PercentEncoded(value, "/", false, lower));
    forms.push_back(PercentEncoded(value, "", true, lower));
  }
  const std::string json = JsonEscaped(value);
  forms.push_back(json);
  forms.push_back(AsciiJson(json));
  forms.push_back(JsonEscaped(json));
  std::erase_if(
      forms, [value](const std::string& f) { return f.size() < kMinSecretLength || f == value; });
  std::sort(forms.begin(), forms.end());
  forms.erase(std::unique(forms.begin(), forms.end()), forms.end());
  return forms;
}

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
  for (std::string form : {EscapeText(secret), EscapeMarkdownText(secret), JsonEscaped(secret)}) {
    if (form.size() >= kMinSecretLength) patterns_.insert(std::move(form));
  }
}

void Redactor::AddDeclared(std::string_view value) {
  Add(value);
  if (value.size() < kMinSecretLength) return;  // the secrets directory refuses such values
  patterns_.emplace(value);
  for (std::string& form : SecretValueForms(value)) patterns_.insert(std::move(form));
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
  secrets_.insert(other.secrets_.begin(), other.secrets_.end());
  patterns_.insert(other.patterns_.begin(), other.patterns_.end());
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
