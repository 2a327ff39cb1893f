#!/usr/bin/env bash
# How long `opm provider init` keeps a project from rendering (docs/performance.md), for two
# providers installed from a directory registry:
#   python4  four Python transformers, each its own component (four projects scaffolded with
#            `opm transformer new --lang python`, built with componentize-py, some 18 MiB each),
#            in one provider;
#   kubernetes  the embedded Kubernetes provider's components (one holding its 19 transformers,
#            and the renderer), each with a custom section more so that its code is not the one
#            built into opm (benches/unpack_provider.py, as for benches/e2e.sh's installed
#            variant), as version 0.1.0;
# and two ways of compiling them:
#   cranelift  `opm provider init --optimized`: every component compiled with Cranelift before
#              init returns — what init did before it compiled with Winch;
#   tiered     `opm provider init`: Winch's code now, Cranelift's by the background compile it
#              starts (`opm __optimize`, nice 19).
# Each run starts from an empty compile cache and measures init's wall time, CPU time (user +
# sys) and peak RSS, then the first render of a module that uses every transformer (wall time,
# and where its code came from, from --verbose=json), and for tiered the time from init's start
# until its background compile has ended. RUNS runs, the variants alternating; medians.
#
#   OPM=target/release/opm RUNS=3 benches/install.sh
#
# Needs componentize-py (see transformers/README.md) and GNU time at /usr/bin/time.
set -euo pipefail
opm=$(realpath "${OPM:-target/release/opm}")
runs=${RUNS:-3}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
work=$(realpath "$work")
log() { printf '%s\n' "$*" >&2; }

# --- the providers ---------------------------------------------------------------------------

# WORK/registry/python4/0.1.0/python4-0.1.0.opmb and WORK/python4.yaml, the module.
python4() {
  local src=$work/python4-src i
  rm -rf "$src" && mkdir -p "$src"
  {
    printf 'apiVersion: core.opm.dev/v1\nkind: Provider\nmetadata:\n  name: python4\n'
    printf '  version: 0.1.0\n  description: four Python transformers\ndefinitions:\n'
    for i in 1 2 3 4; do
      printf '  example.com/resources/config%s@v1#ConfigMap:\n    kind: Resource\n' "$i"
      printf '    description: configuration data\n    schema:\n      type: object\n'
      printf '      required: [data]\n      properties:\n'
      printf '        data: {type: object, additionalProperties: {type: string}}\n'
    done
    printf 'transformers:\n'
    for i in 1 2 3 4; do
      printf '  example.com/transformers/config@v1#Py%sTransformer:\n' "$i"
      printf '    description: ConfigMaps\n'
      printf '    requiredResources: [example.com/resources/config%s@v1#ConfigMap]\n' "$i"
      printf '    component: py%s.wasm\n' "$i"
    done
  } >"$src/provider.yaml"
  for i in 1 2 3 4; do
    if [ ! -f "$work/py$i/py$i.wasm" ]; then
      (cd "$work" && rm -rf "py$i" && "$opm" transformer new "py$i" --lang python >/dev/null &&
        cd "py$i" && "$opm" transformer build >/dev/null 2>&1)
    fi
    cp "$work/py$i/py$i.wasm" "$src/"
  done
  mkdir -p "$work/registry/python4/0.1.0"
  "$opm" provider pack "$src" -o "$work/registry/python4/0.1.0/python4-0.1.0.opmb" >/dev/null
  {
    printf 'apiVersion: core.opm.dev/v1\nkind: Module\nmetadata:\n  name: demo\n'
    printf '  version: 0.1.0\n  namespace: demo\ncomponents:\n'
    for i in 1 2 3 4; do
      printf '  settings%s:\n    resources:\n' "$i"
      printf '      example.com/resources/config%s@v1#ConfigMap:\n' "$i"
      printf '        data: {mode: fast}\n'
    done
  } >"$work/python4.yaml"
}

