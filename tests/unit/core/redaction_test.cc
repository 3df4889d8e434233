// What may be written (docs/security.md): Ray's message to its first line, known secrets redacted.

#include "reconciler/core/redaction.h"

#include <catch2/catch.hpp>

namespace rg::core {
namespace {

TEST_CASE("secret env var names follow docs/security.md, case-insensitive, as substrings") {
  for (const char* name :
       {"HF_TOKEN", "WANDB_API_KEY", "aws_secret_access_key", "DB_PASSWORD", "MYSQL_PASSWD",
        "PGPASS", "GCP_CREDENTIALS", "github_token", "RAY_AUTH_TOKEN", "APIKEY", "X_AUTH"}) {
    CHECK(IsSecretEnvName(name));
  }
  for (const char* name : {"HF_HOME", "PYTHONPATH", "WANDB_PROJECT", "NCCL_DEBUG", "VLLM_USE_V1"}) {
    CHECK_FALSE(IsSecretEnvName(name));
  }
}

TEST_CASE("Ray's message is cut to its first line and at most 300 characters") {
  CHECK(FirstLineOfMessage("") == "");
  CHECK(FirstLineOfMessage("Job finished successfully.") == "Job finished successfully.");
  CHECK(FirstLineOfMessage(
            "Job entrypoint command failed with exit code 1, last available logs (truncated to "
            "20,000 chars):\nHF_TOKEN=hf_abcdefghijkl\nTraceback ...\n") ==
        "Job entrypoint command failed with exit code 1, last available logs (truncated to "
        "20,000 chars):");
  CHECK(FirstLineOfMessage("  padded\r\nsecond") == "padded");
  CHECK(FirstLineOfMessage("\n\nleading blank lines\nthen more") == "leading blank lines");

  const std::string long_line(400, 'x');
  const std::string cut = FirstLineOfMessage(long_line);
  CHECK(cut.size() == kMaxMessageChars);
  CHECK(cut.ends_with("..."));
  CHECK(FirstLineOfMessage(std::string(300, 'y')) == std::string(300, 'y'));

  // Never cut inside a UTF-8 character.
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xc3\xa9";  // é, 2 bytes each
  const std::string cut_accents = FirstLineOfMessage(accents);
  CHECK(cut_accents.size() <= kMaxMessageChars);
  const std::string body = cut_accents.substr(0, cut_accents.size() - 3);
  CHECK(body.size() % 2 == 0);
  // Idempotent: a stored message read back and written again does not change.
  CHECK(FirstLineOfMessage(cut) == cut);
}

TEST_CASE("the redactor replaces every known secret value, the longest first") {
  Redactor r;
  r.Add("short");             // under 8 characters: never redacted (documented)
  r.Add("tok-1234567890\n");  // a token file's newline is not part of the secret
  r.Add("abcdefgh");
  r.Add("abcdefgh-longer-secret");
  CHECK(r.size() == 3);
  CHECK(r.Apply("a short tok-1234567890 x") == "a short <redacted> x");
  CHECK(r.Apply("abcdefgh-longer-secret and abcdefgh") == "<redacted> and <redacted>");
  CHECK(r.Apply("tok-1234567890tok-1234567890") == "<redacted><redacted>");
  CHECK(r.Apply("nothing here") == "nothing here");

  Redactor env;
  env.AddEnvVars({{"HF_TOKEN", "hf_0123456789"},
                  {"HF_HOME", "/private/hf-cache"},
                  {"WANDB_API_KEY", "0123456789abcdef"}});
  CHECK(env.Apply("HF_HOME=/private/hf-cache HF_TOKEN=hf_0123456789 k=0123456789abcdef") ==
        "HF_HOME=/private/hf-cache HF_TOKEN=<redacted> k=<redacted>");
  r.Merge(env);
  CHECK(r.size() == 5);
}

TEST_CASE("a secret shown escaped in text or markdown is redacted too") {
  Redactor r;
  r.Add("s3cr3t_va|ue*\x1b[x");
  CHECK(r.Apply("md: s3cr3t\\_va\\|ue\\*\\\\x1b\\[x.") == "md: <redacted>.");
  CHECK(r.Apply("text: s3cr3t_va|ue*\\x1b[x.") == "text: <redacted>.");
  CHECK(r.Apply(R"(json: "s3cr3t_va|ue*\u001b[x".)") == "json: \"<redacted>\".");
  // Merging copies the forms, it does not escape them again.
  Redactor merged;
  merged.Merge(r);
  merged.Merge(r);
  CHECK(merged.size() == r.size());
}

TEST_CASE("redacting in place gives what Apply gives and leaves a clean text where it is") {
  Redactor r;
  r.Add("abcdefgh");
  r.Add("abcdefgh-longer-secret");
  r.Add("zzzzzzzzzz");
  // Occurrences at both ends, back to back, overlapping ("zzzzzzzzzzz" holds one whole), and
  // a shorter secret inside a longer one.
  for (const std::string& text :
       {std::string("abcdefgh-longer-secret and abcdefgh"), std::string("abcdefghabcdefgh"),
        std::string("zzzzzzzzzzz tail zzzzzzzzzz"),
        std::string("x abcdefgh-longer-secretabcdefgh")}) {
    std::string in_place = text;
    r.ApplyInPlace(in_place);
    CHECK(in_place == r.Apply(text));
    CHECK(in_place.find("abcdefgh") == std::string::npos);
  }
  std::string in_place = "zzzzzzzzzzz tail zzzzzzzzzz";
  r.ApplyInPlace(in_place);
  CHECK(in_place == "<redacted>z tail <redacted>");

  // A large text with nothing to redact keeps its buffer: no copy of a plan's 37 MB.
  std::string clean(1 << 20, 'a');
  const char* const buffer = clean.data();
  r.ApplyInPlace(clean);
  CHECK(clean.data() == buffer);
  CHECK(clean.size() == size_t{1} << 20);
}

TEST_CASE("redact first, then cut: a secret across the 300th character is removed whole") {
  Redactor r;
  r.Add("SECRET-VALUE-0123456789");
  const std::string message = std::string(290, 'm') + "SECRET-VALUE-0123456789 tail\nlog";
  const std::string safe = r.SafeMessage(message);
  CHECK(safe.find("SECRET") == std::string::npos);
  CHECK(safe.find("0123") == std::string::npos);
  CHECK(safe.size() <= kMaxMessageChars);
}

TEST_CASE("the secrets of the desired state are the secret-named env vars of cluster and specs") {
  DesiredState d;
  d.cluster = RayConfig{};
  Value::Object env;
  env.emplace("WANDB_API_KEY", Value(std::string("wandb-abcdef123456")));
  env.emplace("HF_HOME", Value(std::string("/private/hf-cache")));
  d.cluster->runtime_env.as_object().emplace("env_vars", Value(std::move(env)));
  JobSpec spec;
  spec.env_vars = {{"HF_TOKEN", "hf_spec_0123456789"}, {"LOG_LEVEL", "debug-verbose"}};
  d.jobs.push_back(spec);
  Redactor r;
  r.AddDesiredState(d);
  CHECK(r.Apply("wandb-abcdef123456 hf_spec_0123456789 /private/hf-cache debug-verbose") ==
        "<redacted> <redacted> /private/hf-cache debug-verbose");
}

TEST_CASE("a status record is written with every message cut and redacted") {
  Redactor r;
  r.Add("ray-token-abcdefgh");
  StatusRecord rec;
  rec.message = "failed\nRAY_AUTH_TOKEN=ray-token-abcdefgh";
  rec.errors = {"jobs/a.yaml:1:1: error: got 'ray-token-abcdefgh'"};
  AttemptRecord a;
  a.message = "token ray-token-abcdefgh\nmore";
  rec.attempts.push_back(a);
  RedactRecord(rec, r);
  CHECK(rec.message == "failed");
  CHECK(rec.errors.at(0) == "jobs/a.yaml:1:1: error: got '<redacted>'");
  CHECK(rec.attempts.at(0).message == "token <redacted>");
}

}  // namespace
}  // namespace rg::core
