#!/bin/bash
# At 98c0a19 (2026-11-30, third session: the commit's fill tests a cursor's next position by
# the key it read, and flight converts tick counts as signed integers): every scene of #31 and
# #32, without contact groups (parallel, bouncing; STM then locks, 5 rounds) and with them
# (cylinders, pyramids, avalanche; STM, 3 rounds).
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-30d
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
$P --scenes cylinders=500,pyramids=10010,avalanche=300 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-groups-stm.md 2> $D/peer-60-groups-stm.log
$P --scenes cylinders=2000 --seconds 10 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-cylinders2000-stm.md 2> $D/peer-60-cylinders2000-stm.log
$P --scenes pyramids=10010 --seconds 2 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 --sleep off > $D/peer-60-pyramids-sleep-off-stm.md 2> $D/peer-60-pyramids-sleep-off-stm.log
# Run again after the others (and after .ci/run), for the spread of the STM figures:
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm-again.md 2> $D/peer-60-stm-again.log
echo done > /tmp/peer.done
