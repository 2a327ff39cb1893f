#!/usr/bin/env bash
# What delivering a render costs (docs/delivering.md): `opm mod push` over loopback to a real
# registry (Debian's docker-registry, started here on a free port), and the Argo CD plugin's
# `generate` (`opm mod build --argocd .` in the application's directory, with Argo CD's
# environment), against `opm mod build` to stdout and `helm template` of an
# equivalent chart, in the same run, variants alternating.
#
# Modules: examples/hello (one component: a Deployment and a Service) against benches/e2e.sh's
# one-component chart (the same two objects), and e2e.sh's 1,000-component module against its
# 1,000-component chart; e2e.sh generates both (SIZES="1 1000", one quick run, which also checks
# that opm and helm emit the same resources).
#
#   benches/delivery.sh                  # this checkout's release opm, built first
#   OPM=path/to/opm RUNS=11 benches/delivery.sh
#
# Prints a Markdown table of medians (wall time, CPU = user + sys, peak RSS) and each variant's
# ratio to helm template's wall time. Needs what e2e.sh needs, and docker-registry.
set -euo pipefail

die() { echo "delivery: error: $*" >&2; exit 1; }
log() { echo "delivery: $*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${OPM:-} ]]; then
  log "building opm (release)"
  cargo build --quiet --release --locked --manifest-path "$root/Cargo.toml" -p opm-runtime --bin opm
fi
opm=$(realpath "${OPM:-$root/target/release/opm}")
runs=${RUNS:-11}
work=${WORK:-${TMPDIR:-/tmp}/opm-delivery}
command -v docker-registry >/dev/null || die "docker-registry is needed (tests/setup.sh installs it)"
mkdir -p "$work"
work=$(realpath "$work")

log "generating the modules and charts (benches/e2e.sh, one run)"
OPM=$opm OPM_NATIVE='' SIZES="1 1000" JOBS=1 RUNS=1 WORK="$work/e2e" "$root/benches/e2e.sh" >/dev/null

# The registry, on a free port of loopback.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<EOF
version: 0.1
storage: {filesystem: {rootdirectory: $work/registry}}
http: {addr: 127.0.0.1:$port}
log: {level: error}
EOF
rm -rf "$work/registry"
docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
registry_pid=$!
trap 'kill $registry_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done

# The applications the plugin renders: a copy of each module in a directory of its own.
mkdir -p "$work/apps/hello" "$work/apps/n1000"
cp "$root/examples/hello/module.yaml" "$work/apps/hello/module.yaml"
cp "$work/e2e/n1000/module.yaml" "$work/apps/n1000/module.yaml"
declare -A module=([hello]="$work/apps/hello" [n1000]="$work/apps/n1000")
declare -A chart=([hello]="$work/e2e/n1/chart" [n1000]="$work/e2e/n1000/chart")

measure() { # NAME COMMAND…: appends "NAME wall cpu rss" to $work/raw.tsv
  local name=$1 start end; shift
  start=$EPOCHREALTIME
  /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" ||
    { cat "$work/stderr" >&2; die "$name failed"; }
  end=$EPOCHREALTIME
  read -r user sys rss <"$work/time"
  echo "$name $(python3 -c "print(round(($end - $start) * 1000, 1), round(($user + $sys) * 1000), round($rss / 1024))")" >>"$work/raw.tsv"
}

: >"$work/raw.tsv"
for size in hello n1000; do
  dir=${module[$size]}
  log "$size: $runs runs of each variant"
  for run in $(seq "$runs"); do
    measure "$size helm" env GOMAXPROCS=1 helm template bench "${chart[$size]}" --namespace bench
    measure "$size build" "$opm" mod build "$dir/module.yaml" -j 1
    measure "$size push" "$opm" mod push "$dir/module.yaml" "oci://127.0.0.1:$port/bench/$size:$run" -j 1
    # Neither module declares parameters, so Argo CD sends none.
    measure "$size generate" env -C "$dir" ARGOCD_APP_NAME=bench ARGOCD_APP_NAMESPACE=bench \
      ARGOCD_APP_REVISION=0123456789abcdef "$opm" mod build --argocd . -j 1
  done
done

python3 - "$work/raw.tsv" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    size, variant, wall, cpu, rss = line.split()
    rows.setdefault((size, variant), []).append((float(wall), float(cpu), float(rss)))
print("| module | variant | wall (median) | CPU | peak RSS | wall / helm |")
print("|---|---|---:|---:|---:|---:|")
for size in ("hello", "n1000"):
    helm = statistics.median(w for w, _, _ in rows[(size, "helm")])
    for variant in ("helm", "build", "push", "generate"):
        data = rows[(size, variant)]
        wall = statistics.median(w for w, _, _ in data)
        cpu = statistics.median(c for _, c, _ in data)
        rss = statistics.median(r for _, _, r in data)
        print(f"| {size} | {variant} | {wall:.1f} ms | {cpu:.0f} ms | {rss:.0f} MiB | {wall / helm:.2f} |")
PY
