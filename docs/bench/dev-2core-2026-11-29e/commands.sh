#!/bin/bash
# At 1728936: the contact-group scenes of issue #32 (as in dev-2core-2026-11-29d), then the
# scenes without contact groups of issue #31 (as in dev-2core-2026-11-28), STM and locks.
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-29e
$P --scenes cylinders=500,pyramids=10010,avalanche=300 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-groups-stm.md 2> $D/peer-60-groups-stm.log
$P --scenes cylinders=2000 --seconds 10 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-cylinders2000-stm.md 2> $D/peer-60-cylinders2000-stm.log
$P --scenes pyramids=10010 --seconds 2 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 --sleep off > $D/peer-60-pyramids-sleep-off-stm.md 2> $D/peer-60-pyramids-sleep-off-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
echo done > /tmp/peer.done
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-stm-2.md 2> $D/peer-60-stm-2.log   # a second STM run
