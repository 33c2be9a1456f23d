#!/usr/bin/env python3
"""Medians of the `run ...` lines of a peer/ log, for a peer/ run cut off by its time limit
before it printed its table: `python3 scripts/peer-log-table.py peer-60-stm.log`.
scripts/multicore.sh calls it for a step that ran out of time; the rounds column says how many
rounds each row's medians took in."""
import re, statistics, sys
from collections import defaultdict
cells = defaultdict(list)
order = []
for line in open(sys.argv[1]):
    m = re.match(r"run (\w+) N=(\d+) T=(\d+): (.+?) ([0-9.]+) s/s", line)
    if not m:
        continue
    key = (m[1], int(m[2]), int(m[3]))
    if key not in order:
        order.append(key)
    cells[key, m[4]].append(float(m[5]))
print("| scene | N | T | rounds | rapier | timewarp frame | ratio | timewarp warp | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for key in order:
    r = cells.get((key, "rapier (serial)")) or cells.get((key, "rapier (parallel)")) or []
    f, w = cells.get((key, "timewarp frame"), []), cells.get((key, "timewarp warp"), [])
    if not (r and w):
        continue
    med = statistics.median
    rr, ff, ww = med(r), (med(f) if f else float("nan")), med(w)
    print(f"| {key[0]} | {key[1]} | {key[2]} | {min(len(r), len(w))} | {rr:.4f} | {ff:.4f} | "
          f"{rr / ff:.2f} | {ww:.4f} | {rr / ww:.2f} |")
