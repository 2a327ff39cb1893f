#!/usr/bin/env bash
# A whole platform at once (docs/platforms.md): `opm platform build` of 500 releases × 20
# components (10,000 components) in three environments, one environment rendered, against the
# same work done by 500 single `opm mod build --out-dir` runs and by 500 `helm template` runs
# of an equivalent 20-component chart, in one run; `opm platform diff` of a 100-component
# platform; and `--split --out-dir` of 10,000 components against the same render to stdout.
#
#   benches/platform.sh                  # this checkout's release opm, built first
#   OPM=path/to/opm RUNS=5 benches/platform.sh
#
# Modules: benches/e2e.sh's 20- and 10,000-component modules and its 20-component chart
# (SIZES="20 10000", one quick run, which also checks that opm and helm emit the same
# resources). The platform: 50 copies of the 20-component module (each its own file, named
# app-K), 500 releases over them (release rI renders app-(I mod 50) as instance rI in namespace
# team-(I mod 20), with the environment's suffix), environments dev, staging and prod; release
# r7 has a values file of its own, which the "one changed" variant edits.
#
# Prints medians (wall, CPU = user + sys, peak RSS) of each variant and the ratios the issue
# asks for; checks first that the platform's prod is byte for byte the 500 single renders.
set -euo pipefail

