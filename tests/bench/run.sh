#!/usr/bin/env bash
# The benchmarks of docs/PERFORMANCE.md: `./dev bench` runs this (after installing the build's
# Debian packages). It installs what else it needs (valgrind, iproute2; the pinned npm packages
# of tests/bench/peers/ with `npm ci`), builds optimised binaries in build-bench/, takes every
# figure side by side with the minimal relay, and prints a report in Markdown.
#
#   ./dev bench [--quick] [--no-peers] [--no-lazy] [--no-http] [--no-callgrind] [--update-doc]
#
#   --quick         fewer rounds and calls (about 5 minutes instead of about 15)
#   --no-peers      skip figures 5 and 6 (node, npm)
#   --no-lazy       skip figure 7, lazy servers (node, npm)
#   --no-http       skip figure 8, the HTTP front door's added latency (node, npm)
#   --no-callgrind  skip the instruction counts
#   --update-doc    also put the report into docs/PERFORMANCE.md (between its bench markers)
#
# Results (JSON and the report) go to build-bench/bench-results/. Nothing here judges timings:
# the exit status only says whether every measurement could be taken.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${BENCH_BUILD_DIR:-build-bench}
JOBS=${JOBS:-2}

profile=()
peers=1
lazy=1
http=1
callgrind=1
update_doc=0
for arg in "$@"; do
  case "$arg" in
    --quick) profile=(--quick) ;;
    --no-peers) peers=0 ;;
    --no-lazy) lazy=0 ;;
    --no-http) http=0 ;;
    --no-callgrind) callgrind=0 ;;
    --update-doc) update_doc=1 ;;
    *) echo "usage: ./dev bench [--quick] [--no-peers] [--no-lazy] [--no-http] [--no-callgrind] [--update-doc]" >&2; exit 2 ;;
  esac
done

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

note() { echo "bench: $*" >&2; }

# Debian packages the benchmarks need besides the build's: valgrind (instruction counts) and
# iproute2 (`ip netns`, the private network namespace the npm proxies run in).
EXTRA_PACKAGES=(valgrind iproute2 procps)
missing=()
for pkg in "${EXTRA_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  note "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Optimised, with debug info so profiles name functions.
note "building in $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCPD_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target mcpd mcpctl mcpd-demo-server bench-relay mcpd-bench

stamp=$(date -u +%Y%m%d-%H%M%S)
RESULTS="$ROOT/$BUILD_DIR/bench-results/$stamp"
mkdir -p "$RESULTS"
command_line="./dev bench${*:+ $*}"

core_args=(--bin-dir "$BUILD_DIR/bin" --out "$RESULTS/core.json" "${profile[@]}")
if [ "$callgrind" -eq 0 ]; then core_args+=(--only latency,throughput,http,large,scale,sandbox); fi
status=0
note "figures 1-5 and 2b (mcpd-bench)"
"$BUILD_DIR/bin/mcpd-bench" "${core_args[@]}" || status=1

peers_json=()
npm_ready=0
if [ "$peers" -eq 1 ] || [ "$lazy" -eq 1 ] || [ "$http" -eq 1 ]; then
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    note "node/npm not installed: figures 5 to 8 skipped"
  else
    # The npm project next to its node_modules in the build directory; the source tree stays clean.
    PEERS="$ROOT/$BUILD_DIR/bench-peers"
    mkdir -p "$PEERS"
    cp tests/bench/peers/package.json tests/bench/peers/package-lock.json tests/bench/peers/.npmrc \
      tests/bench/peers/*.mjs "$PEERS/"
    if [ ! -d "$PEERS/node_modules" ] || ! cmp -s "$PEERS/package-lock.json" "$PEERS/node_modules/.bench-lock"; then
      note "npm ci (pinned versions of tests/bench/peers/package-lock.json)"
      (cd "$PEERS" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
      cp "$PEERS/package-lock.json" "$PEERS/node_modules/.bench-lock"
    fi
    npm_ready=1
  fi
fi

# supergateway listens on every address: figures 6 and 8 run in a network namespace of their
# own with only loopback up, deleted at the end.
netns=""
run_in_ns=()
isolated=()
if [ "$npm_ready" -eq 1 ] && { [ "$peers" -eq 1 ] || [ "$http" -eq 1 ]; }; then
  if as_root ip netns add "mcpd-bench-$$" 2>/dev/null; then
    netns="mcpd-bench-$$"
    trap 'as_root ip netns delete "$netns" 2>/dev/null || true' EXIT
    as_root ip netns exec "$netns" ip link set lo up
    run_in_ns=(as_root ip netns exec "$netns")
    isolated=(--isolated)
  else
    note "cannot create a network namespace: supergateway is left out"
  fi
fi

if [ "$peers" -eq 1 ] && [ "$npm_ready" -eq 1 ]; then
  note "figures 5 and 6 (node $(node --version))"
  # The latency once more with every process on the last CPU, as figure 1 is taken.
  last_cpu=$(($(nproc) - 1))
  (cd "$PEERS" && "${run_in_ns[@]}" taskset -c "$last_cpu" node peers.mjs --bin-dir "$ROOT/$BUILD_DIR/bin" \
    --only peers_latency --pinned --out "$RESULTS/peers-pinned.json" "${isolated[@]}" "${profile[@]}") || status=1
  (cd "$PEERS" && "${run_in_ns[@]}" node peers.mjs --bin-dir "$ROOT/$BUILD_DIR/bin" \
    --out "$RESULTS/peers.json" "${isolated[@]}" "${profile[@]}") || status=1
  for f in "$RESULTS/peers.json" "$RESULTS/peers-pinned.json"; do
    if [ -f "$f" ]; then peers_json+=("$f"); fi
  done
fi

if [ "$lazy" -eq 1 ] && [ "$npm_ready" -eq 1 ]; then
  # mcpd's own socket and a private cache directory per set-up; no network: no namespace needed.
  note "figure 7, lazy servers (node $(node --version))"
  (cd "$PEERS" && node lazy.mjs --bin-dir "$ROOT/$BUILD_DIR/bin" --out "$RESULTS/lazy.json" "${profile[@]}") || status=1
  if [ -f "$RESULTS/lazy.json" ]; then peers_json+=("$RESULTS/lazy.json"); fi
fi

if [ "$http" -eq 1 ] && [ "$npm_ready" -eq 1 ]; then
  note "figure 8, the HTTP front door (node $(node --version))"
  (cd "$PEERS" && "${run_in_ns[@]}" node http.mjs --bin-dir "$ROOT/$BUILD_DIR/bin" \
    --out "$RESULTS/http.json" "${isolated[@]}" "${profile[@]}") || status=1
  if [ -f "$RESULTS/http.json" ]; then peers_json+=("$RESULTS/http.json"); fi
fi

if [ -n "$netns" ]; then
  as_root ip netns delete "$netns"
  trap - EXIT
fi

if command -v node >/dev/null 2>&1; then
  node tests/bench/report.mjs --command "$command_line" "$RESULTS/core.json" "${peers_json[@]}" \
    >"$RESULTS/report.md"
  cat "$RESULTS/report.md"
  if [ "$update_doc" -eq 1 ]; then
    node tests/bench/report.mjs --update docs/PERFORMANCE.md "$RESULTS/report.md"
    note "docs/PERFORMANCE.md updated"
  fi
else
  note "node not installed: no report; the figures are in $RESULTS/*.json"
fi
note "results in $RESULTS"
exit "$status"
