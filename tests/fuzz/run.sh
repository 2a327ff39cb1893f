#!/usr/bin/env bash
# Builds the fuzz targets, replays every committed regression input, writes the seed corpora
# and runs each target for SECONDS (default 60); with SECONDS 0, replays the regression inputs
# only (what CI runs). Installs what a fresh machine lacks: a nightly toolchain (cargo-fuzz needs
# one) and cargo-fuzz. The targets link opm-core alone, which embeds no provider: the seeds of
# the bundle and component targets come from the `opm` binary's embedded bundle, exported by a
# build of it. See tests/README.md, "Fuzzing".
#
#   tests/fuzz/run.sh [SECONDS]
#
# Targets run OPM_FUZZ_JOBS at a time (default: the number of cores). New corpus entries stay in
# tests/fuzz/corpus/<target>/, crashes go to tests/fuzz/artifacts/<target>/, and each target's
# libFuzzer output to tests/fuzz/artifacts/<target>.log.
set -euo pipefail

seconds=${1:-60}
toolchain=${OPM_FUZZ_TOOLCHAIN:-nightly}
cargo_fuzz_version=0.13.2
targets=(module manifest bundle component output registry cel patch layout)
# No sanitizer: the targets run safe Rust over untrusted bytes, where a bug shows as a panic,
# an overflow (debug assertions are on) or a runaway allocation, all of which libFuzzer catches
# without one; leaving AddressSanitizer out makes the build and every execution faster.
# Sixteen codegen units instead of cargo-fuzz's one: the build takes 327 s instead of 440 on two
# cores, and the targets run about a quarter slower (module: 472 executions a second).
build_flags=(--fuzz-dir tests/fuzz --sanitizer none --debug-assertions --codegen-units 16)

fuzz_dir=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$fuzz_dir/../.." && pwd)
cd "$repo"

if ! rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
  rustup toolchain install "$toolchain" --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked
fi

cargo "+$toolchain" fuzz build "${build_flags[@]}"
host=$(rustup run "$toolchain" rustc -vV | sed -n 's/^host: //p')
bin_dir=$fuzz_dir/target/$host/release

# The committed crashes first: each must now run clean.
for target in "${targets[@]}"; do
  inputs=("$fuzz_dir/regressions/$target"/*)
  [[ -e ${inputs[0]} ]] || continue
  echo "replaying ${#inputs[@]} regression input(s) of $target"
  if ! output=$("$bin_dir/$target" "${inputs[@]}" 2>&1); then
    echo "$output"
    echo "$target fails on a committed regression input" >&2
    exit 1
  fi
done

((seconds > 0)) || exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --quiet -p opm-runtime --bin opm
"$repo/target/debug/opm" provider export kubernetes -o "$work/kubernetes.opmb" >/dev/null
"$bin_dir/seeds" "$repo" "$fuzz_dir/corpus" "$work/kubernetes.opmb"

fuzz() {
  local target=$1 dict=()
  case $target in module | manifest) dict=(-dict="$fuzz_dir/yaml.dict") ;; esac
  mkdir -p "$fuzz_dir/artifacts/$target"
  "$bin_dir/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$fuzz_dir/artifacts/$target/" "${dict[@]}" \
    "$fuzz_dir/corpus/$target" >"$fuzz_dir/artifacts/$target.log" 2>&1
}

jobs=${OPM_FUZZ_JOBS:-$(nproc)}
status_dir=$work/status
mkdir "$status_dir"
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  echo "fuzzing $target for ${seconds}s"
  (
    status=0
    fuzz "$target" || status=$?
    echo "$status" >"$status_dir/$target"
  ) &
done
wait

failed=0
for target in "${targets[@]}"; do
  log=$fuzz_dir/artifacts/$target.log
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  if [[ $(cat "$status_dir/$target") == 0 ]]; then
    echo "$target: ${runs:-?} runs, ${rate:-?} exec/s, no crash"
  else
    failed=1
    echo "$target: FAILED; the last lines of $log:"
    tail -n 40 "$log"
    echo "the crashing input is in $fuzz_dir/artifacts/$target/; see tests/README.md, \"Fuzzing\""
  fi
done
exit "$failed"
