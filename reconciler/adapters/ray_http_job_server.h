#pragma once
// ports::JobServer over HTTP with cpp-httplib, honouring every quirk of RAY_JOBS_API.md.
// Thread-compatible: one instance per thread, or external locking.

#include <memory>
#include <optional>

#include "reconciler/adapters/ray_client_options.h"
#include "reconciler/ports/job_server.h"

namespace rg::adapters {

// Ends every Ray call of the process in flight now, and makes later ones fail at once
// (kTransient, "abandoned"). For the daemon's shutdown (DESIGN.md 7): a call in flight is
// awaited for a while, then abandoned; the next start adopts a submitted run by its id.
// Thread-safe; may be called repeatedly.
void AbandonRayCalls();

// Ray calls of the process in flight now (for tests).
int RayCallsInFlight();

class RayHttpJobServer : public ports::JobServer {
 public:
  explicit RayHttpJobServer(RayClientOptions options);
  ~RayHttpJobServer() override;

  core::Result<core::RayVersion> Version() override;
  core::Result<std::string> Submit(const core::Value& body) override;
  core::Result<core::RayJob> Get(std::string_view id) override;
  core::Result<std::vector<core::RayJob>> List() override;
  core::Result<bool> Stop(std::string_view id) override;
  core::Result<bool> Delete(std::string_view id) override;
  core::Result<std::string> Logs(std::string_view id) override;
  core::Result<std::string> ClusterStatus() override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rg::adapters
