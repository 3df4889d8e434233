#include "reconciler/adapters/ray_client_options.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace {

using rg::adapters::RayClientFlags;
using rg::adapters::ResolveRayClientOptions;
using rg::core::ErrorKind;

// Sets (or unsets, with nullopt) the Ray variables for one test and restores them after.
class RayEnv {
 public:
  RayEnv() {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
      unsetenv(name);
    }
  }
  ~RayEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }
  void Set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

 private:
  static constexpr const char* kNames[] = {"RAY_API_SERVER_ADDRESS", "RAY_ADDRESS",
                                           "RAY_AUTH_TOKEN", "RAY_JOB_HEADERS"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

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
