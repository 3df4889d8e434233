#!/usr/bin/env bash
# The deployment examples of docs/operations.md hold together: the Kubernetes manifests parse
# and wire what the docs promise (probes, scrape annotations, a non-loopback listener with its
# explicit flag, credentials from the Secret as files), the systemd unit is hardened and takes
# its secrets as credentials, and every ray-gitops flag either uses exists in the binary.
# `systemd-analyze verify` runs when it is installed. Usage:
#   deploy_examples_test.sh RAY_GITOPS_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
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

if command -v systemd-analyze >/dev/null 2>&1; then
  # verify wants the ExecStart binary to exist: the one under test stands in for it.
  mkdir -p "$tmp/units"
  sed "s|/usr/local/bin/ray-gitops|$bin|" "$unit" >"$tmp/units/ray-gitops.service"
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
