#pragma once
// What may be written (docs/security.md): Ray's message cut to its first line, and the values of
// known secrets replaced by "<redacted>" before anything reaches Git, a plan, the status page,
// the JSON API, a log line, an artifact or a command's output. Pure.

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/desired_state.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/status_model.h"

namespace rg::core {

inline constexpr std::string_view kRedacted = "<redacted>";
// Values shorter than this are never redacted: a short value ("1", "true", "gpu") would
// blank every occurrence of itself in every message.
inline constexpr size_t kMinSecretLength = 8;
// The longest status message kept from Ray.
inline constexpr size_t kMaxMessageChars = 300;

// True for env var names that hold secrets: the name contains TOKEN, KEY, SECRET, PASSWORD,
// PASSWD, PASS or CREDENTIAL, case-insensitive, or AUTH as a word part.
bool IsSecretEnvName(std::string_view name);

// Ray's message up to its first line break, at most kMaxMessageChars characters (cut on a
// UTF-8 character boundary, "..." appended when cut), surrounding whitespace removed. Ray
// appends the driver's last log lines to a failed job's message; they never leave Ray.
std::string FirstLineOfMessage(std::string_view message);

// The set of secret values a process knows, and the one redaction step every sink applies.
// Values are matched literally, the longest first, so a secret that contains another is
// replaced whole. Copyable; const methods are safe to call from several threads.
class Redactor {
 public:
  // Adds one secret value, and the forms it takes when a format escapes it (EscapeText,
  // EscapeMarkdownText, a JSON string of ToPrettyJson); values shorter than kMinSecretLength
  // and surrounding whitespace (a token file's newline) are ignored.
  void Add(std::string_view secret);
  // Adds a declared job secret's value (docs/jobspec.md, "secrets"), whatever its length,
  // with Add's forms and the forms a value takes on its way through other programs
  // (SecretValueForms): its standard and URL-safe base64 at each of the three alignments it
  // can have inside a longer base64 text, its percent-encodings, its JSON string escapes.
  void AddDeclared(std::string_view value);
  // Adds the value of every secret-named variable (IsSecretEnvName) of `env`.
  void AddEnvVars(const StringMap& env);
  // Adds the secret-named env vars of the cluster file and of every valid spec.
  void AddDesiredState(const DesiredState& desired);
  void Merge(const Redactor& other);

  // `text` with every known secret value replaced by kRedacted.
  std::string Apply(std::string_view text) const;
  // The same, in `text` itself: nothing is copied unless a secret is found, and each secret
  // found costs one pass over the text (a plan's text at 50,000 jobs is about 37 MB).
  void ApplyInPlace(std::string& text) const;
  // Redact first, then cut: a secret that straddles the cut is still removed whole.
  std::string SafeMessage(std::string_view ray_message) const {
    return FirstLineOfMessage(Apply(ray_message));
  }

  bool empty() const { return secrets_.empty(); }
  size_t size() const { return secrets_.size(); }

 private:
  // Longest first (a secret inside a longer one never leaves the rest of the longer one), no
  // duplicates; a set, so that adding the secrets of 50,000 specs is not quadratic.
  struct LongestFirst {
    bool operator()(const std::string& a, const std::string& b) const {
      return a.size() != b.size() ? a.size() > b.size() : a < b;
    }
  };
  std::set<std::string, LongestFirst> secrets_;
  // What Apply replaces: each secret and the escaped forms of it that differ from it.
  std::set<std::string, LongestFirst> patterns_;
};

// The forms of a declared secret's value that Redactor::AddDeclared redacts besides the value
// itself, each at least kMinSecretLength long (a shorter one would blank unrelated text):
// - base64 (RFC 4648 section 4) whole, with its padding, and the part of it that any base64
//   text holding the value shows whatever precedes it: the value's bytes after 0, 1 or 2 bytes
//   (to a group boundary), in whole groups of three; the same in the URL-safe alphabet;
// - percent-encoded (RFC 3986): every byte outside the unreserved set as %XX, with '/' kept
//   too (Python's quote), with ' ' as '+' (forms), each in upper- and lower-case hex;
// - JSON-string-escaped (the value inside the quotes), with non-ASCII as \uXXXX as Python's
//   json.dumps writes it, and escaped twice (JSON inside a JSON string).
std::vector<std::string> SecretValueForms(std::string_view value);

// Standard base64 of `bytes` (RFC 4648 section 4, with padding); `url_safe` uses '-' and '_'
// (section 5). Written here because core links no library; checked against OpenSSL's
// EVP_EncodeBlock by the unit tests.
std::string Base64(std::string_view bytes, bool url_safe = false);

// A status record as it may be written: every message cut to its first line and redacted,
// validation errors redacted.
void RedactRecord(StatusRecord& record, const Redactor& redactor);

}  // namespace rg::core
