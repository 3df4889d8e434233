#include "reconciler/adapters/secrets_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_files.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

constexpr const char* kValue = "s3cr3t-value-0123";

void WriteFile(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// The error of reading `ref` from `dir`; fails the test when the read succeeds.
core::Error ReadError(const std::string& dir, const std::string& ref) {
  SecretsDirectory secrets(dir);
  core::Result<std::string> read = secrets.Read(ref);
  REQUIRE_FALSE(read.ok());
  return read.error();
}

TEST_CASE("a secret file's value is read with one line ending removed", "[secrets_dir]") {
  const testing::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string(kValue), kValue},
      {std::string(kValue) + "\n", kValue},
      {std::string(kValue) + "\r\n", kValue},
      {std::string(kValue) + "\n\n", std::string(kValue) + "\n"},
      {std::string(kValue) + "\r", std::string(kValue) + "\r"},
      {" " + std::string(kValue) + " \n", " " + std::string(kValue) + " "},
      {"line one\nline two\n", "line one\nline two"},
  };
  for (const auto& [bytes, expected] : cases) {
    WriteFile(dir.dir() / "key", bytes);
    SecretsDirectory secrets(dir.path());
    core::Result<std::string> read = secrets.Read("key");
    INFO(bytes);
    REQUIRE(read.ok());
    CHECK(*read == expected);
  }
}

TEST_CASE("a missing reference names the reference, the directory and the names present",
          "[secrets_dir]") {
  const testing::TempDir dir;
  WriteFile(dir.dir() / "hf-read", kValue);
  WriteFile(dir.dir() / "other", "another-value-1234");
  WriteFile(dir.dir() / ".hidden", kValue);
  const core::Error e = ReadError(dir.path(), "wandb-key");
  CHECK(e.IsNotFound());
  CHECK(e.message() == "secret reference 'wandb-key' in the secrets directory " + dir.path() +
                           " does not exist (references present: hf-read, other)");
  CHECK(e.message().find(kValue) == std::string::npos);
}

TEST_CASE("a missing or unconfigured directory is reported", "[secrets_dir]") {
  const testing::TempDir dir;
  const core::Error none = ReadError("", "wandb-key");
  CHECK(none.IsNotFound());
  CHECK(none.message().find("no secrets directory is configured") != std::string::npos);
  CHECK(none.message().find("--secrets-dir") != std::string::npos);
  const core::Error missing = ReadError(dir.Sub("nope"), "wandb-key");
  CHECK(missing.IsNotFound());
  CHECK(missing.message().find("'wandb-key'") != std::string::npos);
  CHECK(missing.message().find(dir.Sub("nope") + " does not exist") != std::string::npos);
  WriteFile(dir.dir() / "file", kValue);
  CHECK(ReadError(dir.Sub("file"), "wandb-key").message().find("is not a directory") !=
        std::string::npos);
}

TEST_CASE("the size limit is 64 KiB, refused from the file's size", "[secrets_dir]") {
  const testing::TempDir dir;
  WriteFile(dir.dir() / "exact", std::string(kMaxSecretFileBytes, 'a'));
  WriteFile(dir.dir() / "exact-nl", std::string(kMaxSecretFileBytes - 1, 'a') + "\n");
  WriteFile(dir.dir() / "over", std::string(kMaxSecretFileBytes + 1, 'a'));
  SecretsDirectory secrets(dir.path());
  REQUIRE(secrets.Read("exact").ok());
  CHECK(secrets.Read("exact")->size() == kMaxSecretFileBytes);
  CHECK(secrets.Read("exact-nl")->size() == kMaxSecretFileBytes - 1);
  const core::Error e = ReadError(dir.path(), "over");
  CHECK(e.kind() == core::ErrorKind::kInvalidInput);
  CHECK(e.message().find("larger than 64 KiB") != std::string::npos);
  CHECK(e.message().find("aaaaaaaa") == std::string::npos);
}

TEST_CASE("values that cannot be sent or redacted are refused without being shown",
          "[secrets_dir]") {
  const testing::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "is empty"},
      {"\n", "is empty"},
      {"zqx1234\n", "shorter than 8 bytes"},
      {"   zqx1234  \n", "shorter than 8 bytes"},
      {std::string("abc\0defghij", 11), "NUL byte"},
      {"zqx$HOMEsuffix", "'$' followed by"},
      {"zqx${X}suffix", "'$' followed by"},
      {"zqx$_xsuffix", "'$' followed by"},
  };
  for (const auto& [bytes, why] : cases) {
    WriteFile(dir.dir() / "bad", bytes);
    const core::Error e = ReadError(dir.path(), "bad");
    INFO(e.message());
    CHECK(e.kind() == core::ErrorKind::kInvalidInput);
    CHECK(e.message().find(why) != std::string::npos);
    CHECK(e.message().find("'bad'") != std::string::npos);
    if (bytes.size() > 2) CHECK(e.message().find(bytes.substr(0, 3)) == std::string::npos);
  }
  // A dollar not followed by a name is sent as is (Ray leaves it alone).
  for (const std::string ok : {"abc$1defgh", "abcdefgh$", "abc$-defgh", "ab$ cdefgh"}) {
    WriteFile(dir.dir() / "ok", ok);
    SecretsDirectory secrets(dir.path());
    INFO(ok);
    CHECK(secrets.Read("ok").ok());
  }
}

