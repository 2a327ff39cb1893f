#!/usr/bin/env bash
# Benchmark of real modules against `helm template` (docs/performance.md, issue 49's set).
#
# Each module of the set is rendered side by side with its helm peer, warm, and measured RUNS
# times, the variants in rotating order within each run:
#   opm -j 1    OPM_CACHE_DIR=$WORK/cache $OPM mod build MODULE [ARGS] -j 1
#   opm         the same at the default -j (no flag: every core)
#   helm        helm template RELEASE CHART [ARGS], with helm's defaults (GOMAXPROCS unset)
# with output to /dev/null, and the medians of wall time, CPU time (user + sys) and peak RSS are
# printed as Markdown tables with the ratios opm (default -j) / helm and opm default-j CPU /
# opm -j 1 CPU (also written to $WORK/results.md; every measurement is kept in $WORK/raw.tsv).
# The cache is warm: one unmeasured render of each module comes first (and the script checks
# that a render then compiles nothing), so what is measured is a warm render.
#
# The set, and each module's helm peer:
#   vaultwarden, mattermost  the vendored charts of tests/fixtures/charts against their opm ports
#       in examples/, rendered as tests/all/parity.rs renders them: release and namespace the
#       application's name, `helm template APP CHART --namespace APP --skip-tests --values
#       helm-values.yaml` against `opm mod build examples/APP -n APP -f opm-values.yaml` (opm
#       writes its default output, YAML, as helm does, rather than the test's JSON). The two
#       render the same objects up to the differences the parity test lists;
#   every other example of examples/ that is one module: everything, gitea, grafana (with
#       examples/grafana/prod.yaml), hello, nextcloud (with examples/nextcloud/prod.yaml, its
#       ${env:NC_DB_PASSWORD} set by the script), pipeline, plausible, shop (with
#       examples/shop/values-prod.yaml), for the Kubernetes provider (the default; a compose or
#       quadlet render has no helm peer). Their helm peer is a chart the script writes in
#       WORK/charts/NAME whose templates/ hold, as static files, one per object, the objects opm
#       renders for the example with the same values (a `{{` in them escaped so that helm prints
#       it as it is); before measuring, the script checks that `helm template` of it emits the
#       same objects as opm. That chart costs helm only loading a chart, running its template
#       engine over the files and writing the output: helm's floor for those objects, the
#       strictest comparison (an upstream chart computes its objects from values, and costs more).
#   Left out: examples/platform, a platform of several releases rendered by `opm platform build
#       --env prod --out-dir out/` into directories, not one module render; it has no one
#       `helm template` peer, its releases (hello, shop, vaultwarden) are in the set, and
#       benches/platform.sh measures platform builds.
#
# At the end a "targets" block gives, per module, whether each of issue 49's targets holds:
# opm (default -j) wall ≤ 0.5× helm's, CPU ≤ 0.5× helm's, peak RSS ≤ helm's, and opm's CPU at
# the default -j ≤ 1.2× its CPU at -j 1. The script only reports them (exit 0) unless STRICT=1,
# when it exits 1 if one fails.
#
# Run from anywhere:
#   benches/real.sh
#   RUNS=5 MODULES="hello grafana nextcloud" benches/real.sh      # a quicker pass
#   OPM=path/to/opm WORK=/tmp/real STRICT=1 benches/real.sh
#
# Environment (defaults in brackets):
#   OPM      the opm binary; unset: this checkout's, built first  [<repo>/target/release/opm]
#   RUNS     measured runs per variant and module; the median is reported          [11]
#   MODULES  the modules of the set to run, by name                          [all of them]
#   WORK     work directory (charts, cache, outputs, results)  [${TMPDIR:-/tmp}/opm-real]
#   STRICT   1: exit 1 when a target does not hold                                   [0]
#
# Needs bash >= 5, python3 with PyYAML (the equivalence check), GNU time at /usr/bin/time, and
# helm 4 (when it is not on PATH, tests/setup.sh installs the pinned one and puts it there).
# Wall time is measured by bash ($EPOCHREALTIME, around /usr/bin/time, so in milliseconds
# rather than GNU time's 10 ms); peak RSS comes from GNU time (%M). CPU time is the kernel's
# account that GNU time reads, but GNU time cuts user and sys down to 10 ms each, a fifth of a
# small render's 50 ms (its sum reads 10 ms less than the kernel's on average): the CPU columns
# are the difference of bash's `times` for its children before and after the run, to the
# millisecond (user + sys of the command and of /usr/bin/time itself, which adds about 1 ms to
# every variant alike); GNU time's %U and %S are kept in raw.tsv beside it.
set -euo pipefail

