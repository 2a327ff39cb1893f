#!/usr/bin/env bash
# End-to-end benchmark of `opm mod build` against `helm template` (docs/performance.md).
#
# For each size N in SIZES it generates, in WORK:
#   nN/module.yaml  a module of N components, each a stateless Container + Expose + Replicas;
#   nN/chart/       a Helm chart whose values list the same N components and whose templates
#                   emit, per component, the same Deployment and Service that opm emits;
# checks that `opm mod build` and `helm template bench CHART --namespace bench` emit the same
# resources (compared as parsed values, keyed by API group, kind, namespace and name; the first
# difference is printed and the script fails), then measures, RUNS times each, variants run in
# rotating order within each run, whole-process wall time, CPU time (user + sys) and peak RSS of
#   (a) opm, warm:  OPM_CACHE_DIR=$WORK/cache-warm $OPM mod build nN/module.yaml -j J
#                   (the cache is warmed by an unmeasured run first);
#   (b) opm, cold:  the same with a new, empty cache directory for every run;
#   (c) native:     $OPM_NATIVE nN/module.yaml -j J: `opm mod build` with the same transformer
#                   crates compiled natively and called in-process (benches/native.rs);
#   (d) helm:       GOMAXPROCS=J helm template bench nN/chart --namespace bench;
#   (e) opm, installed, after init (sizes up to 100 only): the embedded provider's components,
#                   each with a custom section more so that its code is not the one built into
#                   opm, packed as an installed provider of a project (project/nN/module.yaml);
#                   with a new, empty cache for every run, `opm provider init --optimized` (not
#                   measured; without the flag its background compile would run beside the
#                   render) compiles them with Cranelift into it, then the render is measured: the
#                   first render of a CI job that ran `init --optimized`;
# at every J in JOBS, output to /dev/null, and prints medians as Markdown tables (also written
# to $WORK/results.md; every measurement is kept in $WORK/raw.tsv).
#
# Run from anywhere:
#   benches/e2e.sh
#   SIZES="5 100 1000" RUNS=3 benches/e2e.sh            # a quicker pass
#   OPM=path/to/opm OPM_NATIVE=path/to/opm-native JOBS="1 2" WORK=/tmp/e2e benches/e2e.sh
#
# Environment (defaults in brackets):
#   OPM         the opm binary; unset: this checkout's, built first  [<repo>/target/release/opm]
#   OPM_NATIVE  native renderer for (c); unset skips (c), but when OPM is unset too it is
#               benches/native.rs, built first       [<repo>/target/release/opm-native]
#   SIZES       component counts                      ["5 100 1000 10000"]
#   JOBS        values of -j (GOMAXPROCS for helm)    ["1 2"]
#   RUNS        measured runs per variant, size and J; the median is reported   [5]
#   WORK        work directory (regenerated modules and charts, caches, results)
#               [${TMPDIR:-/tmp}/opm-e2e]
#
# Needs bash >= 5, python3 with PyYAML (the equivalence check), GNU time at /usr/bin/time, and
# helm 4 (when it is not on PATH, tests/setup.sh installs the pinned one and puts it there).
# Wall time is measured by bash ($EPOCHREALTIME, around /usr/bin/time, so in milliseconds
# rather than GNU time's 10 ms); CPU time and peak RSS come from GNU time
# (`-f "%e %U %S %M"`; %e is kept in raw.tsv too).
set -euo pipefail

