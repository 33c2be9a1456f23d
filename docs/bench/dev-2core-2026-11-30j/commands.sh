#!/bin/bash
# At 0a6ab57 (2026-11-30, seventh session: the leaner fill of 59944e9, and the review clean-ups
# of 0a6ab57, which change no frame): parallel and bouncing without contact
# groups, STM then locks, 5 rounds.
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-30j
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
echo done > /tmp/peer.done
