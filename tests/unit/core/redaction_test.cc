// What may be written (docs/security.md): Ray's message to its first line, known secrets redacted.

#include "reconciler/core/redaction.h"

#include <openssl/evp.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

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

// OpenSSL's base64 of `bytes` (RFC 4648 section 4, padded).
std::string OpenSslBase64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

TEST_CASE("base64 is RFC 4648's, as OpenSSL writes it, at every length and byte") {
  // RFC 4648 section 10's vectors.
  CHECK(Base64("") == "");
  CHECK(Base64("f") == "Zg==");
  CHECK(Base64("fo") == "Zm8=");
  CHECK(Base64("foo") == "Zm9v");
  CHECK(Base64("foobar") == "Zm9vYmFy");
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes += static_cast<char>((i * 37 + 11) & 0xFF);
    INFO(i);
    REQUIRE(Base64(bytes) == OpenSslBase64(bytes));
  }
  CHECK(Base64("\xfb\xff\xfe", true) == "-__-");
  CHECK(Base64("\xfb\xff\xfe") == "+//+");
}

TEST_CASE("a declared secret is redacted inside base64 text whatever its alignment") {
  const std::string secret = "wandb-value-0123456789";
  Redactor r;
  r.AddDeclared(secret);
  for (const std::string before : {"", "a", "ab", "abc", "{\"k\": \"x"}) {
    for (const std::string after : {"", "z", "yz", "\"}"}) {
      const std::string encoded = Base64(before + secret + after);
      const std::string out = r.Apply("Authorization: Basic " + encoded + " end");
      INFO(before << "|" << after << " -> " << out);
      CHECK(out.find("<redacted>") != std::string::npos);
      // What is left before it is the text before the secret and at most the one group that
      // holds bytes of both.
      const size_t at = out.find("<redacted>");
      CHECK(at - std::string("Authorization: Basic ").size() <= before.size() / 3 * 4 + 4);
    }
  }
  CHECK(r.Apply(Base64(secret)) == "<redacted>");
  CHECK(r.Apply(Base64(secret, true)) == "<redacted>");
}

TEST_CASE("a declared secret is redacted percent-encoded, in either hex case, and as a form") {
  const std::string secret = "p@ss w/rd+é%x";  // 8 bytes and more, characters to encode
  Redactor r;
  r.AddDeclared(secret);
  for (const std::string& form : {
           std::string("p%40ss%20w%2Frd%2B%C3%A9%25x"),
           std::string("p%40ss%20w%2frd%2b%c3%a9%25x"),
           std::string("p%40ss%20w/rd%2B%C3%A9%25x"),  // Python's quote keeps '/'
           std::string("p%40ss+w%2Frd%2B%C3%A9%25x"),  // a form: ' ' as '+'
           std::string("p%40ss+w%2frd%2b%c3%a9%25x"),
       }) {
    INFO(form);
    CHECK(r.Apply("https://x/?token=" + form + "&y=1") == "https://x/?token=<redacted>&y=1");
  }
}

TEST_CASE("a declared secret is redacted JSON-escaped, ASCII-only and escaped twice") {
  const std::string secret = "line\"one\\two\n\tthree é 😀";
  Redactor r;
  r.AddDeclared(secret);
  const std::string once = R"(line\"one\\two\n\tthree é 😀)";
  const std::string ascii = R"(line\"one\\two\n\tthree \u00e9 \ud83d\ude00)";
  const std::string twice = R"(line\\\"one\\\\two\\n\\tthree é 😀)";
  for (const std::string& form : {secret, once, ascii, twice}) {
    INFO(form);
    CHECK(r.Apply("{\"v\": \"" + form + "\"}") == "{\"v\": \"<redacted>\"}");
  }
}

TEST_CASE("a declared secret's forms survive a merge, and short forms are never patterns") {
  Redactor declared;
  declared.AddDeclared("wandb-value-0123456789");
  Redactor merged;
  merged.Merge(declared);
  CHECK(merged.Apply(Base64("xwandb-value-0123456789")).find("<redacted>") != std::string::npos);
  for (const std::string& form : SecretValueForms("abcdefgh")) {
    CHECK(form.size() >= kMinSecretLength);
    CHECK(form != "abcdefgh");
  }
  // A plain secret keeps its own forms only: base64 is for declared secrets.
  Redactor plain;
  plain.Add("wandb-value-0123456789");
  CHECK(plain.Apply(Base64("wandb-value-0123456789")) == Base64("wandb-value-0123456789"));
}

}  // namespace
}  // namespace rg::core
