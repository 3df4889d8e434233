#include "reconciler/server/webhook_verifier.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/test_files.h"

using rg::server::GitHubSignature;
using rg::server::VerifyWebhook;
using rg::server::WebhookAuthMode;
using rg::server::WebhookConfig;
using rg::server::WebhookRequest;
using rg::server::WebhookVerdict;

namespace {

constexpr char kSecret[] = "s3cret-Token";
const std::string kPushMain = R"({"ref": "refs/heads/main", "after": "abc"})";

WebhookConfig Config(WebhookAuthMode mode = WebhookAuthMode::kAuto) {
  WebhookConfig c;
  c.secret = kSecret;
  c.mode = mode;
  return c;
}

// The request keeps a view of `body`: pass literals or strings that outlive it.
WebhookRequest GitHub(std::string_view body, std::string event = "push") {
  WebhookRequest r;
  r.body = body;
  r.github_signature = GitHubSignature(kSecret, body);
  r.github_event = std::move(event);
  return r;
}

WebhookRequest GitLab(std::string_view body, std::string token = kSecret) {
  WebhookRequest r;
  r.body = body;
  r.gitlab_token = std::move(token);
  r.gitlab_event = "Push Hook";
  return r;
}

WebhookRequest Bearer(std::string_view body, std::string header) {
  WebhookRequest r;
  r.body = body;
  r.authorization = std::move(header);
  return r;
}

std::string Field(const WebhookVerdict& v, const char* key) {
  const auto j = nlohmann::json::parse(v.response_json);
  return j.contains(key) ? j[key].get<std::string>() : "";
}

}  // namespace

