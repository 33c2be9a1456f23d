#!/bin/bash
# At 648beb8 (parallel's window 2048 and spans of up to 16 cells, after d06ef91's record path,
# 7059387's record-request plan and 4042db8's frames given back): the scenes these move, without contact groups
# (parallel, bouncing), STM then locks. The contact-group scenes move by under 1% in
# instructions (docs/results.md, 2026-11-29 evening) and keep 738f306's run
# (dev-2core-2026-11-29h).
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-29i
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
echo done > /tmp/peer.done
