#pragma once
// Ray client options for tests against the fake head: few retries and short waits, so a test
// of a failure finishes in milliseconds instead of the production backoff.

#include <chrono>
#include <string>

#include "reconciler/adapters/ray_client_options.h"

namespace rg::testing {

inline adapters::RayClientOptions FastClientOptions(const std::string& address,
                                                    int max_attempts = 2) {
  using namespace std::chrono_literals;
  adapters::RayClientOptions o;
  o.address = address;
  o.max_attempts = max_attempts;
  o.initial_backoff = 10ms;
  o.max_backoff = 20ms;
  o.connect_timeout = 500ms;
  o.read_timeout = 2000ms;
  o.submit_timeout = 2000ms;
  o.upload_timeout = 2000ms;
  return o;
}

}  // namespace rg::testing
