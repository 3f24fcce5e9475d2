#!/bin/bash
# Usage: package_test.sh SOURCE_DIR VERSION
#
# Builds the Debian package from a copy of SOURCE_DIR (dpkg-buildpackage -us -uc -b, without the
# package's build-time tests: see below), fails on any lintian error or warning, installs
# the package with dpkg -i, checks what it installed and that the example registry works, then
# purges it and checks that it left nothing behind. Installing needs root: as another user, dpkg
# runs through sudo. Refuses to run when a package named mcpd is installed or its files are
# already there (the purge at the end would remove them). The mcpd user that the package creates
# is kept on purge, as Debian does with every system user.
set -euo pipefail

src=${1:?usage: package_test.sh SOURCE_DIR VERSION}
version=${2:?usage: package_test.sh SOURCE_DIR VERSION}
started=$SECONDS

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

for tool in dpkg-buildpackage lintian git pkg-config; do
    command -v "$tool" >/dev/null 2>&1 ||
        fail "$tool is not installed (./dev installs what the package test needs)"
done

# The paths the package installs, for the refusal below and the checks after install and purge.
unit_dir=$(pkg-config --variable=systemdsystemunitdir systemd)
user_unit_dir=$(pkg-config --variable=systemduserunitdir systemd)
sysusers_dir=$(pkg-config --variable=sysusersdir systemd)
[ -n "$unit_dir" ] && [ -n "$user_unit_dir" ] && [ -n "$sysusers_dir" ] ||
    fail "pkg-config does not know systemd's directories (is systemd installed?)"
installed_files=(
    /usr/sbin/mcpd /usr/bin/mcpctl /usr/bin/mcpd-demo-server
    "$unit_dir/mcpd.service" "$unit_dir/mcpd.socket"
    "$user_unit_dir/mcpd.service" "$user_unit_dir/mcpd.socket"
    "$sysusers_dir/mcpd.conf"
    /usr/share/man/man8/mcpd.8.gz /usr/share/man/man1/mcpctl.1.gz
    /usr/share/man/man5/mcpd.toml.5.gz /usr/share/man/man1/mcpd-demo-server.1.gz
    /usr/share/bash-completion/completions/mcpctl
    /usr/share/doc/mcpd/copyright
    /etc/mcpd/mcpd.toml
)

status=$(dpkg-query -W -f='${db:Status-Status}' mcpd 2>/dev/null || true)
if [ -n "$status" ] && [ "$status" != not-installed ]; then
    fail "a package named mcpd is installed here (state: $status); this test installs and" \
        "purges its own build, so remove it first: dpkg --purge mcpd"
fi
for path in "${installed_files[@]}" /etc/mcpd; do
    [ ! -e "$path" ] ||
        fail "$path exists but no mcpd package is installed (an install from source?);" \
            "this test would overwrite it and its purge would delete it, so remove it first"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/mcpd-package-test.XXXXXX")
