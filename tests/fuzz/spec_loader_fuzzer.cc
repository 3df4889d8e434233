// The spec loader on arbitrary bytes, read both as a JobSpec and as cluster.yaml. Properties:
// nothing crashes or trips a sanitizer; a result holds a value exactly when it has no
// diagnostics, and every diagnostic names the file it came from; LoadDesiredState agrees with
// LoadJobSpec on whether the spec is valid; and a valid spec renders to a submission body
// whose submission id is a valid, deterministic one.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "reconciler/core/identity.h"
#include "reconciler/core/render.h"
#include "reconciler/spec/spec_loader.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr char kSpecPath[] = "jobs/fuzz/spec.yaml";
constexpr char kClusterPath[] = "cluster.yaml";
constexpr char kCluster[] =
    "address: http://127.0.0.1:8265\n"
    "shared_root: /shared\n"
    "entrypoint_num_cpus: 1\n"
    "runtime_env:\n"
    "  env_vars:\n"
    "    HF_HOME: ${shared_root}/hf\n";

template <typename T>
void CheckParsed(const rg::spec::Parsed<T>& parsed, const std::string& path) {
  RG_FUZZ_CHECK(parsed.ok() == parsed.diagnostics.empty());
  for (const auto& d : parsed.diagnostics) {
    RG_FUZZ_CHECK(d.path == path);
    RG_FUZZ_CHECK(d.line >= 0 && d.column >= 0);
    RG_FUZZ_CHECK(!d.message.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  const auto cluster = rg::spec::LoadRayConfig(text, kClusterPath);
  CheckParsed(cluster, kClusterPath);

  const auto job = rg::spec::LoadJobSpec(text, kSpecPath);
  CheckParsed(job, kSpecPath);

  const rg::core::DesiredState state = rg::spec::LoadDesiredState(
      rg::spec::SourceFile{kClusterPath, kCluster}, {rg::spec::SourceFile{kSpecPath, text}});
  RG_FUZZ_CHECK(state.ClusterValid());
  RG_FUZZ_CHECK(state.jobs.size() + state.invalid.size() == 1);
  // Alone in its repository, a spec with `after` names a job that is not there (or itself):
  // valid on its own, invalid across files. Every other spec is what it is on its own.
  if (job.ok() && !job.value->pipeline().after.empty()) {
    RG_FUZZ_CHECK(state.jobs.empty());
  } else {
    RG_FUZZ_CHECK(job.ok() == (state.jobs.size() == 1));
  }

  for (const rg::core::JobSpec& spec : state.jobs) {
    const std::string id = rg::core::SubmissionIdForAttempt(spec, 0);
    RG_FUZZ_CHECK(!id.empty());
    RG_FUZZ_CHECK(id == rg::core::SubmissionIdForAttempt(spec, 0));
    rg::core::RenderContext context;
    context.commit = "0123456789abcdef0123456789abcdef01234567";
    const auto body = rg::core::RenderSubmission(spec, *state.cluster, context);
    if (body.ok()) RG_FUZZ_CHECK(body->is_object());
  }
  for (const rg::core::InvalidSpec& invalid : state.invalid) {
    RG_FUZZ_CHECK(!invalid.diagnostics.empty());
  }
  return 0;
}
