#include "reconciler/adapters/ray_client_options.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/support/ray_env.h"

namespace {

using rg::adapters::RayClientFlags;
using rg::adapters::ResolveRayClientOptions;
using rg::core::ErrorKind;
using rg::testing::RayEnv;

std::string TempFile(const std::string& name, const std::string& content) {
  auto path = std::filesystem::temp_directory_path() /
              ("rg-options-" + std::to_string(getpid()) + "-" + name);
  std::ofstream(path) << content;
  return path.string();
}

TEST_CASE("address precedence: flag, RAY_API_SERVER_ADDRESS, RAY_ADDRESS, fallback", "[options]") {
  RayEnv env;
  RayClientFlags flags;
  flags.fallback_address = "http://fallback:8265";
  CHECK(ResolveRayClientOptions(flags)->address == "http://fallback:8265");
  env.Set("RAY_ADDRESS", "http://ray-address:8265");
  CHECK(ResolveRayClientOptions(flags)->address == "http://ray-address:8265");
  env.Set("RAY_API_SERVER_ADDRESS", "http://api-server:8265");
  CHECK(ResolveRayClientOptions(flags)->address == "http://api-server:8265");
  flags.address = "http://flag:8265";
  CHECK(ResolveRayClientOptions(flags)->address == "http://flag:8265");
}

TEST_CASE("no address anywhere resolves to an empty address", "[options]") {
  RayEnv env;
  auto o = ResolveRayClientOptions(RayClientFlags{});
  REQUIRE(o.ok());
  CHECK(o->address.empty());
  CHECK_FALSE(o->token.has_value());
  CHECK(o->headers.empty());
}

TEST_CASE("addresses are normalised to a Jobs API base URL", "[options]") {
  RayEnv env;
  struct Row {
    const char* given;
    const char* want;
  };
  const Row rows[] = {
      {"http://127.0.0.1:8265/", "http://127.0.0.1:8265"},
      {"https://ray.example.com//", "https://ray.example.com"},
      {"127.0.0.1:8265", "http://127.0.0.1:8265"},
      {"ray://head.internal:10001", "http://head.internal:8265"},
      {"ray://head.internal", "http://head.internal:8265"},
      {"  http://spaced:8265  ", "http://spaced:8265"},
      {"https://proxy.example.com/ray/", "https://proxy.example.com/ray"},
  };
  for (const Row& row : rows) {
    RayClientFlags flags;
    flags.address = row.given;
    auto o = ResolveRayClientOptions(flags);
    INFO(row.given);
    REQUIRE(o.ok());
    CHECK(o->address == row.want);
  }
}

TEST_CASE("unusable addresses are errors that name their source", "[options]") {
  RayEnv env;
  RayClientFlags flags;
  flags.address = "ftp://head:8265";
  auto bad_flag = ResolveRayClientOptions(flags);
  REQUIRE_FALSE(bad_flag.ok());
  CHECK(bad_flag.error().kind() == ErrorKind::kInvalidInput);
  CHECK(bad_flag.error().message().find("--ray-address") != std::string::npos);

  env.Set("RAY_ADDRESS", "auto");
  auto bad_env = ResolveRayClientOptions(RayClientFlags{});
  REQUIRE_FALSE(bad_env.ok());
  CHECK(bad_env.error().message().find("RAY_ADDRESS") != std::string::npos);
}

TEST_CASE("the resolution says where the address came from", "[options]") {
  using rg::adapters::AddressSource;
  RayEnv env;
  RayClientFlags flags;
  CHECK(ResolveRayClientOptions(flags)->address_source == AddressSource::kNone);
  flags.fallback_address = "http://fallback:8265";
  CHECK(ResolveRayClientOptions(flags)->address_source == AddressSource::kFallback);
  env.Set("RAY_ADDRESS", "http://ray-address:8265");
  CHECK(ResolveRayClientOptions(flags)->address_source == AddressSource::kEnvironment);
  env.Set("RAY_API_SERVER_ADDRESS", "http://api-server:8265");
  CHECK(ResolveRayClientOptions(flags)->address_source == AddressSource::kEnvironment);
  flags.address = "http://flag:8265";
  CHECK(ResolveRayClientOptions(flags)->address_source == AddressSource::kFlag);
}

TEST_CASE("the token and the extra headers are the credentials", "[options]") {
  RayEnv env;
  CHECK_FALSE(ResolveRayClientOptions(RayClientFlags{})->HasCredentials());
  env.Set("RAY_AUTH_TOKEN", "tok-1234567890");
  CHECK(ResolveRayClientOptions(RayClientFlags{})->HasCredentials());
  env.Set("RAY_AUTH_TOKEN", "");
  env.Set("RAY_JOB_HEADERS", R"({"X-Api-Key": "k-1234567890"})");
  CHECK(ResolveRayClientOptions(RayClientFlags{})->HasCredentials());
}

// A password in an address would ride along wherever the address goes (logs, records, a
// host lookup): it is refused from every source, and the refusal never shows it.
TEST_CASE("an address with credentials in it is refused from every source", "[options]") {
  RayEnv env;
  const std::string secret = "pw-5e1f0c2d9a";
  for (const std::string& given :
       {"http://user:" + secret + "@head:8265", "https://" + secret + "@head:8265/ray",
        "ray://user:" + secret + "@head:10001", "user:" + secret + "@head:8265"}) {
    INFO(given);
    RayClientFlags flag;
    flag.address = given;
    auto from_flag = ResolveRayClientOptions(flag);
    REQUIRE_FALSE(from_flag.ok());
    CHECK(from_flag.error().kind() == ErrorKind::kInvalidInput);
    CHECK(from_flag.error().message().find("--ray-address") != std::string::npos);
    CHECK(from_flag.error().message().find("--ray-token-file") != std::string::npos);
    CHECK(from_flag.error().message().find(secret) == std::string::npos);

    RayClientFlags fallback;
    fallback.fallback_address = given;
    auto from_file = ResolveRayClientOptions(fallback);
    REQUIRE_FALSE(from_file.ok());
    CHECK(from_file.error().message().find("cluster file") != std::string::npos);
    CHECK(from_file.error().message().find(secret) == std::string::npos);

    env.Set("RAY_ADDRESS", given);
    auto from_env = ResolveRayClientOptions(RayClientFlags{});
    REQUIRE_FALSE(from_env.ok());
    CHECK(from_env.error().message().find("RAY_ADDRESS") != std::string::npos);
    CHECK(from_env.error().message().find(secret) == std::string::npos);
    env.Set("RAY_ADDRESS", "");
  }
  // An @ in the path is not user info.
  RayClientFlags path;
  path.address = "https://proxy.example.com/team@rl/ray";
  CHECK(ResolveRayClientOptions(path).ok());
}

TEST_CASE("an address with a query or a fragment is refused", "[options]") {
  RayEnv env;
  for (const char* given : {"http://head:8265/?x=1", "http://head:8265#top", "http://head?a"}) {
    INFO(given);
    RayClientFlags flags;
    flags.address = given;
    auto o = ResolveRayClientOptions(flags);
    REQUIRE_FALSE(o.ok());
    CHECK(o.error().kind() == ErrorKind::kInvalidInput);
    CHECK(o.error().message().find("--ray-address") != std::string::npos);
  }
}

TEST_CASE("the token comes from the token file, trimmed, before RAY_AUTH_TOKEN", "[options]") {
  RayEnv env;
  env.Set("RAY_AUTH_TOKEN", "from-env");
  CHECK(ResolveRayClientOptions(RayClientFlags{})->token == "from-env");

  RayClientFlags flags;
  flags.token_file = TempFile("token", "  from-file\n\n");
  CHECK(ResolveRayClientOptions(flags)->token == "from-file");
  std::filesystem::remove(flags.token_file);
}

TEST_CASE("an unreadable or empty token file is an error naming the file", "[options]") {
  RayEnv env;
  RayClientFlags flags;
  flags.token_file = "/nonexistent/dir/token";
  auto missing = ResolveRayClientOptions(flags);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind() == ErrorKind::kInvalidInput);
  CHECK(missing.error().message().find("/nonexistent/dir/token") != std::string::npos);

