#!/bin/bash
# At a5960c3 (2026-11-30, sixth session: as 7ff9760, and a span leaving a wall takes the
# span-wide static test again after every 16 ticks): parallel and bouncing without contact
# groups, STM then locks, 5 rounds.
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-30i
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
echo done > /tmp/peer.done