TEST_CASE("GitHub signature is the HMAC-SHA256 of the body as lowercase hex") {
  // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
  CHECK(GitHubSignature("Jefe", "what do ya want for nothing?") ==
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("GitHub push with a good signature to the watched branch triggers a pass") {
  const WebhookVerdict v = VerifyWebhook(Config(), "main", GitHub(kPushMain));
  CHECK(v.http_status == 202);
  CHECK(v.trigger);
  CHECK(v.source == "webhook:github");
  CHECK(v.reject_reason.empty());
  CHECK(Field(v, "accepted") != "");
}

TEST_CASE("GitHub signature in uppercase hex is accepted") {
  WebhookRequest r = GitHub(kPushMain);
  std::string sig = *r.github_signature;
  for (size_t i = 7; i < sig.size(); ++i) sig[i] = static_cast<char>(std::toupper(sig[i]));
  r.github_signature = sig;
  CHECK(VerifyWebhook(Config(), "main", r).http_status == 202);
}

TEST_CASE("GitHub signature of another body is 401 and triggers nothing") {
  WebhookRequest r = GitHub(kPushMain);
  r.github_signature = GitHubSignature(kSecret, kPushMain + " ");
  const WebhookVerdict v = VerifyWebhook(Config(), "main", r);
  CHECK(v.http_status == 401);
  CHECK_FALSE(v.trigger);
  CHECK(v.reject_reason == "bad_signature");
}

TEST_CASE("GitHub signature made with another secret is 401") {
  WebhookRequest r = GitHub(kPushMain);
  r.github_signature = GitHubSignature("other-secret", kPushMain);
  CHECK(VerifyWebhook(Config(), "main", r).reject_reason == "bad_signature");
}

TEST_CASE("a malformed GitHub signature is 400") {
  for (const std::string& bad : std::vector<std::string>{
           "sha1=0123", "sha256=zz" + std::string(62, '0'), "sha256=" + std::string(63, 'a'),
           "sha256=" + std::string(65, 'a'), std::string(64, 'a'), ""}) {
    INFO(bad);
    WebhookRequest r = GitHub(kPushMain);
    r.github_signature = bad;
    const WebhookVerdict v = VerifyWebhook(Config(), "main", r);
    CHECK(v.http_status == 400);
    CHECK(v.reject_reason == "malformed_signature");
    CHECK_FALSE(v.trigger);
  }
}

TEST_CASE("a request without any signature is 401 missing_signature") {
  WebhookRequest r;
  r.body = kPushMain;
  const WebhookVerdict v = VerifyWebhook(Config(), "main", r);
  CHECK(v.http_status == 401);
  CHECK(v.reject_reason == "missing_signature");
}

TEST_CASE("a GitHub ping is 200, ignored, and triggers nothing") {
  const WebhookVerdict v = VerifyWebhook(Config(), "main", GitHub(R"({"zen": "x"})", "ping"));
  CHECK(v.http_status == 200);
  CHECK_FALSE(v.trigger);
  CHECK(Field(v, "ignored") == "ping");
}

TEST_CASE("a ping with a wrong signature is still 401") {
  WebhookRequest r = GitHub(R"({"zen": "x"})", "ping");
  r.github_signature = GitHubSignature("nope", r.body);
  CHECK(VerifyWebhook(Config(), "main", r).http_status == 401);
}

TEST_CASE("a verified push to another branch is 200 ignored") {
  const WebhookVerdict v =
      VerifyWebhook(Config(), "main", GitHub(R"({"ref": "refs/heads/feature"})"));
  CHECK(v.http_status == 200);
  CHECK_FALSE(v.trigger);
  CHECK(Field(v, "ignored").find("refs/heads/feature") != std::string::npos);
}

TEST_CASE("with the watched branch unknown, a verified push to any branch triggers a pass") {
  const WebhookVerdict v = VerifyWebhook(Config(), "", GitHub(R"({"ref": "refs/heads/feature"})"));
  CHECK(v.http_status == 202);
  CHECK(v.trigger);
}

TEST_CASE("a tag push whose name equals the branch is not a push to the branch") {
  const WebhookVerdict v = VerifyWebhook(Config(), "main", GitHub(R"({"ref": "refs/tags/main"})"));
  CHECK(v.http_status == 200);
  CHECK_FALSE(v.trigger);
}

TEST_CASE("other GitHub events are ignored") {
  const WebhookVerdict v = VerifyWebhook(Config(), "main", GitHub(kPushMain, "pull_request"));
  CHECK(v.http_status == 200);
  CHECK_FALSE(v.trigger);
}

TEST_CASE("an event header that is not UTF-8 is ignored with a JSON answer, not an exception") {
  const WebhookVerdict github =
      VerifyWebhook(Config(), "main", GitHub(kPushMain, std::string("push\xD8", 5)));
  CHECK(github.http_status == 200);
  CHECK_FALSE(github.trigger);
  CHECK(Field(github, "ignored") == "event push\xEF\xBF\xBD");

  WebhookRequest gitlab = GitLab(kPushMain);
  gitlab.gitlab_event = "\xFF\xFEHook";
  const WebhookVerdict v = VerifyWebhook(Config(), "main", gitlab);
  CHECK(v.http_status == 200);
  CHECK(nlohmann::json::parse(v.response_json).contains("ignored"));
}

TEST_CASE("a verified body that is not JSON is 400 malformed_payload") {
  const WebhookVerdict v = VerifyWebhook(Config(), "main", GitHub("{not json"));
  CHECK(v.http_status == 400);
  CHECK(v.reject_reason == "malformed_payload");
  CHECK_FALSE(v.trigger);
}

TEST_CASE("a ref that is not a string is 400") {
  CHECK(VerifyWebhook(Config(), "main", GitHub(R"({"ref": 7})")).http_status == 400);
}

TEST_CASE("GitLab token equal to the secret triggers, another token is 401") {
  const WebhookVerdict good = VerifyWebhook(Config(), "main", GitLab(kPushMain));
  CHECK(good.http_status == 202);
  CHECK(good.source == "webhook:gitlab");
  CHECK(good.trigger);
  for (const std::string bad : {"", "s3cret-token", "s3cret-Token ", "s3cret-Toke", "x"}) {
    INFO(bad);
    const WebhookVerdict v = VerifyWebhook(Config(), "main", GitLab(kPushMain, bad));
    CHECK(v.http_status == 401);
    CHECK(v.reject_reason == "bad_signature");
    CHECK_FALSE(v.trigger);
  }
}

TEST_CASE("GitLab push to another branch and other GitLab events are ignored") {
  CHECK(VerifyWebhook(Config(), "main", GitLab(R"({"ref": "refs/heads/dev"})")).http_status == 200);
  WebhookRequest r = GitLab(kPushMain);
  r.gitlab_event = "Merge Request Hook";
  const WebhookVerdict v = VerifyWebhook(Config(), "main", r);
  CHECK(v.http_status == 200);
  CHECK_FALSE(v.trigger);
}

TEST_CASE("a bearer token equal to the secret triggers, with or without a body") {
  CHECK(VerifyWebhook(Config(), "main", Bearer("", std::string("Bearer ") + kSecret)).trigger);
  CHECK(VerifyWebhook(Config(), "main", Bearer("", std::string("bearer ") + kSecret)).trigger);
  const WebhookVerdict v =
      VerifyWebhook(Config(), "main", Bearer(kPushMain, std::string("Bearer ") + kSecret));
  CHECK(v.http_status == 202);
  CHECK(v.source == "webhook:bearer");
}

TEST_CASE("a wrong or non-bearer Authorization is 401") {
  CHECK(VerifyWebhook(Config(), "main", Bearer("", "Bearer wrong")).reject_reason ==
        "bad_signature");
  CHECK(VerifyWebhook(Config(), "main", Bearer("", std::string("Basic ") + kSecret)).http_status ==
        401);
  CHECK(VerifyWebhook(Config(), "main", Bearer("", "Bearer ")).http_status == 401);
}

TEST_CASE("a fixed mode accepts only its own scheme") {
  CHECK(VerifyWebhook(Config(WebhookAuthMode::kGitHub), "main", GitHub(kPushMain)).trigger);
  const WebhookVerdict gitlab_in_github_mode =
      VerifyWebhook(Config(WebhookAuthMode::kGitHub), "main", GitLab(kPushMain));
  CHECK(gitlab_in_github_mode.http_status == 401);
  CHECK(gitlab_in_github_mode.reject_reason == "missing_signature");
  CHECK(VerifyWebhook(Config(WebhookAuthMode::kGitLab), "main", GitHub(kPushMain)).http_status ==
        401);
  CHECK(VerifyWebhook(Config(WebhookAuthMode::kBearer), "main", GitLab(kPushMain)).http_status ==
        401);
  CHECK(VerifyWebhook(Config(WebhookAuthMode::kGitLab), "main", GitLab(kPushMain)).trigger);
}

TEST_CASE("in auto mode a wrong GitHub signature is not rescued by a good bearer token") {
  WebhookRequest r = GitHub(kPushMain);
  r.github_signature = GitHubSignature("wrong", kPushMain);
  r.authorization = std::string("Bearer ") + kSecret;
  CHECK(VerifyWebhook(Config(), "main", r).http_status == 401);
}

TEST_CASE("an oversized body is 413 before any signature check") {
  WebhookConfig c = Config();
  c.max_body_bytes = 16;
  const std::string body(17, 'x');
  WebhookRequest r = GitHub(body);
  r.github_signature = "garbage";
  const WebhookVerdict v = VerifyWebhook(c, "main", r);
  CHECK(v.http_status == 413);
  CHECK(v.reject_reason == "too_large");
  WebhookRequest flagged = GitHub(kPushMain);
  flagged.body_too_large = true;
  CHECK(VerifyWebhook(Config(), "main", flagged).http_status == 413);
  c.max_body_bytes = kPushMain.size();
  CHECK(VerifyWebhook(c, "main", GitHub(kPushMain)).http_status == 202);
}

TEST_CASE("without a secret the webhook does not exist: 404 whatever the request") {
  WebhookConfig c;
  const WebhookVerdict v = VerifyWebhook(c, "main", GitHub(kPushMain));
  CHECK(v.http_status == 404);
  CHECK(v.reject_reason == "disabled");
  CHECK_FALSE(v.trigger);
}

TEST_CASE("verdicts never contain the secret or the signature") {
  WebhookRequest r = GitHub(R"({"ref": "refs/heads/other"})");
  const std::string sig = *r.github_signature;
  for (const WebhookVerdict& v :
       {VerifyWebhook(Config(), "main", r), VerifyWebhook(Config(), "main", GitLab("{", "bad")),
        VerifyWebhook(Config(), "main", GitLab("{"))}) {
    CHECK(v.response_json.find(kSecret) == std::string::npos);
    CHECK(v.response_json.find(sig.substr(7)) == std::string::npos);
    CHECK(v.response_json.find("bad") == std::string::npos);
  }
}

TEST_CASE("SecretsEqual compares content and length") {
  using rg::server::SecretsEqual;
  CHECK(SecretsEqual("abc", "abc"));
  CHECK_FALSE(SecretsEqual("abc", "abd"));
  CHECK_FALSE(SecretsEqual("abc", "abcd"));
  CHECK_FALSE(SecretsEqual("", "a"));
  CHECK(SecretsEqual("", ""));
}

TEST_CASE("auth modes parse from their names and back") {
  for (const auto m : {WebhookAuthMode::kAuto, WebhookAuthMode::kGitHub, WebhookAuthMode::kGitLab,
                       WebhookAuthMode::kBearer}) {
    CHECK(rg::server::ParseWebhookAuthMode(rg::server::WebhookAuthModeName(m)) == m);
  }
  CHECK_FALSE(rg::server::ParseWebhookAuthMode("GitHub").has_value());
}

TEST_CASE("the secret file loses its trailing newline, an empty or missing file is an error") {
  const rg::testing::TempDir tmp;
  const std::filesystem::path dir = tmp.dir();
  const auto write = [&](const char* name, const std::string& content) {
    std::ofstream(dir / name, std::ios::binary) << content;
    return (dir / name).string();
  };
  auto crlf = rg::server::ReadWebhookSecretFile(write("crlf", "abc def\r\n"));
  REQUIRE(crlf.ok());
  CHECK(*crlf == "abc def");
  auto plain = rg::server::ReadWebhookSecretFile(write("plain", "xyz"));
  REQUIRE(plain.ok());
  CHECK(*plain == "xyz");
  auto empty = rg::server::ReadWebhookSecretFile(write("empty", "\n"));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().IsInvalidInput());
  CHECK_FALSE(rg::server::ReadWebhookSecretFile((dir / "missing").string()).ok());
}

TEST_CASE("BearerTokenMatches wants the bearer scheme and the exact secret") {
  using rg::server::BearerTokenMatches;
  CHECK(BearerTokenMatches(std::string("Bearer abc"), "abc"));
  CHECK(BearerTokenMatches(std::string("BEARER  abc "), "abc"));
  CHECK_FALSE(BearerTokenMatches(std::nullopt, "abc"));
  CHECK_FALSE(BearerTokenMatches(std::string("Basic abc"), "abc"));
  CHECK_FALSE(BearerTokenMatches(std::string("Bearer abcd"), "abc"));
  CHECK_FALSE(BearerTokenMatches(std::string("abc"), "abc"));
}
