#!/bin/sh
# mcpctl --host ssh://... against an OpenSSH server this script starts on 127.0.0.1 with a
# throwaway host key and user key, in front of an mcpd on a private socket. Needs sshd and ssh
# (openssh-server, openssh-client; ./dev installs them).
# Usage: ssh_host_test.sh BIN_DIR (holding mcpd, mcpctl and mcpd-demo-server)
set -u
bin=$(cd "${1:?usage: ssh_host_test.sh BIN_DIR}" && pwd)
dir=$(mktemp -d) || exit 1
sshd_pid=
mcpd_pid=
failures=0

cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
    if [ -n "$mcpd_pid" ]; then
        kill "$mcpd_pid" 2>/dev/null
        wait "$mcpd_pid" 2>/dev/null
    fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

sshd=$(command -v sshd || echo /usr/sbin/sshd)
if [ ! -x "$sshd" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
    echo "FAIL: sshd, ssh and ssh-keygen are needed (packages openssh-server, openssh-client)" >&2
    exit 1
fi
user=$(id -un)

# --- mcpd on a private socket with the demo server ---
sock="$dir/mcpd.sock"
cat >"$dir/mcpd.toml" <<TOML
[servers.demo]
command = "$bin/mcpd-demo-server"
args = ["--stderr-banner=remote demo up"]
autostart = true
TOML
"$bin/mcpd" --config "$dir/mcpd.toml" --socket "$sock" 2>"$dir/mcpd.log" &
mcpd_pid=$!
tries=0
until "$bin/mcpctl" --socket "$sock" status >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ] || ! kill -0 "$mcpd_pid" 2>/dev/null; then
        echo "FAIL: mcpd did not come up:" >&2
        cat "$dir/mcpd.log" >&2
        exit 1
    fi
    sleep 0.1
done

# --- sshd on 127.0.0.1, only our key, the build's mcpctl first on PATH ---
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" || exit 1
ssh-keygen -q -t ed25519 -N '' -f "$dir/user_key" || exit 1
cp "$dir/user_key.pub" "$dir/authorized_keys"
# The privilege separation directory sshd insists on when run as root.
[ "$(id -u)" -eq 0 ] && mkdir -p /run/sshd

start_sshd() {
    cat >"$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port $1
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
# The key file lives under /tmp, which StrictModes would reject.
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
AllowUsers $user
SetEnv PATH=$bin:/usr/local/bin:/usr/bin:/bin
CONF
    "$sshd" -D -e -f "$dir/sshd_config" 2>"$dir/sshd.log" &
    sshd_pid=$!
    tries=0
    while [ "$tries" -lt 50 ]; do
        grep -q "Server listening" "$dir/sshd.log" 2>/dev/null && return 0
        kill -0 "$sshd_pid" 2>/dev/null || break
        sleep 0.1
        tries=$((tries + 1))
    done
    kill "$sshd_pid" 2>/dev/null
    wait "$sshd_pid" 2>/dev/null
    sshd_pid=
    return 1
}

port=
for attempt in 1 2 3 4 5 6 7 8 9 10; do
    candidate=$((20000 + ($$ * 7 + attempt * 1009) % 40000))
    if start_sshd "$candidate"; then
        port=$candidate
        break
    fi
done
if [ -z "$port" ]; then
    echo "FAIL: sshd did not start:" >&2
    cat "$dir/sshd.log" >&2
    exit 1
fi

# How mcpctl runs ssh here: the throwaway key, no known_hosts, never a prompt.
MCPD_SSH_COMMAND="ssh -F /dev/null -i $dir/user_key -o IdentitiesOnly=yes -o BatchMode=yes \
-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
export MCPD_SSH_COMMAND
unset MCPD_SOCKET MCPD_HOST
host="ssh://$user@127.0.0.1:$port$sock"
ctl="$bin/mcpctl"

# 1. status through ssh lists the remote daemon's server.
out=$("$ctl" --host "$host" status 2>"$dir/err")
status=$?
[ "$status" -eq 0 ] || fail "status over ssh exited $status: $(cat "$dir/err")"
echo "$out" | grep -q '^demo ' || fail "status over ssh does not list demo: $out"

# 2. MCPD_HOST works like --host, and it really is that daemon (its pid).
out=$(MCPD_HOST="$host" "$ctl" --json version 2>"$dir/err")
echo "$out" | grep -q "\"pid\":$mcpd_pid[,}]" ||
    fail "version via MCPD_HOST does not show mcpd's pid $mcpd_pid: $out $(cat "$dir/err")"

# 3. --socket names the remote socket when the URL has none.
"$ctl" --host "ssh://$user@127.0.0.1:$port" --socket "$sock" status >/dev/null 2>"$dir/err" ||
    fail "--host without a path plus --socket failed: $(cat "$dir/err")"

# 4. logs come back from the remote daemon.
"$ctl" --host "$host" logs demo >"$dir/logs" 2>"$dir/err" ||
    fail "logs over ssh failed: $(cat "$dir/err")"
grep -q "remote demo up" "$dir/logs" || fail "logs over ssh lack the server's banner"

# 5. connect bridges an MCP session to the remote pooled server, replies in order. A first
# session lists the tools, as an agent does, so that the server's tools are counted by name.
printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"remote","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >"$dir/list.in"
timeout 30 "$ctl" --host "$host" connect demo <"$dir/list.in" >"$dir/list.out" 2>"$dir/err" ||
    fail "connect over ssh (tools/list) failed: $(cat "$dir/err")"
