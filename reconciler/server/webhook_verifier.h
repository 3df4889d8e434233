#pragma once
// Decides what a POST /webhook request means: rejected (and why), ignored, or a trigger for a
// reconcile pass. Knows GitHub (X-Hub-Signature-256, an HMAC-SHA256 of the raw body), GitLab
// (X-Gitlab-Token) and a plain `Authorization: Bearer <secret>`. Every comparison with the
// secret takes the same time whatever the input. Stateless and thread-safe.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/core/result.h"

namespace rg::server {

enum class WebhookAuthMode {
  kAuto,    // whichever of the three the request carries (GitHub, then GitLab, then bearer)
  kGitHub,  // only X-Hub-Signature-256
  kGitLab,  // only X-Gitlab-Token
  kBearer,  // only Authorization: Bearer
};

std::string_view WebhookAuthModeName(WebhookAuthMode mode);
// "auto", "github", "gitlab", "bearer"; nullopt otherwise.
std::optional<WebhookAuthMode> ParseWebhookAuthMode(std::string_view text);

inline constexpr size_t kDefaultWebhookMaxBodyBytes = size_t{1} << 20;

struct WebhookConfig {
  // nullopt: no secret configured, the webhook endpoint does not exist (404).
  std::optional<std::string> secret;
  WebhookAuthMode mode = WebhookAuthMode::kAuto;
  size_t max_body_bytes = kDefaultWebhookMaxBodyBytes;
};

// The secret from a file: its whole content with trailing "\n" / "\r\n" removed. An empty
// secret is an error (it would accept an empty token).
core::Result<std::string> ReadWebhookSecretFile(const std::string& path);

// The parts of a request the verifier looks at. Header values are nullopt when absent.
struct WebhookRequest {
  std::optional<std::string> github_signature;  // X-Hub-Signature-256
  std::optional<std::string> github_event;      // X-GitHub-Event
  std::optional<std::string> gitlab_token;      // X-Gitlab-Token
  std::optional<std::string> gitlab_event;      // X-Gitlab-Event
  std::optional<std::string> authorization;     // Authorization
  std::string_view body;                        // the raw body, exactly as received
  bool body_too_large = false;                  // the body exceeded max_body_bytes unread
};

struct WebhookVerdict {
  int http_status = 500;
  std::string response_json;  // {"accepted": ...}, {"ignored": ...} or {"error": ...}
  // Set when rejected (4xx): "disabled", "too_large", "missing_signature", "bad_signature",
  // "malformed_signature", "malformed_payload". The rejected-requests metric label.
  std::string reject_reason;
  bool trigger = false;  // true only for 202
  // "webhook:github", "webhook:gitlab" or "webhook:bearer" once authenticated.
  std::string source;
};

// REQUIRES: nothing. `branch` is the watched branch: a push to another one is ignored.
// An empty `branch` (not known yet) ignores no push.
// Never echoes the secret, the signature or the token in the verdict.
WebhookVerdict VerifyWebhook(const WebhookConfig& config, std::string_view branch,
                             const WebhookRequest& request);

// True when `authorization` is "Bearer <secret>" (scheme case-insensitive), compared in
// constant time.
bool BearerTokenMatches(const std::optional<std::string>& authorization, std::string_view secret);

// Constant-time equality for secrets: the time depends on the lengths only.
bool SecretsEqual(std::string_view a, std::string_view b);

// "sha256=<64 lowercase hex>" of HMAC-SHA256(secret, body), as GitHub sends it.
std::string GitHubSignature(std::string_view secret, std::string_view body);

}  // namespace rg::server
