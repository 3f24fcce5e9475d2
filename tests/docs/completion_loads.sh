#!/bin/bash
# Usage: completion_loads.sh SCRIPT — the mcpctl completion loads, registers itself and
# completes command names and options.
set -u
script=$1
status=0

if ! bash -c 'source "$1" && complete -p mcpctl' _ "$script" >/dev/null; then
    echo "FAIL: sourcing $script does not register a completion for mcpctl"
    exit 1
fi

# Run the completion function for the words given, printing the candidates one per line.
# bash-completion's helpers are deliberately not loaded: the script must work without them.
complete_words() {
    bash -c '
        source "$1"; shift
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        # No daemon may answer: server names must come out empty, not hang or fail.
        export MCPD_SOCKET=/nonexistent/mcpd-docs-test.sock
        _mcpctl mcpctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}"
    ' _ "$script" "$@"
}

expect() {
    local what=$1 got=$2 word
    shift 2
    for word in "$@"; do
        if ! grep -qx -- "$word" <<<"$got"; then
            echo "FAIL: completing $what does not offer '$word'; got: $(echo $got)"
            status=1
        fi
    done
}

expect "'mcpctl st'" "$(complete_words mcpctl st)" status start stop
got=$(complete_words mcpctl st)
if grep -qx shutdown <<<"$got"; then
    echo "FAIL: completing 'mcpctl st' offers shutdown"
    status=1
fi
expect "'mcpctl --'" "$(complete_words mcpctl --)" --socket --json --help --version
expect "'mcpctl restart demo --'" "$(complete_words mcpctl restart demo --)" --wait --timeout
expect "'mcpctl logs -'" "$(complete_words mcpctl logs -)" --follow --lines
expect "'mcpctl con --'" "$(complete_words mcpctl con --)" --copy
expect "'mcpctl help re'" "$(complete_words mcpctl help re)" reload restart
expect "'mcpctl import --'" "$(complete_words mcpctl import --)" --write --registry

[[ $status -eq 0 ]] && echo "ok: the completion loads and completes"
exit $status
