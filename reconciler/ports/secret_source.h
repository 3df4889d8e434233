#pragma once
// Where job secrets' values come from (docs/operations.md, "Job secrets"): the daemon's secrets
// directory, read afresh at every pass, one file per reference. The adapter is
// adapters/secrets_directory.h; tests use in-memory ones.

#include <string>
#include <string_view>

#include "reconciler/core/result.h"

namespace rg::ports {

class SecretSource {
 public:
  virtual ~SecretSource() = default;

  // The value of `reference`, ready to send: kNotFound when the reference (or the whole
  // directory) is missing, kInvalidInput when its file breaks a rule (too large, too short, a
  // `$NAME` Ray would expand, ...), kTransient when it cannot be read just now. An error's
  // message names the reference, the directory and the references present (names only) and
  // never holds any part of a value. Nothing is cached: an updated file is read as it is now.
  virtual core::Result<std::string> Read(std::string_view reference) = 0;
};

}  // namespace rg::ports
