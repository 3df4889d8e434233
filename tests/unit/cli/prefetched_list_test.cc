// The early listing of a one-shot pass: the first List() is answered by a listing taken on a
// thread of its own when the client was made; every later call reaches Ray as usual.

#include "reconciler/cli/prefetched_list.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>

#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/core/value.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/fast_client_options.h"
#include "tests/support/gated_job_server.h"

namespace rg::cli {
namespace {

core::Value Body(const std::string& id) {
  core::Value::Object body;
  body["entrypoint"] = "python train.py";
  body["submission_id"] = id;
  return {std::move(body)};
}

TEST_CASE(
    "the first List is the listing taken early on another thread, and the next ones are new") {
  testing::FakeRayServer ray;
  adapters::RayHttpJobServer other(testing::FastClientOptions(ray.address()));
  REQUIRE(other.Submit(Body("before-1")).ok());

  auto gated = std::make_unique<testing::GatedJobServer>(ray.address());
  std::thread::id listed_on;
  gated->before_next_list = [&]() { listed_on = std::this_thread::get_id(); };
  PrefetchedListServer server(std::move(gated), ray.address());
  CHECK(server.address() == ray.address());
  REQUIRE(server.Version().ok());  // waits for the early listing to end
  CHECK(listed_on != std::thread::id());
  CHECK(listed_on != std::this_thread::get_id());

  REQUIRE(other.Submit(Body("after-2")).ok());  // after the early listing
  CHECK_FALSE(server.prefetch_used());
  core::Result<std::vector<core::RayJob>> first = server.List();
  REQUIRE(first.ok());
  CHECK(server.prefetch_used());
  CHECK(first->size() == 1);  // as it was when the client was made
  core::Result<std::vector<core::RayJob>> second = server.List();
  REQUIRE(second.ok());
  CHECK(second->size() == 2);  // Ray as it is now
}

TEST_CASE("an early listing that fails is the first List's error, and the client goes on") {
  std::string address;
  {
    testing::FakeRayServer gone;
    address = gone.address();
  }
  PrefetchedListServer server(
      std::make_unique<adapters::RayHttpJobServer>(testing::FastClientOptions(address)), address);
  core::Result<std::vector<core::RayJob>> first = server.List();
  REQUIRE_FALSE(first.ok());
  CHECK(first.error().IsTransient());
  CHECK_FALSE(server.List().ok());  // asked again, still unreachable: no stale answer
}

TEST_CASE("a client whose early listing is never used waits for it when destroyed") {
  testing::FakeRayServer ray;
  bool listed = false;
  {
    auto gated = std::make_unique<testing::GatedJobServer>(ray.address());
    gated->before_next_list = [&]() { listed = true; };
    const PrefetchedListServer server(std::move(gated), ray.address());
  }
  CHECK(listed);  // the thread ran to its end before the client went away
}

}  // namespace
}  // namespace rg::cli
