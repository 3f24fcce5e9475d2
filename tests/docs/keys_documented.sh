#!/bin/bash
# Usage: keys_documented.sh SOURCE_DIR — every registry key must appear in mcpd.toml(5) and
# every mcpctl command in mcpctl(1).
set -u
root=$1
toml_page=$root/docs/man/mcpd.toml.5.scd
ctl_page=$root/docs/man/mcpctl.1.scd
status=0

# In scdoc sources underscores are written escaped (\_); compare without the escapes.
toml_text=$(sed 's/\\_/_/g' "$toml_page") || exit 1
ctl_text=$(cat "$ctl_page") || exit 1

# The server keys: the {"key", reader} rows of kFields in registry_server.cpp.
server_keys=$(sed -n '/kFields\[\] = {/,/^};/p' "$root/config/registry_server.cpp" |
    sed -n 's/^[[:space:]]*{"\([a-z_]*\)",.*/\1/p')
# The [daemon] keys: the kDaemonKeys array in registry.cpp (it may span several lines).
daemon_keys=$(sed -n '/kDaemonKeys\[\] = {/,/};/p' "$root/config/registry.cpp" |
    grep -o '"[a-z_]*"' | tr -d '"')

if [[ $(wc -w <<<"$server_keys") -lt 10 ]]; then
    echo "FAIL: could not read the server keys from config/registry_server.cpp"
    status=1
fi
if [[ $(wc -w <<<"$daemon_keys") -lt 1 ]]; then
    echo "FAIL: could not read the [daemon] keys from config/registry.cpp"
    status=1
fi

for key in $server_keys $daemon_keys; do
    if ! grep -qE "(^|[^a-z_])${key}([^a-z_]|\$)" <<<"$toml_text"; then
        echo "FAIL: registry key '$key' is not documented in docs/man/mcpd.toml.5.scd"
        status=1
    fi
done

commands=0
# Every entry a ctl/cmd_*.cpp defines (a file may hold several), as ctl/CMakeLists.txt lists them.
for command in $(sed -n 's/^extern const Command cmd_\([a-z_]*\) *{.*/\1/p' "$root"/ctl/cmd_*.cpp); do
    commands=$((commands + 1))
    # Documented as a command entry: a line starting with *command* (cmd_http_token is
    # the command http-token).
    if ! grep -q "^\*${command}\*" <<<"$ctl_text" && ! grep -q "^\*${command//_/-}\*" <<<"$ctl_text"; then
        echo "FAIL: mcpctl command '$command' is not documented in docs/man/mcpctl.1.scd"
        status=1
    fi
done
if [[ $commands -eq 0 ]]; then
    echo "FAIL: no command entries found in ctl/cmd_*.cpp"
    status=1
fi

[[ $status -eq 0 ]] && echo "ok: $(wc -w <<<"$server_keys $daemon_keys") keys, $commands commands"
exit $status
