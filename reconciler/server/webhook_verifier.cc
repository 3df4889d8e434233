#include "reconciler/server/webhook_verifier.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <array>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <variant>

namespace rg::server {

namespace {

using Digest = std::array<unsigned char, 32>;

Digest Sha256(std::string_view data) {
  Digest out{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data());
  return out;
}

Digest HmacSha256(std::string_view key, std::string_view data) {
  Digest out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<Digest> DecodeHexDigest(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  Digest out{};
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexValue(hex[2 * i]);
    const int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return out;
}

// `value` may quote request headers, which are bytes, not UTF-8: invalid sequences become
// U+FFFD rather than an exception.
std::string JsonObject(std::string_view key, std::string_view value) {
  return nlohmann::json{{std::string(key), std::string(value)}}.dump(
      -1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

WebhookVerdict Reject(int status, std::string reason, std::string_view message) {
  WebhookVerdict v;
  v.http_status = status;
  v.reject_reason = std::move(reason);
  v.response_json = JsonObject("error", message);
  return v;
}

WebhookVerdict Ignore(std::string source, std::string_view why) {
  WebhookVerdict v;
  v.http_status = 200;
  v.source = std::move(source);
  v.response_json = JsonObject("ignored", why);
  return v;
}

enum class Scheme { kNone, kGitHub, kGitLab, kBearer };

Scheme PickScheme(WebhookAuthMode mode, const WebhookRequest& r) {
  switch (mode) {
    case WebhookAuthMode::kGitHub:
      return r.github_signature ? Scheme::kGitHub : Scheme::kNone;
    case WebhookAuthMode::kGitLab:
      return r.gitlab_token ? Scheme::kGitLab : Scheme::kNone;
    case WebhookAuthMode::kBearer:
      return r.authorization ? Scheme::kBearer : Scheme::kNone;
    case WebhookAuthMode::kAuto:
      if (r.github_signature) return Scheme::kGitHub;
      if (r.gitlab_token) return Scheme::kGitLab;
      if (r.authorization) return Scheme::kBearer;
      return Scheme::kNone;
  }
  return Scheme::kNone;
}

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(s[i]) != lower(prefix[i])) return false;
  }
  return true;
}

constexpr std::string_view kBearerPrefix = "bearer ";

}  // namespace

std::string_view WebhookAuthModeName(WebhookAuthMode mode) {
  switch (mode) {
    case WebhookAuthMode::kAuto:
      return "auto";
    case WebhookAuthMode::kGitHub:
      return "github";
    case WebhookAuthMode::kGitLab:
      return "gitlab";
    case WebhookAuthMode::kBearer:
      return "bearer";
  }
  return "auto";
}

std::optional<WebhookAuthMode> ParseWebhookAuthMode(std::string_view text) {
  for (const auto m : {WebhookAuthMode::kAuto, WebhookAuthMode::kGitHub, WebhookAuthMode::kGitLab,
                       WebhookAuthMode::kBearer}) {
    if (WebhookAuthModeName(m) == text) return m;
  }
  return std::nullopt;
}

core::Result<std::string> ReadWebhookSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Error::InvalidInput("cannot read the webhook secret file " + path);
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) {
    return core::Error::InvalidInput("the webhook secret file " + path + " is empty");
  }
  return secret;
}

bool SecretsEqual(std::string_view a, std::string_view b) {
  // Comparing fixed-size digests keeps the comparison itself independent of where the inputs
  // differ and of whether their lengths match.
  const Digest da = Sha256(a);
  const Digest db = Sha256(b);
  return CRYPTO_memcmp(da.data(), db.data(), da.size()) == 0;
}

bool BearerTokenMatches(const std::optional<std::string>& authorization, std::string_view secret) {
  if (!authorization) return false;
  const std::string_view header = TrimBlanks(*authorization);
  if (!StartsWithNoCase(header, kBearerPrefix)) return false;
  return SecretsEqual(TrimBlanks(header.substr(kBearerPrefix.size())), secret);
}

