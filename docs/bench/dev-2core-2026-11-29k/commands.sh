#!/bin/bash
# At 4e92616 (span anchors counted by holds, not by an Arc; the TVHT's drop): the scenes of issue
# #31 without contact groups (parallel, bouncing), STM then locks, 5 rounds.
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-29k
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
echo done > /tmp/peer.done
