#!/usr/bin/env bash
# Runs every loom model of the STM against the real code, then every negative control (the
# same model against a deliberately broken STM), and checks that each control fails with its
# model's own assertion message. Exits non-zero if a model fails or a control passes (or
# fails for another reason). Each cfg combination builds in its own target dir.
#
#   loom-tests/run-models.sh            # from the workspace root (or anywhere)
#   LOOM_MAX_PREEMPTIONS=2 loom-tests/run-models.sh   # quicker, weaker
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TARGET_BASE=${LOOM_TARGET_BASE:-$ROOT/target}
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== loom models (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS, release)"
start=$(date +%s)
if CARGO_TARGET_DIR="$TARGET_BASE/loom" RUSTFLAGS="--cfg loom" \
    cargo test -p timewarp-loom-tests --release -- --nocapture --test-threads 1 >"$log" 2>&1; then
    grep -oE "loom model [a-z_]+: [0-9]+ executions in [0-9.]+ s" "$log" | sed "s/^/   /"
    echo "   all models passed in $(( $(date +%s) - start )) s (including the build)"
else
    grep -E "^loom model|^test |panicked|error" "$log" | head -40
    echo "FAIL: a loom model failed (see above)"
    status=1
fi

# control: broken cfg value | test target | message the model's assertion must print
controls=(
    "no_commit_validation|write_skew|WRITE SKEW: non-serialisable outcome"
    "no_read_validation|transfer_audit|AUDIT SAW A TORN TOTAL"
    "no_read_validation|readonly_vs_writer|READ-ONLY TRANSACTION SAW HALF A COMMIT"
    "no_irrevocable_wait|irrevocable|IRREVOCABLE TRANSACTION SAW AN INCONSISTENT SNAPSHOT|LOST UPDATE"
    "no_extension_validation|readonly_vs_writer|TRANSACTION SAW HALF A COMMIT"
)
for c in "${controls[@]}"; do
    IFS='|' read -r broken test msg alt <<<"$c"
    pattern=$msg
    [ -n "${alt:-}" ] && pattern="$msg|$alt"
    echo "== negative control: $test against timewarp_stm_broken=\"$broken\""
    start=$(date +%s)
    CARGO_TARGET_DIR="$TARGET_BASE/loom-broken-$broken" \
        RUSTFLAGS="--cfg loom --cfg timewarp_stm_broken=\"$broken\"" \
        cargo test -p timewarp-loom-tests --release --test "$test" -- --nocapture >"$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    if [ $rc -eq 0 ]; then
        echo "FAIL: control passed: loom did not catch the broken STM ($took s)"
        status=1
    elif grep -qE "$pattern" "$log"; then
        echo "   caught as expected ($took s): $(grep -oE "$pattern" "$log" | head -1)"
    else
        grep -E "panicked|error" "$log" | head -10
        echo "FAIL: control failed, but not with the model's assertion ($took s)"
        status=1
    fi
done

if [ $status -eq 0 ]; then
    echo "== all loom models pass and all negative controls are caught"
else
    echo "== FAILURES (see above)"
fi
exit $status