std::string GitHubSignature(std::string_view secret, std::string_view body) {
  constexpr std::string_view kHex = "0123456789abcdef";
  const Digest mac = HmacSha256(secret, body);
  std::string out = "sha256=";
  for (const unsigned char c : mac) {
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

namespace {

// Who sent the request: its source ("webhook:github", ...) once the signature or token
// matches the secret, else the rejection.
std::variant<std::string, WebhookVerdict> Authenticate(WebhookAuthMode mode,
                                                       const std::string& secret,
                                                       const WebhookRequest& request) {
  switch (PickScheme(mode, request)) {
    case Scheme::kNone:
      return Reject(401, "missing_signature", "missing signature or token");
    case Scheme::kGitHub: {
      const std::string_view header = TrimBlanks(*request.github_signature);
      constexpr std::string_view kPrefix = "sha256=";
      if (!header.starts_with(kPrefix)) {
        return Reject(400, "malformed_signature", "X-Hub-Signature-256 is not sha256=<hex>");
      }
      const std::optional<Digest> given = DecodeHexDigest(header.substr(kPrefix.size()));
      if (!given) {
        return Reject(400, "malformed_signature", "X-Hub-Signature-256 is not sha256=<hex>");
      }
      const Digest expected = HmacSha256(secret, request.body);
      if (CRYPTO_memcmp(given->data(), expected.data(), expected.size()) != 0) {
        return Reject(401, "bad_signature", "signature does not match");
      }
      return std::string("webhook:github");
    }
    case Scheme::kGitLab:
      if (!SecretsEqual(*request.gitlab_token, secret)) {
        return Reject(401, "bad_signature", "token does not match");
      }
      return std::string("webhook:gitlab");
    case Scheme::kBearer:
      if (!StartsWithNoCase(TrimBlanks(*request.authorization), kBearerPrefix)) {
        return Reject(401, "missing_signature", "Authorization is not a bearer token");
      }
      if (!BearerTokenMatches(request.authorization, secret)) {
        return Reject(401, "bad_signature", "token does not match");
      }
      return std::string("webhook:bearer");
  }
  return Reject(401, "missing_signature", "missing signature or token");
}

// The event, when it is one that never triggers a pass (a ping, anything but a push).
std::optional<std::string> IgnoredEvent(const WebhookRequest& request) {
  if (request.github_event && *request.github_event == "ping") return "ping";
  if (request.github_event && *request.github_event != "push") {
    return "event " + *request.github_event;
  }
  if (request.gitlab_event && *request.gitlab_event != "Push Hook") {
    return "event " + *request.gitlab_event;
  }
  return std::nullopt;
}

// The pushed ref of the payload, if it names one, else the rejection of a malformed body.
// A bearer caller may send no body at all; GitHub and GitLab always send JSON.
std::variant<std::optional<std::string>, WebhookVerdict> PushedRef(const std::string& source,
                                                                   std::string_view body) {
  if (TrimBlanks(body).empty()) {
    if (source != "webhook:bearer") return Reject(400, "malformed_payload", "empty body");
    return std::optional<std::string>();
  }
  nlohmann::json payload;
  try {
    payload = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception&) {
    return Reject(400, "malformed_payload", "body is not JSON");
  }
  if (!payload.is_object() || !payload.contains("ref")) return std::optional<std::string>();
  if (!payload["ref"].is_string()) {
    return Reject(400, "malformed_payload", "\"ref\" is not a string");
  }
  return std::optional<std::string>(payload["ref"].get<std::string>());
}

}  // namespace

WebhookVerdict VerifyWebhook(const WebhookConfig& config, std::string_view branch,
                             const WebhookRequest& request) {
  if (!config.secret) return Reject(404, "disabled", "webhook not configured");
  if (request.body_too_large || request.body.size() > config.max_body_bytes) {
    return Reject(413, "too_large",
                  "body larger than " + std::to_string(config.max_body_bytes) + " bytes");
  }
  auto who = Authenticate(config.mode, *config.secret, request);
  if (auto* rejected = std::get_if<WebhookVerdict>(&who)) return std::move(*rejected);
  std::string source = std::get<std::string>(std::move(who));

  if (std::optional<std::string> why = IgnoredEvent(request)) return Ignore(source, *why);
  auto pushed = PushedRef(source, request.body);
  if (auto* rejected = std::get_if<WebhookVerdict>(&pushed)) return std::move(*rejected);
  const std::optional<std::string>& ref = std::get<std::optional<std::string>>(pushed);

  // An unknown branch (the remote could not be asked at start) filters nothing: an extra
  // pass is harmless, a missed push is not.
  if (ref && !branch.empty() && *ref != "refs/heads/" + std::string(branch)) {
    return Ignore(source, "push to " + *ref + ", watching refs/heads/" + std::string(branch));
  }
  WebhookVerdict v;
  v.http_status = 202;
  v.trigger = true;
  v.source = std::move(source);
  v.response_json = JsonObject("accepted", "reconcile pass queued");
  return v;
}

}  // namespace rg::server
