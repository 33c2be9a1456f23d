#!/bin/bash
# At HEAD of 2026-11-30, second session (the fill reads each cursor's key once per fill; two
# flying spheres are refined only up to their closest approach): the scenes without contact
# groups (parallel, bouncing; STM then locks, 5 rounds). The group scenes' instructions did
# not move (+0.03%), so they were not rerun: dev-2core-2026-11-30 has them.
cd /work/main/peer
P=/work/main/target-peer/release/timewarp-peer
D=../docs/bench/dev-2core-2026-11-30b
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 > $D/peer-60-stm.md 2> $D/peer-60-stm.log
$P --scenes parallel=500,parallel=2000,bouncing=500,bouncing=2000 --seconds 10 --warp-seconds 10 --engines frame,warp --threads 1,2 --rounds 5 --backend locks > $D/peer-60-locks.md 2> $D/peer-60-locks.log
echo done > /tmp/peer.done
