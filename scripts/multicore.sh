#!/usr/bin/env bash
# The multicore measurement, in one call on a lent machine (README, "On a multicore server"):
#   1. `timewarp bench`: parallel, cylinders, bouncing at N = 500 and 2000; threads 1, 2, 4, ...
#      up to the cores; warp (both backends, no contact groups, under the adaptive lead) and
#      frame engines; warp over 0.5 s (cylinders is then free fall), frame over 2 s.
#   2. rapier3d 0.36 (`peer/`), serial build, against the frame engine at one thread, over 2 s.
#   3. Longer warp runs where contacts happen (`timewarp run --checksum`, one run each): cylinders
#      2000 over 1.5 s (the spheres reach the cylinders at 0.9 s) and bouncing 2000 over 1 s,
#      groups off, at 1, 4 and all threads; the adaptive lead against `--full-window` at all
#      threads; the checksums must agree across thread counts and backends.
#   3b. The TVHT's time slice: `--tvht-span 16` (the default before 2026-11-26) against 64 (the
#      default since), parallel and bouncing 2000 over 0.5 s at all threads, both backends:
#      the wall time and the STM's abort ratios by class decide the default for many cores.
#   4. Contact groups (the default of `run`): cylinders 2000 over 1.5 s, pyramids 10010 over
#      10 s, avalanche 300 over 20 s, at 1 and all threads.
#   5. rapier3d's rayon build at 1, 2, 4, ... threads, over 2 s.
# Every step has a time limit, so the whole script ends inside `budget` seconds.
#
# Usage: scripts/multicore.sh TIMEWARP PEER_SERIAL PEER_PARALLEL OUT_DIR [BUDGET_S]
# (the binaries: `cargo build --release --features stm,locks` and, in peer/, `cargo build
# --release` and `cargo build --release --features parallel`; a missing peer is skipped).
set -u
tw=$1 peer=$2 peerp=$3 out=$4 budget=${5:-480}
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$out/bench"
log=$out/runs.log
cores=$(nproc)
threads=1; t=2; while [ "$t" -le "$cores" ]; do threads="$threads,$t"; t=$((t * 2)); done

{
    echo "== machine"
    grep -m1 'model name' /proc/cpuinfo; echo "cores: $cores"; uptime; free -g | head -2
    echo "threads: $threads; budget ${budget}s"
} >"$log"

# One warp run, its summary and checksum kept; skipped when less than `need` seconds are left.
run() {
    local need=$1 label=$2; shift 2
    local l; l=$(left)
    if [ "$l" -lt "$need" ]; then echo "-- $label: skipped (${l}s left)" >>"$log"; return; fi
    echo "-- $label: timewarp run $*" >>"$log"
    timeout "$need" "$tw" run "$@" --checksum >>"$log" 2>&1 || echo "   exit $?" >>"$log"
}

echo "== 1. timewarp bench ($(left)s left)" >>"$log"
timeout 240 "$tw" bench --scenes parallel,cylinders,bouncing --sizes 500,2000 \
    --threads "$threads" --engines warp,frame --backends stm,locks --seconds 2 --warp-seconds 0.5 \
    --repeats 2 --warmup 1 --time-limit 30 --out-dir "$out/bench" \
    >"$out/bench/table.md" 2>>"$log" || echo "bench: exit $?" >>"$log"

echo "== 2. rapier3d, serial build ($(left)s left)" >>"$log"
cases=parallel=500,parallel=2000,cylinders=500,cylinders=2000,bouncing=500,bouncing=2000
if [ -x "$peer" ] && [ "$(left)" -gt 60 ]; then
    timeout 60 "$peer" --scenes "$cases" --seconds 2 --threads 1 --rounds 2 \
        >"$out/peer-serial.md" 2>/dev/null || echo "peer serial: exit $?" >>"$log"
fi

echo "== 3. contact runs, groups off ($(left)s left)" >>"$log"
for t in 1 4 "$cores"; do
    run 40 "cylinders 2000 1.5 s locks T=$t" cylinders --bodies 2000 --seconds 1.5 --groups off --backend locks --threads "$t"
done
run 40 "cylinders 2000 1.5 s stm T=$cores" cylinders --bodies 2000 --seconds 1.5 --groups off --backend stm --threads "$cores"
run 40 "cylinders 2000 1.5 s locks T=$cores full window" cylinders --bodies 2000 --seconds 1.5 --groups off --backend locks --threads "$cores" --full-window
for t in 1 "$cores"; do
    run 30 "bouncing 2000 1 s locks T=$t" bouncing --bodies 2000 --seconds 1 --groups off --backend locks --threads "$t"
done
run 30 "bouncing 2000 1 s stm T=$cores" bouncing --bodies 2000 --seconds 1 --groups off --backend stm --threads "$cores"
run 30 "bouncing 2000 1 s locks T=$cores full window" bouncing --bodies 2000 --seconds 1 --groups off --backend locks --threads "$cores" --full-window

echo "== 3b. the TVHT's time slice, 16 ticks against the default 64 ($(left)s left)" >>"$log"
for span in 16 64; do
    for be in stm locks; do
        run 20 "parallel 2000 0.5 s $be T=$cores span $span" parallel --bodies 2000 --seconds 0.5 --groups off --backend "$be" --threads "$cores" --tvht-span "$span"
        run 20 "bouncing 2000 0.5 s $be T=$cores span $span" bouncing --bodies 2000 --seconds 0.5 --groups off --backend "$be" --threads "$cores" --tvht-span "$span"
    done
done

echo "== 4. contact groups ($(left)s left)" >>"$log"
for t in 1 "$cores"; do
    run 30 "cylinders 2000 1.5 s groups stm T=$t" cylinders --bodies 2000 --seconds 1.5 --threads "$t"
done
for t in "$cores" 1; do
    run 60 "pyramids 10010 10 s groups stm T=$t" pyramids --bodies 10010 --seconds 10 --threads "$t"
done
for t in 1 "$cores"; do
    run 40 "avalanche 300 20 s groups stm T=$t" avalanche --bodies 300 --seconds 20 --threads "$t"
done

echo "== 5. rapier3d, rayon build ($(left)s left)" >>"$log"
if [ -x "$peerp" ] && [ "$(left)" -gt 90 ]; then
    timeout 90 "$peerp" --scenes "$cases" --seconds 2 --threads "$threads" --rounds 1 \
        >"$out/peer-parallel.md" 2>/dev/null || echo "peer parallel: exit $?" >>"$log"
fi
echo "== done in $(( $(date +%s) - start ))s" >>"$log"
cat "$log"
