// Runs rendered entrypoints through /bin/sh -c, as Ray does, with a stand-in `python3` that
// records the argv it receives: spec values must arrive as one argument each, quoted for
// Hydra, and never run as shell code.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "reconciler/core/identity.h"
#include "reconciler/core/render.h"

namespace fs = std::filesystem;
using rg::core::JobSpec;
using rg::core::RayConfig;
using rg::core::Workload;

namespace {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "rg-entrypoint-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs `/bin/sh -c command` in `dir` with only `dir` and the system directories on PATH;
// returns the words the stand-in python3 received.
std::vector<std::string> RunThroughShell(const std::string& command, const fs::path& dir) {
  fs::path out = dir / "argv.bin";
  fs::remove(out);
  std::string path_env = "PATH=" + dir.string() + ":/usr/bin:/bin";
  std::string out_env = "ARGV_PRINTER_OUT=" + out.string();
  std::vector<char*> envp = {path_env.data(), out_env.data(), nullptr};
  std::string shell = "/bin/sh";
  std::string dash_c = "-c";
  std::string text = command;
  std::vector<char*> argv = {shell.data(), dash_c.data(), text.data(), nullptr};
  std::string dir_text = dir.string();

  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (chdir(dir_text.c_str()) != 0) _exit(126);
    execve("/bin/sh", argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO(command);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  std::ifstream in(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == '\0') {
      words.push_back(bytes.substr(start, i - start));
      start = i + 1;
    }
  }
  return words;
}

void InstallStandInPython(const fs::path& dir) {
  fs::copy_file(RG_ARGV_PRINTER, dir / "python3");
  fs::permissions(dir / "python3", fs::perms::owner_all);
  std::ofstream(dir / "glob-bait.txt") << "a file a bare * would expand to\n";
}

struct HostileValue {
  std::string value;
  std::string hydra;  // what Hydra must receive after "data.train_files="
};

std::vector<HostileValue> HostileValues(const std::string& pwned) {
  return {
      {"x; touch " + pwned, "\"x; touch " + pwned + "\""},
      {"$(touch " + pwned + ")", "\"$(touch " + pwned + ")\""},
      {"`touch " + pwned + "`", "\"`touch " + pwned + "`\""},
      {"$(id)", "\"$(id)\""},
      {"`id`", "\"`id`\""},
      {"a b", "\"a b\""},
      {"it's", "\"it's\""},
      {"a,b", "\"a,b\""},
      {"\"q\"", "\"\\\"q\\\"\""},
      {"[1,2]", "\"[1,2]\""},
      {"{a: 1}", "\"{a: 1}\""},
      {"back\\slash", "\"back\\slash\""},
      {"semi;colon", "\"semi;colon\""},
      {"first\nsecond; touch " + pwned, "\"first\nsecond; touch " + pwned + "\""},
      {"*", "*"},
      {"/data/*.parquet", "/data/*.parquet"},
      {"$HOME", "$HOME"},
      {"a|b&c>d<e", "\"a|b&c>d<e\""},
      {"' ; touch " + pwned + " ; '", "\"' ; touch " + pwned + " ; '\""},
  };
}

}  // namespace

TEST_CASE("hostile spec values reach python3 as one Hydra-quoted argument and run nothing") {
  ScratchDir scratch;
  InstallStandInPython(scratch.path());
  fs::path pwned = scratch.path() / "pwned";

  for (const auto& hostile : HostileValues(pwned.string())) {
    JobSpec spec;
    spec.workload = Workload::kPpo;
    spec.name = "inj";
    spec.spec_hash = "0123456789";
    spec.mutable_trainer().train_file = hostile.value;
    auto entrypoint =
        rg::core::RenderEntrypoint(spec, RayConfig{}, "inj-0123456789", "inj-0123456789");
    REQUIRE(entrypoint.ok());
    INFO("value: " << hostile.value << "\nentrypoint: " << *entrypoint);

    std::vector<std::string> expected = {"-m", "verl.trainer.main_ppo",
                                         "data.train_files=" + hostile.hydra,
                                         "trainer.experiment_name=inj-0123456789"};
    CHECK(RunThroughShell(*entrypoint, scratch.path()) == expected);
    CHECK_FALSE(fs::exists(pwned));
  }
}

TEST_CASE("hostile user overrides reach python3 verbatim as one argument and run nothing") {
  ScratchDir scratch;
  InstallStandInPython(scratch.path());
  fs::path pwned = scratch.path() / "pwned";

  for (const auto& hostile : HostileValues(pwned.string())) {
    JobSpec spec;
    spec.workload = Workload::kSft;
    spec.name = "inj";
    spec.spec_hash = "0123456789";
    spec.mutable_trainer().overrides = {"+extra.value=" + hostile.value, hostile.value};
    auto entrypoint =
        rg::core::RenderEntrypoint(spec, RayConfig{}, "inj-0123456789", "inj-0123456789");
    REQUIRE(entrypoint.ok());
    INFO("value: " << hostile.value << "\nentrypoint: " << *entrypoint);

    std::vector<std::string> expected = {"-m",
                                         "verl.trainer.sft_trainer_ray",
                                         "trainer.experiment_name=inj-0123456789",
                                         "trainer.device=cpu",
                                         "+extra.value=" + hostile.value,
                                         hostile.value};
    CHECK(RunThroughShell(*entrypoint, scratch.path()) == expected);
    CHECK_FALSE(fs::exists(pwned));
  }
}

TEST_CASE("the stand-in sees a custom entrypoint's own shell syntax take effect") {
  // Guards the harness itself: a command that is meant to run does run.
  ScratchDir scratch;
  InstallStandInPython(scratch.path());
  fs::path marker = scratch.path() / "ran";
  auto words =
      RunThroughShell("touch '" + marker.string() + "' && python3 one 'two three'", scratch.path());
  CHECK(words == std::vector<std::string>{"one", "two three"});
  CHECK(fs::exists(marker));
}
