// Code packages (DESIGN 1.4) at size: a folder of 2,000 files totalling 50 MiB in a real
// repository, half text-like and half random, then
//   1. the time to inspect it and to build its zip (median of 3), the zip's size against its
//      bound;
//   2. the upload of that zip to the fake Ray head over loopback HTTP (RayHttpJobServer): the
//      PUT (median of 3, each to a package name of its own) and the GET that finds it;
//   3. whole reconcile passes (engine::RunReconcilePass, GitDesiredStateSource and
//      GitStatusStore over a bare remote, RayHttpJobServer against the fake head), for 1 and for
//      20 specs sharing the folder (each over a clone fetched beforehand, outside the passes):
//      the first pass, a no-change pass right after (median of 3),
//      and a pass after a one-file change in the folder; each with the pass's code figures
//      (PassResult::code) and the head's package GETs and PUTs. Beside them the no-change pass
//      of the same 20 specs without `code`, and InspectCodeFolder on the pass's own clone;
//   4. the peak resident set of each step, and of the whole run.
// It prints figures and judges nothing (exit 0 unless something could not run).
//   code_zip [--files N] [--mib M] [--zip-only]
// --zip-only: step 1 alone.
//
// The repository is written by a child process and the fake head runs in another (driven over
// a pipe), so that the resident sets printed are the reconciler's own: neither the files staged
// to make the repository nor the packages the head stores count in them. The head's clock never
// moves, so its jobs stay PENDING: a run never starts, and the head never unpacks a package.

#include <git2.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reconciler/adapters/code_package.h"
#include "reconciler/adapters/git_desired_state_source.h"
#include "reconciler/adapters/git_status_store.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/adapters/ray_http_job_server.h"
#include "reconciler/cli/heap.h"
#include "reconciler/core/code_package.h"
#include "reconciler/core/identity.h"
#include "reconciler/engine/reconcile_pass.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_ray_server.h"
#include "tests/support/git_test_repo.h"
#include "tests/support/test_files.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kFolder = "src/trainer";
constexpr int kManySpecs = 20;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "code_zip: %s\n", what.c_str());
  std::exit(1);
}

// ---- Resident sets ----

// A field of /proc/self/status in kB (VmRSS, VmHWM), in MiB.
double StatusMib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0)
      return std::strtod(line.c_str() + prefix.size(), nullptr) / 1024.0;
  }
  return 0;
}

double RssMib() { return StatusMib("VmRSS"); }

// The peak resident set since the last ResetPeak (VmHWM), and the largest one seen by any step.
double g_run_peak_mib = 0;
double PeakMib() {
  const double peak = StatusMib("VmHWM");
  g_run_peak_mib = std::max(g_run_peak_mib, peak);
  return peak;
}
// The heap's free pages back to the system, then the peak brought down to the resident set
// now (Linux: "5" to clear_refs), so that the next PeakMib is the next step's own.
void ResetPeak() {
  PeakMib();
  rg::cli::ReturnFreeMemory();
  std::ofstream("/proc/self/clear_refs") << "5";
}

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Median wall time of 3 runs of `run`, in milliseconds.
double MedianMs(const std::function<void(int)>& run) {
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    run(i);
    times.push_back(MsSince(start));
  }
  std::sort(times.begin(), times.end());
  return times[1];
}

// ---- The fake head, in a process of its own ----

// Serves one command a line: "start" (a fresh head; answers its address), "reset" (counters),
// "counts" (package GETs and PUTs, submits and stops since the reset), "peak" (its peak
// resident set in MiB), "quit".
class HeadProcess {
 public:
  HeadProcess() {
    int to_child[2];
    int from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) Die("pipe");
    pid_ = fork();
    if (pid_ < 0) Die("fork");
    if (pid_ == 0) {
      close(to_child[1]);
      close(from_child[0]);
      Serve(to_child[0], from_child[1]);
      _exit(0);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_ = fdopen(to_child[1], "w");
    from_ = fdopen(from_child[0], "r");
  }
  ~HeadProcess() {
    Ask("quit");
    std::fclose(to_);
    std::fclose(from_);
    waitpid(pid_, nullptr, 0);
  }
  HeadProcess(const HeadProcess&) = delete;
  HeadProcess& operator=(const HeadProcess&) = delete;

  std::string Start() { return Ask("start"); }
  void Reset() { Ask("reset"); }
  struct Counts {
    int package_gets = 0;
    int package_puts = 0;
    int submits = 0;
    int stops = 0;
  };
  Counts Read() {
    Counts c;
    std::istringstream in(Ask("counts"));
    in >> c.package_gets >> c.package_puts >> c.submits >> c.stops;
    return c;
  }
  double PeakMib() { return std::strtod(Ask("peak").c_str(), nullptr); }

