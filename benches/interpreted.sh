#!/usr/bin/env bash
# A module of N components rendered by the example ServiceTransformer
# (transformers/examples/service) built in each language given, each from a provider directory
# of its own holding that one build (`opm mod build -p DIR`): whole-process wall time, medians,
# and each language's ratio to the first one's. Every component is a Container with one port
# and an Expose trait, so each gets one call of the transformer, in a fresh instance.
#
#   OPM=target/release/opm N=1000 RUNS=5 benches/interpreted.sh \
#     rust=target/debug/build/opm-tests-*/out/example_service_rust.wasm \
#     python=target/toolchain-guests/example-service-python-*.wasm
#
# Environment (defaults in brackets):
#   OPM    the opm binary                                      [<repo>/target/release/opm]
#   N      components in the module                            [1000]
#   RUNS   measured renders per language, taken in turns       [5]
#   JOBS   -j of every render                                  [the default]
#   WORK   work directory (module, provider directories, compile cache)
#          [${TMPDIR:-/tmp}/opm-interpreted]
#
# The cache is warmed first with `--optimized` (Cranelift's code, as `opm provider init` leaves
# it), then by one unmeasured render per language. Needs bash >= 5 and python3.
set -euo pipefail

die() { echo "interpreted: error: $*" >&2; exit 1; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
opm=${OPM:-$root/target/release/opm}
n=${N:-1000}
runs=${RUNS:-5}
work=${WORK:-${TMPDIR:-/tmp}/opm-interpreted}
jobs=()
[[ -n ${JOBS:-} ]] && jobs=(-j "$JOBS")
(($# > 0)) || die "usage: benches/interpreted.sh LANGUAGE=COMPONENT.wasm..."
[[ -x $opm ]] || die "$opm is not an executable"

mkdir -p "$work"
export OPM_CACHE_DIR=$work/cache

# The module: N components, each a Container with a port and an Expose trait.
python3 - "$work/module.yaml" "$n" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("apiVersion: core.opm.dev/v1\nkind: Module\n"
            "metadata: {name: bench, version: 0.1.0, namespace: bench}\ncomponents:\n")
    for i in range(n):
        f.write(f"  c{i:05d}:\n"
                "    resources:\n"
                "      Container: {image: nginx:1.27, ports: {http: {containerPort: 8080}}}\n"
                "    traits:\n"
                "      Expose: {type: ClusterIP}\n")
PY

# One provider directory per language: the example's definitions and one transformer.
languages=()
for arg in "$@"; do
  language=${arg%%=*} component=${arg#*=}
  [[ -f $component ]] || die "$component: no such file"
  dir=$work/$language
  mkdir -p "$dir"
  cp "$component" "$dir/service.wasm"
  python3 - "$root/transformers/examples/service/provider.yaml" "$dir/provider.yaml" <<'PY'
import sys
source, target = sys.argv[1], sys.argv[2]
text = open(source).read()
head = text[:text.index("transformers:")]
with open(target, "w") as f:
    f.write(head.replace("name: example-service", "name: example-service-bench"))
    f.write("transformers:\n"
            "  example.opm.dev/network@v1#ServiceTransformer:\n"
            "    description: The example ServiceTransformer\n"
            "    requiredTraits: [example.opm.dev/traits/network@v1#Expose]\n"
            "    optionalResources: [example.opm.dev/resources/workload@v1#Container]\n"
            "    component: service.wasm\n")
PY
  languages+=("$language")
done

render() { "$opm" mod build "$work/module.yaml" -p "$work/$1" "${jobs[@]}" "${@:2}"; }

for language in "${languages[@]}"; do
  render "$language" --optimized >"$work/$language.yaml"
  render "$language" >/dev/null
done
first=${languages[0]}
for language in "${languages[@]}"; do
  cmp -s "$work/$first.yaml" "$work/$language.yaml" ||
    die "$language's render differs from $first's ($work/$language.yaml)"
done

declare -A times
for ((run = 0; run < runs; run++)); do
  for language in "${languages[@]}"; do
    t0=$EPOCHREALTIME
    render "$language" >/dev/null
    t1=$EPOCHREALTIME
    times[$language]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }') "
  done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
base=$(median "${times[$first]}")
echo "| language | $n components, wall (median of $runs) | ÷ $first |"
echo "|---|---:|---:|"
for language in "${languages[@]}"; do
  m=$(median "${times[$language]}")
  awk -v l="$language" -v m="$m" -v b="$base" 'BEGIN { printf "| %s | %.3f s | %.2f |\n", l, m, m / b }'
done