  flags.token_file = TempFile("empty-token", " \n");
  auto empty = ResolveRayClientOptions(flags);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message().find(flags.token_file) != std::string::npos);
  std::filesystem::remove(flags.token_file);
}

TEST_CASE("headers come from --ray-header, else from RAY_JOB_HEADERS", "[options]") {
  RayEnv env;
  env.Set("RAY_JOB_HEADERS", R"({"X-From-Env": "1", "Cookie": "a=b"})");
  auto from_env = ResolveRayClientOptions(RayClientFlags{});
  REQUIRE(from_env.ok());
  CHECK(from_env->headers.at("X-From-Env") == "1");
  CHECK(from_env->headers.at("Cookie") == "a=b");

  RayClientFlags flags;
  flags.headers = {"X-Team=rl", "X-Query=a=b"};
  auto from_flags = ResolveRayClientOptions(flags);
  REQUIRE(from_flags.ok());
  CHECK(from_flags->headers.size() == 2);
  CHECK(from_flags->headers.at("X-Team") == "rl");
  CHECK(from_flags->headers.at("X-Query") == "a=b");
}

TEST_CASE("malformed headers are errors naming the flag or variable", "[options]") {
  RayEnv env;
  RayClientFlags flags;
  flags.headers = {"no-equals-sign"};
  auto bad_flag = ResolveRayClientOptions(flags);
  REQUIRE_FALSE(bad_flag.ok());
  CHECK(bad_flag.error().message().find("--ray-header") != std::string::npos);

  for (const char* text : {"{not json", "[\"a\"]", R"({"X-N": 1})"}) {
    env.Set("RAY_JOB_HEADERS", text);
    auto bad_env = ResolveRayClientOptions(RayClientFlags{});
    INFO(text);
    REQUIRE_FALSE(bad_env.ok());
    CHECK(bad_env.error().kind() == ErrorKind::kInvalidInput);
    CHECK(bad_env.error().message().find("RAY_JOB_HEADERS") != std::string::npos);
  }
}

TEST_CASE("TLS settings pass through and a missing CA file is an error", "[options]") {
  RayEnv env;
  RayClientFlags flags;
  flags.address = "https://head:8265";
  flags.insecure = true;
  auto insecure = ResolveRayClientOptions(flags);
  REQUIRE(insecure.ok());
  CHECK(insecure->insecure);

  flags.ca_file = "/nonexistent/ca.pem";
  auto missing = ResolveRayClientOptions(flags);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("/nonexistent/ca.pem") != std::string::npos);

  flags.ca_file = TempFile("ca.pem", "-----BEGIN CERTIFICATE-----\n");
  auto with_ca = ResolveRayClientOptions(flags);
  REQUIRE(with_ca.ok());
  CHECK(with_ca->ca_file == flags.ca_file);
  std::filesystem::remove(flags.ca_file);
}

}  // namespace
