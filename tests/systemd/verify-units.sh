#!/bin/sh
# Offline checks of the systemd units and the sysusers.d entry in systemd/.
#
#   verify-units.sh SOURCE_DIR MCPD_BINARY
#
# systemd-analyze verify only warns about unknown or misspelt keys (exit status 0), so any output
# on stdout or stderr is a failure, as is a non-zero exit. ExecStart must name an existing
# executable, so copies of the units point it at the freshly built mcpd.
# User=mcpd/Group=mcpd need no such account here: verify (252) does not resolve users, and the
# sysusers.d entry is applied to a scratch --root, never to this machine.
# Exit 77 (ctest skip) when systemd-analyze is not installed (Debian package: systemd).
set -u

src=${1:?usage: verify-units.sh SOURCE_DIR MCPD_BINARY}
mcpd=${2:?usage: verify-units.sh SOURCE_DIR MCPD_BINARY}

if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "systemd-analyze not installed"
    exit 77
fi
if [ ! -x "$mcpd" ]; then
    echo "FAIL: $mcpd is not an executable (build the mcpd target first)"
    exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/system" "$tmp/user" "$tmp/runtime" "$tmp/root/etc"
chmod 0700 "$tmp/runtime"

status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# The installed binary is /usr/sbin/mcpd (daemon/CMakeLists.txt: CMAKE_INSTALL_SBINDIR).
# Check that, then substitute the built binary in the copies.
mcpd_sed=$(printf '%s\n' "$mcpd" | sed 's/[\\|&]/\\&/g')
for unit in mcpd.service mcpd.socket; do
    cp "$src/systemd/$unit" "$tmp/system/$unit" || fail "missing systemd/$unit"
    cp "$src/systemd/user/$unit" "$tmp/user/$unit" || fail "missing systemd/user/$unit"
done
for dir in system user; do
    file="$tmp/$dir/mcpd.service"
    grep -q '^ExecStart=/usr/sbin/mcpd ' "$file" ||
        fail "$dir mcpd.service: ExecStart must run /usr/sbin/mcpd"
    sed -i "s|^ExecStart=/usr/sbin/mcpd |ExecStart=$mcpd_sed |" "$file"
done

# verify UNIT-DIR [--user]: runs systemd-analyze on both units, prints what it said.
verify() {
    dir=$1
    shift
    out=$(cd "$dir" && XDG_RUNTIME_DIR="$tmp/runtime" \
        systemd-analyze "$@" verify --man=no ./mcpd.socket ./mcpd.service 2>&1)
    rc=$?
    label="systemd-analyze ${*:+$* }verify ($(basename "$dir") units)"
    echo "$label: exit $rc, output:"
    [ -n "$out" ] && printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "$label exited $rc"
    [ -z "$out" ] || fail "$label printed output (unknown keys and other problems only warn)"
}
verify "$tmp/system"
verify "$tmp/user" --user

# The sysusers.d entry, applied to an empty scratch root: it must create user and group mcpd.
if command -v systemd-sysusers >/dev/null 2>&1; then
    out=$(systemd-sysusers --root="$tmp/root" "$src/systemd/mcpd.sysusers" 2>&1)
    rc=$?
    echo "systemd-sysusers --root: exit $rc, output:"
    [ -n "$out" ] && printf '%s\n' "$out"
    [ "$rc" -eq 0 ] || fail "systemd-sysusers exited $rc"
    rest=$(printf '%s\n' "$out" | grep -v -e "^Creating group 'mcpd' " -e "^Creating user 'mcpd' ")
    [ -z "$rest" ] || fail "systemd-sysusers printed unexpected output"
    grep -q '^mcpd:x:[0-9]*:[0-9]*:[^:]*:/var/lib/mcpd:' "$tmp/root/etc/passwd" 2>/dev/null ||
        fail "mcpd.sysusers did not create user mcpd with home /var/lib/mcpd"
    grep -q '^mcpd:' "$tmp/root/etc/group" 2>/dev/null ||
        fail "mcpd.sysusers did not create group mcpd"
else
    fail "systemd-analyze is installed but systemd-sysusers is not"
fi

[ "$status" -eq 0 ] && echo "OK: units and sysusers entry verify cleanly"
exit "$status"