grep -q '"id":2,"result":{.*"tools"' "$dir/list.out" ||
    fail "connect over ssh: no tools/list reply: $(cat "$dir/list.out")"
printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"remote","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over ssh"}}}' \
    '{"jsonrpc":"2.0","id":3,"method":"ping"}' >"$dir/session.in"
timeout 30 "$ctl" --host "$host" connect demo <"$dir/session.in" >"$dir/session.out" 2>"$dir/err"
status=$?
[ "$status" -eq 0 ] || fail "connect over ssh exited $status: $(cat "$dir/err")"
grep -q '"id":1,"result":{.*"protocolVersion"' "$dir/session.out" ||
    fail "connect over ssh: no initialize reply: $(cat "$dir/session.out")"
grep -q '"id":2,"result":.*over ssh' "$dir/session.out" ||
    fail "connect over ssh: no echo reply: $(cat "$dir/session.out")"
grep -q '"id":3,"result":{}' "$dir/session.out" ||
    fail "connect over ssh: no ping reply: $(cat "$dir/session.out")"
[ "$(wc -l <"$dir/session.out")" -eq 3 ] ||
    fail "connect over ssh: expected exactly 3 lines: $(cat "$dir/session.out")"

# 5b. stats over ssh count that session's echo call (by name: the tools were listed).
"$ctl" --host "$host" --json stats --tools demo >"$dir/stats.json" 2>"$dir/err" ||
    fail "stats over ssh failed: $(cat "$dir/err")"
/usr/bin/python3 - "$dir/stats.json" <<'PY' || fail "stats over ssh: $(cat "$dir/stats.json")"
import json, sys
server = json.load(open(sys.argv[1]))["servers"][0]
echo = [t for t in server["tools"] if t["tool"] == "echo"]
assert server["name"] == "demo" and echo and echo[0]["requests"] == 1 and echo[0]["replies"] == 1
PY

# 5c. top over ssh: without a terminal one plain screen; in a terminal (a pane of a private
# tmux server, 80x24) the table, refreshed, until q, which exits 0.
"$ctl" --host "$host" top >"$dir/top.out" 2>"$dir/err" || fail "top over ssh in a pipe failed: $(cat "$dir/err")"
grep -q '^demo ' "$dir/top.out" || fail "top over ssh in a pipe does not show demo: $(cat "$dir/top.out")"
if ! command -v tmux >/dev/null; then
    fail "tmux is not installed (./dev installs it)"
fi
tmux_name="mcpd-remote-top-$$"
tmux_() { tmux -L "$tmux_name" -f /dev/null "$@"; }
# Wait up to 15 s for the pane to show $1; the last capture is in $screen either way.
wait_pane() {
    for _ in $(seq 150); do
        screen=$(tmux_ capture-pane -p -t top)
        case "$screen" in *"$1"*) return 0 ;; esac
        sleep 0.1
    done
    return 1
}
# tmux leaves its socket behind when its server is killed.
stop_tmux() {
    tmux_ kill-server
    rm -f "$tmux_socket"
}
tmux_ new-session -d -x 80 -y 24 -s top "'$ctl' --host '$host' top; echo \"top exited \$?\"; sleep 600" ||
    fail "tmux new-session failed"
tmux_socket=$(tmux_ display-message -p -t top '#{socket_path}')
screen=
if ! wait_pane "CALL/S" || ! wait_pane "demo"; then
    stop_tmux
    fail "top over ssh in tmux shows no table: $screen"
fi
tmux_ send-keys -t top q
wait_pane "top exited" || true
stop_tmux
case "$screen" in
    *"top exited 0"*) ;;
    *) fail "top over ssh did not exit 0 on q: $screen" ;;
esac

# 6. A remote socket nobody listens on: exit 3, said so.
"$ctl" --host "ssh://$user@127.0.0.1:$port$dir/nothing.sock" status >/dev/null 2>"$dir/err"
status=$?
[ "$status" -eq 3 ] || fail "status against a dead remote socket exited $status, expected 3"
grep -q "not running" "$dir/err" || fail "no 'not running' message: $(cat "$dir/err")"

# 7. ssh itself failing (a port where nothing listens): exit 1 and a sentence naming ssh.
"$ctl" --host "ssh://$user@127.0.0.1:1" status >/dev/null 2>"$dir/err"
status=$?
[ "$status" -eq 1 ] || fail "status through a refused ssh port exited $status, expected 1"
grep -q "ssh could not connect" "$dir/err" || fail "no ssh failure message: $(cat "$dir/err")"

# 8. A URL that is not one: a usage error.
"$ctl" --host "http://127.0.0.1" status >/dev/null 2>"$dir/err"
status=$?
[ "$status" -eq 2 ] || fail "--host http:// exited $status, expected 2"

# 9. Nothing left behind: no ssh and no remote 'mcpctl dial' still running for this test.
sleep 0.3
for pid in $(pgrep -f "mcpctl --socket '$sock' dial|mcpctl --socket '$dir/nothing.sock' dial|$dir/user_key" || true); do
    [ "$pid" = "$sshd_pid" ] && continue
    fail "left running: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)"
done

if [ "$failures" -ne 0 ]; then
    echo "sshd log:" >&2
    cat "$dir/sshd.log" >&2
    exit 1
fi
echo "ok: status, version, --socket, logs, connect, stats, top, not running, ssh failure, bad URL"