 private:
  std::string Ask(const std::string& command) {
    std::fprintf(to_, "%s\n", command.c_str());
    std::fflush(to_);
    char line[256] = {0};
    if (std::fgets(line, sizeof(line), from_) == nullptr) return "";
    std::string answer = line;
    if (!answer.empty() && answer.back() == '\n') answer.pop_back();
    return answer;
  }

  static void Serve(int in_fd, int out_fd) {
    FILE* in = fdopen(in_fd, "r");
    FILE* out = fdopen(out_fd, "w");
    rg::testing::FakeClock clock;  // never advanced: jobs stay PENDING
    std::unique_ptr<rg::testing::FakeRayServer> head;
    char line[256];
    while (std::fgets(line, sizeof(line), in) != nullptr) {
      const std::string command(line, std::strcspn(line, "\n"));
      std::string answer = "ok";
      if (command == "start") {
        head.reset();
        head = std::make_unique<rg::testing::FakeRayServer>(rg::testing::FrozenHeadOptions(&clock));
        answer = head->address();
      } else if (command == "reset" && head) {
        head->ResetCounters();
      } else if (command == "counts" && head) {
        answer = std::to_string(head->RequestCount(rg::testing::kRoutePackageGet)) + " " +
                 std::to_string(head->RequestCount(rg::testing::kRoutePackagePut)) + " " +
                 std::to_string(head->RequestCount(rg::testing::kRouteSubmit)) + " " +
                 std::to_string(head->RequestCount(rg::testing::kRouteStop));
      } else if (command == "peak") {
        char peak[64];
        std::snprintf(peak, sizeof(peak), "%.1f", StatusMib("VmHWM"));
        answer = peak;
      } else if (command == "quit") {
        std::fprintf(out, "ok\n");
        std::fflush(out);
        break;
      }
      std::fprintf(out, "%s\n", answer.c_str());
      std::fflush(out);
    }
    head.reset();
  }

  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

// ---- The repository, written by a process of its own ----

// `size` bytes of file `index`: even files read like source code, odd ones are random.
std::string FileContent(size_t index, size_t size, std::mt19937& gen) {
  std::string out;
  out.reserve(size);
  if (index % 2 == 0) {
    static const char* const kWords[] = {
        "def ",   "return ",        "self.",       "tensor", "(x, y)", " = ", "for i in range(n):",
        "\n    ", "import torch\n", "# comment\n", "loss",   "0.001"};
    while (out.size() < size) out += kWords[gen() % (sizeof(kWords) / sizeof(kWords[0]))];
    out.resize(size);
  } else {
    out.resize(size);
    for (char& c : out) c = static_cast<char>(gen() & 0xFFU);
  }
  return out;
}

std::string SpecText(int index, bool with_code) {
  std::string text = "workload: custom\n";
  if (with_code) text += std::string("code: ") + kFolder + "\n";
  text += "entrypoint: python train.py --seed " + std::to_string(index) + "\n";
  return text;
}

void WriteSpecs(rg::testing::GitTestClone& person, int count, bool with_code) {
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "jobs/train-%02d.yaml", i);
    person.Write(name, SpecText(i, with_code));
  }
}

// The bare remote at `remote` with these branches, all over one commit "base" of cluster.yaml
// and the folder (`files` files, `mib` MiB):
//   n1, n20        1 and 20 specs with `code: src/trainer`;
//   n1-next, ...   the same one commit later, with one file of the folder changed;
//   plain20        20 specs without `code`.
void MakeRepository(const std::string& remote, const std::string& person_path, size_t files,
                    size_t mib) {
  rg::testing::InitBareRepository(remote);
  rg::testing::GitTestClone person(remote, person_path);
  person.Write("cluster.yaml", "address: http://127.0.0.1:1\n");  // the pass's address wins
  std::mt19937 gen(42);
  const size_t total = mib << 20U;
  const size_t mean = total / files;
  size_t written = 0;
  size_t spread = 0;
  for (size_t i = 0; i < files; ++i) {
    // Sizes spread around the mean, each odd file making up for the even one before it; the
    // last file takes what is left.
    if (i % 2 == 0) spread = gen() % mean;
    const size_t size = i + 1 == files ? total - written
                        : i % 2 == 0   ? mean / 2 + spread
                                       : mean / 2 + (mean - spread);
    written += size;
    person.Write(
        std::string(kFolder) + "/m" + std::to_string(i % 20) + "/f" + std::to_string(i) + ".py",
        FileContent(i, size, gen));
  }
  person.Commit("main", "code");
  const std::string changed = std::string(kFolder) + "/m0/f0.py";
  for (const int n : {1, kManySpecs}) {
    const std::string branch = "n" + std::to_string(n);
    WriteSpecs(person, n, true);
    person.Commit(branch, std::to_string(n) + " specs sharing the folder", "main");
    person.Write(changed, "print('the one file changed')\n");
    person.Commit(branch + "-next", "one file of the folder changed", branch);
  }
  WriteSpecs(person, kManySpecs, false);
  person.Commit("plain20", "20 specs without code", "main");
  for (const char* branch : {"main", "n1", "n1-next", "n20", "n20-next", "plain20"}) {
    person.Push(branch);
  }
}

