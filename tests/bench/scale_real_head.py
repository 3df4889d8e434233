#!/usr/bin/env python3
"""Benchmark: 50 new specs through `ray-gitops sync` against a warm Python loop of Ray's own
JobSubmissionClient.submit_job for 50 jobs, on a real head.

    scale_real_head.py --ray-gitops BIN [--state-dir DIR] [-n 50] [--runs 3]

Run it with the venv's python (it imports ray). DIR is the state dir of a running head
(scripts/ray-head.sh start DIR); without one, or when DIR holds no head, a head is started for
the run and stopped afterwards.

Each run makes a bare remote and a clone (git) holding cluster.yaml and N custom specs with the
entrypoint `true` (their env var RUN makes every run's ids new), primes ray-gitops' cache with
one `plan` (the clone present, as for a daemon or a CI job that ran before), then times one
`ray-gitops sync` process from start to exit (N submits, 4 in flight, and the status commit).
The Python side is this process, warm: ray imported, the client made and one submit sent
before the clock starts; then N `submit_job(entrypoint='true')` calls in a loop. Between
measurements the benchmark waits until every job it submitted has ended, so one side's drivers
do not load the other's measurement. Prints both medians and the ratio. Not a test.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}


def ray_head(command, state_dir, **kwargs):
    return subprocess.run(["bash", os.path.join(ROOT, "scripts", "ray-head.sh"), command,
                           state_dir], **kwargs)


def head_answers(state_dir):
    return os.path.exists(os.path.join(state_dir, "address")) and ray_head(
        "status", state_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def git(*args, cwd=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_repo(work, address, n, run_tag):
    remote, clone = os.path.join(work, "remote.git"), os.path.join(work, "clone")
    git("init", "-q", "--bare", "-b", "main", remote)
    git("clone", "-q", remote, clone)
    git("config", "user.email", "bench@localhost", cwd=clone)
    git("config", "user.name", "bench", cwd=clone)
    with open(os.path.join(clone, "cluster.yaml"), "w") as f:
        f.write(f"address: {address}\n")
    os.makedirs(os.path.join(clone, "jobs"))
    for i in range(n):
        with open(os.path.join(clone, "jobs", f"bench-{i:03}.yaml"), "w") as f:
            f.write("workload: custom\nentrypoint: 'true'\n"
                    f"env_vars:\n  RUN: \"{run_tag}\"\n  SHARD: \"{i}\"\n")
    git("add", "-A", cwd=clone)
    git("commit", "-q", "-m", "specs", cwd=clone)
    git("push", "-q", "origin", "main", cwd=clone)
    return remote


def wait_ended(client, ids, timeout_s=600):
    """Until every job in `ids` has ended (polled every 0.5 s, bounded)."""
    deadline = time.monotonic() + timeout_s
    pending = set(ids)
    while pending:
        pending = {i for i in pending if client.get_job_status(i).value not in TERMINAL}
        if not pending:
            return
        if time.monotonic() > deadline:
            sys.exit(f"{len(pending)} jobs did not end within {timeout_s} s")
        time.sleep(0.5)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ray-gitops", required=True)
    parser.add_argument("--state-dir", default="")
    parser.add_argument("-n", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="rg-bench-scale.")
    state_dir = args.state_dir
    own_head = not state_dir or not head_answers(state_dir)
    if own_head:
        state_dir = os.path.join(work, "head")
        print(f"starting a head for the benchmark in {state_dir}", flush=True)
        ray_head("start", state_dir, check=True)
    try:
        with open(os.path.join(state_dir, "address")) as f:
            address = f.read().strip()
        token_file = os.path.join(state_dir, "token")
        token = open(token_file).read().strip() if os.path.exists(token_file) else ""
        for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN"):
            os.environ.pop(name, None)
        rg_env = dict(os.environ)
        if token:
            os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
        from ray.job_submission import JobSubmissionClient  # after the token is in place

        client = JobSubmissionClient(address)
        tag = uuid.uuid4().hex[:8]
        client.submit_job(entrypoint="true", submission_id=f"bench-scale-warm-{tag}")

        rg_times, py_times = [], []
        for run in range(args.runs):
            run_dir = os.path.join(work, f"run-{run}")
            os.makedirs(run_dir)
            remote = make_repo(run_dir, address, args.n, f"{tag}-{run}")
            instance = f"bench-{tag}-{run}"  # its own: the jobs listed below are this run's
            rg = [args.ray_gitops, "--ray-address", address]
            if token:
                rg += ["--ray-token-file", token_file]
            common = ["--repo", remote, "--cache-dir", os.path.join(run_dir, "cache"),
                      "--ref", "main", "--instance", instance, "--no-artifacts"]
            plan = subprocess.run(rg + ["plan"] + [a for a in common if a != "--no-artifacts"],
                                  env=rg_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
            if plan.returncode != 2:
                sys.exit(f"plan exits {plan.returncode} (2 = changes pending):\n{plan.stderr}")
            start = time.perf_counter()
            sync = subprocess.run(rg + ["sync"] + common, env=rg_env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            rg_times.append(time.perf_counter() - start)
            if sync.returncode != 0:
                sys.exit(f"sync exits {sync.returncode}:\n{sync.stderr[-2000:]}")
            rg_ids = [j.submission_id for j in client.list_jobs() if j.submission_id
                      and (j.metadata or {}).get("gitops.managed-by") == instance]
            if len(rg_ids) != args.n:
                sys.exit(f"Ray lists {len(rg_ids)} jobs of instance {instance}, not {args.n}")
            wait_ended(client, rg_ids)

            ids = [f"bench-scale-py-{tag}-{run}-{i}" for i in range(args.n)]
            start = time.perf_counter()
            for sid in ids:
                client.submit_job(entrypoint="true", submission_id=sid)
            py_times.append(time.perf_counter() - start)
            wait_ended(client, ids)
            print(f"run {run + 1}/{args.runs}: ray-gitops sync {rg_times[-1] * 1000:8.1f} ms   "
                  f"python loop {py_times[-1] * 1000:8.1f} ms", flush=True)

        rg_med, py_med = statistics.median(rg_times), statistics.median(py_times)
        print()
        print(f"{args.n} new submits on a real head (Ray at {address}), median of {args.runs}:")
        print(f"  ray-gitops sync (a process; clone present; 4 in flight; status commit) "
              f"{rg_med * 1000:8.1f} ms")
        print(f"  warm python loop of JobSubmissionClient.submit_job             "
              f"{py_med * 1000:8.1f} ms")
        print(f"  ratio sync / python loop: {rg_med / py_med:.2f}x")
    finally:
        if own_head:
            ray_head("stop", state_dir)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
