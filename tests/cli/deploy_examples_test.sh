#!/usr/bin/env bash
# The deployment examples of docs/operations.md hold together: the Kubernetes manifests parse
# and wire what the docs promise (probes, scrape annotations, a non-loopback listener with its
# explicit flag, credentials from the Secret as files), the systemd unit is hardened and takes
# its secrets as credentials, and every ray-gitops flag either uses exists in the binary.
# `systemd-analyze verify` runs when it is installed. The image: the Kubernetes manifest, both CI
# recipes and docs/install.md name the one image of this release,
# ghcr.io/ray-gitops/ray-gitops:<project version>; the manifest runs it as the Containerfile's
# USER, hardened (read-only root with a writable /tmp, no privilege escalation, non-root, no
# capabilities, RuntimeDefault seccomp, requests and a memory limit) and probed (/healthz,
# /readyz); the GitHub recipe runs the review in it by `docker run` as the runner's user, with
# every variable passed by name. Usage:
#   deploy_examples_test.sh RAY_GITOPS_BINARY SOURCE_DIR PROJECT_VERSION
set -euo pipefail
bin=$1
src=$2
version=$3
py=${RG_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ray-gitops/venv}/bin/python
tmp=$(mktemp -d /tmp/rg-deploy.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The flags the binary knows: global ones and those of `run`.
{ "$bin" --help; "$bin" run --help; } | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u >"$tmp/flags"
grep -qx -- '--listen-any' "$tmp/flags" || fail "could not read the flags from --help"

unit=$src/examples/systemd/ray-gitops.service
manifest=$src/examples/kubernetes/ray-gitops.yaml

"$py" - "$manifest" "$unit" "$tmp/flags" <<'PYEOF'
import re, sys, yaml
manifest, unit, flags_file = sys.argv[1:]
known = set(open(flags_file).read().split())

def check_flags(args, where):
    for a in args:
        if a.startswith("--"):
            flag = a.split("=", 1)[0]
            assert flag in known, f"{where}: ray-gitops has no flag {flag}"

# --- Kubernetes ---
docs = [d for d in yaml.safe_load_all(open(manifest)) if d is not None]
by_name = {(d["kind"], d["metadata"]["name"]): d for d in docs}
assert sorted(k for k, _ in by_name) == ["ConfigMap", "Deployment", "Secret", "Secret",
                                         "Service"], sorted(by_name)
secret = by_name[("Secret", "ray-gitops")]
job_secrets = by_name[("Secret", "ray-gitops-job-secrets")]
known_hosts_map = by_name[("ConfigMap", "ray-gitops-known-hosts")]
deploy = by_name[("Deployment", "ray-gitops")]
service = by_name[("Service", "ray-gitops")]
assert deploy["spec"]["replicas"] == 1 and deploy["spec"]["strategy"]["type"] == "Recreate"
pod = deploy["spec"]["template"]
(c,) = pod["spec"]["containers"]
args = c["args"]
check_flags(args, "Deployment")
assert "run" in args, args
opts = dict(a.split("=", 1) for a in args if a.startswith("--") and "=" in a)
assert opts["--listen"].startswith("0.0.0.0:") and "--listen-any" in args, args
port = int(opts["--listen"].rsplit(":", 1)[1])
assert re.fullmatch(r"http://[a-z0-9-]+-head-svc(\.[a-z0-9-]+)*:8265", opts["--ray-address"]), opts
(cport,) = c["ports"]
assert cport["containerPort"] == port
assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
for probe in ("livenessProbe", "readinessProbe"):
    assert c[probe]["httpGet"]["port"] in (port, cport["name"]), probe
ann = pod["metadata"]["annotations"]
assert ann["prometheus.io/scrape"] == "true" and int(ann["prometheus.io/port"]) == port
assert ann["prometheus.io/path"] == "/metrics"
assert pod["spec"]["terminationGracePeriodSeconds"] >= 60
# Every credential is a file from the Secret, and every key the daemon reads is in it.
mount = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vol = {v["name"]: v for v in pod["spec"]["volumes"]}
(cred_name,) = [n for n, v in vol.items()
                if v.get("secret", {}).get("secretName") == secret["metadata"]["name"]]
cred_dir = mount[cred_name]
# Job secrets: their own Secret, mounted as --secrets-dir, apart from the daemon's credentials
# (a spec can then never name one of those).
(job_vol,) = [n for n, v in vol.items()
              if v.get("secret", {}).get("secretName") == job_secrets["metadata"]["name"]]
assert opts["--secrets-dir"] == mount[job_vol], (opts["--secrets-dir"], mount[job_vol])
assert mount[job_vol] != cred_dir and not mount[job_vol].startswith(cred_dir + "/")
assert not set(job_secrets["stringData"]) & set(secret["stringData"])
for ref in job_secrets["stringData"]:
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", ref), ref
# known_hosts: a file of the ConfigMap, named by --known-hosts.
(kh_vol,) = [n for n, v in vol.items()
             if v.get("configMap", {}).get("name") == known_hosts_map["metadata"]["name"]]
kh_dir, kh_file = opts["--known-hosts"].rsplit("/", 1)
assert kh_dir == mount[kh_vol] and kh_file in known_hosts_map["data"], opts["--known-hosts"]
for flag in ("--ray-token-file", "--git-token-file", "--webhook-secret-file"):
    path = opts[flag]
    assert path.startswith(cred_dir + "/"), (flag, path)
    assert path[len(cred_dir) + 1:] in secret["stringData"], (flag, path)
for flag in opts:
    assert not re.search("token|secret", flag) or flag.endswith(("-file", "-dir")), f"{flag}: a secret flag"
sc = c["securityContext"]
assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
sel = service["spec"]["selector"]
assert all(pod["metadata"]["labels"].get(k) == v for k, v in sel.items()), "Service selects no pod"
assert service["spec"]["ports"][0]["targetPort"] in (port, cport["name"])
for d in docs:
    assert d["metadata"]["namespace"] == docs[0]["metadata"]["namespace"]

# --- systemd ---
text = open(unit).read().replace("\\\n", " ")
directives = {}
for line in text.splitlines():
    line = line.strip()
    if line and not line.startswith(("#", ";", "[")):
        k, v = line.split("=", 1)
        directives.setdefault(k, []).append(v)
one = lambda k: directives[k][-1]
for k, v in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "DynamicUser": "yes",
             "Restart": "on-failure", "KillSignal": "SIGTERM"}.items():
    assert one(k) == v, (k, directives.get(k))
