#!/usr/bin/env bash
# Cold start of transformers from each language's toolchain: scaffolds a project per language
# with `opm transformer new`, builds and packs it, then renders its module with an empty compile
# cache (the first render on a machine) and again with the cache warm, RUNS times each,
# alternating languages, and prints the median wall time and peak RSS of each.
#
#   OPM=target/release/opm RUNS=5 benches/cold-start.sh
#
# Needs the toolchains `opm transformer build` needs (see transformers/README.md).
set -euo pipefail
opm=$(realpath "${OPM:-target/release/opm}")
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

languages=(rust js python c)
for lang in "${languages[@]}"; do
  (cd "$work" && "$opm" transformer new "cold-$lang" --lang "$lang" >/dev/null &&
    cd "cold-$lang" && "$opm" transformer build >/dev/null 2>&1 && "$opm" provider pack . -o bundle.opmb >/dev/null)
done

# One render of LANG's module with the cache at CACHE: appends "seconds kilobytes" to OUT.
measure() {
  local lang=$1 cache=$2 out=$3
  (cd "$work/cold-$lang" &&
    /usr/bin/time -f "%e %M" -a -o "$out" env OPM_CACHE_DIR="$cache" \
      "$opm" mod build module.yaml -p bundle.opmb >/dev/null 2>/dev/null)
}

for ((run = 0; run < runs; run++)); do
  for lang in "${languages[@]}"; do
    cache="$work/cache-$lang-$run"
    measure "$lang" "$cache" "$work/$lang.first"
    measure "$lang" "$cache" "$work/$lang.second"
  done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '| language | component | first render (empty cache) | second render (cache) | peak RSS first / second |\n'
printf '|---|---:|---:|---:|---:|\n'
for lang in "${languages[@]}"; do
  size=$(stat -c %s "$work/cold-$lang/cold-$lang.wasm")
  first=$(cut -d' ' -f1 "$work/$lang.first" | median)
  second=$(cut -d' ' -f1 "$work/$lang.second" | median)
  rss_first=$(cut -d' ' -f2 "$work/$lang.first" | median)
  rss_second=$(cut -d' ' -f2 "$work/$lang.second" | median)
  printf '| %s | %.1f MiB | %.2f s | %.2f s | %d / %d MB |\n' "$lang" \
    "$(awk "BEGIN { print $size / 1048576 }")" "$first" "$second" \
    "$((rss_first / 1000))" "$((rss_second / 1000))"
done