die() { echo "real: error: $*" >&2; exit 1; }
log() { echo "real: $*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# --- configuration ---------------------------------------------------------------------------
if [[ -z ${OPM:-} ]]; then
  log "building opm (release)"
  cargo build --quiet --release --locked --manifest-path "$root/Cargo.toml" -p opm-runtime --bin opm
fi
opm=${OPM:-$root/target/release/opm}
[[ -x $opm ]] || die "opm binary '$opm' is not executable (build it, or set OPM=)"
opm=$(realpath "$opm")
runs=${RUNS:-11}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer (got '$runs')"
strict=${STRICT:-0}
[[ $strict == 0 || $strict == 1 ]] || die "STRICT must be 0 or 1 (got '$strict')"
work=${WORK:-${TMPDIR:-/tmp}/opm-real}

# --- tools -----------------------------------------------------------------------------------
# benches/tools.sh: bash >= 5, GNU time, python3 with PyYAML, helm (set up when missing).
source "$root/benches/tools.sh"
check_tools
helm=$(command -v helm)

# --- the set ---------------------------------------------------------------------------------
# One line per module: NAME|PEER|OPM ARGUMENTS|HELM RELEASE|HELM CHART|HELM ARGUMENTS, paths
# relative to the repository; PEER is `chart` (vendored) or `floor` (the static chart written in
# WORK/charts/NAME, whose namespace is the one opm's objects are in).
charts=tests/fixtures/charts
set_lines=(
  "vaultwarden|chart|examples/vaultwarden -n vaultwarden -f $charts/vaultwarden/opm-values.yaml|vaultwarden|$charts/vaultwarden/chart|--namespace vaultwarden --skip-tests --values $charts/vaultwarden/helm-values.yaml"
  "mattermost|chart|examples/mattermost -n mattermost -f $charts/mattermost/opm-values.yaml|mattermost|$charts/mattermost/chart|--namespace mattermost --skip-tests --values $charts/mattermost/helm-values.yaml"
  "everything|floor|examples/everything|everything||"
  "gitea|floor|examples/gitea|gitea||"
  "grafana|floor|examples/grafana -f examples/grafana/prod.yaml|grafana||"
  "hello|floor|examples/hello|hello||"
  "nextcloud|floor|examples/nextcloud -f examples/nextcloud/prod.yaml|nextcloud||"
  "pipeline|floor|examples/pipeline|pipeline||"
  "plausible|floor|examples/plausible|plausible||"
  "shop|floor|examples/shop -f examples/shop/values-prod.yaml|shop||"
)
# Every example directory but the platform must be in the set: a new example is not left out
# silently.
for dir in "$root"/examples/*/; do
  example=$(basename "$dir")
  [[ $example == platform ]] && continue
  printf '%s\n' "${set_lines[@]}" | grep -q "examples/$example\\b" ||
    die "examples/$example is not in the set of benches/real.sh: add it (or leave it out in the header, saying why)"
done

declare -A peer opm_args helm_release helm_chart helm_args
names=()
for line in "${set_lines[@]}"; do
  IFS='|' read -r name p o r c h <<<"$line"
  names+=("$name")
  peer[$name]=$p opm_args[$name]=$o helm_release[$name]=$r helm_chart[$name]=$c helm_args[$name]=$h
done
if [[ -n ${MODULES:-} ]]; then
  read -r -a selected <<<"$MODULES"
  for name in "${selected[@]}"; do
    [[ -n ${peer[$name]:-} ]] || die "MODULES names '$name', which is not in the set (${names[*]})"
  done
  names=("${selected[@]}")
fi
((${#names[@]})) || die "MODULES must not be empty"

# --- environment -----------------------------------------------------------------------------
mkdir -p "$work"
work=$(realpath "$work")
log "work directory: $work"
cache=$work/cache
export OPM_CACHE_DIR=$cache
export OPM_CACHE_KEY=$work/key/compile-cache.key # kept out of the user's own config
export NC_DB_PASSWORD=bench-db-password-from-env # nextcloud's prod.yaml takes it from ${env:…}
unset GOMAXPROCS                                 # helm with its defaults
cd "$root" # the set's paths are the repository's
raw=$work/raw.tsv
err=$work/last.stderr

# Writes WORK/charts/NAME from opm's render OUT: Chart.yaml and one template per object, in the
# order opm wrote them, each a static file (`{{` escaped for helm's template engine). Prints the
# namespace of the objects (the first one found; `default` when none has one).
floor_chart() {
  local name=$1 out=$2 chart=$work/charts/$1
  rm -rf "$chart"
  mkdir -p "$chart/templates"
  python3 - "$name" "$out" "$chart" <<'PY'
import os, re, sys, yaml

name, out, chart = sys.argv[1:4]
with open(os.path.join(chart, "Chart.yaml"), "w") as f:
    f.write(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\ntype: application\n"
            "description: the objects opm renders, as static templates (benches/real.sh)\n")
text = open(out).read()
# Documents are separated by lines `---` (a block scalar's lines are indented, so never one).
documents = [d for d in re.split(r"^---[ \t]*$\n?", text, flags=re.M) if d.strip()]
namespace = None
for i, document in enumerate(documents):
    obj = yaml.safe_load(document)
    meta = obj.get("metadata") or {}
    namespace = namespace or meta.get("namespace")
    slug = re.sub(r"[^a-z0-9]+", "-", f"{obj.get('kind', '')}-{meta.get('name', '')}".lower()).strip("-")
    with open(os.path.join(chart, "templates", f"{i:03d}-{slug}.yaml"), "w") as f:
        f.write(document.replace("{{", '{{ "{{" }}'))
print(namespace or "default")
PY
}

# Compares two multi-document YAML streams as sets of objects, keyed by API group, kind,
# namespace and name: prints the count, or the first difference and exits 1.
#   same_objects NAME-A FILE-A NAME-B FILE-B
same_objects() {
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$root/benches python3 - "$@" <<'PY'
import sys
from objects import first_difference, objects

name_a, file_a, name_b, file_b = sys.argv[1:5]
a, b = objects(file_a), objects(file_b)
if set(a) != set(b):
    only = sorted(set(a) ^ set(b), key=str)[0]
    sys.exit(f"{name_a} emits {len(a)} objects, {name_b} {len(b)}; {only} is only in "
             f"{name_a if only in a else name_b}")
for key in sorted(a, key=str):
    d = first_difference(a[key], b[key], name_side=True)
    if d:
        sys.exit(f"{name_a} and {name_b} differ in {key}: {d}")
print(len(a))
PY
}

# Counts the objects of a multi-document YAML stream.
count_objects() {
  python3 -c 'import sys, yaml; print(sum(d is not None for d in yaml.safe_load_all(open(sys.argv[1]))))' "$1"
}

# The command of VARIANT (o1, od, h) for module NAME, in the array `cmd`.
command_of() {
  local name=$1 variant=$2
  local -a o h
  read -r -a o <<<"${opm_args[$name]}"
  read -r -a h <<<"${helm_args[$name]}"
  case $variant in
    o1) cmd=("$opm" mod build "${o[@]}" -j 1) ;;
    od) cmd=("$opm" mod build "${o[@]}") ;;
    h) cmd=("$helm" template "${helm_release[$name]}" "${helm_chart[$name]}" "${h[@]}") ;;
  esac
}

# Runs VARIANT once for module NAME and appends a row to raw.tsv; with RUN = "-" the run is not
# recorded (a warm-up) and its output goes to OUT (else /dev/null).
#   run_variant NAME VARIANT RUN [OUT]
run_variant() {
  local name=$1 variant=$2 run=$3 out=${4:-/dev/null} measured=$work/time.out t0 t1
  local -a cmd before after
  command_of "$name" "$variant"
  times >"$work/times.before"
  t0=$EPOCHREALTIME
  if ! /usr/bin/time -f '%e %U %S %M' -o "$measured" "${cmd[@]}" >"$out" 2>"$err"; then
    echo "real: error: $name ($variant) failed: ${cmd[*]}" >&2
    sed 's/^/  /' "$err" | tail -n 20 >&2
    exit 1
  fi
  t1=$EPOCHREALTIME
  times >"$work/times.after"
  [[ $run == - ]] && return
  local elapsed user sys rss
  read -r elapsed user sys rss <"$measured"
  # The second line of `times`: the children's user and sys, as 0m0.123s.
  mapfile -t before <"$work/times.before"
  mapfile -t after <"$work/times.after"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$variant" "$run" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')" \
    "$(awk -v b="${before[1]}" -v a="${after[1]}" '
        function s(t,  p) { split(t, p, /[ms]/); return p[1] * 60 + p[2] }
        BEGIN { split(b, x, " "); split(a, y, " "); printf "%.3f", s(y[1]) + s(y[2]) - s(x[1]) - s(x[2]) }')" \
    "$elapsed" "$user" "$sys" "$rss" >>"$raw"
}

# --- preparation: warm the cache, write the floor charts, check the peers ----------------------
rm -rf "$cache" "$work/charts" "$work/out"
mkdir -p "$work/out"
declare -A objects
for name in "${names[@]}"; do
  # Unmeasured: warms the compile cache (and the page cache) and gives the outputs to compare.
  run_variant "$name" od - "$work/out/$name.opm.yaml"
  command_of "$name" od
  "${cmd[@]}" --verbose=json 2>&1 >/dev/null | grep '"event":"code"' | grep -q '"source":"compiled"' &&
    die "$name: a second render compiled a component: the renders would not be measured warm"
  if [[ ${peer[$name]} == floor ]]; then
    namespace=$(floor_chart "$name" "$work/out/$name.opm.yaml")
    helm_chart[$name]=$work/charts/$name
    helm_args[$name]="--namespace $namespace"
  fi
  run_variant "$name" h - "$work/out/$name.helm.yaml"
  if [[ ${peer[$name]} == floor ]]; then
    objects[$name]=$(same_objects opm "$work/out/$name.opm.yaml" helm "$work/out/$name.helm.yaml") ||
      die "$name: helm template of the static chart does not emit opm's objects (outputs in $work/out)"
    log "$name: helm's static chart emits opm's ${objects[$name]} objects"
  else
    objects[$name]="$(count_objects "$work/out/$name.opm.yaml")/$(count_objects "$work/out/$name.helm.yaml")"
    log "$name: opm emits ${objects[$name]%/*} objects, the vendored chart ${objects[$name]#*/} (tests/all/parity.rs compares them)"
  fi
