"""Checks of the JSON Schemas in schema/, the example repository and the pre-commit hook.

Each check is one ctest test: `schema_checks.py CHECK --source-dir DIR [--ray-gitops BIN]`.
Exits 0 when every case of the check holds, 1 otherwise, printing each failed case.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import jsonschema
import yaml

SCHEMA_NAMES = ("cluster", "jobspec", "status")


class Check:
    """Collects failures so that one run reports every broken case, not just the first."""

    def __init__(self):
        self.failures = []
        self.passed = 0

    def expect(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failures.append(what)

    def finish(self):
        for failure in self.failures:
            print(f"FAIL: {failure}")
        print(f"{self.passed} passed, {len(self.failures)} failed")
        return 1 if self.failures or self.passed == 0 else 0


def load_schema(src, name):
    with open(src / "schema" / f"{name}.schema.json", encoding="utf-8") as f:
        return json.load(f)


def validator(src, name):
    schema = load_schema(src, name)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def schema_errors(v, document):
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in v.iter_errors(document)]


def example_files(src):
    repo = src / "examples" / "repo"
    jobs = sorted(p for p in (repo / "jobs").rglob("*") if p.suffix in (".yaml", ".yml"))
    return repo / "cluster.yaml", jobs


def invalid_files(src):
    return sorted((src / "tests" / "data" / "schema-invalid").glob("*.yaml"))


def expected_line(path):
    """The `# expect-line: N` header of an invalid sample, or None for whole-file mistakes."""
    m = re.search(r"^# expect-line: (\d+)$", path.read_text(encoding="utf-8"), re.M)
    return int(m.group(1)) if m else None


def run_validate(binary, repo_dir, *files):
    return subprocess.run([binary, "validate", "--repo", str(repo_dir), *files],
                          capture_output=True, text=True, timeout=60, check=False)


# --- checks -----------------------------------------------------------------------------


def check_schemas_valid(args, c):
    for name in SCHEMA_NAMES:
        schema = load_schema(args.source_dir, name)
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
            ok = True
        except jsonschema.SchemaError as e:
            ok = False
            print(f"{name}: {e.message}")
        c.expect(ok, f"schema/{name}.schema.json is a valid draft 2020-12 schema")
        c.expect(schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema",
                 f"schema/{name}.schema.json declares draft 2020-12")
        c.expect(schema.get("additionalProperties") is False,
                 f"schema/{name}.schema.json rejects unknown top-level keys")
        undocumented = [k for k, v in schema.get("properties", {}).items()
                        if "description" not in v and "$ref" not in v]
        refs_undocumented = [k for k, v in schema.get("properties", {}).items()
                             if "$ref" in v and "description" not in v and
                             "description" not in resolve_local_ref(schema, v["$ref"])]
        c.expect(not undocumented and not refs_undocumented,
                 f"schema/{name}.schema.json: every property has a description "
                 f"(missing: {undocumented + refs_undocumented})")


def resolve_local_ref(schema, ref):
    node = schema
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def check_examples_match(args, c):
    cluster, jobs = example_files(args.source_dir)
    cv = validator(args.source_dir, "cluster")
    errors = schema_errors(cv, load_yaml(cluster))
    c.expect(not errors, f"examples/repo/cluster.yaml matches the cluster schema: {errors}")
    jv = validator(args.source_dir, "jobspec")
    c.expect(len(jobs) >= 4, f"examples/repo/jobs holds the example specs (found {len(jobs)})")
    workloads = set()
    for job in jobs:
        doc = load_yaml(job)
        workloads.add(doc.get("workload") if isinstance(doc, dict) else None)
        errors = schema_errors(jv, doc)
        c.expect(not errors,
                 f"{job.relative_to(args.source_dir)} matches the jobspec schema: {errors}")
    c.expect(workloads == {"ppo", "grpo", "sft", "custom"},
             f"the examples cover every workload (got {sorted(map(str, workloads))})")


def check_invalid_rejected_by_schema(args, c):
    files = invalid_files(args.source_dir)
    c.expect(len(files) >= 15, f"tests/data/schema-invalid holds the samples (found {len(files)})")
    cv = validator(args.source_dir, "cluster")
    jv = validator(args.source_dir, "jobspec")
    for path in files:
        v = cv if path.name.startswith("cluster-") else jv
        errors = schema_errors(v, load_yaml(path))
        # Exactly one error: each sample holds one mistake, so a sample cannot pass because
        # of some other, unintended one.
        c.expect(len(errors) == 1,
                 f"the schema rejects {path.name} with exactly one error (got {errors})")


def make_validate_repo(src, root, invalid):
    """A desired-state repository holding one invalid sample next to valid files."""
    repo = pathlib.Path(root) / "repo"
    (repo / "jobs").mkdir(parents=True)
    example_cluster, _ = example_files(src)
    smoke = src / "examples" / "repo" / "jobs" / "smoke" / "hello.yaml"
    if invalid.name.startswith("cluster-"):
        shutil.copy(invalid, repo / "cluster.yaml")
        shutil.copy(smoke, repo / "jobs" / "smoke.yaml")
        return repo, "cluster.yaml"
    shutil.copy(example_cluster, repo / "cluster.yaml")
    shutil.copy(invalid, repo / "jobs" / "x.yaml")
    return repo, "jobs/x.yaml"


def check_invalid_rejected_by_validate(args, c):
    files = invalid_files(args.source_dir)
    c.expect(len(files) >= 15, f"tests/data/schema-invalid holds the samples (found {len(files)})")
    for path in files:
        with tempfile.TemporaryDirectory() as root:
            repo, rel = make_validate_repo(args.source_dir, root, path)
            r = run_validate(args.ray_gitops, repo)
            out = r.stdout + r.stderr
            c.expect(r.returncode == 1,
                     f"ray-gitops validate rejects {path.name} with exit 1 "
                     f"(got {r.returncode}): {out.strip()}")
            line = expected_line(path)
            if line is None:
                pattern = rf"(^|[\s/]){re.escape(rel)}(:\d+)*: error: "
            else:
                pattern = rf"(^|[\s/]){re.escape(rel)}:{line}:\d+: error: "
            c.expect(len(re.findall(r": error: ", out)) == 1,
                     f"ray-gitops validate reports exactly one error for {path.name} "
                     f"(got: {out.strip()})")
            c.expect(re.search(pattern, out, re.M),
                     f"ray-gitops validate on {path.name} reports "
                     f"'{rel}{':' + str(line) + ':<col>' if line else ''}: error: ...' "
                     f"(got: {out.strip()})")


def valid_samples(src):
    return sorted((src / "tests" / "schema" / "valid").glob("*.yaml"))


def make_valid_sample_repo(src, root, sample):
    """A desired-state repository whose only unusual file is one valid edge-case sample."""
    repo = pathlib.Path(root) / "repo"
    (repo / "jobs").mkdir(parents=True)
    example = src / "examples" / "repo"
    if sample.name.startswith("cluster-"):
        shutil.copy(sample, repo / "cluster.yaml")
        shutil.copy(example / "jobs" / "smoke" / "hello.yaml", repo / "jobs" / "smoke.yaml")
    else:
        shutil.copy(example / "cluster.yaml", repo / "cluster.yaml")
        shutil.copy(sample, repo / "jobs" / "x.yaml")
    return repo


def check_valid_edge_cases(args, c):
    """Boundary values both the schemas and the loader must accept, so neither is stricter."""
    samples = valid_samples(args.source_dir)
    c.expect(len(samples) >= 4, f"tests/schema/valid holds the samples (found {len(samples)})")
    cv = validator(args.source_dir, "cluster")
    jv = validator(args.source_dir, "jobspec")
    for path in samples:
        v = cv if path.name.startswith("cluster-") else jv
        errors = schema_errors(v, load_yaml(path))
        c.expect(not errors, f"the schema accepts {path.name}: {errors}")
        with tempfile.TemporaryDirectory() as root:
            r = run_validate(args.ray_gitops, make_valid_sample_repo(args.source_dir, root, path))
            c.expect(r.returncode == 0,
                     f"ray-gitops validate accepts {path.name} (exit {r.returncode}): "
                     f"{(r.stdout + r.stderr).strip()}")


def check_validate_accepts_examples(args, c):
    repo = args.source_dir / "examples" / "repo"
    r = run_validate(args.ray_gitops, repo)
    c.expect(r.returncode == 0,
             f"ray-gitops validate --repo examples/repo exits 0 (got {r.returncode}): "
             f"{(r.stdout + r.stderr).strip()}")
    c.expect("error:" not in r.stdout + r.stderr,
             "ray-gitops validate --repo examples/repo reports no error")


class CoreSchemaLoader(yaml.SafeLoader):
    """YAML 1.2 core-schema-like reading: timestamps stay strings, as yaml-cpp and editors read
    them, instead of becoming datetime objects."""


CoreSchemaLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def check_status_files_from_encoder(args, c):
    v = validator(args.source_dir, "status")
    phases = set(load_schema(args.source_dir, "status")["$defs"]["phase"]["enum"])
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([str(args.status_writer), out], capture_output=True, text=True,
                           timeout=60, check=False)
        c.expect(r.returncode == 0, f"the status sample writer ran: {r.stderr}")
        files = sorted(pathlib.Path(out).glob("*.yaml"))
        c.expect(len(files) >= 3 + len(phases),
                 f"the writer wrote a file per sample and per phase (got {len(files)})")
        seen_phases = set()
        for path in files:
            with open(path, encoding="utf-8") as f:
                doc = yaml.load(f, Loader=CoreSchemaLoader)
            if isinstance(doc, dict):
                seen_phases.add(doc.get("phase"))
            errors = schema_errors(v, doc)
            c.expect(not errors, f"the status schema accepts the encoder's {path.name}: {errors}")
        c.expect(seen_phases == phases,
                 f"the encoder writes every phase of the schema and no other "
                 f"(schema {sorted(phases)}, written {sorted(map(str, seen_phases))})")


def check_status_documents(args, c):
    v = validator(args.source_dir, "status")
    running = {
        "name": "ppo-qwen2.5-0.5b-gsm8k",
        "spec_path": "jobs/ppo/qwen2.5-0.5b-gsm8k.yaml",
        "spec_hash": "3f2a1c9b0e",
        "spec_commit": "0123456789abcdef0123456789abcdef01234567",
        "phase": "Running",
        "submission_id": "ppo-qwen2.5-0.5b-gsm8k-3f2a1c9b0e-r1",
        "attempt": 1,
        "status": "RUNNING",
        "message": "Job is currently running.",
        "error_type": None,
        "job_id": "02000000",
        "start_time": "2026-11-22T09:30:01.250Z",
        "end_time": None,
        "driver_exit_code": None,
        "dashboard_url": "http://127.0.0.1:8265/#/jobs/ppo-qwen2.5-0.5b-gsm8k-3f2a1c9b0e-r1",
        "errors": [],
        "attempts": [{
            "submission_id": "ppo-qwen2.5-0.5b-gsm8k-3f2a1c9b0e",
            "attempt": 0,
            "status": "FAILED",
            "phase": "Failed",
            "start_time": "2026-11-22T08:00:00Z",
            "end_time": "2026-11-22T09:29:00Z",
            "message": "Job entrypoint command failed with exit code 1",
        }],
    }
    invalid = {
        "name": "broken",
        "spec_path": "jobs/broken.yaml",
        "spec_hash": None,
        "spec_commit": None,
        "phase": "Invalid",
        "submission_id": None,
        "attempt": None,
        "status": None,
        "errors": ["jobs/broken.yaml:3:9: error: nnodes must be an integer >= 1 (got \"two\")"],
        "attempts": [],
    }
    for label, doc in (("a running job with an earlier attempt", running),
                       ("an invalid spec with unknown values as null", invalid)):
        errors = schema_errors(v, doc)
        c.expect(not errors, f"the status schema accepts {label}: {errors}")

    def mutated(change):
        doc = json.loads(json.dumps(running))
        change(doc)
        return doc

    bad = {
        "an unknown phase": mutated(lambda d: d.update(phase="Done")),
        "a lower-case Ray status": mutated(lambda d: d.update(status="running")),
        "a start_time in epoch milliseconds": mutated(lambda d: d.update(start_time=1732267801250)),
        "a start_time with a time zone offset": mutated(
            lambda d: d.update(start_time="2026-11-22T10:30:01+01:00")),
        "an unknown key": mutated(lambda d: d.update(last_pass="2026-11-22T09:30:01Z")),
        "a negative attempt": mutated(lambda d: d.update(attempt=-1)),
        "a spec_hash of the wrong length": mutated(lambda d: d.update(spec_hash="3f2a1c")),
        "errors that are not strings": mutated(lambda d: d.update(errors=[{"line": 3}])),
        "an attempt without its submission_id": mutated(
            lambda d: d["attempts"][0].pop("submission_id")),
        "an attempt with an unknown key": mutated(lambda d: d["attempts"][0].update(pid=7)),
        "no phase": mutated(lambda d: d.pop("phase")),
    }
    for label, doc in bad.items():
        c.expect(schema_errors(v, doc), f"the status schema rejects {label}")


# --- the pre-commit hook --------------------------------------------------------------------


class HookRepo:
    """A throwaway git repository with hooks/pre-commit installed."""

    def __init__(self, root, src, binary):
        self.dir = pathlib.Path(root) / "repo"
        self.hook_tmp = pathlib.Path(root) / "hook-tmp"
        self.hook_tmp.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(RAY_GITOPS=str(binary), TMPDIR=str(self.hook_tmp),
                        GIT_CONFIG_NOSYSTEM="1", HOME=str(root), LC_ALL="C")
        self.git("init", "-q", str(self.dir), cwd=root)
        self.git("config", "user.name", "Test")
        self.git("config", "user.email", "test@example.com")
        self.git("config", "commit.gpgsign", "false")
        hook = self.dir / ".git" / "hooks" / "pre-commit"
        shutil.copy(src / "hooks" / "pre-commit", hook)
        hook.chmod(0o755)

    def git(self, *argv, cwd=None, env=None):
        return subprocess.run(["git", *argv], cwd=cwd or self.dir, env=env or self.env,
                              capture_output=True, text=True, timeout=60, check=False)

    def write(self, rel, text):
        path = self.dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def add(self, *rels):
        r = self.git("add", *rels)
        assert r.returncode == 0, r.stderr

    def commit(self, message, **env):
        return self.git("commit", "-q", "-m", message, env={**self.env, **env})

    def head(self):
        return self.git("rev-parse", "-q", "--verify", "HEAD").stdout.strip()

    def leftovers(self):
        return sorted(p.name for p in self.hook_tmp.iterdir())


BROKEN_SPEC = """workload: ppo
model_id: /private/models/Qwen2.5-0.5B-Instruct
nnodes: two
"""

FIXED_SPEC = """workload: ppo
model_id: /private/models/Qwen2.5-0.5B-Instruct
nnodes: 1
"""


def check_pre_commit_hook(args, c):
    src = args.source_dir
    with tempfile.TemporaryDirectory() as root:
        repo = HookRepo(root, src, args.ray_gitops)

        repo.write("README.md", "desired state\n")
        repo.add("README.md")
        r = repo.commit("readme", RAY_GITOPS="/nonexistent/ray-gitops")
        c.expect(r.returncode == 0 and repo.head(),
                 f"a commit that stages no spec succeeds without the binary: {r.stderr}")

        example = src / "examples" / "repo"
        repo.write("cluster.yaml", (example / "cluster.yaml").read_text(encoding="utf-8"))
        repo.write("jobs/smoke/hello.yaml",
                   (example / "jobs" / "smoke" / "hello.yaml").read_text(encoding="utf-8"))
        repo.add("cluster.yaml", "jobs")
        r = repo.commit("cluster and smoke test")
        c.expect(r.returncode == 0, f"a commit of valid cluster.yaml and spec succeeds: {r.stderr}")
        good_head = repo.head()

        repo.write("jobs/ppo/bad.yaml", BROKEN_SPEC)
        repo.add("jobs/ppo/bad.yaml")
        r = repo.commit("broken spec")
        c.expect(r.returncode != 0, "a commit of a spec with nnodes: two is refused")
        c.expect(repo.head() == good_head, "a refused commit leaves HEAD where it was")
        c.expect(re.search(r"^jobs/ppo/bad\.yaml:3:\d+: error: ", r.stderr, re.M),
                 f"the refusal names jobs/ppo/bad.yaml:3:<col> repo-relative: {r.stderr}")
        c.expect(str(repo.hook_tmp) not in r.stderr,
                 f"the refusal does not show the hook's temporary directory: {r.stderr}")
        c.expect(repo.leftovers() == [],
                 f"the hook removes its temporary directory: {repo.leftovers()}")

        repo.write("jobs/ppo/bad.yaml", FIXED_SPEC)
        r = repo.commit("fixed only in the working tree")
        c.expect(r.returncode != 0,
                 "a fix that is not staged does not help: the hook checks the index")

        repo.add("jobs/ppo/bad.yaml")
        repo.write("jobs/ppo/bad.yaml", BROKEN_SPEC)
        r = repo.commit("fixed in the index")
        c.expect(r.returncode == 0,
                 f"a valid staged spec commits even if the working tree is broken: {r.stderr}")
        c.expect(repo.head() != good_head, "the accepted commit moved HEAD")
        c.expect(repo.leftovers() == [],
                 f"the hook removes its temporary directory: {repo.leftovers()}")

        repo.write("jobs/ppo/bad.yaml", FIXED_SPEC)
        repo.write("jobs/smoke/hello.yaml", "workload: custom\nentrypoint: echo hi\nretries: 3\n")
        repo.add("jobs")
        r = repo.commit("binary missing", RAY_GITOPS="/nonexistent/ray-gitops")
        c.expect(r.returncode != 0 and "ray-gitops not found" in r.stderr,
                 f"without the binary, a commit that stages a spec is refused with a "
                 f"clear message: {r.stderr}")

        repo.write("cluster.yaml", "address: http://127.0.0.1:8265\nshared_root: relative\n")
        repo.add("cluster.yaml")
        r = repo.commit("broken cluster")
        c.expect(r.returncode != 0 and re.search(r"^cluster\.yaml:\d+:\d+: error: ",
                                                 r.stderr, re.M),
                 f"a staged invalid cluster.yaml is refused with its location: {r.stderr}")
        c.expect(repo.leftovers() == [],
                 f"the hook removes its temporary directory: {repo.leftovers()}")


def check_pre_commit_hook_configured_paths(args, c):
    src = args.source_dir
    with tempfile.TemporaryDirectory() as root:
        repo = HookRepo(root, src, args.ray_gitops)
        repo.git("config", "ray-gitops.clusterFile", "deploy/cluster.yaml")
        repo.git("config", "ray-gitops.jobsDir", "deploy/jobs/")
        example = src / "examples" / "repo"
        repo.write("deploy/cluster.yaml", (example / "cluster.yaml").read_text(encoding="utf-8"))
        repo.write("jobs/not-a-spec.yaml", "this: [is not checked\n")
        repo.add("deploy", "jobs")
        r = repo.commit("desired state under deploy/")
        c.expect(r.returncode == 0,
                 f"with ray-gitops.clusterFile/jobsDir set, files outside them are not "
                 f"checked: {r.stderr}")

        repo.write("deploy/jobs/sft/bad.yaml", BROKEN_SPEC)
        repo.add("deploy")
        r = repo.commit("broken spec under deploy/jobs")
        c.expect(r.returncode != 0 and re.search(r"^deploy/jobs/sft/bad\.yaml:3:\d+: error: ",
                                                 r.stderr, re.M),
                 f"a broken spec under the configured jobs folder is refused with its "
                 f"location: {r.stderr}")
        c.expect(repo.leftovers() == [],
                 f"the hook removes its temporary directory: {repo.leftovers()}")


CHECKS = {
    "schemas_valid": check_schemas_valid,
    "examples_match": check_examples_match,
    "invalid_rejected_by_schema": check_invalid_rejected_by_schema,
    "status_documents": check_status_documents,
    "status_files_from_encoder": check_status_files_from_encoder,
    "invalid_rejected_by_validate": check_invalid_rejected_by_validate,
    "validate_accepts_examples": check_validate_accepts_examples,
    "valid_edge_cases": check_valid_edge_cases,
    "pre_commit_hook": check_pre_commit_hook,
    "pre_commit_hook_configured_paths": check_pre_commit_hook_configured_paths,
}
NEEDS_BINARY = {"invalid_rejected_by_validate", "validate_accepts_examples", "valid_edge_cases",
                "pre_commit_hook", "pre_commit_hook_configured_paths"}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    parser.add_argument("--ray-gitops", type=pathlib.Path)
    parser.add_argument("--status-writer", type=pathlib.Path)
    args = parser.parse_args()
    args.source_dir = args.source_dir.resolve()
    if args.check in NEEDS_BINARY and (args.ray_gitops is None or not args.ray_gitops.is_file()):
        print(f"{args.check} needs --ray-gitops pointing at the built binary "
              f"(got {args.ray_gitops})")
        return 1
    if args.check == "status_files_from_encoder" and (
            args.status_writer is None or not args.status_writer.is_file()):
        print(f"{args.check} needs --status-writer pointing at rg_status_sample_writer")
        return 1
    c = Check()
    CHECKS[args.check](args, c)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
