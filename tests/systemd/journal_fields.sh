#!/bin/bash
# Usage: journal_fields.sh MCPD MCPCTL DEMO_SERVER
#
# The request log under journald, read back with journalctl: mcpd runs with its stderr on a
# real systemd-journald's stream (as under a unit: JOURNAL_STREAM names it), forwards three
# calls with request_log on, and `journalctl TOOL=echo` finds them with their fields. The
# journald is private: it runs in a mount namespace of this test's own, with tmpfs over
# /run/systemd and /run/log, so the machine's journal (if any) is neither read nor written.
# Needs root, or unprivileged user namespaces (then it runs as root in one of its own).
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: journal_fields.sh MCPD MCPCTL DEMO_SERVER" >&2
    exit 2
fi
mcpd=$(realpath "$1")
mcpctl=$(realpath "$2")
demo=$(realpath "$3")
journald=/lib/systemd/systemd-journald

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

[[ -x $journald ]] || fail "$journald is missing: install the systemd package"
command -v journalctl >/dev/null || fail "journalctl is missing: install the systemd package"

if [[ ${MCPD_JOURNAL_TEST_INSIDE:-} != 1 ]]; then
    # Into a mount namespace of its own (a user namespace too when not root).
    namespace=(unshare --mount --propagation private)
    [[ $(id -u) -eq 0 ]] || namespace=(unshare --map-root-user --mount --propagation private)
    exec env MCPD_JOURNAL_TEST_INSIDE=1 "${namespace[@]}" bash "$0" "$@"
fi

work=$(mktemp -d /tmp/mcpd-journal-test.XXXXXX)
journald_pid=
mcpd_pid=
cleanup() {
    [[ -n $mcpd_pid ]] && kill "$mcpd_pid" 2>/dev/null && wait "$mcpd_pid" 2>/dev/null
    [[ -n $journald_pid ]] && kill "$journald_pid" 2>/dev/null && wait "$journald_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# A private journald: its sockets in /run/systemd/journal, its files in /run/log/journal.
mount -t tmpfs tmpfs /run/systemd 2>/dev/null || { mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd; }
mkdir -p /run/log && mount -t tmpfs tmpfs /run/log
mkdir -p /run/systemd/journal
if [[ ! -s /etc/machine-id ]]; then
    # journald names its directory after the machine id; a container may have none.
    echo 5f1c1b0e8d7a4c2e9b3a6d4f0e2c1a7b >"$work/machine-id"
    [[ -e /etc/machine-id ]] || fail "no /etc/machine-id to mount a private one over"
    mount --bind "$work/machine-id" /etc/machine-id
fi
"$journald" >"$work/journald.log" 2>&1 &
journald_pid=$!
for _ in $(seq 100); do
    [[ -S /run/systemd/journal/socket && -S /run/systemd/journal/stdout ]] && break
    sleep 0.1
done
[[ -S /run/systemd/journal/stdout ]] || fail "journald did not start: $(cat "$work/journald.log")"

cat >"$work/mcpd.toml" <<EOF
[daemon]
socket = "$work/run/mcpd.sock"
request_log = true

[servers.demo]
command = "$demo"
EOF
mkdir -m 700 "$work/run"

# As under a unit: stderr is a journald stream and JOURNAL_STREAM names it.
systemd-cat --identifier=mcpd sh -c \
    'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$0" --config "$1"' \
    "$mcpd" "$work/mcpd.toml" &
mcpd_pid=$!
for _ in $(seq 300); do
    "$mcpctl" --socket "$work/run/mcpd.sock" status demo 2>/dev/null | grep -q running && break
    sleep 0.1
done
"$mcpctl" --socket "$work/run/mcpd.sock" status demo 2>&1 | grep -q running ||
    fail "mcpd did not start the demo server: $(journalctl --directory=/run/log/journal --no-pager -t mcpd 2>&1 | tail -5)"

# Three calls through a pooled session, one of them an isError result.
{
    echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"journal-test","version":"1"}}}'
    echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"s3cret-argument"}}}'
    echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"again"}}}'
    echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"no","is_error":true}}}'
} | "$mcpctl" --socket "$work/run/mcpd.sock" connect demo >"$work/replies" ||
    fail "mcpctl connect failed: $(cat "$work/replies")"
[[ $(grep -c '"id":[234]' "$work/replies") -eq 3 ]] || fail "not every call was answered: $(cat "$work/replies")"

kill "$mcpd_pid"
wait "$mcpd_pid" 2>/dev/null || true
mcpd_pid=

# journald may take a moment to write what it received.
records=
for _ in $(seq 50); do
    records=$(journalctl --directory=/run/log/journal --no-pager --output=json TOOL=echo 2>/dev/null || true)
    [[ $(grep -c . <<<"$records") -ge 3 ]] && break
    sleep 0.1
done
echo "$records" >"$work/records"
[[ $(grep -c . <<<"$records") -eq 3 ]] || fail "journalctl TOOL=echo found $(grep -c . <<<"$records") records, not 3: $records"

/usr/bin/python3 - "$work/records" <<'EOF'
import json
import sys

records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
outcomes = sorted(r["OUTCOME"] for r in records)
assert outcomes == ["reply", "reply", "tool_error"], outcomes
for r in records:
    assert r["SERVER"] == "demo", r
    assert r["METHOD"] == "tools/call", r
    assert r["CLIENT"] == "journal-test", r
    assert r["DURATION_US"].isdigit(), r
    assert int(r["BYTES_IN"]) > 0 and int(r["BYTES_OUT"]) > 0, r
    assert r["SESSION"].isdigit(), r
    assert "s3cret-argument" not in json.dumps(r), "an argument reached the journal"
print("journal fields: 3 records, outcomes", outcomes)
EOF
