#!/usr/bin/env bash
# Runs every loom model against the real code — the STM's, and the engine's (sync seam, TVHT,
# GVT buffer, the warp entities' rollback protocol, the island graph, the hand-off of group
# changes: tests/engine_*.rs) — then every negative control: one model against a deliberately
# broken STM or engine. Every model has at least one control (checked: a model without one is
# a failure), and every control is checked by one function, `check_control`: the control runs
# its model alone (`--exact`), exactly that model fails ("0 passed; 1 failed"), and its first
# panic is the assertion the control names, whose message occurs once in the models' sources
# (or loom's deadlock report, for the control that must deadlock). Exits non-zero if a model
# fails, a model has no control, or a control passes or fails for another reason.
#
# Each cfg combination builds in its own target dir:
#   target/loom                      all models (STM and engine)
#   target/loom-broken-<stm variant> one per STM variant (`--cfg timewarp_stm_broken=...`,
#                                    without the engine: `--no-default-features`)
#   target/loom-broken-engine        every engine control (`--cfg timewarp_broken`; the
#                                    variant is chosen per run by TIMEWARP_BROKEN=<name>, so
#                                    each control still breaks exactly one thing)
# The engine models state their own preemption bounds (LOOM_MAX_PREEMPTIONS below applies to
# the STM's models only).
#
#   loom-tests/run-models.sh            # from the workspace root (or anywhere)
#   LOOM_MAX_PREEMPTIONS=2 loom-tests/run-models.sh   # quicker, weaker
#   LOOM_SKIP_MODELS=1 loom-tests/run-models.sh       # the controls alone (a quick look; not CI)
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
models_env=(env CARGO_TARGET_DIR="$TARGET_BASE/loom" RUSTFLAGS="--cfg loom")
if [ "${LOOM_SKIP_MODELS:-0}" = 1 ]; then
    echo "   skipped (LOOM_SKIP_MODELS=1)"
elif "${models_env[@]}" cargo test -p timewarp-loom-tests --release -- --nocapture --test-threads 1 >"$log" 2>&1; then
    grep -oE "loom model [a-z_]+: [0-9]+ executions in [0-9.]+ s( \(preemption bound [a-z0-9]+\))?|[a-z_]+ outcomes: .*" "$log" | sed "s/^/   /"
    echo "   all models passed in $(( $(date +%s) - start )) s (including the build)"
else
    grep -E "^loom model|^test |panicked|error" "$log" | head -40
    echo "FAIL: a loom model failed (see above)"
    status=1
fi
# The models: every test of the crate (`--list` prints `name: test`).
models=$("${models_env[@]}" cargo test -p timewarp-loom-tests --release -q -- --list 2>/dev/null |
    sed -n 's/: test$//p' | sort)

