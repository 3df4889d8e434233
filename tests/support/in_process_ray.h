#pragma once
// The Ray client of ray-gitops talking to the fake head in process: the real adapter
// (adapters::RayHttpJobServer: headers, gating, parsing, error classes, the duplicate-id and
// lost-answer rules) over a transport that hands each request to FakeRayServer::Respond. No
// socket and no thread, so the engine's tests run on the test's clock alone; the HTTP fake and
// the contract suite keep the wire itself honest.

#include <memory>
#include <optional>
#include <string>

#include "reconciler/adapters/ray_http_job_server.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"

namespace rg::testing {

inline adapters::RayHttpTransport InProcessTransport(FakeRayServer& ray) {
  return [&ray](const adapters::RayHttpRequest& request) {
    const FakeRayAnswer answer =
        ray.Respond(FakeRayRequest{request.method, request.path, request.body, request.headers});
    adapters::RayHttpAnswer out;
    if (answer.lost) {
      out.failure = "the answer was lost";
      return out;
    }
    out.status = answer.status;
    out.body = answer.body;
    out.headers = answer.headers;
    return out;
  };
}

// A client of `ray` in process, whose clock is the one the head's is offset from
// (FakeRayOptions::clock and clock_offset), sending `token` when given. `ray` must outlive it.
inline std::unique_ptr<adapters::RayHttpJobServer> InProcessClient(
    FakeRayServer& ray, std::optional<std::string> token = std::nullopt) {
  adapters::RayClientOptions options = FastClientOptions(ray.address());
  options.clock = ray.clock();
  options.token = std::move(token);
  return std::make_unique<adapters::RayHttpJobServer>(std::move(options), InProcessTransport(ray));
}

}  // namespace rg::testing
