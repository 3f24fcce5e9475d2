#!/bin/bash
# Usage: includes_layered.sh SOURCE_DIR — daemon/'s folders include one another in one direction
# only: the joints at the top of daemon/ → server/ and http/ → mux/ → control/ → io/, and systemd/ →
# control/ (docs/ARCHITECTURE.md). A file may include its own folder and any folder below it;
# an include that climbs fails with the file and the line.
set -u
root=$1
status=0

# A folder's rank: it may include folders of a lower rank (and its own).
rank() {
    case $1 in
        io | sandbox) echo 0 ;;
        control) echo 1 ;;
        mux | systemd) echo 2 ;;
        server | http) echo 3 ;;
        top) echo 4 ;;
        *) echo "FAIL: daemon/$1/ is not a known folder: give it a rank here and in docs/ARCHITECTURE.md" >&2; echo 9 ;;
    esac
}

folder_of() {  # daemon/mux/router.h → mux; daemon/daemon.h → top
    local rest=${1#daemon/}
    if [[ $rest == */* ]]; then echo "${rest%%/*}"; else echo top; fi
}

cd "$root" || exit 1
files=$(find daemon -type f \( -name '*.h' -o -name '*.cpp' \) | sort)
if [[ $(wc -l <<<"$files") -lt 40 ]]; then
    echo "FAIL: found too few daemon sources under $root (is it the source directory?)"
    exit 1
fi
for file in $files; do
    from=$(folder_of "$file")
    while IFS=: read -r line include; do
        [[ -n $include ]] || continue
        to=$(folder_of "$include")
        [[ $to == "$from" ]] && continue
        if (($(rank "$to") >= $(rank "$from"))); then
            echo "FAIL: $file:$line includes $include: daemon/$from may not include daemon/$to"
            status=1
        fi
    done < <(grep -no '#include "daemon/[a-z_/]*\.h"' "$file" | sed 's/#include "\(.*\)"/\1/')
done
exit $status
