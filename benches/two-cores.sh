#!/usr/bin/env bash
# What a second core gives, against what -j 2 takes of it (docs/performance.md).
#
# `-j 2` is at best as fast as two independent processes sharing the machine: on a virtual
# machine the two cores may not both run at full speed at once. Each round measures, in a row:
#   spin alone   one busy loop of the shell's own arithmetic (no memory, no system calls);
#   spin pair    two of them at once;
#   opm alone    `opm mod build MODULE -j 1`;
#   opm pair     two of those at once;
#   opm halves   two processes at once, `-j 1`, each rendering half of MODULE's components:
#                the same work as `opm alone` split as well as it can be, nothing shared, which
#                is the most any -j 2 could make of the second core;
#   opm -j 2     `opm mod build MODULE -j 2`;
# and prints, per round and as medians, the throughput two processes get over one
# (2 × alone / pair) for the loop and for opm, the speed-up of the halves (alone / halves) and
# that of -j 2 (alone / -j 2).
#
#   OPM=target/release/opm MODULE=/tmp/e2e/n10000/module.yaml ROUNDS=8 benches/two-cores.sh
#
# MODULE is a module `benches/e2e.sh` generated (its WORK/nN/module.yaml: its components are the
# last top-level key, each starting at a line indented by two spaces); set OPM_CACHE_DIR to the
# warm cache e2e.sh made beside it (WORK/cache-warm) to measure warm renders.
set -euo pipefail

opm=${OPM:?set OPM to the opm binary}
module=${MODULE:?set MODULE to a module.yaml, such as one benches/e2e.sh generated}
rounds=${ROUNDS:-8}
spins=${SPINS:-1500000}

now() { date +%s%N; }
spin() { local i; for ((i = 0; i < spins; i++)); do :; done; }
render() { "$opm" mod build "$module" -j "$1" >/dev/null; }

# MODULE's two halves: everything but its components in both, the first half of the components
# in one and the rest in the other. awk reads MODULE twice: once to count the components (each
# starts at a line indented by two spaces), once to write the halves.
halves=$(mktemp -d)
trap 'rm -rf "$halves"' EXIT
mkdir "$halves/1" "$halves/2"
awk -v out="$halves" '
  FNR == 1 { pass++; on = 0; n = 0 }
  /^[^ ]/ { on = /^components:/ }
  on && /^  [^ #]/ { n++ }
  pass == 1 { count = n; next }
  !on || n <= int(count / 2) { print > (out "/1/module.yaml") }
  !on || n == 0 || n > int(count / 2) { print > (out "/2/module.yaml") }
' "$module" "$module"
halves() {
  "$opm" mod build "$halves/1/module.yaml" -j 1 >/dev/null &
  "$opm" mod build "$halves/2/module.yaml" -j 1 >/dev/null
  wait
}
# Nanoseconds `$@` takes.
timed() {
  local start
  start=$(now)
  "$@"
  echo $(($(now) - start))
}
pair() {
  "$@" &
  "$@"
  wait
}

render 1 # warms the cache and the page cache
printf '| round | spin: 2 × alone / pair | opm: 2 × alone / pair | opm: alone / halves | opm: -j 1 / -j 2 |\n'
printf '|---:|---:|---:|---:|---:|\n'
ratios=()
for ((round = 1; round <= rounds; round++)); do
  spin_alone=$(timed spin)
  spin_pair=$(timed pair spin)
  opm_alone=$(timed render 1)
  opm_pair=$(timed pair render 1)
  opm_halves=$(timed halves)
  opm_j2=$(timed render 2)
  row=$(awk -v sa="$spin_alone" -v sp="$spin_pair" -v oa="$opm_alone" -v op="$opm_pair" \
    -v oh="$opm_halves" -v j2="$opm_j2" \
    'BEGIN { printf "%.2f %.2f %.2f %.2f", 2 * sa / sp, 2 * oa / op, oa / oh, oa / j2 }')
  ratios+=("$row")
  read -r spin_ratio opm_ratio halves_ratio speedup <<<"$row"
  printf '| %d | %s | %s | %s | %s |\n' "$round" "$spin_ratio" "$opm_ratio" "$halves_ratio" "$speedup"
done
printf '%s\n' "${ratios[@]}" | awk '
  { for (c = 1; c <= 4; c++) v[c, NR] = $c }
  END {
    printf "| median |"
    for (c = 1; c <= 4; c++) {
      n = 0
      for (r = 1; r <= NR; r++) s[++n] = v[c, r]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
      m = (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
      printf " %.2f |", m
    }
    printf "\n"
  }'
