#!/usr/bin/env bash
# Runs every loom model against the real code — the STM's, and the engine's (sync seam, TVHT,
# GVT buffer, the warp entities' rollback protocol, the island graph, the hand-off of group
# changes: tests/engine_*.rs) — then every negative control (the same model against a
# deliberately broken STM or engine), and checks that each control fails with its model's own
# assertion message (or loom's deadlock report). Exits non-zero if a model fails or a control
# passes (or fails for another reason). Each cfg combination builds in its own target dir:
#   target/loom                      all models (STM and engine)
#   target/loom-broken-<stm variant> one per STM control (`--cfg timewarp_stm_broken=...`,
#                                    without the engine: `--no-default-features`)
#   target/loom-broken-engine        every engine control (`--cfg timewarp_broken`; the
#                                    variant is chosen per run by TIMEWARP_BROKEN=<name>, so
#                                    each control still breaks exactly one thing)
# The engine models state their own preemption bounds (LOOM_MAX_PREEMPTIONS below applies to
# the STM's models only).
#
#   loom-tests/run-models.sh            # from the workspace root (or anywhere)
#   LOOM_MAX_PREEMPTIONS=2 loom-tests/run-models.sh   # quicker, weaker
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TARGET_BASE=${LOOM_TARGET_BASE:-$ROOT/target}
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
status=0
script_start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== loom models (release; STM models at LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS, engine models at their own bounds)"
start=$(date +%s)
if CARGO_TARGET_DIR="$TARGET_BASE/loom" RUSTFLAGS="--cfg loom" \
    cargo test -p timewarp-loom-tests --release -- --nocapture --test-threads 1 >"$log" 2>&1; then
    grep -oE "loom model [a-z_]+: [0-9]+ executions in [0-9.]+ s( \(preemption bound [a-z0-9]+\))?|[a-z_]+ outcomes: .*" "$log" | sed "s/^/   /"
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
        cargo test -p timewarp-loom-tests --release --no-default-features --test "$test" \
        -- --nocapture >"$log" 2>&1
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

# The engine's controls: one build with `--cfg timewarp_broken`; TIMEWARP_BROKEN picks the
# broken variant per run (src/sync/mod.rs, `broken`).
# control: variant | test target | test name | message the model must fail with
engine_controls=(
    "unsorted_locks|engine_sections|three_lock_sections_never_deadlock|deadlock; threads"
    "unguarded_tvht|engine_tvht|tvht_write_write_locks|TVHT WRITES REPORTED THE CONTACT 0 TIMES"
    "unguarded_tvht|engine_tvht|tvht_write_write_stm|TVHT WRITES REPORTED THE CONTACT 0 TIMES"
    "unguarded_tvht|engine_tvht|tvht_sleep_write_locks|TVHT SLEEP AND WRITE REPORTED THE CONTACT 0 TIMES"
    "unguarded_tvht|engine_tvht|tvht_sleep_write_stm|TVHT SLEEP AND WRITE REPORTED THE CONTACT 0 TIMES"
    "unguarded_tvht|engine_tvht|tvht_write_delete_locks|TVHT DELETE LEFT THE WRONG ENTRIES"
    "unguarded_tvht|engine_tvht|tvht_write_delete_stm|TVHT DELETE LEFT THE WRONG ENTRIES"
    "unguarded_tvht|engine_tvht|tvht_wake_delete_locks|TVHT CONTACT GIVEN BACK 2 TIMES"
    "unguarded_tvht|engine_tvht|tvht_wake_delete_stm|TVHT CONTACT GIVEN BACK 2 TIMES"
    "gvt_count_check_outside|engine_gvt|gvt_records_and_rollbacks_locks|GVT COMMIT BROKEN"
    "gvt_count_check_outside|engine_gvt|gvt_records_and_rollbacks_stm|GVT COMMIT BROKEN"
    "gvt_commit_trusts_count|engine_gvt|gvt_records_and_rollbacks_locks|GVT COMMIT BROKEN"
    "gvt_commit_trusts_count|engine_gvt|gvt_records_and_rollbacks_stm|GVT COMMIT BROKEN"
    "gvt_commit_trusts_count|engine_gvt|gvt_records_and_rollbacks_blocks_locks|GVT COMMIT BROKEN"
    "gvt_count_check_outside|engine_gvt|gvt_records_and_rollbacks_blocks_stm|GVT COMMIT BROKEN"
    "gvt_commit_trusts_count|engine_gvt|gvt_records_and_rollbacks_chunk_per_body_locks|GVT COMMIT BROKEN"
    "gvt_count_check_outside|engine_gvt|gvt_records_and_rollbacks_chunk_per_body_stm|GVT COMMIT BROKEN"
    "record_before_ack|engine_rollback|rollback_two_entities_locks|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "record_before_ack|engine_rollback|rollback_two_entities_stm|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "record_before_ack|engine_rollback|rollback_three_entities_stm|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "unguarded_groups|engine_groups|groups_fuse_split_rollback_locks|ISLAND GRAPH BROKEN"
    "unguarded_groups|engine_groups|groups_fuse_split_rollback_stm|ISLAND GRAPH BROKEN"
    "no_announcement_recheck|engine_announcements|announcements_are_made_once|ANNOUNCEMENT LOST OR MADE TWICE"
)
broken_env=(env CARGO_TARGET_DIR="$TARGET_BASE/loom-broken-engine"
    RUSTFLAGS="--cfg loom --cfg timewarp_broken")
echo "== building the engine's negative controls (--cfg timewarp_broken)"
start=$(date +%s)
if ! "${broken_env[@]}" cargo test -p timewarp-loom-tests --release --no-run >"$log" 2>&1; then
    grep -E "^error|^warning" "$log" | head -20
    echo "FAIL: the --cfg timewarp_broken build failed"
    status=1
else
    echo "   built in $(( $(date +%s) - start )) s"
    for c in "${engine_controls[@]}"; do
        IFS='|' read -r broken test name msg <<<"$c"
        echo "== negative control: $test::$name with TIMEWARP_BROKEN=$broken"
        start=$(date +%s)
        TIMEWARP_BROKEN=$broken "${broken_env[@]}" cargo test -p timewarp-loom-tests --release \
            --test "$test" -- --exact "$name" --nocapture >"$log" 2>&1
        rc=$?
        took=$(( $(date +%s) - start ))
        if [ $rc -eq 0 ]; then
            echo "FAIL: control passed: loom did not catch $broken ($took s)"
            status=1
        elif grep -q "1 failed" "$log" && grep -qF "$msg" "$log"; then
            echo "   caught as expected ($took s): $(grep -m1 -F "$msg" "$log" | cut -c1-140)"
        else
            grep -E "panicked|error|deadlock" "$log" | head -10
            echo "FAIL: control failed, but not with the model's assertion ($took s)"
            status=1
        fi
    done
fi

echo "== run-models.sh took $(( $(date +%s) - script_start )) s"
if [ $status -eq 0 ]; then
    echo "== all loom models pass and all negative controls are caught"
else
    echo "== FAILURES (see above)"
fi
exit $status