# WORK/registry/kubernetes/0.1.0/…: the embedded provider as 0.1.0, each component with a custom
# section more; and WORK/kubernetes.yaml, examples/hello (its Deployment and Service).
kubernetes() {
  local src=$work/kubernetes-src
  rm -rf "$src" && mkdir -p "$src"
  "$opm" provider export kubernetes -o "$work/embedded.opmb" >/dev/null
  python3 "$(dirname "$0")/unpack_provider.py" "$work/embedded.opmb" "$src" 0.1.0 >/dev/null
  mkdir -p "$work/registry/kubernetes/0.1.0"
  "$opm" provider pack "$src" -o "$work/registry/kubernetes/0.1.0/kubernetes-0.1.0.opmb" >/dev/null
  cp "$(dirname "$0")/../examples/hello/module.yaml" "$work/kubernetes.yaml"
}

# --- one run ---------------------------------------------------------------------------------

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
now() { date +%s.%N; }

# One init of PROVIDER compiled the WAY given, from an empty cache, and the render after it:
# appends "init_s cpu_s rss_mib render_s background_s sources" to WORK/PROVIDER-WAY.tsv.
measure() {
  local provider=$1 way=$2 project=$work/project-$1-$2 flag=() started stdout pid done_at
  rm -rf "$project" "$work/cache" && mkdir -p "$project/.opm"
  printf 'providers:\n  - name: %s\n    version: ^0.1\n    source: ../../registry\n' "$provider" \
    >"$project/.opm/providers.yaml"
  cp "$work/$provider.yaml" "$project/module.yaml"
  [ "$way" = cranelift ] && flag=(--optimized)
  export OPM_CACHE_DIR=$work/cache OPM_CACHE_KEY=$work/key/key
  started=$(now)
  stdout=$(cd "$project" && /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$opm" provider init "${flag[@]}")
  read -r wall user sys rss <"$work/time"
  local render_started render_s sources
  render_started=$(now)
  sources=$(cd "$project" && "$opm" mod build module.yaml --verbose=json 2>&1 >/dev/null |
    python3 -c 'import json, sys, collections
c = collections.Counter(json.loads(l)["source"] for l in sys.stdin if l.startswith("{") and "\"code\"" in l)
print(",".join(f"{k}:{v}" for k, v in sorted(c.items())))')
  render_s=$(echo "$(now) - $render_started" | bc)
  local background=0
  pid=$(sed -n 's/.* in the background (process \([0-9]*\),.*/\1/p' <<<"$stdout")
  if [ -n "$pid" ]; then
    while [ -e "/proc/$pid" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$pid/stat" 2>/dev/null; do
      sleep 0.1
    done
    done_at=$(now)
    background=$(echo "$done_at - $started" | bc)
  fi
  printf '%s %s %s %s %s %s\n' "$wall" "$(echo "$user + $sys" | bc)" "$((rss / 1024))" \
    "$render_s" "$background" "$sources" >>"$work/$provider-$way.tsv"
}

log "building the providers in $work (componentize-py, once)"
python4
kubernetes
rm -f "$work"/*.tsv
for ((run = 0; run < runs; run++)); do
  for provider in python4 kubernetes; do
    ways=(cranelift tiered)
    ((run % 2)) && ways=(tiered cranelift)
    for way in "${ways[@]}"; do
      log "run $((run + 1))/$runs: $provider, $way"
      measure "$provider" "$way"
    done
  done
done

printf '| provider | init compiles with | init (ready to render) | init CPU | init peak RSS | first render | its code | Cranelift'"'"'s code in the cache |\n'
printf '|---|---|---:|---:|---:|---:|---|---:|\n'
for provider in python4 kubernetes; do
  for way in cranelift tiered; do
    f=$work/$provider-$way.tsv
    col() { cut -d' ' -f"$1" "$f" | median; }
    background=$(col 5)
    [ "$way" = cranelift ] && background=$(col 1)
    printf '| %s | %s | %.2f s | %.2f s | %d MiB | %.2f s | %s | %.1f s |\n' "$provider" \
      "$([ "$way" = cranelift ] && echo 'Cranelift (`--optimized`)' || echo 'Winch, then Cranelift behind')" \
      "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(cut -d' ' -f6 "$f" | sort | uniq | paste -sd' ')" \
      "$background"
  done
done
log "every measurement: $work/*.tsv"
