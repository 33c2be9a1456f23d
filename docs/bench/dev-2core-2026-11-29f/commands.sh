#!/bin/bash
# At e4262ed: the contact-group scenes of issue #32 again (dev-2core-2026-11-29e measured them
# at 1728936, whose short glides e4262ed reverted).
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-29f
$P --scenes cylinders=500,pyramids=10010,avalanche=300 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-groups-stm.md 2> $D/peer-60-groups-stm.log
$P --scenes cylinders=2000 --seconds 10 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-cylinders2000-stm.md 2> $D/peer-60-cylinders2000-stm.log
$P --scenes pyramids=10010 --seconds 2 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 --sleep off > $D/peer-60-pyramids-sleep-off-stm.md 2> $D/peer-60-pyramids-sleep-off-stm.log
echo done > /tmp/peer.done
