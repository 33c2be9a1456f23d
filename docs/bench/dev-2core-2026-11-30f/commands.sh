#!/bin/bash
# At 87dd79b (2026-11-30, fourth session: the commit's fill flies each anchor from a launch,
# converted and tested for spin once): parallel and bouncing without contact groups, STM, 5
# rounds.
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-30f
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