timeout = one("TimeoutStopSec")
assert int(timeout.rstrip("s")) >= 60, timeout
exec_args = one("ExecStart").split()
check_flags(exec_args, "ExecStart")
creds = dict(v.split(":", 1) for v in directives["LoadCredential"])
used = re.findall(r"%d/([A-Za-z0-9_-]+)", one("ExecStart"))
# The daemon's own credentials are named on its command line; the rest are job secrets, read
# from $CREDENTIALS_DIRECTORY (the default --secrets-dir) under their reference.
job_refs = set(creds) - set(used)
assert set(used) <= set(creds), (used, creds)
assert job_refs and all(creds[r].startswith("/etc/ray-gitops/job-secrets/") for r in job_refs), creds
assert "--secrets-dir" not in exec_args or exec_args[exec_args.index("--secrets-dir") + 1] == "%d"
assert exec_args[exec_args.index("--known-hosts") + 1] == "%d/known-hosts", exec_args
for flag in ("--ray-token-file", "--git-token-file", "--webhook-secret-file"):
    assert exec_args[exec_args.index(flag) + 1].startswith("%d/"), flag
listen = exec_args[exec_args.index("--listen") + 1]
assert listen.startswith("127.0.0.1:") and "--listen-any" not in exec_args, listen
print("manifests and unit: ok")
PYEOF