installed=
smoke_pid=
cleanup() {
    if [ -n "$smoke_pid" ]; then
        kill "$smoke_pid" 2>/dev/null || true
        wait "$smoke_pid" 2>/dev/null || true
    fi
    if [ -n "$installed" ]; then
        echo "package test: purging mcpd after a failure" >&2
        as_root dpkg --purge mcpd >/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# --- A copy of the source tree: what is committed plus what is new and not ignored, as it is
# in the working tree (so uncommitted changes are built too), without build directories.
tree=$work/mcpd
mkdir "$tree"
if git -c safe.directory='*' -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -c safe.directory='*' -C "$src" ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' file; do
            # Deleted in the working tree but still in the index: not part of this tree.
            if [ -e "$src/$file" ] || [ -L "$src/$file" ]; then printf '%s\0' "$file"; fi
        done |
        tar -C "$src" --null --no-recursion -T - -cf - | tar -C "$tree" -xf -
else
    tar -C "$src" --exclude=./.git --exclude='./build' --exclude='./build-*' \
        --exclude='./obj-*' --exclude=./Testing -cf - . | tar -C "$tree" -xf -
fi
[ -f "$tree/debian/control" ] || fail "the copy of $src has no debian/control"
echo "package test: copied $(find "$tree" -type f | wc -l) files to $tree"

# --- Build. Each output line gets a time stamp, so the time of each debhelper step is known.
# nocheck: this test runs inside the suite, which has already built and run the very tests that
# debian/rules would build and run again (unit, docs, fixture, systemd, fuzz); with nocheck the
# package builds only what it ships, in half the time. A real package build still runs them.
build_started=$SECONDS
set +e
# MCPD_STRICT_BUILD: warnings are errors and the code is built at -O3 (debian/rules), so this
# build stands in for a separate optimised build of the product in CI.
# noautodbgsym: that build has no debug information (debian/rules), so there is nothing for a
# debug symbols package to hold.
(cd "$tree" && MCPD_STRICT_BUILD=1 DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(nproc)" \
    dpkg-buildpackage -us -uc -b 2>&1) |
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHSECONDS" "$line"; done >"$work/build.log"
build_status=${PIPESTATUS[0]}
set -e
build_seconds=$((SECONDS - build_started))
# Where the time went: each debhelper step (dh prints each one indented by three spaces) lasts
# until the next one starts; steps under 5 seconds are left out.
steps=$(awk '
    function close_step(t) { if (name != "" && t - began >= 5) printf "%s %ds, ", name, t - began }
    /^[0-9]+    (dh_|debian\/rules|create-stamp)/ {
        close_step($1); name = $2; if (name == "debian/rules") name = $3; began = $1
    }
    { last = $1 }
    END { close_step(last) }
' "$work/build.log")
echo "package test: dpkg-buildpackage took ${build_seconds}s: ${steps%, }"
if [ "$build_status" -ne 0 ]; then
    echo "dpkg-buildpackage failed (exit $build_status); the last 200 lines:" >&2
    tail -n 200 "$work/build.log" | cut -d' ' -f2- >&2
    # The whole log outlives the temporary directory, next to where the test ran.
    cut -d' ' -f2- "$work/build.log" >"$PWD/package-build.log" &&
        echo "the whole build log: $PWD/package-build.log" >&2
    fail "the package does not build"
fi
grep -E '^[0-9]+ +[0-9]+% tests passed' "$work/build.log" | cut -d' ' -f2- || true

shopt -s nullglob
debs=("$work"/mcpd_"$version"_*.deb)
changes=("$work"/mcpd_"$version"_*.changes)
shopt -u nullglob
[ ${#debs[@]} -eq 1 ] || fail "expected one mcpd_${version}_*.deb in $work, found ${#debs[@]}"
[ ${#changes[@]} -eq 1 ] || fail "expected one .changes file in $work, found ${#changes[@]}"

# --- lintian: errors and warnings fail (info tags are shown, overrides are in debian/).
echo "package test: lintian $(basename "${changes[0]}")"
if ! lintian --display-info --fail-on error,warning "${changes[0]}"; then
    fail "lintian reports errors or warnings (above)"
fi

# --- Install.
installed=yes
as_root dpkg -i "${debs[0]}"

got=$(dpkg-query -W -f='${Version}' mcpd)
[ "$got" = "$version" ] || fail "installed mcpd has version $got, CMakeLists.txt says $version"
got=$(/usr/bin/mcpctl --version | head -n 1)
[[ $got == "mcpctl $version "* ]] || fail "mcpctl --version prints '$got', expected $version"

for path in "${installed_files[@]}"; do
    [ -f "$path" ] || fail "$path is not installed"
done
for binary in /usr/sbin/mcpd /usr/bin/mcpctl /usr/bin/mcpd-demo-server; do
    [ -x "$binary" ] || fail "$binary is not executable"
done
for doc in README.md ARCHITECTURE.md CONTROL.md MULTIPLEXING.md; do
    [ -f "/usr/share/doc/mcpd/$doc" ] || [ -f "/usr/share/doc/mcpd/$doc.gz" ] ||
        fail "/usr/share/doc/mcpd/$doc is not installed"
done
cmp -s "$src/config/example.toml" /etc/mcpd/mcpd.toml ||
    fail "/etc/mcpd/mcpd.toml is not config/example.toml"
dpkg-query -W -f='${Conffiles}\n' mcpd | grep -q '^ /etc/mcpd/mcpd.toml ' ||
    fail "/etc/mcpd/mcpd.toml is not a conffile of mcpd"
/usr/sbin/mcpd --check-config /etc/mcpd/mcpd.toml ||
    fail "mcpd --check-config rejects the installed /etc/mcpd/mcpd.toml"

# The postinst ran systemd-sysusers (the user may also be left from an earlier purge).
grep -q 'systemd-sysusers.*mcpd.conf' /var/lib/dpkg/info/mcpd.postinst ||
    fail "the postinst does not run systemd-sysusers for mcpd.conf"
getent passwd mcpd >/dev/null || fail "there is no user mcpd after installing"
getent group mcpd >/dev/null || fail "there is no group mcpd after installing"

# The service policy: the system socket is enabled, the system service and the user units not.
[ -L /etc/systemd/system/sockets.target.wants/mcpd.socket ] ||
    fail "mcpd.socket is not enabled"
[ ! -e /etc/systemd/system/multi-user.target.wants/mcpd.service ] ||
    fail "mcpd.service is enabled (only the socket should be)"
[ ! -e /etc/systemd/user/sockets.target.wants/mcpd.socket ] ||
    fail "the user unit mcpd.socket is enabled for every user"

# The installed registry runs: mcpd on a private socket starts the demo server from PATH.
socket=$work/smoke.sock
/usr/sbin/mcpd --config /etc/mcpd/mcpd.toml --socket "$socket" >"$work/smoke.log" 2>&1 &
smoke_pid=$!
for _ in $(seq 50); do
    [ -S "$socket" ] && break
    sleep 0.1
done
if ! /usr/bin/mcpctl --socket "$socket" restart demo --wait --timeout 20s; then
    cat "$work/smoke.log" >&2
    fail "the installed mcpd did not run the demo server of /etc/mcpd/mcpd.toml"
fi

# An upgrade in place across an upgrade of the package to a newer version: dpkg replaces
# /usr/sbin/mcpd under the running daemon, and mcpctl upgrade runs the new file under the same
# pid, the demo server's process carried on (docs/UPGRADE.md). The newer version is this
# package repacked as VERSION+upgrade1 (building the sources twice would double the test's
# time), so dpkg upgrades it as it would a newer release: the old package's prerm, then the
# new one's postinst with the old version.
newer_version="${version}+upgrade1"
newer_root=$work/newer
dpkg-deb -R "${debs[0]}" "$newer_root"
sed -i "s/^Version: .*/Version: $newer_version/" "$newer_root/DEBIAN/control"
newer_deb=$work/mcpd_${newer_version}.deb
dpkg-deb --root-owner-group -b "$newer_root" "$newer_deb" >/dev/null
server_pid() {
    /usr/bin/mcpctl --socket "$socket" status | awk '$1 == "demo" { print $3 }'
}
demo_before=$(server_pid)
[ -n "$demo_before" ] && [ "$demo_before" != - ] || fail "the demo server has no pid before the upgrade"
# An agent's session through mcpctl connect, its pipes passed to mcpd, goes on across it.
coproc AGENT { exec /usr/bin/mcpctl --socket "$socket" connect demo 2>"$work/agent.err"; }
agent_in=${AGENT[1]}
agent_out=${AGENT[0]}
agent_pid=$AGENT_PID
# Send request `$1` (JSON) and wait for the answer to id `$2`, which must hold `$3`.
agent_call() {
    local line
    printf '%s\n' "$1" >&"$agent_in"
    while IFS= read -r -t 20 line <&"$agent_out"; do
        [[ $line == *"\"id\":$2,"* ]] || continue
        [[ $line == *"$3"* ]] || fail "the agent's request $2 was answered with: $line"
        return 0
    done
    cat "$work/agent.err" "$work/smoke.log" >&2
    fail "the agent's request $2 got no answer"
}
agent_call '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"package-agent","version":"1"}}}' 1 '"serverInfo"'
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&"$agent_in"
agent_call '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"before the upgrade"}}}' 2 'before the upgrade'
as_root dpkg -i "$newer_deb" >"$work/newer.log"
grep -q "over ($version)" "$work/newer.log" ||
    fail "dpkg -i did not upgrade mcpd $version to $newer_version: $(cat "$work/newer.log")"
[ "$(dpkg-query -W -f='${Version}' mcpd)" = "$newer_version" ] ||
    fail "after dpkg -i the installed mcpd is $(dpkg-query -W -f='${Version}' mcpd), not $newer_version"
[[ $(readlink "/proc/$smoke_pid/exe") == *"(deleted)" ]] ||
    fail "dpkg -i did not replace the running /usr/sbin/mcpd (its exe is $(readlink "/proc/$smoke_pid/exe"))"
if ! /usr/bin/mcpctl --socket "$socket" upgrade --wait --timeout 20s; then
    cat "$work/smoke.log" >&2
    fail "mcpctl upgrade did not replace the running mcpd with the one of $newer_version"
fi
[ "$(readlink "/proc/$smoke_pid/exe")" = /usr/sbin/mcpd ] ||
    fail "after the upgrade mcpd runs $(readlink "/proc/$smoke_pid/exe"), not the new /usr/sbin/mcpd"
[ "$(server_pid)" = "$demo_before" ] ||
    fail "the demo server's process changed across the upgrade ($demo_before, now $(server_pid))"
agent_call '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after the upgrade"}}}' 3 'after the upgrade'
# The agent leaves: its mcpctl connect hears the session end from the new mcpd, and exits 0.
exec {agent_in}>&-
wait "$agent_pid" || fail "the agent's mcpctl connect exited with status $? after the upgrade"
/usr/bin/mcpctl --socket "$socket" restart demo --wait --timeout 20s >/dev/null ||
    fail "the upgraded mcpd does not restart the demo server"

/usr/bin/mcpctl --socket "$socket" shutdown --wait >/dev/null
wait "$smoke_pid" || fail "mcpd exited with status $? after mcpctl shutdown"
smoke_pid=

# --- Purge: nothing of the package may stay behind.
as_root dpkg --purge mcpd
installed=
status=$(dpkg-query -W -f='${db:Status-Status}' mcpd 2>/dev/null || true)
[ -z "$status" ] || [ "$status" = not-installed ] ||
    fail "mcpd is still known to dpkg after the purge (state: $status)"
for path in "${installed_files[@]}" /etc/mcpd /usr/share/doc/mcpd \
    /etc/systemd/system/sockets.target.wants/mcpd.socket; do
    [ ! -e "$path" ] && [ ! -L "$path" ] || fail "$path is still there after dpkg --purge"
done

echo "ok: the mcpd $version package builds, passes lintian, installs, upgrades in place and purges" \
    "(${build_seconds}s build, $((SECONDS - started))s in all)"
