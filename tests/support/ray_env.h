#pragma once
// Ray's environment variables for one test: every one unset while alive (so a developer's
// RAY_ADDRESS or token cannot change what a test sees), then restored.

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rg::testing {

class RayEnv {
 public:
  RayEnv() {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v != nullptr ? std::optional<std::string>(v) : std::nullopt);
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
  RayEnv(const RayEnv&) = delete;
  RayEnv& operator=(const RayEnv&) = delete;

  void Set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

 private:
  static constexpr const char* kNames[] = {"RAY_API_SERVER_ADDRESS", "RAY_ADDRESS",
                                           "RAY_AUTH_TOKEN", "RAY_JOB_HEADERS"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

}  // namespace rg::testing