die() { echo "e2e: error: $*" >&2; exit 1; }
log() { echo "e2e: $*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# --- configuration ---------------------------------------------------------------------------
# Without OPM, build both binaries of this checkout (release profile) and measure those.
if [[ -z ${OPM:-} ]]; then
  log "building opm and opm-native (release)"
  cargo build --quiet --release --locked --manifest-path "$root/Cargo.toml" \
    -p opm-runtime --bin opm -p opm-benches --bin opm-native
  OPM_NATIVE=${OPM_NATIVE-$root/target/release/opm-native}
fi
opm=${OPM:-$root/target/release/opm}
[[ -x $opm ]] || die "opm binary '$opm' is not executable (build it, or set OPM=)"
opm=$(realpath "$opm")
native=${OPM_NATIVE:-}
if [[ -n $native ]]; then
  [[ -x $native ]] || die "OPM_NATIVE='$native' is not an executable"
  native=$(realpath "$native")
fi
read -r -a sizes <<<"${SIZES:-5 100 1000 10000}"
read -r -a jobs <<<"${JOBS:-1 2}"
runs=${RUNS:-5}
work=${WORK:-${TMPDIR:-/tmp}/opm-e2e}
for n in "${sizes[@]}" "${jobs[@]}" "$runs"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "SIZES, JOBS and RUNS must be positive integers (got '$n')"
done
((${#sizes[@]} && ${#jobs[@]})) || die "SIZES and JOBS must not be empty"

# --- tools -----------------------------------------------------------------------------------
# benches/tools.sh: bash >= 5, GNU time, python3 with PyYAML, helm (set up when missing).
source "$root/benches/tools.sh"
check_tools

# --- generation ------------------------------------------------------------------------------
mkdir -p "$work"
work=$(realpath "$work")
log "work directory: $work"

# Writes WORK/project: a project whose .opm/providers.yaml installs, from the directory registry
# WORK/registry, the embedded Kubernetes provider with a custom section added to each component
# by benches/unpack_provider.py (its code is then not the binary's own, as an installed
# provider's is not).
installed_project() {
  local src=$work/installed-src version
  rm -rf "$src" "$work/registry" "$work/project"
  mkdir -p "$src" "$work/project/.opm"
  "$opm" provider export kubernetes -o "$work/embedded.opmb" >/dev/null
  version=$(python3 "$root/benches/unpack_provider.py" "$work/embedded.opmb" "$src")
  mkdir -p "$work/registry/kubernetes/$version"
  "$opm" provider pack "$src" -o "$work/registry/kubernetes/$version/kubernetes-$version.opmb" >/dev/null
  printf 'providers:\n  - name: kubernetes\n    version: "%s"\n    source: ../../registry\n' \
    "$version" >"$work/project/.opm/providers.yaml"
  (cd "$work/project" && OPM_CACHE_DIR=off "$opm" provider init >/dev/null)
}

# Writes WORK/nN/module.yaml and WORK/nN/chart for every N given.
generate() {
  python3 - "$work" "$@" <<'PY'
import os, sys, textwrap

work, sizes = sys.argv[1], [int(n) for n in sys.argv[2:]]
image, port, replicas = "nginxinc/nginx-unprivileged:1.27", 8080, 2

# One Service and one Deployment per component, written from `opm mod build`'s output for one
# component: same apiVersion, kind, metadata, labels and spec. No helper templates (`include`),
# which would only make helm slower.
labels = """app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/managed-by: open-platform-model
app.kubernetes.io/name: {{ .name }}
component.opmodel.dev/name: {{ .name }}
module.opmodel.dev/name: {{ $.Chart.Name }}
"""
labels4, labels8 = textwrap.indent(labels, " " * 4), textwrap.indent(labels, " " * 8)
service = """{{- range .Values.components }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .name }}
  namespace: {{ $.Release.Namespace }}
  labels:
""" + labels4 + """    module.opmodel.dev/version: {{ $.Chart.Version | quote }}
spec:
  type: ClusterIP
  selector:
    app.kubernetes.io/instance: {{ $.Release.Name }}
    app.kubernetes.io/name: {{ .name }}
  ports:
  - name: http
    port: {{ .port }}
    targetPort: http
{{- end }}
"""
deployment = """{{- range .Values.components }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ $.Release.Namespace }}
  labels:
""" + labels4 + """    module.opmodel.dev/version: {{ $.Chart.Version | quote }}
spec:
  replicas: {{ .replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ $.Release.Name }}
      app.kubernetes.io/name: {{ .name }}
  template:
    metadata:
      labels:
""" + labels8 + """    spec:
      containers:
      - name: {{ .name }}
        image: {{ .image | quote }}
        ports:
        - name: http
          containerPort: {{ .port }}
{{- end }}
"""

for n in sizes:
    width = max(5, len(str(n - 1)))
    names = [f"c{i:0{width}d}" for i in range(n)]
    base = os.path.join(work, f"n{n}")
    os.makedirs(os.path.join(base, "chart", "templates"), exist_ok=True)

    with open(os.path.join(base, "module.yaml"), "w") as f:
        f.write("apiVersion: core.opm.dev/v1\nkind: Module\n"
                "metadata: {name: bench, version: 0.1.0, namespace: bench}\ncomponents:\n")
        for name in names:
            f.write(f"  {name}:\n"
                    f"    resources:\n"
                    f"      Container: {{image: {image}, ports: {{http: {{containerPort: {port}}}}}}}\n"
                    f"    traits:\n"
                    f"      Expose: {{type: ClusterIP}}\n"
                    f"      Replicas: {replicas}\n")

    chart = os.path.join(base, "chart")
    with open(os.path.join(chart, "Chart.yaml"), "w") as f:
        f.write("apiVersion: v2\nname: bench\nversion: 0.1.0\ntype: application\n")
    with open(os.path.join(chart, "values.yaml"), "w") as f:
        f.write("components:\n")
        for name in names:
            f.write(f"- {{name: {name}, image: {image}, port: {port}, replicas: {replicas}}}\n")
    for file, text in (("service.yaml", service), ("deployment.yaml", deployment)):
        with open(os.path.join(chart, "templates", file), "w") as f:
            f.write(text)
PY
}

# Compares two multi-document YAML streams as sets of resources: exits 1 with the first
# difference when they differ. Usage: compare NAME-A FILE-A NAME-B FILE-B
compare() {
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$root/benches python3 - "$@" <<'PY'
import sys
from objects import first_difference, objects

name_a, file_a, name_b, file_b = sys.argv[1:5]
a, b = objects(file_a, "bench", "resource"), objects(file_b, "bench", "resource")
only_a, only_b = sorted(set(a) - set(b), key=str), sorted(set(b) - set(a), key=str)
if only_a or only_b:
    print(f"{name_a} and {name_b} emit different resources: {len(a)} vs {len(b)}", file=sys.stderr)
    if only_a:
        print(f"  first only in {name_a}: {only_a[0]}", file=sys.stderr)
    if only_b:
        print(f"  first only in {name_b}: {only_b[0]}", file=sys.stderr)
    sys.exit(1)
for key in sorted(a, key=str):
    d = first_difference(a[key], b[key])
    if d:
        print(f"{name_a} and {name_b} differ in {key} ({name_a} vs {name_b}):\n  {d}", file=sys.stderr)
        sys.exit(1)
print(f"{len(a)} resources")
PY
}

# --- measurement -----------------------------------------------------------------------------
cache_warm=$work/cache-warm
export OPM_CACHE_KEY=$work/key/compile-cache.key # kept out of the user's own config
raw=$work/raw.tsv
err=$work/last.stderr
cold=
trap 'if [[ -n $cold ]]; then rm -rf "$cold"; fi' EXIT

# Runs VARIANT (a|b|c|d) once for SIZE at J and appends a row to raw.tsv; with RUN = "-" the
# run is not recorded (a warm-up) and its output goes to OUT (else /dev/null).
#   run_variant VARIANT SIZE J RUN [OUT]
run_variant() {
  local variant=$1 n=$2 j=$3 run=$4 out=${5:-/dev/null}
  local dir=$work/n$n cache=$cache_warm t0 t1 measured=$work/time.out
  local -a cmd
  case $variant in
    a) cmd=("$opm" mod build "$dir/module.yaml" -j "$j") ;;
    b) cold=$(mktemp -d "$work/cold.XXXXXX") cache=$cold
       cmd=("$opm" mod build "$dir/module.yaml" -j "$j") ;;
    c) cmd=("$native" "$dir/module.yaml" -j "$j") ;;
    d) cmd=(helm template bench "$dir/chart" --namespace bench) ;;
    e) cold=$(mktemp -d "$work/cold.XXXXXX") cache=$cold
       (cd "$work/project" && OPM_CACHE_DIR=$cache "$opm" provider init --optimized >/dev/null)
       cmd=("$opm" mod build "$work/project/n$n/module.yaml" -j "$j") ;;
  esac
  # Both variables go to every command (each ignores the other's): no `env` process is timed.
  t0=$EPOCHREALTIME
  if ! OPM_CACHE_DIR=$cache GOMAXPROCS=$j \
    /usr/bin/time -f '%e %U %S %M' -o "$measured" "${cmd[@]}" >"$out" 2>"$err"; then
    t1=$EPOCHREALTIME
    echo "e2e: error: ($variant) failed for $n components at -j $j: ${cmd[*]}" >&2
    sed 's/^/  /' "$err" | tail -n 20 >&2
    exit 1
  fi
  t1=$EPOCHREALTIME
  if [[ -n $cold ]]; then rm -rf "$cold"; cold=; fi
  [[ $run == - ]] && return
  local elapsed user sys rss
  read -r elapsed user sys rss <"$measured"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$j" "$variant" "$run" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')" \
    "$elapsed" "$user" "$sys" "$rss" >>"$raw"
}

