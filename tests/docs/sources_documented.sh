#!/bin/bash
# Usage: sources_documented.sh SOURCE_DIR — every source file of common/, config/, daemon/ and
# ctl/ must be named in docs/ARCHITECTURE.md, by its module name (`router`, `cmd_logs`) or its
# file name, so the page stays a complete map of the code. The matching is bash's own (no
# process per file), so that the check costs a fraction of a second however the code grows.
set -u
root=$1
page=$root/docs/ARCHITECTURE.md
status=0

text=$(<"$page") || exit 1
mapfile -t sources < <(cd "$root" &&
    find common config daemon ctl -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) | sort)
if ((${#sources[@]} < 50)); then
    echo "FAIL: found too few source files under $root (is it the source directory?)"
    exit 1
fi

for file in "${sources[@]}"; do
    base=${file##*/}
    module=${base%.*}
    # Named as `module` (in backticks, as the page names modules) or by its file name, not as a
    # part of a longer name.
    [[ $text == *"\`${module}\`"* ]] && continue
    name_pattern="(^|[^A-Za-z0-9_])${base//./\\.}([^A-Za-z0-9_]|$)"
    [[ $text =~ $name_pattern ]] && continue
    echo "FAIL: $file is not named in docs/ARCHITECTURE.md"
    status=1
done
exit $status
