#!/usr/bin/env bash
# What counting costs in memory: mcpd's RSS with SERVERS demo servers, before and after each
# of them has been called by TOOLS distinct tool names. None of them is a tool the server
# listed, so each server counts them all under one "unlisted" entry: made-up names cost no
# memory per name (docs/STATS.md, "Names").
#
#   tests/bench/stats_memory.sh BIN_DIR [SERVERS [TOOLS]]     (defaults: 100 servers, 50 tools)
#
# Prints mcpd's VmRSS after the servers are up with one session each, after the calls, and the
# difference per counted name. Runs on a private socket in a temporary directory and stops
# everything it started.
set -euo pipefail
bin=$(realpath "${1:?usage: stats_memory.sh BIN_DIR [SERVERS [TOOLS]]}")
servers=${2:-100}
tools=${3:-50}
dir=$(mktemp -d /tmp/mcpd-stats-memory.XXXXXX)
sock="$dir/mcpd.sock"
registry="$dir/registry.toml"
for i in $(seq 1 "$servers"); do
  printf '[servers.s%d]\ncommand = "%s/mcpd-demo-server"\n\n' "$i" "$bin" >>"$registry"
done
"$bin/mcpd" --config "$registry" --socket "$sock" 2>"$dir/mcpd.log" &
mcpd_pid=$!
cleanup() {
  kill "$mcpd_pid" 2>/dev/null || true
  wait "$mcpd_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$mcpd_pid/status"; }

# One session per server: initialize, then `calls` tools/call requests; waits for every answer.
session() {
  local name=$1 calls=$2
  {
    echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stats-memory","version":"1"}}}'
    echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    for t in $(seq 1 "$calls"); do
      printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_%d","arguments":{}}}\n' "$t" "$t"
    done
    sleep 0.2
  } | "$bin/mcpctl" --socket "$sock" connect "$name" >/dev/null
}

for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$bin/mcpctl" --socket "$sock" start --wait $(seq -f 's%g' 1 "$servers") >/dev/null
for i in $(seq 1 "$servers"); do session "s$i" 0; done
before=$(rss_kib)
for i in $(seq 1 "$servers"); do session "s$i" "$tools"; done
after=$(rss_kib)
named=$("$bin/mcpctl" --socket "$sock" --json stats --tools |
  python3 -c 'import json,sys; print(sum(len(s["tools"]) for s in json.load(sys.stdin)["servers"]))')
echo "servers: $servers, names counted: $named"
echo "mcpd VmRSS with every server up and one session each: ${before} KiB"
echo "after ${tools} distinct tools called on each:           ${after} KiB"
echo "difference: $((after - before)) KiB, $(( (after - before) * 1024 / (named > 0 ? named : 1) )) bytes per counted name"
