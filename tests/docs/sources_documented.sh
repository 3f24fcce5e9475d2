#!/bin/bash
# Usage: sources_documented.sh SOURCE_DIR — every source file of common/, config/, daemon/ and
# ctl/ must be named in docs/ARCHITECTURE.md, by its module name (`router`, `cmd_logs`) or its
# file name, so the page stays a complete map of the code.
set -u
root=$1
page=$root/docs/ARCHITECTURE.md
status=0

text=$(cat "$page") || exit 1
sources=$(cd "$root" && find common config daemon ctl -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) | sort)
if [[ $(wc -l <<<"$sources") -lt 50 ]]; then
    echo "FAIL: found too few source files under $root (is it the source directory?)"
    exit 1
fi

for file in $sources; do
    base=$(basename "$file")
    module=${base%.*}
    # Named as `module` (in backticks, as the page names modules) or by its file name.
    if grep -Fq "\`${module}\`" <<<"$text" ||
        grep -Eq "(^|[^A-Za-z0-9_])${base//./\\.}([^A-Za-z0-9_]|$)" <<<"$text"; then
        continue
    fi
    echo "FAIL: $file is not named in docs/ARCHITECTURE.md"
    status=1
done
exit $status
