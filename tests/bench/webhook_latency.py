#!/usr/bin/env python3
"""Benchmark: how long after a Git host's webhook a pushed JobSpec's run exists in Ray.

    webhook_latency.py --ray-gitops BIN --state-dir DIR [-n 20]

DIR is the state dir of a running head (scripts/ray-head.sh start DIR). The benchmark makes a
bare remote and a clone in a temp dir and starts `ray-gitops run` with a 10-minute interval
(so only the webhook explains a pass) and a GitHub webhook secret. Each iteration pushes a new
spec (entrypoint `true`), POSTs the signed push webhook, and measures from the webhook's HTTP
response to the first 200 of GET /api/jobs/<submission id>, polled every 20 ms. The id is
known beforehand from `ray-gitops plan`. Prints median, p95, min and max. Not a test.
"""

import argparse
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

POLL_S = 0.02


def percentile(values, p):
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def git(*args, cwd=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def http(method, url, headers=None, body=None, timeout=30):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ray-gitops", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("-n", type=int, default=20)
    args = parser.parse_args()

    address_file = os.path.join(args.state_dir, "address")
    if not os.path.exists(address_file):
        sys.exit(f"no head in {args.state_dir}: start one with scripts/ray-head.sh start DIR")
    address = open(address_file).read().strip()
    token_file = os.path.join(args.state_dir, "token")
    token = open(token_file).read().strip() if os.path.exists(token_file) else ""
    ray_headers = {"Authorization": "Bearer " + token} if token else {}
    if http("GET", address + "/api/version", ray_headers)[0] != 200:
        sys.exit(f"the head at {address} does not answer")

    work = tempfile.mkdtemp(prefix="rg-bench-webhook.")
    daemon = None
    tag = os.urandom(4).hex()
    instance = "bench-webhook-" + tag
    secret = "bench-" + os.urandom(16).hex()
    try:
        remote, clone = os.path.join(work, "remote.git"), os.path.join(work, "work")
        git("init", "-q", "--bare", "-b", "main", remote)
        git("clone", "-q", remote, clone)
        git("config", "user.email", "bench@localhost", cwd=clone)
        git("config", "user.name", "bench", cwd=clone)
        git("checkout", "-q", "-b", "main", cwd=clone)
        os.makedirs(os.path.join(clone, "jobs"))
        with open(os.path.join(clone, "cluster.yaml"), "w") as f:
            f.write(f"address: {address}\n")
        open(os.path.join(clone, "jobs", ".keep"), "w").close()

        def push(message):
            git("add", "-A", cwd=clone)
            git("commit", "-qm", message, cwd=clone)
            git("push", "-q", "origin", "main", cwd=clone)

        push("cluster file")
        secret_file = os.path.join(work, "webhook-secret")
        with open(secret_file, "w") as f:
            f.write(secret + "\n")
        env = {k: v for k, v in os.environ.items()
               if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN",
                            "RAY_JOB_HEADERS")}
        base = [args.ray_gitops, "--ray-address", address]
        if token:
            base += ["--ray-token-file", token_file]
        repo_flags = ["--repo", remote, "--instance", instance]
        log_path = os.path.join(work, "daemon.log")
        log = open(log_path, "w")
        daemon = subprocess.Popen(
            base + ["run", *repo_flags, "--branch", "main", "--cache-dir",
                    os.path.join(work, "cache"), "--no-artifacts", "--interval", "10m",
                    "--listen", "127.0.0.1:0", "--webhook-secret-file", secret_file,
                    "--webhook-kind", "github"],
            env=env, stdout=subprocess.DEVNULL, stderr=log)
        url = None
        deadline = time.monotonic() + 60
        while url is None or http("GET", url + "/readyz")[0] != 200:
            if time.monotonic() > deadline or daemon.poll() is not None:
                sys.exit("the daemon did not become ready:\n" + open(log_path).read()[-3000:])
            m = re.search(r"started .*port=(\d+)", open(log_path).read())
            url = f"http://127.0.0.1:{m.group(1)}" if m else None
            time.sleep(0.05)

        payload = json.dumps({"ref": "refs/heads/main"}).encode()
        signature = "sha256=" + hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()
        hook_headers = {"Content-Type": "application/json", "X-GitHub-Event": "push",
                        "X-Hub-Signature-256": signature}
        latencies = []
        for i in range(args.n):
            name = f"bench-{i:02d}"
            with open(os.path.join(clone, "jobs", name + ".yaml"), "w") as f:
                f.write("workload: custom\nentrypoint: 'true'\nentrypoint_num_cpus: 0\n"
                        f"env_vars:\n  RG_BENCH_RUN: \"{tag}\"\n")
            push(name)
            plan = subprocess.run(
                base + ["plan", *repo_flags, "--ref", "main", "--cache-dir",
                        os.path.join(work, "plan-cache"), "--format", "json"],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ids = [a["submission_id"] for a in json.loads(plan.stdout)["actions"]
                   if a["action"] == "submit" and a["name"] == name]
            if len(ids) != 1:
                sys.exit(f"plan does not submit {name}: {plan.stdout}{plan.stderr}")
            status, body = http("POST", url + "/webhook", hook_headers, payload)
            answered = time.perf_counter()
            if status != 202:
                sys.exit(f"webhook answered {status}: {body!r}")
            while http("GET", f"{address}/api/jobs/{ids[0]}", ray_headers)[0] != 200:
                if time.perf_counter() - answered > 60:
                    sys.exit(f"{ids[0]} not in Ray 60 s after the webhook:\n"
                             + open(log_path).read()[-3000:])
                time.sleep(POLL_S)
            latencies.append((time.perf_counter() - answered) * 1000)
            print(f"  {i + 1:2d}/{args.n}  {ids[0]}  {latencies[-1]:7.1f} ms", flush=True)

        print(f"\nwebhook response -> job in Ray ({args.n} pushes, Ray {address}, "
              f"poll every {POLL_S * 1000:.0f} ms):")
        print(f"  median {statistics.median(latencies):7.1f} ms")
        print(f"  p95    {percentile(latencies, 95):7.1f} ms")
        print(f"  min    {min(latencies):7.1f} ms")
        print(f"  max    {max(latencies):7.1f} ms")
        passes = [int(m) for m in re.findall(r"pass .*duration_ms=(\d+).*trigger=webhook",
                                             open(log_path).read())]
        if passes:
            print(f"  (the daemon's webhook passes took median "
                  f"{statistics.median(passes):.0f} ms, max {max(passes)} ms by its own log)")
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
