#!/usr/bin/env python3
"""Benchmark: one `ray-gitops submit` process against one fresh Python process that submits
through Ray's own SDK (JobSubmissionClient), each timed from process start to exit.

    submit_vs_sdk.py --ray-gitops BIN [--state-dir DIR] [-n 15]

DIR is the state dir of a running head (scripts/ray-head.sh start DIR). Without one, or when
DIR holds no head, a head is started for the run and stopped afterwards. Both sides submit
the entrypoint `true` with a fresh submission id; runs alternate so that drift in the head's
load hits both alike. Prints median, p95 and the ratio. Not a test: nothing is asserted.
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


def percentile(values, p):
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def head_answers(state_dir):
    return os.path.exists(os.path.join(state_dir, "address")) and subprocess.run(
        ["bash", os.path.join(ROOT, "scripts", "ray-head.sh"), "status", state_dir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def timed(cmd, env):
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd[:3])}...\n{done.stderr[-2000:]}")
    return elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ray-gitops", required=True)
    parser.add_argument("--state-dir", default="")
    parser.add_argument("-n", type=int, default=15)
    args = parser.parse_args()

    venv = os.environ.get("RG_VENV") or os.path.expanduser("~/.cache/ray-gitops/venv")
    python = os.path.join(venv, "bin", "python")
    work = tempfile.mkdtemp(prefix="rg-bench.")
    state_dir = args.state_dir
    own_head = not state_dir or not head_answers(state_dir)
    if own_head:
        state_dir = os.path.join(work, "head")
        print(f"starting a head for the benchmark in {state_dir}", flush=True)
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "ray-head.sh"), "start", state_dir],
                       check=True)
    try:
        with open(os.path.join(state_dir, "address")) as f:
            address = f.read().strip()
        token_file = os.path.join(state_dir, "token")
        with open(token_file) as f:
            token = f.read().strip()

        env = {k: v for k, v in os.environ.items()
               if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN")}
        sdk_env = dict(env)
        if token:
            sdk_env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
        cluster = os.path.join(work, "cluster.yaml")
        with open(cluster, "w") as f:
            f.write(f"address: {address}\n")
        tag = uuid.uuid4().hex[:8]

        rg_times, sdk_times = [], []
        for i in range(args.n):
            spec = os.path.join(work, "jobs", f"bench-{i}.yaml")
            os.makedirs(os.path.dirname(spec), exist_ok=True)
            with open(spec, "w") as f:
                f.write(f"workload: custom\nsubmission_id: bench-rg-{tag}-{i}\nentrypoint: 'true'\n")
            rg_cmd = [args.ray_gitops, "--ray-address", address]
            if token:
                rg_cmd += ["--ray-token-file", token_file]
            rg_cmd += ["submit", "--config", cluster, "--jobspec", spec, "--no-artifacts"]
            rg_times.append(timed(rg_cmd, env))

            sdk_code = ("from ray.job_submission import JobSubmissionClient; "
                        f"JobSubmissionClient({address!r}).submit_job(entrypoint='true', "
                        f"submission_id='bench-sdk-{tag}-{i}')")
            sdk_times.append(timed([python, "-c", sdk_code], sdk_env))
            print(f"run {i + 1:2}/{args.n}: ray-gitops {rg_times[-1] * 1000:7.1f} ms   "
                  f"sdk {sdk_times[-1] * 1000:7.1f} ms", flush=True)

        rg_med, sdk_med = statistics.median(rg_times), statistics.median(sdk_times)
        print()
        print(f"{'':28}{'median':>10}{'p95':>10}")
        print(f"{'ray-gitops submit':28}{rg_med * 1000:8.1f}ms{percentile(rg_times, 95) * 1000:8.1f}ms")
        print(f"{'python JobSubmissionClient':28}{sdk_med * 1000:8.1f}ms"
              f"{percentile(sdk_times, 95) * 1000:8.1f}ms")
        print(f"ratio of medians (sdk / ray-gitops): {sdk_med / rg_med:.1f}x  (n={args.n})")
    finally:
        if own_head:
            subprocess.run(["bash", os.path.join(ROOT, "scripts", "ray-head.sh"), "stop", state_dir])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
