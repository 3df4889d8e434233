// The webhook verifier on a request described by the input, in a text form that seeds can be
// written in by hand:
//
//   mode: github              pseudo-headers: the verifier's config and the watched branch
//   secret: s3cret-Token
//   branch: main
//   max-body: 4096            also "no-secret: yes" and "too-large: yes"
//   sign: yes                 X-Hub-Signature-256 becomes the true signature of the body
//   X-Hub-Signature-256: sha256=...
//   X-GitHub-Event: push
//   X-Gitlab-Token: ...
//   X-Gitlab-Event: Push Hook
//   Authorization: Bearer ...
//                             an empty line, then the raw body
//   {"ref": "refs/heads/main"}
//
// Properties: nothing crashes or throws; 202 exactly when the verdict triggers a pass, a
// reject reason exactly on 4xx, and the response is a JSON object with one of "accepted",
// "ignored", "error"; no request triggers a pass without a credential that matches the
// secret; a truly signed GitHub request is never refused for its signature; and the secret
// never appears in the response unless the request itself carried it elsewhere.

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "reconciler/server/webhook_verifier.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using rg::server::WebhookAuthMode;
using rg::server::WebhookConfig;
using rg::server::WebhookRequest;
using rg::server::WebhookVerdict;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

struct FuzzRequest {
  WebhookConfig config;
  std::string branch;
  bool sign = false;
  WebhookRequest request;
};

// Header lines up to the first empty line, the body after it.
FuzzRequest ParseInput(std::string_view input) {
  FuzzRequest r;
  r.config.secret = "s3cret-Token";
  while (!input.empty()) {
    const size_t eol = input.find('\n');
    std::string_view line = input.substr(0, eol);
    input = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
    if (TrimBlanks(line).empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = Lower(TrimBlanks(line.substr(0, colon)));
    const std::string value(TrimBlanks(line.substr(colon + 1)));
    if (name == "mode") {
      r.config.mode = rg::server::ParseWebhookAuthMode(value).value_or(WebhookAuthMode::kAuto);
    } else if (name == "secret") {
      r.config.secret = value;  // may be empty: the verifier must still refuse what fails
    } else if (name == "no-secret") {
      r.config.secret.reset();
    } else if (name == "branch") {
      r.branch = value;
    } else if (name == "max-body") {
      size_t limit = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
      if (ec == std::errc()) r.config.max_body_bytes = limit;
    } else if (name == "too-large") {
      r.request.body_too_large = true;
    } else if (name == "sign") {
      r.sign = true;
    } else if (name == "x-hub-signature-256") {
      r.request.github_signature = value;
    } else if (name == "x-github-event") {
      r.request.github_event = value;
    } else if (name == "x-gitlab-token") {
      r.request.gitlab_token = value;
    } else if (name == "x-gitlab-event") {
      r.request.gitlab_event = value;
    } else if (name == "authorization") {
      r.request.authorization = value;
    }
  }
  r.request.body = input;
  return r;
}

// Everything a verdict says in its own words.
constexpr std::string_view kVerdictWords =
    "{\"accepted\":\"reconcile pass queued\"} {\"ignored\":\"ping\"} {\"error\":\"webhook not "
    "configured\"} body larger than  bytes, missing signature or token, X-Hub-Signature-256 is not "
    "sha256=<hex>, signature does not match, token does not match, Authorization is not a bearer "
    "token, body is not JSON, \\\"ref\\\" is not a string, empty body, event push to , watching "
    "refs/heads/";

bool Holds(const std::optional<std::string>& text, std::string_view part) {
  return text && text->find(part) != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzRequest in = ParseInput(std::string_view(reinterpret_cast<const char*>(data), size));
  WebhookRequest& request = in.request;
  if (in.sign && in.config.secret) {
    request.github_signature = rg::server::GitHubSignature(*in.config.secret, request.body);
  }

  const WebhookVerdict v = rg::server::VerifyWebhook(in.config, in.branch, request);

  RG_FUZZ_CHECK(v.trigger == (v.http_status == 202));
  const bool client_error = v.http_status >= 400 && v.http_status < 500;
  RG_FUZZ_CHECK(client_error == !v.reject_reason.empty());
  RG_FUZZ_CHECK(v.http_status == 200 || v.http_status == 202 || client_error);

  const auto response = nlohmann::json::parse(v.response_json, nullptr, /*allow_exceptions=*/false);
  RG_FUZZ_CHECK(response.is_object() && response.size() == 1);
  RG_FUZZ_CHECK(response.contains(v.http_status == 202   ? "accepted"
                                  : v.http_status == 200 ? "ignored"
                                                         : "error"));

  if (!in.config.secret) {
    RG_FUZZ_CHECK(v.http_status == 404);
    return 0;
  }
  const std::string& secret = *in.config.secret;

  if (v.trigger) {
    const bool github_ok =
        request.github_signature && Lower(TrimBlanks(*request.github_signature)) ==
                                        rg::server::GitHubSignature(secret, request.body);
    const bool gitlab_ok = request.gitlab_token && *request.gitlab_token == secret;
    const bool bearer_ok = Holds(request.authorization, secret);
    RG_FUZZ_CHECK(github_ok || gitlab_ok || bearer_ok);
  }

  const bool github_scheme =
      in.config.mode == WebhookAuthMode::kGitHub || in.config.mode == WebhookAuthMode::kAuto;
  if (in.sign && github_scheme && !request.body_too_large &&
      request.body.size() <= in.config.max_body_bytes) {
    RG_FUZZ_CHECK(v.reject_reason != "bad_signature" && v.reject_reason != "malformed_signature");
    RG_FUZZ_CHECK(v.reject_reason != "missing_signature");
  }

  // The response may quote the event headers, the pushed ref (from the body), the branch and
  // the body limit, in JSON escapes (invalid UTF-8 may become U+FFFD). A secret with a byte none of
  // these hold cannot get into the response legitimately.
  const std::string legitimate =
      std::string(kVerdictWords) + "\\u0123456789abcdef\xEF\xBF\xBD" + std::string(request.body) +
      in.branch + request.github_event.value_or("") + request.gitlab_event.value_or("");
  if (secret.find_first_not_of(legitimate) != std::string::npos) {
    RG_FUZZ_CHECK(v.response_json.find(secret) == std::string::npos);
  }
  return 0;
}
