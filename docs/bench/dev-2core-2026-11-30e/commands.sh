#!/bin/bash
# At 5f4764c (2026-11-30, fourth session: the GVT buffer keeps at most 32 anchor cells per body,
# and parallel's window is 4096): the scenes of #31 without contact groups (parallel, bouncing;
# STM then locks, 5 rounds) and with them (cylinders, pyramids, avalanche; STM, 3 rounds).
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-30e
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
$P --scenes cylinders=500,pyramids=10010,avalanche=300 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-groups-stm.md 2> $D/peer-60-groups-stm.log

echo done > /tmp/peer.done
# Run again at once (the VM was quiet), for the spread of the STM figures:
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm-again.md 2> $D/peer-60-stm-again.log