// refs/heads/<branch> of the bare `remote` moved to refs/heads/<to>, as a push would move it.
void MoveBranch(const std::string& remote, const std::string& branch, const std::string& to) {
  git_repository* repo = nullptr;
  if (git_repository_open(&repo, remote.c_str()) != 0) Die("open " + remote);
  git_oid oid;
  git_reference* ref = nullptr;
  if (git_reference_name_to_id(&oid, repo, ("refs/heads/" + to).c_str()) != 0 ||
      git_reference_create(&ref, repo, ("refs/heads/" + branch).c_str(), &oid, 1, "bench") != 0) {
    Die("move " + branch);
  }
  git_reference_free(ref);
  git_repository_free(repo);
}

// ---- Passes ----

rg::adapters::RayClientOptions ClientOptions(const std::string& address) {
  rg::adapters::RayClientOptions options;
  options.address = address;
  return options;
}

// One ray-gitops process over the remote, watching `branch`: its clone, its status branch, its
// Ray client.
class Process {
 public:
  Process(const std::string& remote, const std::string& cache_dir, const std::string& address,
          const std::string& branch)
      : branch_(branch), address_(address), server_(ClientOptions(address)) {
    rg::adapters::GitWorkspaceOptions options;
    options.repo = remote;
    options.cache_dir = cache_dir;
    auto ws = rg::adapters::GitWorkspace::Open(options);
    if (!ws) Die(ws.error().ToString());
    workspace_ = *ws;
    source_ = std::make_unique<rg::adapters::GitDesiredStateSource>(
        workspace_, rg::adapters::GitDesiredStateOptions{});
    rg::adapters::GitStatusStoreOptions store_options;
    store_options.branch = "ray-gitops/status-" + branch;
    store_ = std::make_unique<rg::adapters::GitStatusStore>(workspace_, store_options);
  }

  rg::engine::PassResult Pass() {
    rg::engine::ReconcileOptions options;
    options.ref = branch_;
    options.ray_address = address_;
    options.now_ms = now_ms_ += 1000;
    // A code change replaces the PENDING run of every spec sharing the folder: 20 stops, over
    // the default limit of 5 (as --max-stops 20 would allow).
    options.policy.max_stops = kManySpecs;
    rg::engine::ReconcileDeps deps;
    deps.source = source_.get();
    deps.server = &server_;
    deps.store = store_.get();
    rg::engine::PassResult result = rg::engine::RunReconcilePass(deps, options);
    for (const auto& e : result.errors)
      std::fprintf(stderr, "pass error: %s\n", e.ToString().c_str());
    return result;
  }

  // The clone brought up to date outside any pass: the first pass then times its own work,
  // not the copy of the whole repository.
  void Fetch() {
    if (auto fetched = workspace_->Fetch(); !fetched.ok()) Die(fetched.error().ToString());
  }
  // Time spent in Git fetches and pushes so far, in ms.
  double GitMs() const { return static_cast<double>(workspace_->network_us()) / 1000.0; }
  git_repository* clone() const { return workspace_->repository(); }

 private:
  std::string branch_;
  std::string address_;
  rg::adapters::RayHttpJobServer server_;
  std::shared_ptr<rg::adapters::GitWorkspace> workspace_;
  std::unique_ptr<rg::adapters::GitDesiredStateSource> source_;
  std::unique_ptr<rg::adapters::GitStatusStore> store_;
  int64_t now_ms_ = rg::testing::FakeClock::kStartWallMs;
};

int Submits(const rg::engine::PassResult& r) {
  int n = 0;
  for (const auto& o : r.outcomes) n += o.ok && o.action.kind == rg::core::ActionKind::kSubmit;
  return n;
}
int Stops(const rg::engine::PassResult& r) {
  int n = 0;
  for (const auto& o : r.outcomes) n += o.ok && o.action.kind == rg::core::ActionKind::kStop;
  return n;
}