"$py" - "$src" "$version" <<'PYEOF'
import os, re, shlex, sys, yaml
src, version = sys.argv[1:]
expected = f"ghcr.io/ray-gitops/ray-gitops:{version}"
IMAGE_IN_TEXT = r"[a-z0-9.-]+\.[a-z]+/[a-z0-9._/-]*ray-gitops:[A-Za-z0-9._-]+"

def path(*parts):
    return os.path.join(src, *parts)

# --- docs/install.md names the image ---
install = open(path("docs", "install.md")).read()
named = re.findall(IMAGE_IN_TEXT, install)
assert named, "docs/install.md names no image (registry/...ray-gitops:TAG)"
for ref in named:
    assert ref == expected, f"docs/install.md names {ref}, expected {expected}"

# --- the Kubernetes manifest runs it as the Containerfile's user, hardened and probed ---
docs = [d for d in yaml.safe_load_all(open(path("examples", "kubernetes", "ray-gitops.yaml")))
        if d is not None]

def images(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "image":
                yield v
            else:
                yield from images(v)
    elif isinstance(node, list):
        for v in node:
            yield from images(v)

found = [i for d in docs for i in images(d)]
assert found, "the manifest names no image"
for ref in found:
    assert ref == expected, f"the manifest runs {ref}, expected {expected}"
(deploy,) = [d for d in docs if d["kind"] == "Deployment"]
pod = deploy["spec"]["template"]["spec"]
(c,) = pod["containers"]
assert c.get("imagePullPolicy") == "IfNotPresent", c.get("imagePullPolicy")
psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
effective = lambda key: csc.get(key, psc.get(key))
containerfile = path("Containerfile")
if os.path.exists(containerfile):
    users = [l.split(None, 1)[1].strip() for l in open(containerfile)
             if re.match(r"USER\s", l)]
    assert users, "the Containerfile has no USER line"
    m = re.fullmatch(r"(\d+)(?::(\d+))?", users[-1])
    assert m, f"the Containerfile's USER {users[-1]} is not numeric (runAsNonRoot needs a uid)"
    uid, gid = int(m.group(1)), int(m.group(2) or m.group(1))
    assert effective("runAsUser") == uid, (effective("runAsUser"), uid)
    assert effective("runAsGroup") == gid, (effective("runAsGroup"), gid)
    print(f"the manifest runs as the Containerfile's USER {uid}:{gid}")
else:
    print("SKIPPED: no Containerfile at the root: runAsUser/runAsGroup not compared with its USER")
assert effective("runAsNonRoot") is True, "runAsNonRoot"
assert effective("seccompProfile") == {"type": "RuntimeDefault"}, effective("seccompProfile")
assert csc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem"
assert csc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation"
assert csc.get("capabilities", {}).get("drop") == ["ALL"], csc.get("capabilities")
res = c.get("resources", {})
assert {"cpu", "memory"} <= set(res.get("requests", {})), res
assert "memory" in res.get("limits", {}), res
# The read-only root: /tmp (the code zips) and the cache on writable volumes of their own.
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
volumes = {v["name"]: v for v in pod["volumes"]}
cache = next(a.split("=", 1)[1] for a in c["args"] if a.startswith("--cache-dir="))
for where in ("/tmp", cache):
    assert where in mounts, f"{where} is on the read-only root"
    assert "emptyDir" in volumes[mounts[where]], f"{where}: not an emptyDir"
    assert not any(m.get("readOnly") for m in c["volumeMounts"] if m["mountPath"] == where)
port_names = {p.get("name") for p in c["ports"]} | {p["containerPort"] for p in c["ports"]}
for probe, want in (("livenessProbe", "/healthz"), ("startupProbe", "/healthz"),
                    ("readinessProbe", "/readyz")):
    assert probe in c, f"no {probe}"
    get = c[probe]["httpGet"]
    assert get["path"] == want, (probe, get["path"], want)
    assert get["port"] in port_names, (probe, get["port"], port_names)

# --- GitHub Actions: the runner checks out, `docker run` reviews in the image ---
gh = yaml.safe_load(open(path("hooks", "ci", "github-actions.yml")))
assert gh["permissions"]["pull-requests"] == "write" and gh["permissions"]["contents"] == "read"
(job,) = gh["jobs"].values()
assert "container" not in job, "a container: job would need git in the image for checkout"
checkout, review = job["steps"]
assert checkout["uses"] == "actions/checkout@v4" and checkout["with"]["fetch-depth"] == 0
run = review["run"]
assert "${{" not in run, f"an expression in the run line puts its value on the command line: {run}"
words = shlex.split(run)
assert words[:2] == ["docker", "run"], words[:2]
WITH_VALUE = {"--user", "-u", "--volume", "-v", "--workdir", "-w", "--env", "-e", "--entrypoint",
              "--network", "--name", "--pull"}
opts, rest, i = [], [], 2
while i < len(words):
    w = words[i]
    if rest or not w.startswith("-"):
        rest.append(w)
    elif "=" in w:
        opts.append(tuple(w.split("=", 1)))
    elif w in WITH_VALUE:
        opts.append((w, words[i + 1]))
        i += 1
    else:
        opts.append((w, None))
    i += 1
values = lambda *names: [v for k, v in opts if k in names]
assert rest == [expected], f"docker run's image and command: {rest}, expected [{expected}]"
assert values("--entrypoint") == ["ray-gitops-review"], values("--entrypoint")
assert values("--user", "-u") == ["$(id -u):$(id -g)"], values("--user", "-u")
assert ("--rm", None) in opts
assert values("--workdir", "-w") == ["$GITHUB_WORKSPACE"], values("--workdir", "-w")
vols = values("--volume", "-v")
assert "$GITHUB_WORKSPACE:$GITHUB_WORKSPACE" in vols, vols
assert "$GITHUB_EVENT_PATH:$GITHUB_EVENT_PATH:ro" in vols, vols
passed = values("--env", "-e")
for name in passed:
    assert re.fullmatch(r"[A-Z_][A-Z0-9_]*", name), f"--env {name}: a value on the command line"
needed = {"GITHUB_ACTIONS", "GITHUB_API_URL", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH",
          "GITHUB_BASE_REF", "GITHUB_TOKEN", "RAY_GITOPS_PLAN", "RAY_ADDRESS", "RAY_AUTH_TOKEN"}
needed |= set(review.get("env", {}))
assert needed <= set(passed), f"not passed to the container: {sorted(needed - set(passed))}"

# --- GitLab CI: the job runs in the image, through a shell ---
gl = yaml.safe_load(open(path("hooks", "ci", "gitlab-ci.yml")))
gjob = gl["ray-gitops-review"]
assert gjob["image"]["name"] == expected, f"the GitLab job runs {gjob['image']['name']}"
assert gjob["image"]["entrypoint"] == [""], gjob["image"]
assert gjob["script"] == ["ray-gitops-review"], gjob["script"]
assert gjob["variables"]["GIT_DEPTH"] == "0", gjob["variables"]
print(f"the manifest, both CI recipes and docs/install.md name {expected}: ok")
PYEOF

if command -v systemd-analyze >/dev/null 2>&1; then
  # verify wants the ExecStart binary to exist: the one under test stands in for it.
  mkdir -p "$tmp/units"
  sed "s|/usr/bin/ray-gitops |$bin |" "$unit" >"$tmp/units/ray-gitops.service"
  if ! systemd-analyze verify "$tmp/units/ray-gitops.service" >"$tmp/verify.out" 2>&1 ||
    [ -s "$tmp/verify.out" ]; then
    cat "$tmp/verify.out" >&2
    fail "systemd-analyze verify complained about the unit"
  fi
  echo "systemd-analyze verify: ok"
else
  echo "systemd-analyze is not installed: the unit was not verified by systemd (optional check)"
fi
echo "PASS"