# Every negative control: build | broken variant | test target | model (test name) | the start
# of the message its first panic must carry. `stm` builds with `--cfg
# timewarp_stm_broken="<variant>"`, `engine` with `--cfg timewarp_broken` and runs with
# TIMEWARP_BROKEN=<variant> (src/sync/mod.rs, `broken`).
controls=(
    "stm|no_commit_validation|write_skew|write_skew_is_impossible|WRITE SKEW: non-serialisable outcome"
    "stm|no_commit_validation|transfer_audit|concurrent_transfers_conserve_money|CONCURRENT TRANSFERS LOST AN UPDATE"
    "stm|no_read_validation|transfer_audit|audit_sees_the_exact_total|AUDIT SAW A TORN TOTAL"
    "stm|no_read_validation|readonly_vs_writer|read_only_never_sees_half_a_commit|READ-ONLY TRANSACTION SAW HALF A COMMIT"
    "stm|no_extension_validation|readonly_vs_writer|read_write_never_sees_half_a_commit|READ-WRITE TRANSACTION SAW HALF A COMMIT"
    "stm|no_irrevocable_wait|irrevocable|irrevocable_transaction_is_never_invalidated|LOST UPDATE next to an irrevocable transaction"
    "engine|unsorted_locks|engine_sections|three_lock_sections_never_deadlock|deadlock; threads"
    "engine|unguarded_sections|engine_sections|crossed_lock_sections|CROSSED SECTIONS LOST AN UPDATE"
    "engine|unguarded_sections|engine_sections|crossed_stm_sections|CROSSED SECTIONS LOST AN UPDATE"
    "engine|unguarded_tvht|engine_tvht|tvht_write_write_locks|TVHT WRITES REPORTED THE CONTACT"
    "engine|unguarded_tvht|engine_tvht|tvht_write_write_stm|TVHT WRITES REPORTED THE CONTACT"
    "engine|unguarded_tvht|engine_tvht|tvht_sleep_write_locks|TVHT SLEEP AND WRITE REPORTED THE CONTACT"
    "engine|unguarded_tvht|engine_tvht|tvht_sleep_write_stm|TVHT SLEEP AND WRITE REPORTED THE CONTACT"
    "engine|sleep_ignores_marks|engine_tvht|tvht_sleep_write_locks|TVHT SLEEP AND WRITE REPORTED THE CONTACT"
    "engine|sleep_ignores_marks|engine_tvht|tvht_sleep_write_stm|TVHT SLEEP AND WRITE REPORTED THE CONTACT"
    "engine|unguarded_tvht|engine_tvht|tvht_write_delete_locks|TVHT DELETE LEFT THE WRONG ENTRIES"
    "engine|unguarded_tvht|engine_tvht|tvht_write_delete_stm|TVHT DELETE LEFT THE WRONG ENTRIES"
    "engine|unguarded_tvht|engine_tvht|tvht_wake_delete_locks|TVHT CONTACT GIVEN BACK"
    "engine|unguarded_tvht|engine_tvht|tvht_wake_delete_stm|TVHT CONTACT GIVEN BACK"
    "engine|unguarded_tvht|engine_tvht_spans|tvht_span_span_locks|TVHT SPANS REPORTED THE CONTACT"
    "engine|unguarded_tvht|engine_tvht_spans|tvht_span_span_stm|TVHT SPANS REPORTED THE CONTACT"
    "engine|span_last_tick_unmet|engine_tvht_spans|tvht_span_span_locks|TVHT SPANS REPORTED THE CONTACT"
    "engine|span_last_tick_unmet|engine_tvht_spans|tvht_span_span_stm|TVHT SPANS REPORTED THE CONTACT"
    "engine|span_anchor_unheld|engine_tvht_spans|tvht_span_span_locks|SPAN TABLE INVARIANT BROKEN"
    "engine|span_anchor_unheld|engine_tvht_spans|tvht_span_span_stm|SPAN TABLE INVARIANT BROKEN"
    "engine|unguarded_tvht|engine_tvht_spans|tvht_span_entry_locks|TVHT SPAN AND ENTRY REPORTED THE CONTACT"
    "engine|unguarded_tvht|engine_tvht_spans|tvht_span_entry_stm|TVHT SPAN AND ENTRY REPORTED THE CONTACT"
    "engine|span_last_tick_unmet|engine_tvht_spans|tvht_span_entry_locks|TVHT SPAN AND ENTRY REPORTED THE CONTACT"
    "engine|span_last_tick_unmet|engine_tvht_spans|tvht_span_entry_stm|TVHT SPAN AND ENTRY REPORTED THE CONTACT"
    "engine|span_ignores_marks|engine_tvht_spans|tvht_span_entry_locks|TVHT SPAN AND ENTRY REPORTED THE CONTACT"
    "engine|span_ignores_marks|engine_tvht_spans|tvht_span_entry_stm|TVHT SPAN AND ENTRY REPORTED THE CONTACT"
    "engine|unguarded_tvht|engine_tvht_spans|tvht_cut_write_locks|TVHT CUT AND WRITE LOST OR DOUBLED A CONTACT"
    "engine|unguarded_tvht|engine_tvht_spans|tvht_cut_write_stm|TVHT CUT AND WRITE LOST OR DOUBLED A CONTACT"
    "engine|span_cut_spares_its_tick|engine_tvht_spans|tvht_cut_write_locks|TVHT CUT AND WRITE LOST OR DOUBLED A CONTACT"
    "engine|span_cut_spares_its_tick|engine_tvht_spans|tvht_cut_write_stm|TVHT CUT AND WRITE LOST OR DOUBLED A CONTACT"
    "engine|gvt_commit_min_outside|engine_gvt|gvt_records_and_rollbacks_locks|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_unrecord_trusts_word|engine_gvt|gvt_records_and_rollbacks_locks|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_commit_min_outside|engine_gvt|gvt_records_and_rollbacks_stm|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_unrecord_trusts_word|engine_gvt|gvt_records_and_rollbacks_stm|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_commit_min_outside|engine_gvt|gvt_records_and_rollbacks_chunk_per_body_locks|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_unrecord_trusts_word|engine_gvt|gvt_records_and_rollbacks_chunk_per_body_locks|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_commit_min_outside|engine_gvt|gvt_records_and_rollbacks_chunk_per_body_stm|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_unrecord_trusts_word|engine_gvt|gvt_records_and_rollbacks_chunk_per_body_stm|GVT COMMITTED A TICK WITHOUT A BODY"
    "engine|gvt_commit_no_retry|engine_gvt|gvt_span_commits_locks|GVT LEFT COMPLETE TICKS UNCOMMITTED"
    "engine|gvt_commit_no_retry|engine_gvt|gvt_span_commits_stm|GVT LEFT COMPLETE TICKS UNCOMMITTED"
    "engine|gvt_pop_keeps_key|engine_gvt|gvt_pieces_locks|GVT COMMITTED A POPPED PIECE"
    "engine|gvt_pop_keeps_key|engine_gvt|gvt_pieces_stm|GVT COMMITTED A POPPED PIECE"
    "engine|gvt_ring_unchecked|engine_gvt|gvt_ring_reuse_locks|GVT COMMITTED A FRAME FROM A REUSED CELL"
    "engine|gvt_ring_unchecked|engine_gvt|gvt_ring_reuse_stm|GVT COMMITTED A FRAME FROM A REUSED CELL"
    "engine|record_before_ack|engine_rollback|rollback_two_entities_locks|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "engine|record_before_ack|engine_rollback|rollback_two_entities_stm|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "engine|record_before_ack|engine_rollback|rollback_two_entities_window_four_locks|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "engine|record_before_ack|engine_rollback|rollback_two_entities_window_four_stm|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "engine|record_before_ack|engine_rollback|rollback_three_entities_locks|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "engine|record_before_ack|engine_rollback|rollback_three_entities_stm|COMMITTED FRAME DIFFERS FROM THE REFERENCE"
    "engine|unguarded_groups|engine_groups|groups_fuse_split_rollback_locks|ISLAND GRAPH INVARIANT BROKEN"
    "engine|unguarded_groups|engine_groups|groups_fuse_split_rollback_stm|ISLAND GRAPH INVARIANT BROKEN"
    "engine|no_announcement_recheck|engine_announcements|announcements_are_made_once|ANNOUNCEMENT LEFT UNMADE BY THE RUN"
)

