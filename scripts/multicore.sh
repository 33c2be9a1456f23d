#!/usr/bin/env bash
# The multicore measurement, in one call on a lent machine (docs/benchmarks.md, "On a multicore
# server"), for the warp engine in spans: every figure of issues #31 and #32 at 1, 2, 4, ...
# threads up to the cores, against rapier3d 0.36 at dt = 1/60 s over 10 simulated seconds.
#   1. `peer/` (serial rapier3d, alternating with ours, medians): parallel and bouncing at
#      N = 500 and 2000, frame and warp engines, the warp engine without contact groups; under
#      the STM at every thread count, under locks at 1 and all threads.
#   2. `peer/` with contact groups (the warp engine's default): cylinders 500, pyramids 10010,
#      avalanche 300, at 1 and all threads, STM.
#   3. rapier3d's rayon build against ours at every thread count (rapier's own scaling).
#   4. `parallel` with 100,000 bodies over 10 s (`timewarp run`): warp STM, warp locks and the
#      frame engine at all threads, warp STM at 2.
#   5. Checksums that must agree across thread counts and backends: cylinders 500 (groups) and
#      bouncing 500 (no groups) over 2 s at 1, 4 and all threads, both backends.
# Every step has a time limit, so the whole script ends inside `budget` seconds.
#
# Usage: scripts/multicore.sh TIMEWARP PEER_SERIAL PEER_PARALLEL OUT_DIR [BUDGET_S]
# (the binaries: `cargo build --release --features stm,locks` and, in peer/, `cargo build
# --release` and `cargo build --release --features parallel`; a missing peer is skipped).
set -u
tw=$1 peer=$2 peerp=$3 out=$4 budget=${5:-520}
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$out"
log=$out/runs.log
cores=$(nproc)
threads=1; t=2; while [ "$t" -le "$cores" ]; do threads="$threads,$t"; t=$((t * 2)); done

{
    echo "== machine"
    grep -m1 'model name' /proc/cpuinfo; echo "cores: $cores"; uptime; free -g | head -2
    echo "threads: $threads; budget ${budget}s"
} >"$log"

# One `peer/` table: `step LIMIT NAME BINARY ARGS...`, skipped when less than LIMIT is left.
step() {
    local need=$1 name=$2 bin=$3; shift 3
    local l; l=$(left)
    if [ ! -x "$bin" ]; then echo "-- $name: no binary" >>"$log"; return; fi
    if [ "$l" -lt "$need" ]; then echo "-- $name: skipped (${l}s left)" >>"$log"; return; fi
    echo "-- $name ($(left)s left): $*" >>"$log"
    local s; s=$(date +%s)
    local rc=0
    timeout "$need" "$bin" "$@" >"$out/$name.md" 2>"$out/$name.log" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "   exit $rc" >>"$log"
        # Cut off before its table: the medians of the rounds it finished, from its log.
        [ "$rc" -eq 124 ] && python3 "$(dirname "$0")/peer-log-table.py" "$out/$name.log" >"$out/$name.md"
    fi
    echo "   $(( $(date +%s) - s ))s" >>"$log"
}

# One warp run, its summary and checksum kept; skipped when less than `need` seconds are left.
run() {
    local need=$1 label=$2; shift 2
    local l; l=$(left)
    if [ "$l" -lt "$need" ]; then echo "-- $label: skipped (${l}s left)" >>"$log"; return; fi
    echo "-- $label: timewarp run $*" >>"$log"
    timeout "$need" "$tw" run "$@" --checksum >>"$log" 2>&1 || echo "   exit $?" >>"$log"
}

free_cases=parallel=500,parallel=2000,bouncing=500,bouncing=2000
group_cases=cylinders=500,pyramids=10010,avalanche=300
echo "== 1. peer/, serial rapier3d, no contact groups" >>"$log"
step 200 peer-60-stm "$peer" --scenes "$free_cases" --seconds 10 --warp-seconds 10 \
    --engines frame,warp --threads "$threads" --rounds 3
step 60 peer-60-locks "$peer" --scenes "$free_cases" --seconds 10 --warp-seconds 10 \
    --engines frame,warp --threads "1,$cores" --rounds 2 --backend locks

echo "== 2. peer/, serial rapier3d, contact groups" >>"$log"
step 110 peer-60-groups-stm "$peer" --scenes "$group_cases" --seconds 10 --warp-seconds 10 \
    --engines frame,warp --threads "1,$cores" --rounds 2

echo "== 3. peer/, rapier3d's rayon build" >>"$log"
step 80 peer-60-rayon-stm "$peerp" --scenes "$free_cases" --seconds 10 --warp-seconds 10 \
    --engines frame,warp --threads "$threads" --rounds 1

echo "== 4. parallel, 100,000 bodies over 10 s ($(left)s left)" >>"$log"
big=(parallel --bodies 100000 --seconds 10 --groups off)
run 40 "parallel 100000 stm T=$cores" "${big[@]}" --backend stm --threads "$cores"
run 40 "parallel 100000 locks T=$cores" "${big[@]}" --backend locks --threads "$cores"
run 40 "parallel 100000 frame T=$cores" "${big[@]}" --engine frame --threads "$cores"
run 40 "parallel 100000 stm T=2" "${big[@]}" --backend stm --threads 2

echo "== 5. checksums across threads and backends ($(left)s left)" >>"$log"
for be in stm locks; do
    for t in 1 4 "$cores"; do
        run 20 "cylinders 500 2 s groups $be T=$t" cylinders --bodies 500 --seconds 2 --backend "$be" --threads "$t" -q
        run 20 "bouncing 500 2 s $be T=$t" bouncing --bodies 500 --seconds 2 --groups off --backend "$be" --threads "$t" -q
    done
done
echo "== done in $(( $(date +%s) - start ))s" >>"$log"
cat "$log"