void PrintPass(const char* what, double ms, double git_ms, const rg::engine::PassResult& r,
               const HeadProcess::Counts& head, double peak_mib) {
  std::printf(
      "  %-26s %8.1f ms (Git fetch and push %.1f ms)  submits %2d stops %2d | code: "
      "checks %2d zips %d uploads %d bytes %llu zip_ms %lld upload_ms %lld | head: "
      "package GET %2d PUT %d | peak RSS %.1f MiB\n",
      what, ms, git_ms, Submits(r), Stops(r), r.code.checks, r.code.zips, r.code.uploads,
      static_cast<unsigned long long>(r.code.bytes), static_cast<long long>(r.code.zip_ms),
      static_cast<long long>(r.code.upload_ms), head.package_gets, head.package_puts, peak_mib);
}

// First pass, three no-change passes, a one-file change, for the specs of branch "n<specs>".
void PassesFor(int specs, const std::string& remote, const std::string& cache_dir,
               HeadProcess& head) {
  const std::string branch = "n" + std::to_string(specs);
  const std::string address = head.Start();
  Process process(remote, cache_dir, address, branch);
  std::printf("%d spec%s sharing %s:\n", specs, specs == 1 ? "" : "s", kFolder);
  ResetPeak();
  auto start = Clock::now();
  process.Fetch();
  double ms = MsSince(start);
  std::printf("  %-26s %8.1f ms (not a pass; peak RSS %.1f MiB)\n", "clone fetched", ms, PeakMib());

  ResetPeak();
  head.Reset();
  double git_before = process.GitMs();
  start = Clock::now();
  rg::engine::PassResult first = process.Pass();
  ms = MsSince(start);
  PrintPass("first pass", ms, process.GitMs() - git_before, first, head.Read(), PeakMib());

  ResetPeak();
  head.Reset();
  rg::engine::PassResult quiet;
  int checks = 0;
  int zips = 0;
  int uploads = 0;
  int actions = 0;
  ms = MedianMs([&](int) {
    quiet = process.Pass();
    checks += quiet.code.checks;
    zips += quiet.code.zips;
    uploads += quiet.code.uploads;
    actions += static_cast<int>(quiet.outcomes.size());
  });
  const HeadProcess::Counts quiet_head = head.Read();
  std::printf(
      "  %-26s %8.1f ms  (median of 3) over the 3: actions %d | code: checks %d zips %d "
      "uploads %d | head: package GET %d PUT %d, submits %d | peak RSS %.1f MiB\n",
      "no-change pass", ms, actions, checks, zips, uploads, quiet_head.package_gets,
      quiet_head.package_puts, quiet_head.submits, PeakMib());

  // What each of those passes spends inspecting the folder (once per pass and commit, whatever
  // the number of specs), on the pass's own clone.
  const std::string commit = rg::testing::BranchTip(remote, branch);
  const double inspect_ms = MedianMs([&](int) {
    if (!rg::adapters::InspectCodeFolder(process.clone(), commit, kFolder).ok()) Die("inspect");
  });
  std::printf("  %-26s %8.1f ms  (median of 3) on the pass's clone\n", "InspectCodeFolder",
              inspect_ms);

  MoveBranch(remote, branch, branch + "-next");
  ResetPeak();
  head.Reset();
  git_before = process.GitMs();
  start = Clock::now();
  rg::engine::PassResult changed = process.Pass();
  ms = MsSince(start);
  PrintPass("one-file change pass", ms, process.GitMs() - git_before, changed, head.Read(),
            PeakMib());
}

// The no-change pass of the same 20 specs without `code`, for comparison.
void PlainPasses(const std::string& remote, const std::string& cache_dir, HeadProcess& head) {
  Process process(remote, cache_dir, head.Start(), "plain20");
  process.Fetch();
  process.Pass();
  const double ms = MedianMs([&](int) { process.Pass(); });
  std::printf("%d specs without code: no-change pass %.1f ms (median of 3)\n", kManySpecs, ms);
}

}  // namespace

