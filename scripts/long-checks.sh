#!/usr/bin/env bash
# The long checks: every ignored test of the workspace (`cargo test ... -- --ignored --list`),
# one at a time, each alone on the machine as far as this script goes (the memory checks
# measure the process), in release with both guards compiled in. The README's status lines say
# which claims rest on them and when this last passed. Nothing is hard-coded: a test marked
# `#[ignore]` anywhere in the workspace is run here.
#
#   scripts/long-checks.sh                       # all of them (about 5 minutes on 2 cores
#                                                # since spans; bouncing_2000 about 2 of them)
#   scripts/long-checks.sh --skip bouncing_2000  # all but the tests whose name contains it
#   scripts/long-checks.sh --list                # what would run
#
# Each test's output goes to $LONG_CHECKS_OUT/NAME.log (default target/long-checks). Exits
# non-zero if a test fails (a skipped test is said, and does not count as passed).
set -u
cd "$(dirname "$0")/.."
out=${LONG_CHECKS_OUT:-target/long-checks}
skips=()
list_only=0
while [ $# -gt 0 ]; do
    case $1 in
        --skip)
            [ $# -ge 2 ] || { echo "error: --skip needs a name" >&2; exit 2; }
            skips+=("$2")
            shift 2
            ;;
        --list) list_only=1; shift ;;
        *) echo "error: unknown argument $1 (usage: $0 [--skip NAME]... [--list])" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
cargo_test=(cargo test --workspace --release --all-features --locked)
script_start=$(date +%s)

echo "== building (${cargo_test[*]} --no-run)"
if ! "${cargo_test[@]}" --no-run >"$out/build.log" 2>&1; then
    grep -E "^error" "$out/build.log" | head -20
    echo "FAIL: the build failed (see $out/build.log)"
    exit 1
fi
tests=$("${cargo_test[@]}" -- --ignored --list 2>/dev/null | sed -n 's/: test$//p')
if [ -z "$tests" ]; then
    echo "FAIL: no ignored test found"
    exit 1
fi
echo "== $(echo "$tests" | wc -l) ignored tests:"
echo "$tests" | sed 's/^/   /'
[ $list_only -eq 1 ] && exit 0

status=0
passed=0
failed=""
skipped=""
for t in $tests; do
    skip=0
    for s in "${skips[@]+"${skips[@]}"}"; do
        [[ $t == *"$s"* ]] && skip=1
    done
    if [ $skip -eq 1 ]; then
        echo "== SKIPPED $t"
        skipped+=" $t"
        continue
    fi
    start=$(date +%s)
    "${cargo_test[@]}" -- --ignored --exact "$t" --nocapture --test-threads 1 >"$out/$t.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    if [ $rc -eq 0 ] && grep -q "test result: ok\. 1 passed" "$out/$t.log"; then
        echo "== passed  $t ($took s)"
        passed=$((passed + 1))
    else
        grep -E -A2 "panicked|^error" "$out/$t.log" | head -8 | sed 's/^/   /'
        echo "== FAILED  $t ($took s; see $out/$t.log)"
        failed+=" $t"
        status=1
    fi
done

echo "== long checks took $(( $(date +%s) - script_start )) s; $passed passed${failed:+; failed:$failed}${skipped:+; skipped:$skipped}"
echo "== at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)'), $(date -u +%Y-%m-%d)"
exit $status