die() { echo "platform: error: $*" >&2; exit 1; }
log() { echo "platform: $*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${OPM:-} ]]; then
  log "building opm (release)"
  cargo build --quiet --release --locked --manifest-path "$root/Cargo.toml" -p opm-runtime --bin opm
fi
opm=$(realpath "${OPM:-$root/target/release/opm}")
runs=${RUNS:-5}
work=${WORK:-${TMPDIR:-/tmp}/opm-platform}
mkdir -p "$work"
work=$(realpath "$work")
export OPM_CACHE_DIR=$work/cache

log "generating the modules and charts (benches/e2e.sh, one run)"
OPM=$opm OPM_NATIVE='' SIZES="20 10000" JOBS=1 RUNS=1 WORK="$work/e2e" "$root/benches/e2e.sh" >/dev/null

log "generating the platform: 500 releases over 50 modules, three environments"
rm -rf "$work/p"
mkdir -p "$work/p/modules" "$work/p/values"
python3 - "$work/e2e/n20/module.yaml" "$work/p" <<'PY'
import sys
source, base = sys.argv[1], sys.argv[2]
text = open(source).read()
for k in range(50):
    with open(f"{base}/modules/app-{k}.yaml", "w") as f:
        f.write(text.replace("name: bench,", f"name: app-{k},", 1))
with open(f"{base}/values/r7.yaml", "w") as f:
    f.write("components: {c00000: {traits: {Replicas: 3}}}\n")
with open(f"{base}/platform.yaml", "w") as f:
    f.write("apiVersion: core.opm.dev/v1\nkind: Platform\nmetadata: {name: bench}\n"
            "environments: [dev, staging, prod]\nreleases:\n")
    for i in range(500):
        f.write(f"  r{i}:\n    module: modules/app-{i % 50}.yaml\n    namespace: team-{i % 20}\n")
        if i == 7:
            f.write("    valuesFiles: [values/r7.yaml]\n")
        f.write("    environments:\n")
        for env in ("dev", "staging", "prod"):
            f.write(f"      {env}: {{namespace: team-{i % 20}-{env}}}\n")
PY
cd "$work/p"
cp "$work/e2e/n10000/module.yaml" "$work/n10000.yaml"

measure() { # NAME COMMAND…: appends "NAME wall cpu rss" to $work/raw.tsv
  local name=$1 start end; shift
  start=$EPOCHREALTIME
  /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" ||
    { cat "$work/stderr" >&2; die "$name failed"; }
  end=$EPOCHREALTIME
  read -r user sys rss <"$work/time"
  echo "$name $(python3 -c "print(round(($end - $start) * 1000, 1), round(($user + $sys) * 1000), round($rss / 1024))")" >>"$work/raw.tsv"
}

log "warming the compile cache"
"$opm" mod build modules/app-0.yaml >/dev/null

log "checking: the platform's prod is the 500 single renders, byte for byte"
rm -rf out singles
"$opm" platform build platform.yaml --env prod --out-dir out 2>/dev/null
start=$EPOCHREALTIME
for i in $(seq 0 499); do
  extra=()
  [[ $i == 7 ]] && extra=(-f values/r7.yaml)
  # The paths as the releases file gives them: each render's provenance records them.
  "$opm" mod build modules/app-$((i % 50)).yaml "${extra[@]}" --instance "r$i" -n "team-$((i % 20))-prod" --out-dir "singles/r$i" 2>/dev/null
done
end=$EPOCHREALTIME
singles_ms=$(python3 -c "print(round(($end - $start) * 1000))")
python3 - "$work/p/out/prod" "$work/p/singles" <<'PY' || die "the platform's output is not the single renders'"
import os, sys, json
a, b = sys.argv[1], sys.argv[2]
releases = sorted(d for d in os.listdir(a) if not d.startswith("."))
assert releases == sorted(os.listdir(b)), "different releases"
for r in releases:
    files = sorted(os.listdir(os.path.join(a, r)))
    assert files == sorted(os.listdir(os.path.join(b, r))), r
    for f in files:
        x = open(os.path.join(a, r, f), "rb").read()
        y = open(os.path.join(b, r, f), "rb").read()
        if x != y:
            sys.exit(f"{r}/{f} differs")
print(f"platform: {len(releases)} releases byte for byte the single renders'", file=sys.stderr)
PY
log "500 single opm mod build --out-dir: $singles_ms ms"

log "500 helm template runs (once)"
start=$EPOCHREALTIME
for i in $(seq 0 499); do
  helm template "r$i" "$work/e2e/n20/chart" --namespace "team-$((i % 20))-prod" >/dev/null
done
end=$EPOCHREALTIME
helm_ms=$(python3 -c "print(round(($end - $start) * 1000))")
log "500 helm template: $helm_ms ms"

: >"$work/raw.tsv"
for run in $(seq "$runs"); do
  log "run $run of $runs"
  rm -rf out
  measure "platform-fresh" "$opm" platform build platform.yaml --env prod --out-dir out
  measure "platform-unchanged" "$opm" platform build platform.yaml --env prod --out-dir out
  printf 'components: {c00000: {traits: {Replicas: %d}}}\n' $((run + 3)) >values/r7.yaml
  measure "platform-one-changed" "$opm" platform build platform.yaml --env prod --out-dir out
  measure "platform-forced" "$opm" platform build platform.yaml --env prod --out-dir out --force
  measure "single-r7" "$opm" mod build modules/app-7.yaml -f values/r7.yaml --instance r7 -n team-7-prod --out-dir "$work/r7"
  measure "single-10000-stdout" "$opm" mod build "$work/n10000.yaml"
  # Fresh: a directory of its own each run, the old ones removed after every run, so that no
  # run competes with the discards of removing the one before (this machine's ext4 is mounted
  # with `discard`); and the same on tmpfs, where the disk does not count.
  measure "single-10000-split-fresh" "$opm" mod build "$work/n10000.yaml" --split --out-dir "$work/fresh-$run"
  measure "single-10000-split-replace" "$opm" mod build "$work/n10000.yaml" --split --out-dir "$work/fresh-$run"
  if [[ -d /dev/shm ]]; then
    rm -rf /dev/shm/opm-platform-split
    measure "single-10000-split-fresh-tmpfs" "$opm" mod build "$work/n10000.yaml" --split --out-dir /dev/shm/opm-platform-split
    measure "single-10000-split-replace-tmpfs" "$opm" mod build "$work/n10000.yaml" --split --out-dir /dev/shm/opm-platform-split
    rm -rf /dev/shm/opm-platform-split
  fi
done
rm -rf "$work"/fresh-*

log "the diff of a 100-component platform (5 releases), two commits"
rm -rf "$work/d"
mkdir -p "$work/d/modules"
cp modules/app-{0,1,2,3,4}.yaml "$work/d/modules/"
{
  printf 'apiVersion: core.opm.dev/v1\nkind: Platform\nmetadata: {name: d}\nenvironments: [prod]\nreleases:\n'
  for k in 0 1 2 3 4; do printf '  r%d: {module: modules/app-%d.yaml}\n' $k $k; done
} >"$work/d/platform.yaml"
(cd "$work/d" && git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm one &&
  sed -i 's/Replicas: 2/Replicas: 3/' modules/app-2.yaml && git -c user.name=b -c user.email=b@b commit -qam two)
for run in $(seq "$runs"); do
  # Exit 1: the revisions differ, as they should.
  (cd "$work/d" && measure "diff-100" sh -c "'$opm' platform diff platform.yaml --against-ref HEAD~1 >/dev/null; [ \$? -eq 1 ]")
done

python3 - "$work/raw.tsv" "$singles_ms" "$helm_ms" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, wall, cpu, rss = line.split()
    rows.setdefault(name, []).append((float(wall), float(cpu), float(rss)))
singles, helm = float(sys.argv[2]), float(sys.argv[3])
med = lambda name, i: statistics.median(r[i] for r in rows[name])
print("| variant | wall (median) | CPU | peak RSS |")
print("|---|---:|---:|---:|")
for name in rows:
    print(f"| {name} | {med(name, 0):.0f} ms | {med(name, 1):.0f} ms | {med(name, 2):.0f} MiB |")
print(f"| 500 × opm mod build --out-dir (once) | {singles:.0f} ms | | |")
print(f"| 500 × helm template (once) | {helm:.0f} ms | | |")
fresh = med("platform-fresh", 0)
print()
print(f"- platform build, one environment, fresh: {fresh / 1000:.2f} s (target ≤ 5 s); "
      f"{singles / fresh:.1f}× faster than 500 single renders, {helm / fresh:.1f}× faster than 500 helm template")
print(f"- nothing changed: {med('platform-unchanged', 0) / 1000:.2f} s (target ≤ 0.5 s)")
one, single = med("platform-one-changed", 0), med("single-r7", 0)
print(f"- one release changed: {one / 1000:.2f} s = {(one - single) / 1000:.2f} s + that release's own {single / 1000:.2f} s (target ≤ 0.5 s + its own)")
print(f"- peak RSS: platform {med('platform-fresh', 2):.0f} MiB, single 10,000-component render {med('single-10000-stdout', 2):.0f} MiB: "
      f"{med('platform-fresh', 2) / med('single-10000-stdout', 2):.2f}× (target ≤ 2×)")
stdout = med("single-10000-stdout", 0)
print(f"- 10,000 components --split --out-dir: fresh {med('single-10000-split-fresh', 0) / stdout:.2f}×, "
      f"replacing {med('single-10000-split-replace', 0) / stdout:.2f}× the render to stdout (target ≤ 2×)")
if "single-10000-split-fresh-tmpfs" in rows:
    print(f"- the same on tmpfs: fresh {med('single-10000-split-fresh-tmpfs', 0) / stdout:.2f}×, "
          f"replacing {med('single-10000-split-replace-tmpfs', 0) / stdout:.2f}×")
print(f"- platform diff, 100 components, two revisions: {med('diff-100', 0) / 1000:.2f} s (target ≤ 1 s)")
PY
