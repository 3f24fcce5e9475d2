#!/bin/bash
# Usage: man_pages_render.sh DIR — render every DIR/*.scd with scdoc and check the result.
# Exits 77 (skipped) when scdoc is not installed.
set -u
dir=$1
if ! command -v scdoc >/dev/null 2>&1; then
    echo "SKIP: scdoc is not installed (apt-get install scdoc), the man pages cannot be checked"
    exit 77
fi
have_man=yes
if ! command -v man >/dev/null 2>&1; then
    echo "note: man is not installed (package man-db); checking only that scdoc succeeds"
    have_man=
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
count=0
for source in "$dir"/*.scd; do
    [[ -e $source ]] || continue
    count=$((count + 1))
    page=$(basename "$source" .scd)
    out=$work/$page
    if ! scdoc <"$source" >"$out" 2>"$work/scdoc.err"; then
        echo "FAIL: scdoc rejected $source:"
        cat "$work/scdoc.err"
        status=1
        continue
    fi
    if [[ ! -s $out ]] || ! grep -q '^\.TH ' "$out"; then
        echo "FAIL: scdoc produced no roff page (.TH) from $source"
        status=1
        continue
    fi
    if [[ -n $have_man ]]; then
        warnings=$(MANWIDTH=80 man --warnings -l "$out" 2>&1 >/dev/null)
        if [[ -n $warnings ]]; then
            echo "FAIL: man reports problems in $page:"
            printf '%s\n' "$warnings"
            status=1
            continue
        fi
    fi
    echo "ok: $page"
done
if [[ $count -eq 0 ]]; then
    echo "FAIL: no .scd files in $dir"
    exit 1
fi
exit $status
