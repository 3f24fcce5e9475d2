#!/usr/bin/env bash
# Build the libFuzzer targets with clang in build-fuzz/ and run each for FUZZ_SECONDS
# (default 60) on a scratch copy of its checked-in corpus, FUZZ_PARALLEL (default 2) at a
# time. Fails if any target crashes, and says where the input that did it was saved.
#
#   FUZZ_SECONDS=300 tests/fuzz/run.sh            every target, longer
#   tests/fuzz/run.sh router                      only the named targets
#
# A crash input belongs in tests/fuzz/regressions/<target>/ once the bug is fixed: the
# fuzz_replay_<target> test of the normal build replays every file there.
set -euo pipefail

cd "$(dirname "$0")/../.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
PARALLEL=${FUZZ_PARALLEL:-2}
JOBS=${JOBS:-2}
WORK=$BUILD_DIR/fuzz-run
# Every target tests/fuzz/CMakeLists.txt defines, so that a new one is fuzzed without a change here.
read -r -a ALL_TARGETS <<<"$(sed -n 's/^set(FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)"
[ ${#ALL_TARGETS[@]} -gt 0 ] || { echo "fuzz: no set(FUZZ_TARGETS ...) in tests/fuzz/CMakeLists.txt" >&2; exit 1; }
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

echo "fuzz: building ${TARGETS[*]} in $BUILD_DIR with clang" >&2
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 ${DEBUG_INFO:--g1} -DNDEBUG" -DMCPD_WERROR=ON -DMCPD_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]/#/fuzz_}"

rm -rf "$WORK"
mkdir -p "$WORK"

# One target: its corpus copied to scratch (the checked-in one never grows), the regression
# inputs read alongside, crash inputs saved under $WORK/<target>/crashes/.
run_target() {
  local target=$1
  local dir=$WORK/$target
  mkdir -p "$dir/corpus" "$dir/crashes"
  cp -R "tests/fuzz/corpus/$target/." "$dir/corpus/"
  local inputs=("$dir/corpus")
  if [ -d "tests/fuzz/regressions/$target" ]; then inputs+=("tests/fuzz/regressions/$target"); fi
  local options=(-max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
                 -artifact_prefix="$dir/crashes/")
  if [ -f "tests/fuzz/dict/$target.dict" ]; then options+=(-dict="tests/fuzz/dict/$target.dict"); fi
  # FUZZ_SEED fixes libFuzzer's random choices (CI), so a run can be repeated exactly.
  if [ -n "${FUZZ_SEED:-}" ]; then options+=(-seed="$FUZZ_SEED"); fi
  "$BUILD_DIR/tests/fuzz/fuzz_$target" "${options[@]}" "${inputs[@]}" </dev/null >"$dir/log" 2>&1
}

declare -A pids=()
failed=()
finish_one() {
  local pid=$1 target=$2
  if wait "$pid"; then
    echo "fuzz: $target ok ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$WORK/$target/log" |
      grep -o '[0-9]*$' || echo '?') runs)" >&2
  else
    failed+=("$target")
    echo "fuzz: $target FAILED; the end of its log ($WORK/$target/log):" >&2
    tail -n 40 "$WORK/$target/log" >&2
    for crash in "$WORK/$target/crashes"/*; do
      [ -e "$crash" ] && echo "fuzz: $target crash input: $crash" >&2
    done
  fi
}

for target in "${TARGETS[@]}"; do
  while [ ${#pids[@]} -ge "$PARALLEL" ]; do
    sleep 1
    for running in "${!pids[@]}"; do
      if ! kill -0 "${pids[$running]}" 2>/dev/null; then
        finish_one "${pids[$running]}" "$running"
        unset "pids[$running]"
      fi
    done
  done
  echo "fuzz: running $target for ${SECONDS_EACH}s" >&2
  run_target "$target" &
  pids[$target]=$!
done
for running in "${!pids[@]}"; do finish_one "${pids[$running]}" "$running"; done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}; replay one with $BUILD_DIR/tests/fuzz/fuzz_<target> FILE," >&2
  echo "fuzz: fix the cause, then add the input to tests/fuzz/regressions/<target>/" >&2
  exit 1
fi
echo "fuzz: no crashes in ${TARGETS[*]}" >&2
