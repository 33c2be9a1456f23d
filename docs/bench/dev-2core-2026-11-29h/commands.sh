#!/bin/bash
# At 738f306, which made LEAD_TIGHT 8 ticks (after bea6758's FUSE_SPEED 0.9): the scenes whose
# figures these move, with contact groups (cylinders, avalanche; pyramids, which never tightens
# and which no body hits, stands as measured at e4262ed in dev-2core-2026-11-29f) and without
# (parallel, bouncing), STM then locks.
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-29h
$P --scenes cylinders=500,avalanche=300 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-groups-stm.md 2> $D/peer-60-groups-stm.log
$P --scenes cylinders=2000 --seconds 10 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-cylinders2000-stm.md 2> $D/peer-60-cylinders2000-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
echo done > /tmp/peer.done