# Loom's own report of a deadlock: the message of the control that must deadlock.
LOOM_DEADLOCK="deadlock; threads"

# check_control BUILD VARIANT TEST NAME MESSAGE: runs model NAME of tests/TEST.rs alone against
# the broken VARIANT and checks that it fails, alone, with MESSAGE at the start of a panic
# message literal of the models (once in their sources) and in its first panic's message.
check_control() {
    local build=$1 variant=$2 test=$3 name=$4 msg=$5
    local run
    case $build in
        stm) run=(env CARGO_TARGET_DIR="$TARGET_BASE/loom-broken-$variant"
                 RUSTFLAGS="--cfg loom --cfg timewarp_stm_broken=\"$variant\""
                 cargo test -p timewarp-loom-tests --release --no-default-features) ;;
        engine) run=(env TIMEWARP_BROKEN="$variant" CARGO_TARGET_DIR="$TARGET_BASE/loom-broken-engine"
                    RUSTFLAGS="--cfg loom --cfg timewarp_broken"
                    cargo test -p timewarp-loom-tests --release) ;;
        *) echo "FAIL: control $name: unknown build $build"; return 1 ;;
    esac
    echo "== negative control: $test::$name against $build variant $variant"
    if [ "$msg" != "$LOOM_DEADLOCK" ]; then
        local sites
        sites=$(cat loom-tests/tests/*.rs | grep -oF "\"$msg" | wc -l)
        if [ "$sites" -ne 1 ]; then
            echo "FAIL: the message \"$msg\" starts $sites message literals in loom-tests/tests, not one"
            return 1
        fi
    fi
    local start took rc first
    start=$(date +%s)
    "${run[@]}" --test "$test" -- --exact "$name" --nocapture >"$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    first=$(awk '/panicked at/ { getline; print; exit }' "$log")
    if [ $rc -eq 0 ]; then
        echo "FAIL: control passed: loom did not catch $variant ($took s)"
        return 1
    elif ! grep -q "test result: FAILED\. 0 passed; 1 failed;" "$log" || ! grep -qx "    $name" "$log"; then
        grep -E "^error|test result|panicked" "$log" | head -10
        echo "FAIL: the run did not fail exactly model $name ($took s)"
        return 1
    elif [[ "$first" != *"$msg"* ]]; then
        grep -E -A1 "panicked" "$log" | head -10
        echo "FAIL: control failed, but not with its message \"$msg\" ($took s)"
        return 1
    fi
    echo "   caught as expected ($took s): $(echo "$first" | cut -c1-140)"
}

echo "== building the engine's negative controls (--cfg timewarp_broken)"
start=$(date +%s)
if ! env CARGO_TARGET_DIR="$TARGET_BASE/loom-broken-engine" RUSTFLAGS="--cfg loom --cfg timewarp_broken" \
    cargo test -p timewarp-loom-tests --release --no-run >"$log" 2>&1; then
    grep -E "^error|^warning" "$log" | head -20
    echo "FAIL: the --cfg timewarp_broken build failed"
    status=1
else
    echo "   built in $(( $(date +%s) - start )) s"
fi

caught=0
controlled=""
for c in "${controls[@]}"; do
    IFS='|' read -r build variant test name msg <<<"$c"
    if check_control "$build" "$variant" "$test" "$name" "$msg"; then
        caught=$((caught + 1))
    else
        status=1
    fi
    controlled+="$name"$'\n'
done

# Every model has a negative control, and every control names a model.
uncontrolled=$(comm -23 <(echo "$models") <(echo -n "$controlled" | sort -u))
unknown=$(comm -13 <(echo "$models") <(echo -n "$controlled" | sort -u))
if [ -z "$models" ]; then
    echo "FAIL: could not list the models"
    status=1
elif [ -n "$uncontrolled$unknown" ]; then
    [ -n "$uncontrolled" ] && echo "FAIL: models without a negative control:" $uncontrolled
    [ -n "$unknown" ] && echo "FAIL: controls of models that do not exist:" $unknown
    status=1
fi

echo "== run-models.sh took $(( $(date +%s) - script_start )) s"
echo "== $(echo "$models" | grep -c .) models; $caught of ${#controls[@]} negative controls caught for the right reason"
if [ $status -eq 0 ] && [ "${LOOM_SKIP_MODELS:-0}" = 1 ]; then
    echo "== all negative controls are caught (the models themselves were not run)"
elif [ $status -eq 0 ]; then
    echo "== all loom models pass and all negative controls are caught"
else
    echo "== FAILURES (see above)"
fi
exit $status