int main(int argc, char** argv) {
  size_t files = 2000;
  size_t mib = 50;
  bool zip_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--zip-only") == 0) {
      zip_only = true;
    } else if (i + 1 < argc && std::strcmp(argv[i], "--files") == 0) {
      files = std::strtoul(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && std::strcmp(argv[i], "--mib") == 0) {
      mib = std::strtoul(argv[++i], nullptr, 10);
    } else {
      Die(std::string("unknown argument ") + argv[i] +
          "; usage: code_zip [--files N] [--mib M] [--zip-only]");
    }
  }
  const rg::testing::TempDir tmp;
  const std::string remote = tmp.Sub("bench.git");
  const std::string person = tmp.Sub("person.git");
  // Both children start before this process has a thread or a repository open.
  HeadProcess head;
  const pid_t maker = fork();
  if (maker < 0) Die("fork");
  if (maker == 0) {
    try {
      MakeRepository(remote, person, files, mib);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "code_zip: %s\n", e.what());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  if (waitpid(maker, &status, 0) != maker || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die("the repository could not be made");
  }
  std::printf("repository: %zu files, %zu MiB in %s; allocator %s\n", files, mib, kFolder,
              std::string(rg::cli::AllocatorName()).c_str());

  git_libgit2_init();
  std::string zip;
  {
    git_repository* repo = nullptr;
    if (git_repository_open(&repo, person.c_str()) != 0) Die("open " + person);
    const std::string commit = rg::testing::BranchTip(person, "main");
    ResetPeak();
    rg::adapters::CodeFolderInfo info;
    const double inspect_ms = MedianMs([&](int) {
      auto inspected = rg::adapters::InspectCodeFolder(repo, commit, kFolder);
      if (!inspected.ok()) Die(inspected.error().ToString());
      info = std::move(inspected).value();
    });
    const double inspect_peak = PeakMib();
    ResetPeak();
    const double before_zip = RssMib();
    const double zip_ms = MedianMs([&](int) {
      zip.clear();
      zip.shrink_to_fit();
      auto built = rg::adapters::BuildCodeZip(repo, info.tree_id);
      if (!built.ok()) Die(built.error().ToString());
      zip = std::move(built).value();
    });
    const double zip_peak = PeakMib();
    std::printf(
        "InspectCodeFolder: %.1f ms (median of 3), %llu files, %llu bytes; peak RSS "
        "%.1f MiB\n",
        inspect_ms, static_cast<unsigned long long>(info.files),
        static_cast<unsigned long long>(info.bytes), inspect_peak);
    std::printf(
        "BuildCodeZip:      %.1f ms (median of 3); RSS before %.1f MiB, peak %.1f MiB "
        "(%.2f zips above the RSS before)\n",
        zip_ms, before_zip, zip_peak,
        (zip_peak - before_zip) * 1048576.0 / static_cast<double>(zip.size()));
    // The files are the same on every run (a fixed seed), and so must the zip's digest be.
    std::printf("zip: %zu bytes (%.1f%% of the files), bound %llu, SHA-256 %s\n", zip.size(),
                100.0 * static_cast<double>(zip.size()) / static_cast<double>(info.bytes),
                static_cast<unsigned long long>(rg::adapters::ZipSizeUpperBound(info)),
                rg::core::Sha256Hex(zip).c_str());
    git_repository_free(repo);
  }
  if (zip_only) return 0;

  {
    // The upload alone: PUT of the zip to a fresh package name each time, then GETs of it.
    rg::adapters::RayHttpJobServer server(ClientOptions(head.Start()));
    std::string name;
    ResetPeak();
    const double before = RssMib();
    const double put_ms = MedianMs([&](int i) {
      name = rg::core::CodePackageName("bench upload " + std::to_string(i));
      if (auto sent = server.UploadPackage(name, zip); !sent.ok()) Die(sent.error().ToString());
    });
    const double put_peak = PeakMib();
    const double get_ms = MedianMs([&](int) {
      auto held = server.HasPackage(name);
      if (!held.ok() || !*held) Die("the package is not held after its PUT");
    });
    std::printf(
        "upload over loopback HTTP: PUT %.1f ms (median of 3, %.0f MiB/s), GET that "
        "finds it %.2f ms (median of 3); RSS before %.1f MiB, peak %.1f MiB\n",
        put_ms, static_cast<double>(zip.size()) / 1048576.0 / (put_ms / 1000.0), get_ms, before,
        put_peak);
  }
  zip.clear();
  zip.shrink_to_fit();

  PassesFor(1, remote, tmp.Sub("cache-n1"), head);
  PassesFor(kManySpecs, remote, tmp.Sub("cache-n20"), head);
  PlainPasses(remote, tmp.Sub("cache-plain"), head);

  std::printf("peak RSS of the run (this process): %.1f MiB; the fake head's process: %.1f MiB\n",
              g_run_peak_mib, head.PeakMib());
  git_libgit2_shutdown();
  return 0;
}
