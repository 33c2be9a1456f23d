#!/bin/bash
# At bea6758: the contact-group scenes whose figures FUSE_SPEED 0.9 (and a shared warm start)
# moved; pyramids, which no body hits, stand as measured at e4262ed (dev-2core-2026-11-29f).
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-29g
$P --scenes cylinders=500,avalanche=300 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-groups-stm.md 2> $D/peer-60-groups-stm.log
$P --scenes cylinders=2000 --seconds 10 --warp-seconds 2 --engines frame,warp --threads 1,2 --rounds 3 > $D/peer-60-cylinders2000-stm.md 2> $D/peer-60-cylinders2000-stm.log
echo done > /tmp/peer.done
