#!/bin/bash
# Usage: test_names_run.sh SOURCE_DIR — every Catch2 test can be run by its ctest entry: a name
# holding ';' is cut there by CMake (';' separates a list), and the entry then runs a filter
# that matches no test and passes having checked nothing.
set -u
root=$1
found=$(grep -rn --include='*.cpp' -A2 'TEST_CASE(' "$root/tests" |
    awk '/TEST_CASE\(/ { name = 1 } name && /"/ { print } /",|"\)/ { name = 0 }' |
    grep -E '"[^"]*;[^"]*"' || true)
count=$(grep -rn --include='*.cpp' 'TEST_CASE(' "$root/tests" | wc -l)
if [[ $count -lt 100 ]]; then
    echo "FAIL: found only $count test cases under $root/tests (is it the source directory?)"
    exit 1
fi
if [[ -n $found ]]; then
    echo "FAIL: test names with ';', which ctest cuts (use ',' instead):"
    echo "$found"
    exit 1
fi
echo "ok: $count test cases, none with ';' in its name"
