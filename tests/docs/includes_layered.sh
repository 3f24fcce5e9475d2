#!/bin/bash
# Usage: includes_layered.sh SOURCE_DIR — daemon/'s folders include one another in one direction
# only: the joints at the top of daemon/ → server/ and http/ → mux/ → control/ → io/, and systemd/ →
# control/ (docs/ARCHITECTURE.md). A file may include its own folder and any folder below it;
# an include that climbs fails with the file and the line. One grep reads every include; the
# rest is bash's own, so the check stays quick however many files there are.
set -u
root=$1
status=0

# A folder's rank, in $rank: it may include folders of a lower rank (and its own).
rank_of() {
    case $1 in
        io | sandbox) rank=0 ;;
        control) rank=1 ;;
        mux | systemd) rank=2 ;;
        server | http) rank=3 ;;
        top) rank=4 ;;
        *) echo "FAIL: daemon/$1/ is not a known folder: give it a rank here and in docs/ARCHITECTURE.md" >&2; rank=9 ;;
    esac
}

folder_of() {  # daemon/mux/router.h → mux; daemon/daemon.h → top; in $folder
    local rest=${1#daemon/}
    if [[ $rest == */* ]]; then folder=${rest%%/*}; else folder=top; fi
}

cd "$root" || exit 1
mapfile -t files < <(find daemon -type f \( -name '*.h' -o -name '*.cpp' \) | sort)
if ((${#files[@]} < 40)); then
    echo "FAIL: found too few daemon sources under $root (is it the source directory?)"
    exit 1
fi
include_pattern='^([^:]+):([0-9]+):#include "(daemon/[a-z_/]*\.h)"$'
while IFS= read -r found; do
    [[ $found =~ $include_pattern ]] || continue
    file=${BASH_REMATCH[1]} line=${BASH_REMATCH[2]} include=${BASH_REMATCH[3]}
    folder_of "$file"
    from=$folder
    folder_of "$include"
    to=$folder
    [[ $to == "$from" ]] && continue
    rank_of "$to"
    to_rank=$rank
    rank_of "$from"
    from_rank=$rank
    if ((to_rank >= from_rank)); then
        echo "FAIL: $file:$line includes $include: daemon/$from may not include daemon/$to"
        status=1
    fi
done < <(grep -Hno '#include "daemon/[a-z_/]*\.h"' "${files[@]}")
exit $status
