#!/usr/bin/env bash
# What a Sigstore verification costs (SECURITY.md, "Sigstore signatures"): whole `opm` processes
# verifying one bundle each, offline, against `opm --version` (the process's own start) in the
# same run, variants alternating:
#
#   key        a bundle opm signed offline with a P-256 key (`opm sign-blob`), `verify-blob --key`
#   managed    Sigstore's managed-key bundle with its Rekor entry, `--key` and `--trusted-root`
#   keyless    the cosign v3 public-good bundle: certificate chain, SCT, Rekor entry and its
#              checkpoint, against the public-good trusted root, with an identity
#   sign       `opm sign-blob` of a 1 MiB file
#
# and the size of the binary, against OPM_BEFORE's when given.
#
#   benches/sigstore.sh                       # this checkout's release opm, built first
#   OPM=path/to/opm OPM_BEFORE=path/to/old-opm RUNS=21 benches/sigstore.sh
#
# Prints a Markdown table of medians (wall time, CPU = user + sys, peak RSS), and each variant's
# wall time less `--version`'s: the verification's own share. Needs tests/setup.sh's Sigstore test
# data and openssl.
set -euo pipefail

die() { echo "sigstore: error: $*" >&2; exit 1; }
log() { echo "sigstore: $*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${OPM:-} ]]; then
  log "building opm (release)"
  cargo build --quiet --release --locked --manifest-path "$root/Cargo.toml" -p opm-runtime --bin opm
fi
opm=$(realpath "${OPM:-$root/target/release/opm}")
runs=${RUNS:-21}
data="${XDG_CACHE_HOME:-$HOME/.cache}/opm-ci/sigstore"
[[ -f $data/trusted_root.json ]] || die "no Sigstore test data in $data: run tests/setup.sh"
bundles=$data/sigstore-verify-0.15.1/test_data/bundles
managed=$data/sigstore-verify-0.15.1/test_data/managed-key
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/k.pem" 2>/dev/null
openssl pkey -in "$work/k.pem" -pubout -out "$work/k.pub"
head -c 1048576 /dev/urandom >"$work/blob"
"$opm" sign-blob "$work/blob" --key "$work/k.pem" >/dev/null

# NAME COMMAND…: runs COMMAND once and appends "NAME wall cpu rss" to $work/raw.tsv, from
# wait4's rusage (microsecond CPU: these runs are a few milliseconds long).
cat >"$work/measure.py" <<'PY'
import os, subprocess, sys, time
name, command = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
_, status, usage = os.wait4(child.pid, 0)
wall = (time.perf_counter() - start) * 1000
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"{name} failed: {child.stderr.read().decode()}")
cpu = (usage.ru_utime + usage.ru_stime) * 1000
print(name, round(wall, 2), round(cpu, 2), round(usage.ru_maxrss / 1024, 1))
PY
measure() { python3 "$work/measure.py" "$@" >>"$work/raw.tsv" || die "$1 failed"; }

: >"$work/raw.tsv"
log "$runs runs of each variant"
for _ in $(seq "$runs"); do
  measure version "$opm" --version
  measure key "$opm" verify-blob "$work/blob" --key "$work/k.pub"
  measure managed env -C "$managed" "$opm" verify-blob artifact.txt --bundle bundle.sigstore.json \
    --key key.pub --trusted-root "$data/trusted_root.json"
  measure keyless env -C "$bundles" "$opm" verify-blob cosign-v3-blob.txt \
    --bundle cosign-v3-blob.sigstore.json --trusted-root "$data/trusted_root.json" \
    --certificate-identity w.vollprecht@gmail.com --certificate-oidc-issuer https://github.com/login/oauth
  measure sign "$opm" sign-blob "$work/blob" --key "$work/k.pem" --bundle "$work/again.json"
done

python3 - "$work/raw.tsv" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    variant, wall, cpu, rss = line.split()
    rows.setdefault(variant, []).append((float(wall), float(cpu), float(rss)))
base = statistics.median(w for w, _, _ in rows["version"])
print("| variant | wall (median) | CPU | peak RSS | wall − `--version` |")
print("|---|---:|---:|---:|---:|")
for variant in ("version", "key", "managed", "keyless", "sign"):
    data = rows[variant]
    wall = statistics.median(w for w, _, _ in data)
    cpu = statistics.median(c for _, c, _ in data)
    rss = statistics.median(r for _, _, r in data)
    print(f"| {variant} | {wall:.1f} ms | {cpu:.1f} ms | {rss:.1f} MiB | {wall - base:.1f} ms |")
PY

size=$(stat -c %s "$opm")
echo
echo "| binary | size |"
echo "|---|---:|"
if [[ -n ${OPM_BEFORE:-} ]]; then
  before=$(stat -c %s "$OPM_BEFORE")
  echo "| before | $(python3 -c "print(f'{$before / 1e6:.1f} MB')") |"
fi
echo "| this | $(python3 -c "print(f'{$size / 1e6:.1f} MB')") |"
