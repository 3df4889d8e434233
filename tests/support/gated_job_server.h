#pragma once
// Ray as one daemon reaches it, through the real HTTP client, with a hook on each side of the
// next listing: `before_next_list` runs once just before the next GET /api/jobs/ is sent (a
// slow listing while the world moves on), `after_next_list` once just after it is answered
// (the window in which another daemon can submit unseen).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reconciler/adapters/ray_http_job_server.h"
#include "tests/support/fast_client_options.h"

namespace rg::testing {

class GatedJobServer : public ports::JobServer {
 public:
  explicit GatedJobServer(const std::string& address) : inner_(FastClientOptions(address)) {}
  std::function<void()> before_next_list;
  std::function<void()> after_next_list;

  core::Result<core::RayVersion> Version() override { return inner_.Version(); }
  core::Result<std::string> Submit(const core::Value& body) override { return inner_.Submit(body); }
  core::Result<core::RayJob> Get(std::string_view id) override { return inner_.Get(id); }
  core::Result<std::vector<core::RayJob>> List() override {
    if (auto hook = std::exchange(before_next_list, nullptr)) hook();
    core::Result<std::vector<core::RayJob>> jobs = inner_.List();
    if (auto hook = std::exchange(after_next_list, nullptr)) hook();
    return jobs;
  }
  std::optional<int64_t> HeadClockOffsetMs() override { return inner_.HeadClockOffsetMs(); }
  std::optional<int64_t> HeadNowMs() override { return inner_.HeadNowMs(); }
  core::Result<bool> JobsReadableWithoutCredentials() override {
    return inner_.JobsReadableWithoutCredentials();
  }
  core::Result<bool> Stop(std::string_view id) override { return inner_.Stop(id); }
  core::Result<bool> Delete(std::string_view id) override { return inner_.Delete(id); }
  core::Result<std::string> Logs(std::string_view id) override { return inner_.Logs(id); }
  core::Result<bool> HasPackage(std::string_view name) override { return inner_.HasPackage(name); }
  core::Status UploadPackage(std::string_view name, std::string_view zip) override {
    return inner_.UploadPackage(name, zip);
  }
  core::Result<std::string> ClusterStatus() override { return inner_.ClusterStatus(); }
  core::Result<core::ClusterResources> Resources() override { return inner_.Resources(); }

 private:
  adapters::RayHttpJobServer inner_;
};

}  // namespace rg::testing