TEST_CASE("a symlink is followed only while it stays inside the directory", "[secrets_dir]") {
  const testing::TempDir root;
  const fs::path dir = root.dir() / "secrets";
  fs::create_directories(dir / "sub");
  WriteFile(dir / "sub" / "real", kValue);
  WriteFile(root.dir() / "outside", kValue);
  fs::create_symlink("sub/real", dir / "inside");
  fs::create_symlink("../outside", dir / "dotdot");
  fs::create_symlink(root.dir() / "outside", dir / "absolute");
  fs::create_symlink("sub/../../outside", dir / "sneaky");
  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  fs::create_symlink("missing-target", dir / "dangling");
  fs::create_symlink("/", dir / "slash");
  SecretsDirectory secrets(dir.string());
  REQUIRE(secrets.Read("inside").ok());
  CHECK(*secrets.Read("inside") == kValue);
  for (const char* ref : {"dotdot", "absolute", "sneaky"}) {
    const core::Error e = ReadError(dir.string(), ref);
    INFO(e.message());
    CHECK(e.message().find("leads outside the directory") != std::string::npos);
  }
  CHECK(ReadError(dir.string(), "loop-a").message().find("link loop") != std::string::npos);
  CHECK(ReadError(dir.string(), "dangling").IsNotFound());
  CHECK(ReadError(dir.string(), "slash").message().find("outside") != std::string::npos);
  CHECK(ReadError(dir.string(), "sub").message().find("not a regular file") != std::string::npos);
  // A reference never names a path: the loader's pattern is checked here again.
  for (const char* ref : {"../outside", "..", ".", "sub/real", ""}) {
    INFO(ref);
    CHECK(ReadError(dir.string(), ref).message().find("not a valid reference") !=
          std::string::npos);
  }
}

TEST_CASE("the secrets directory may itself be reached through a symlink", "[secrets_dir]") {
  const testing::TempDir root;
  WriteFile(root.dir() / "real" / "key", kValue);
  fs::create_symlink(root.dir() / "real", root.dir() / "link");
  SecretsDirectory secrets((root.dir() / "link").string());
  REQUIRE(secrets.Read("key").ok());
}

TEST_CASE("a Kubernetes Secret volume is read, and read anew after an update", "[secrets_dir]") {
  const testing::TempDir dir;
  // What the kubelet writes: <ref> -> ..data/<ref>, ..data -> ..<timestamp>/, swapped whole.
  WriteFile(dir.dir() / "..2024_01_01_00_00_00.1" / "wandb-key", std::string(kValue) + "\n");
  fs::create_symlink("..2024_01_01_00_00_00.1", dir.dir() / "..data");
  fs::create_symlink("..data/wandb-key", dir.dir() / "wandb-key");
  SecretsDirectory secrets(dir.path());
  REQUIRE(secrets.Read("wandb-key").ok());
  CHECK(*secrets.Read("wandb-key") == kValue);
  CHECK(secrets.References() == std::vector<std::string>{"wandb-key"});

  WriteFile(dir.dir() / "..2024_02_01_00_00_00.2" / "wandb-key", "rotated-value-5678\n");
  fs::create_symlink("..2024_02_01_00_00_00.2", dir.dir() / "..data_tmp");
  fs::rename(dir.dir() / "..data_tmp", dir.dir() / "..data");
  fs::remove_all(dir.dir() / "..2024_01_01_00_00_00.1");
  CHECK(*secrets.Read("wandb-key") == "rotated-value-5678");
}

TEST_CASE("an unreadable file or a FIFO is refused, not waited on", "[secrets_dir]") {
  const testing::TempDir dir;
  REQUIRE(::mkfifo((dir.dir() / "fifo").c_str(), 0600) == 0);
  CHECK(ReadError(dir.path(), "fifo").message().find("not a regular file") != std::string::npos);
  if (::geteuid() != 0) {  // root reads any file
    WriteFile(dir.dir() / "locked", kValue);
    fs::permissions(dir.dir() / "locked", fs::perms::none);
    const core::Error e = ReadError(dir.path(), "locked");
    CHECK(e.message().find("cannot be opened") != std::string::npos);
    CHECK(e.message().find("references present: fifo, locked") != std::string::npos);
  }
}

TEST_CASE("the daemon's own credentials are never a job's, by any name", "[secrets_dir]") {
  const testing::TempDir dir;
  WriteFile(dir.dir() / "ray-token", "ray-token-0123456789");
  WriteFile(dir.dir() / "wandb-key", kValue);
  fs::create_symlink("ray-token", dir.dir() / "alias");
  SecretsDirectory secrets(dir.path(), {"", dir.Sub("ray-token")});
  REQUIRE(secrets.Read("wandb-key").ok());
  for (const char* ref : {"ray-token", "alias"}) {
    CHECK(SecretsDirectory(dir.path()).Read(ref).ok());  // without the list: read
    core::Result<std::string> read = secrets.Read(ref);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().message().find("own credentials") != std::string::npos);
    CHECK(read.error().message().find("ray-token-0123") == std::string::npos);
  }
}

TEST_CASE("the --secrets-dir flag wins over CREDENTIALS_DIRECTORY", "[secrets_dir]") {
  ::setenv("CREDENTIALS_DIRECTORY", "/run/credentials/x", 1);  // NOLINT(concurrency-mt-unsafe)
  CHECK(SecretsDirFromFlagOrEnv("/flag") == "/flag");
  CHECK(SecretsDirFromFlagOrEnv("") == "/run/credentials/x");
  ::unsetenv("CREDENTIALS_DIRECTORY");  // NOLINT(concurrency-mt-unsafe)
  CHECK(SecretsDirFromFlagOrEnv("").empty());
}

}  // namespace
}  // namespace rg::adapters