done

# --- measurement -----------------------------------------------------------------------------
printf 'module\tvariant\trun\twall\tcpu\telapsed\tuser\tsys\trss_kb\n' >"$raw"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
variants=(o1 od h)
for name in "${names[@]}"; do
  for ((run = 1; run <= runs; run++)); do
    # Rotate the order from run to run and reverse it every other cycle, so that no variant
    # always runs first, nor always after the same one (as benches/e2e.sh).
    order=("${variants[@]:run % 3}" "${variants[@]:0:run % 3}")
    if ((run / 3 % 2)); then order=("${order[2]}" "${order[1]}" "${order[0]}"); fi
    for variant in "${order[@]}"; do
      run_variant "$name" "$variant" "$run"
    done
  done
  log "$name: $runs runs done"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ----------------------------------------------------------------------------------
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -c1)
opm_version=$("$opm" --version 2>/dev/null || echo unknown)
summary=()
for name in "${names[@]}"; do summary+=("$name:${peer[$name]}:${objects[$name]}"); done
{
  echo "# opm against \`helm template\`: real modules"
  echo
  echo "\`$(printf '%q ' env RUNS="$runs" ${MODULES:+MODULES="$MODULES"} OPM="$opm")benches/real.sh\`"
  echo
  echo "$started; $opm_version ($opm, built $(date -u -r "$opm" +%Y-%m-%dT%H:%M:%SZ);" \
    "tree at $commit${dirty:+, with uncommitted changes}); helm $helm_version; $(nproc) cores;" \
    "load average $load_before before, $load_after after."
  echo
  python3 - "$raw" "$runs" "$work/targets.failed" "${summary[@]}" <<'PY'
import csv, statistics, sys

raw, runs, failed_file, summary = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
rows = list(csv.DictReader(open(raw), delimiter="\t"))

def median(m, v, f):
    return statistics.median(f(r) for r in rows if r["module"] == m and r["variant"] == v)

wall = lambda m, v: median(m, v, lambda r: float(r["wall"]))
cpu = lambda m, v: median(m, v, lambda r: float(r["cpu"]))
rss = lambda m, v: median(m, v, lambda r: int(r["rss_kb"]))
ms = lambda x: f"{x * 1000:.0f} ms"
mib = lambda x: f"{x / 1024:.0f} MiB"

print(f"Medians of {runs} runs, warm cache, output to /dev/null. opm -j 1 and opm at the default "
      "-j (every core); helm: `helm template` with its defaults, of the vendored chart (peer "
      "`chart`) or of a chart whose templates are the objects opm renders, as static files "
      "(peer `floor`: helm's least cost for those objects). Objects: opm's (/ the chart's). "
      "Wall: whole process; CPU: user + sys; RSS: peak resident set.\n")
print("| module | peer | objects | opm -j 1 wall | CPU | RSS | opm wall | CPU | RSS "
      "| helm wall | CPU | RSS |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
modules = []
for entry in summary:
    m, peer, objects = entry.split(":")
    modules.append(m)
    cells = [m, peer, objects]
    for v in ("o1", "od", "h"):
        cells += [ms(wall(m, v)), ms(cpu(m, v)), mib(rss(m, v))]
    print("| " + " | ".join(cells) + " |")
print()
print("Ratios of the medians: opm at the default -j over helm, and opm's CPU at the default -j "
      "over its CPU at -j 1.\n")
print("| module | wall opm/helm | CPU opm/helm | RSS opm/helm | CPU default -j / -j 1 |")
print("|---|---:|---:|---:|---:|")
targets = []
for m in modules:
    r = (wall(m, "od") / wall(m, "h"), cpu(m, "od") / cpu(m, "h"), rss(m, "od") / rss(m, "h"),
         cpu(m, "od") / cpu(m, "o1"))
    print(f"| {m} | " + " | ".join(f"{x:.2f}" for x in r) + " |")
    targets.append((m, r))
print()
print("Targets (issue 49): opm at the default -j: wall ≤ 0.5× helm, CPU ≤ 0.5× helm, peak RSS ≤ "
      "helm; its CPU ≤ 1.2× -j 1's.\n")
print("```")
failed = 0
width = max(len(m) for m in modules)
for m, (w, c, r, j) in targets:
    checks = [("wall", w, 0.5), ("CPU", c, 0.5), ("RSS", r, 1.0), ("CPU -j/-j1", j, 1.2)]
    cells = [f"{what} {x:.2f} ≤ {limit:g} {'ok' if x <= limit else 'FAILS'}" for what, x, limit in checks]
    misses = sum(x > limit for _, x, limit in checks)
    failed += misses
    print(f"{m:<{width}}  " + "; ".join(cells) + f"  → {'holds' if not misses else f'{misses} of 4 fail'}")
print("```")
open(failed_file, "w").write(f"{failed}\n")
PY
} | tee "$work/results.md"
log "tables written to $work/results.md; every run in $raw"
failed=$(cat "$work/targets.failed")
if ((failed)); then
  log "$failed target(s) do not hold"
  ((strict)) && exit 1
fi
exit 0
