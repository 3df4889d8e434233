#pragma once
// Job secrets from a directory (docs/operations.md, "Job secrets"): `--secrets-dir DIR`, else
// $CREDENTIALS_DIRECTORY (systemd's LoadCredential=), or a Kubernetes Secret mounted as a
// volume. One file per reference, read anew by every Read:
// - the file is DIR/<reference>; a symlink is followed only when everything it leads to stays
//   inside DIR (Kubernetes' `<ref> -> ..data/<ref>`, `..data -> ..2024_…`); the path is
//   resolved by the kernel (realpath: `..`, loops), checked against DIR's own canonical path,
//   and the file actually opened is checked again through /proc/self/fd, so a link swapped in
//   between the two is caught;
// - a regular file of at most kMaxSecretFileBytes (a larger one is refused from its size, never
//   read whole; a FIFO or a device is never opened for reading);
// - one line ending at its end ("\n" or "\r\n") is removed, nothing else;
// - the value must be at least core::kMinSecretLength bytes (a shorter one could not be
//   redacted), hold no NUL byte (an environment variable cannot) and no `$` followed by a
//   letter, `_` or `{` (Ray expands $NAME and ${NAME} in env_vars on the node: the value would
//   arrive altered).
// - never a file the daemon holds as its own credential (--ray-token-file, --git-token-file,
//   --git-ssh-key, --webhook-secret-file): systemd's $CREDENTIALS_DIRECTORY holds those beside
//   the job secrets, and a spec must not hand them to a run.
// Errors name the reference, the directory and the references present (names only, those not
// starting with '.'), never any part of a value. Thread-compatible; holds no state but the paths.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/ports/secret_source.h"

namespace rg::adapters {

inline constexpr size_t kMaxSecretFileBytes = size_t{64} << 10;

class SecretsDirectory : public ports::SecretSource {
 public:
  // `dir` empty: no directory was configured; every Read says so. `own_credentials`: the files
  // of the daemon's own credentials (empty paths are ignored), which no reference may read.
  explicit SecretsDirectory(std::string dir, std::vector<std::string> own_credentials = {})
      : dir_(std::move(dir)), own_credentials_(std::move(own_credentials)) {}

  core::Result<std::string> Read(std::string_view reference) override;

  const std::string& dir() const { return dir_; }
  // The references present: the directory's entries not starting with '.', sorted; empty when
  // it cannot be listed.
  std::vector<std::string> References() const;

 private:
  std::string dir_;
  std::vector<std::string> own_credentials_;
};

// The checks of the file comment on a value already read (its line ending removed): empty when
// it may be sent, else why not (no part of the value in it).
std::string SecretValueProblem(std::string_view value);

// The directory `--secrets-dir` names, else $CREDENTIALS_DIRECTORY, else empty.
std::string SecretsDirFromFlagOrEnv(const std::string& flag);

}  // namespace rg::adapters
