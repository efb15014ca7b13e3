#!/usr/bin/env python3
"""gpu_overlap.py TIMELINE [SKIP]: how much of each training step's GPU
allreduce time overlaps backward, from libhvd's timeline of an hvd.torch
run on the GPU (hvdrun --timeline-filename).

A gradient's WAIT_FOR_DATA span ends when the GPU has computed it (libhvd
announces it then); its step's backward runs from the first gradient
computed to the last. A step is the k-th allreduce of every tensor. Per
step: the allreduce time (the union of its NCCL_ALLREDUCE spans, a fused
batch counted once), the part of it before the step's last gradient was
computed (during backward), and the tail: from the last gradient to the
last allreduce's end (communication left after backward); its batches
(distinct NCCL calls), and the time the engine's stream stood idle
between its first batch's start and its last's end: neither copying a
batch in or out of the fusion buffer nor reducing (the gaps a step's
batches leave). Prints one line: the medians over the steps after the
first SKIP (default 3)."""

import json
import statistics
import sys


def union(spans):
    """Sorted, merged intervals."""
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gpu_overlap.py TIMELINE [SKIP]")
    skip = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with open(sys.argv[1]) as f:
        events = json.load(f)
    ready, reduce = {}, {}
    # A fused batch's copies, laid out next to its NCCL call: the copy in
    # ends where the call starts, the copy out starts where it ends.
    copy_in, copy_out = {}, {}
    for ev in events:
        if ev.get("ph") != "X":
            continue
        tid, a, b = ev["tid"], ev["ts"], ev["ts"] + ev["dur"]
        if ev["name"] == "WAIT_FOR_DATA":
            ready.setdefault(tid, []).append(b)
        elif ev["name"] == "NCCL_ALLREDUCE":
            reduce.setdefault(tid, []).append((a, b))
        elif ev["name"] == "MEMCPY_IN_FUSION_BUFFER":
            copy_in[(tid, b)] = (a, b)
        elif ev["name"] == "MEMCPY_OUT_FUSION_BUFFER":
            copy_out[(tid, a)] = (a, b)
    steps = {}
    for tid, times in ready.items():
        spans = sorted(reduce.get(tid, []))
        for k, t in enumerate(sorted(times)):
            s = steps.setdefault(k, {"ready": [], "reduce": set(), "stream": set()})
            s["ready"].append(t)
            if k < len(spans):
                a, b = spans[k]
                s["reduce"].add(spans[k])
                s["stream"].update(x for x in (copy_in.get((tid, a)), spans[k],
                                               copy_out.get((tid, b))) if x)
    rows = []
    for k in sorted(steps)[skip:]:
        s = steps[k]
        if not s["reduce"]:
            continue
        last = max(s["ready"])
        merged = union(s["reduce"])
        total = sum(b - a for a, b in merged)
        during = sum(max(0, min(b, last) - a) for a, b in merged)
        tail = max(0, max(b for _, b in merged) - last)
        busy = union(s["stream"])
        idle = busy[-1][1] - busy[0][0] - sum(b - a for a, b in busy)
        rows.append((total, during, tail, last - min(s["ready"]), len(s["reduce"]), idle))
    if not rows:
        sys.exit("gpu_overlap.py: no step with WAIT_FOR_DATA and NCCL_ALLREDUCE spans in %s"
                 % sys.argv[1])
    med = [statistics.median(r[i] for r in rows) for i in range(6)]
    print("steps %d | allreduce %.1f ms | during backward %.1f ms (%.0f%%) | tail after "
          "backward %.1f ms | backward (first to last gradient) %.1f ms | batches a step %g | "
          "stream idle between batches %.1f ms"
          % (len(rows), med[0] / 1e3, med[1] / 1e3, 100 * med[1] / med[0] if med[0] else 0,
             med[2] / 1e3, med[3] / 1e3, med[4], med[5] / 1e3))


if __name__ == "__main__":
    main()
