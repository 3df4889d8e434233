#include "reconciler/adapters/ray_client_options.h"

#include <array>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "reconciler/core/render.h"

namespace rg::adapters {
namespace {

constexpr std::string_view kSpace = " \t\r\n";
constexpr std::string_view kDashboardPort = "8265";

std::string Trim(std::string_view s) {
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return "";
  size_t end = s.find_last_not_of(kSpace);
  return std::string(s.substr(begin, end - begin + 1));
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : Trim(v);
}

// host[:port][/path] of an address without its scheme.
std::string HostOf(std::string_view authority_and_path) {
  std::string_view authority = authority_and_path.substr(0, authority_and_path.find('/'));
  if (!authority.empty() && authority.front() == '[') {  // [ipv6]:port
    size_t close = authority.find(']');
    return std::string(
        authority.substr(0, close == std::string_view::npos ? authority.size() : close + 1));
  }
  return std::string(authority.substr(0, authority.find(':')));
}

// User info would carry a password wherever the address goes (a log line, a record, a host
// lookup); a query or a fragment would turn the paths the client appends into something else.
// The refusal shows the address without its credentials.
core::Status CheckAuthorityAndPath(const std::string& address, std::string_view rest,
                                   const std::string& source) {
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos) {
    return core::Error::InvalidInput(
        source + ": the address '" + core::StripUrlCredentials(address) +
        "' holds credentials (user:password@); give the Ray token with --ray-token-file (or "
        "RAY_AUTH_TOKEN) and a proxy's credentials with --ray-header (or RAY_JOB_HEADERS)");
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return core::Error::InvalidInput(source + ": a Ray address has no query or fragment: '" +
                                     address + "'");
  }
  return core::OkStatus();
}

// Turns what a person or Ray's tooling writes into the Jobs API base URL, or explains why not.
core::Result<std::string> NormalizeAddress(std::string address, const std::string& source) {
  while (!address.empty() && address.back() == '/') address.pop_back();
  if (address.empty()) return core::Error::InvalidInput(source + ": empty Ray address");
  size_t scheme_end = address.find("://");
  if (scheme_end == std::string::npos) {
    if (address == "auto" || address == "local") {
      return core::Error::InvalidInput(
          source + ": '" + address +
          "' needs Ray's own cluster discovery; give the dashboard URL, e.g. "
          "http://127.0.0.1:8265");
    }
    address = "http://" + address;
    scheme_end = 4;
  }
  std::string scheme = address.substr(0, scheme_end);
  std::string rest = address.substr(scheme_end + 3);
  if (rest.empty()) return core::Error::InvalidInput(source + ": no host in '" + address + "'");
  if (core::Status st = CheckAuthorityAndPath(address, rest, source); !st) return st.error();
  if (scheme == "ray") {
    // A Ray Client address (ray://head:10001) names the head, whose Jobs API is the dashboard.
    return "http://" + HostOf(rest) + ":" + std::string(kDashboardPort);
  }
  if (scheme != "http" && scheme != "https") {
    return core::Error::InvalidInput(source + ": unsupported scheme '" + scheme + "' in '" +
                                     address + "' (use http://, https:// or ray://)");
  }
  return address;
}

core::Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return core::Error::InvalidInput("--ray-token-file: cannot read '" + path + "'");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return core::Error::InvalidInput("--ray-token-file: cannot read '" + path + "'");
  std::string token = Trim(text.str());
  if (token.empty()) return core::Error::InvalidInput("--ray-token-file: '" + path + "' is empty");
  return token;
}

core::Status ParseHeaderFlags(const std::vector<std::string>& flags,
                              std::map<std::string, std::string>& out) {
  for (const std::string& flag : flags) {
    size_t eq = flag.find('=');
    std::string name = eq == std::string::npos ? std::string() : Trim(flag.substr(0, eq));
    if (name.empty()) {
      return core::Error::InvalidInput("--ray-header: expected NAME=VALUE, got '" + flag + "'");
    }
    out[name] = flag.substr(eq + 1);
  }
  return core::OkStatus();
}

core::Status ParseHeadersEnv(const std::string& text, std::map<std::string, std::string>& out) {
  constexpr std::string_view kWhat = "RAY_JOB_HEADERS: ";
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return core::Error::InvalidInput(std::string(kWhat) + "not valid JSON");
  }
  if (!parsed.is_object()) {
    return core::Error::InvalidInput(std::string(kWhat) + "must be a JSON object of strings");
  }
  for (const auto& [name, value] : parsed.items()) {
    if (!value.is_string()) {
      return core::Error::InvalidInput(std::string(kWhat) + "the value of '" + name +
                                       "' is not a string");
    }
    out[name] = value.get<std::string>();
  }
  return core::OkStatus();
}

}  // namespace

core::Result<RayClientOptions> ResolveRayClientOptions(const RayClientFlags& flags) {
  RayClientOptions options;

  struct Candidate {
    std::string value;
    std::string source;
    AddressSource kind;
  };
  const std::array<Candidate, 4> candidates = {{
      {Trim(flags.address), "--ray-address", AddressSource::kFlag},
      {Env("RAY_API_SERVER_ADDRESS"), "RAY_API_SERVER_ADDRESS", AddressSource::kEnvironment},
      {Env("RAY_ADDRESS"), "RAY_ADDRESS", AddressSource::kEnvironment},
      {Trim(flags.fallback_address), "the cluster file's address", AddressSource::kFallback},
  }};
  for (const Candidate& c : candidates) {
    if (c.value.empty()) continue;
    auto normalized = NormalizeAddress(c.value, c.source);
    if (!normalized) return normalized.error();
    options.address = std::move(*normalized);
    options.address_source = c.kind;
    break;
  }

  if (!flags.token_file.empty()) {
    auto token = ReadTokenFile(flags.token_file);
    if (!token) return token.error();
    options.token = std::move(*token);
  } else if (std::string env = Env("RAY_AUTH_TOKEN"); !env.empty()) {
    options.token = std::move(env);
  }

  if (!flags.headers.empty()) {
    if (auto st = ParseHeaderFlags(flags.headers, options.headers); !st) return st.error();
  } else if (std::string env = Env("RAY_JOB_HEADERS"); !env.empty()) {
    if (auto st = ParseHeadersEnv(env, options.headers); !st) return st.error();
  }

  options.ca_file = flags.ca_file;
  options.insecure = flags.insecure;
  if (!options.ca_file.empty()) {
    std::ifstream ca(options.ca_file);
    if (!ca) {
      return core::Error::InvalidInput("--ray-ca-file: cannot read '" + options.ca_file + "'");
    }
  }
  return options;
}

}  // namespace rg::adapters