variants=(a b)
[[ -n $native ]] && variants+=(c) || log "OPM_NATIVE is not set: skipping (c), the native renderer"
variants+=(d)
installed_project

log "generating modules and charts: ${sizes[*]} components"
generate "${sizes[@]}"

rm -rf "$cache_warm"
printf 'size\tj\tvariant\trun\twall\telapsed\tuser\tsys\trss_kb\n' >"$raw"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

for n in "${sizes[@]}"; do
  dir=$work/n$n
  # Unmeasured: warms the compile cache (and the page cache) and gives the outputs to compare.
  run_variant a "$n" "${jobs[0]}" - "$dir/opm.yaml"
  # (a) and (b) compile nothing: the embedded provider's code is built into opm, and (a) reads it
  # from the compile cache, where the first render stored it.
  OPM_CACHE_DIR=$cache_warm "$opm" mod build "$dir/module.yaml" --verbose=json 2>&1 >/dev/null |
    grep '"event":"code"' | grep -q '"source":"compiled"' &&
    die "a render with the embedded provider compiled a component: (a) would not be measured warm"
  size_variants=("${variants[@]}")
  if ((n <= 100)); then
    mkdir -p "$work/project/n$n"
    cp "$dir/module.yaml" "$work/project/n$n/module.yaml"
    size_variants+=(e)
  fi
  run_variant d "$n" "${jobs[0]}" - "$dir/helm.yaml"
  count=$(compare opm "$dir/opm.yaml" helm "$dir/helm.yaml") ||
    die "opm and helm do not emit the same resources for $n components (outputs in $dir)"
  log "$n components: opm and helm emit the same $count"
  if [[ -n $native ]]; then
    run_variant c "$n" "${jobs[0]}" - "$dir/native.yaml"
    count=$(compare opm "$dir/opm.yaml" native "$dir/native.yaml") ||
      die "opm and OPM_NATIVE do not emit the same resources for $n components (outputs in $dir)"
    log "$n components: opm and native emit the same $count"
  fi

  for ((run = 1; run <= runs; run++)); do
    # Rotate the order of variants (and of J) from run to run, so no variant always runs first,
    # and reverse it every other run, so no variant always runs after the same one: with a plain
    # rotation of a, b, d, (a) always ran right after helm and (b) right after (a), and (a) came
    # out 15-25 % slower than (b) at 10,000 components where runs alternating by hand find them
    # equal.
    order=("${size_variants[@]:run % ${#size_variants[@]}}" "${size_variants[@]:0:run % ${#size_variants[@]}}")
    if ((run / ${#size_variants[@]} % 2)); then
      reversed=()
      for ((k = ${#order[@]} - 1; k >= 0; k--)); do reversed+=("${order[k]}"); done
      order=("${reversed[@]}")
    fi
    js=("${jobs[@]}")
    ((run % 2)) || { js=(); for ((k = ${#jobs[@]} - 1; k >= 0; k--)); do js+=("${jobs[k]}"); done; }
    for j in "${js[@]}"; do
      for variant in "${order[@]}"; do
        run_variant "$variant" "$n" "$j" "$run"
      done
    done
    log "$n components: run $run/$runs done"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ----------------------------------------------------------------------------------
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -c1)
opm_version=$("$opm" --version 2>/dev/null || echo unknown)
{
  echo "# opm end-to-end benchmark"
  echo
  echo "\`$(printf '%q ' env SIZES="${sizes[*]}" JOBS="${jobs[*]}" RUNS="$runs" ${native:+OPM_NATIVE="$native"} OPM="$opm")benches/e2e.sh\`"
  echo
  echo "$started; $opm_version ($opm, built $(date -u -r "$opm" +%Y-%m-%dT%H:%M:%SZ);" \
    "tree at $commit${dirty:+, with uncommitted changes}); helm $helm_version; $(nproc) cores;" \
    "load average $load_before before, $load_after after."
  echo
  python3 - "$raw" "$runs" "${native:+native}" "${jobs[@]}" <<'PY'
import csv, statistics, sys

raw, runs, native, jobs = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "native", [int(j) for j in sys.argv[4:]]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
sizes = sorted({int(r["size"]) for r in rows})

def median(n, j, v, f):
    values = [f(r) for r in rows if int(r["size"]) == n and int(r["j"]) == j and r["variant"] == v]
    return statistics.median(values) if values else None

wall = lambda n, j, v: median(n, j, v, lambda r: float(r["wall"]))
cpu = lambda n, j, v: median(n, j, v, lambda r: float(r["user"]) + float(r["sys"]))
rss = lambda n, j, v: median(n, j, v, lambda r: int(r["rss_kb"]))
s = lambda x: "—" if x is None else f"{x:.3f} s"
mib = lambda x: "—" if x is None else f"{x / 1024:.0f} MiB"
ratio = lambda x, y: "—" if x is None or y is None or y == 0 else f"{x / y:.2f}"

print(f"Medians of {runs} runs. (a) opm warm cache, (b) opm empty cache, "
      f"(c) native{'' if native else ' (not run: OPM_NATIVE unset)'}, (d) helm template, "
      "(e) opm with an installed provider, empty cache, after `opm provider init --optimized` (up to "
      "100 components). Wall: whole process; CPU: user + sys; RSS: peak resident set.\n")
for j in jobs:
    print(f"## -j {j}\n")
    print("| components | a wall | b wall | e wall | c wall | d wall | a/d | b/d | e/d | a/c | a CPU | a RSS | d RSS | b RSS |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        a, b, c, d, e = (wall(n, j, v) for v in "abcde")
        print(f"| {n:,} | {s(a)} | {s(b)} | {s(e)} | {s(c)} | {s(d)} | {ratio(a, d)} | {ratio(b, d)} "
              f"| {ratio(e, d)} | {ratio(a, c)} "
              f"| {s(cpu(n, j, 'a'))} | {mib(rss(n, j, 'a'))} | {mib(rss(n, j, 'd'))} | {mib(rss(n, j, 'b'))} |")
    print()

others = [j for j in jobs if j != jobs[0]]
print("## Scaling of (a)\n")
print("time(10×N)/time(N): wall of (a) at 10×N over wall at N (— when 10×N was not measured). "
      f"-jJ/-j{jobs[0]}: wall at -j J over wall at -j {jobs[0]}. Calls: 2 per component; calls/s: "
      "calls over the whole-process wall (start-up included).\n")
head = ["components", "calls"]
head += [f"time(10×N)/time(N) -j{j}" for j in jobs]
head += [f"-j{j}/-j{jobs[0]} wall" for j in others]
head += [f"calls/s -j{j}" for j in jobs]
print("| " + " | ".join(head) + " |")
print("|" + "---:|" * len(head))
for n in sizes:
    cells = [f"{n:,}", f"{2 * n:,}"]
    cells += [ratio(wall(10 * n, j, "a"), wall(n, j, "a")) if 10 * n in sizes else "—" for j in jobs]
    cells += [ratio(wall(n, j, "a"), wall(n, jobs[0], "a")) for j in others]
    cells += ["—" if not wall(n, j, "a") else f"{2 * n / wall(n, j, 'a'):,.0f}" for j in jobs]
    print("| " + " | ".join(cells) + " |")
PY
} | tee "$work/results.md"
log "tables written to $work/results.md; every run in $raw"
