"""Storing sets of SMs by TPC for a chip's own halves: python3 own_half_sets.py HALVES SM_GROUPS.

HALVES is the halves file the capture's `halves` part writes (system/measurements.halves.json: sm0_half, the SMs of
SM 0's half); SM_GROUPS is sm_groups' system/sm_groups.json (which SMs share a GPC; SMs in no group, 124-131 on an
H200, go with SM 0's group). For each half, its TPCs (SMs 2t and 2t + 1; TPCs 1 and 65 left out, the readers SM 2 and
SM 131 on them) in round-robin order over the half's GPC groups, and two families of storing sets: both SMs of the
first k/2 TPCs (k = 2, 4, 6, 8, 12, 16, 24, 32, 48, 64 SMs) and the even SM of the first k TPCs (k = 2, 3, 4, 6, 8,
12, 16, 24, 32). Prints them as READ_DEPTH_SETS wants them (";"-separated lists of SMs)."""
import json, sys
h = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))["groups"]
A = set(h["sm0_half"])
rest = sorted(set(range(132)) - {v for x in g for v in x})
groups = [list(x) for x in g]
for i, x in enumerate(groups):
    if 0 in x:
        x += rest  # SMs 124-131 go with SM 0's group, as validate's map has them
excl = {2, 3, 130, 131}
def tpcs(x):
    return [t for t in sorted({s // 2 for s in x}) if 2 * t not in excl]
def rr(half):
    ls = [tpcs(x) for x in groups if set(x) <= half]
    out = []
    for i in range(max(map(len, ls))):
        for l in ls:
            if i < len(l):
                out.append(l[i])
    return out
sets = []
for half in (A, set(range(132)) - A):
    order = rr(half)
    for k in (2, 4, 6, 8, 12, 16, 24, 32, 48, 64):
        if k // 2 <= len(order):
            sets.append(sorted(v for t in order[:k // 2] for v in (2 * t, 2 * t + 1)))
    for k in (2, 3, 4, 6, 8, 12, 16, 24, 32):
        if k <= len(order):
            sets.append(sorted(2 * t for t in order[:k]))
print(";".join(",".join(map(str, s)) for s in sets))
