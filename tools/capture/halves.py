"""Which half of the SMs each SM lies in, read off a capture's pair scan: python3 halves.py MEASUREMENTS SM_GROUPS [SPAN].

MEASUREMENTS holds read_placement's pair scan (READ_PLACEMENT=depth READ_DEPTH_NS=2 READ_DEPTH_STRIDES=1,...,N-1:
SM 0 and SM s storing, one SM chasing; records pointer_chase, write_set first2 or stride<s>_2); SM_GROUPS is
sm_groups' system/sm_groups.json (which SMs share a GPC). A load of host memory waits behind the stores of its own
half of the SMs about twice as long as behind the other half's, so with SM 0 storing, the pairs whose second SM lies in
SM 0's half fall in the fast band from any reader. Each group (the SMs in no cluster one more group) takes the median
chase of its pairs; the groups split at the largest gap between those medians. Prints the halves file validate reads
beside a trace (system/<trace>.halves.json, docs/TRACE_FORMAT.md): the SMs of SM 0's half. SPAN keeps the pairs of
that write_span only (a capture that scanned at several spans: the widest span's bands are the clearest). Exits 1 with the reason
when the bands are not clear (the gap less than a tenth of the fast band's median, or over 5 % of the pairs on the
wrong side of the gap's middle)."""
import json, statistics, sys


def split(records, groups, sms, span=None):
    """The halves dict (sm0_half, per reader the groups' median chases) from pair-scan records (dicts) and the
    groups of SMs that share a GPC; raises ValueError with the reason when the bands are not clear."""
    groups = [list(x) for x in groups]
    rest = sorted(set(range(sms)) - {v for x in groups for v in x})
    if rest:
        groups.append(rest)
    where = {v: i for i, x in enumerate(groups) for v in x}
    chases = {}
    for r in records:
        ws = r.get("write_set", "")
        if r.get("kind") != "pointer_chase" or r.get("write_blocks") != 2 or not (ws == "first2" or (ws.startswith("stride") and ws.endswith("_2"))):
            continue
        a, b = (int(v) for v in r["write_sms"].split(","))
        if a != 0 or (span and r.get("write_span") != span):
            continue
        chases.setdefault(r["read_sm"], {}).setdefault(where[b], []).append(r["ns_per_step"])
    if not chases:
        raise ValueError("no pair scan from SM 0 (pointer_chase, write_set first2/stride<s>_2)")
    out = {"sms": sms, **({"write_span": span} if span else {}), "readers": {}}
    fast_sets = []
    for reader, byg in sorted(chases.items()):
        med = {i: statistics.median(v) for i, v in byg.items()}
        order = sorted(med, key=med.get)
        if len(order) < 2:
            raise ValueError(f"reader SM {reader}: pairs of one group only")
        gaps = [(med[order[k + 1]] - med[order[k]], k) for k in range(len(order) - 1)]
        gap, k = max(gaps)
        fast = set(order[:k + 1])
        lo = med[order[k]]
        if gap < 0.1 * statistics.median(med[i] for i in fast):
            raise ValueError(f"reader SM {reader}: the largest gap between groups' medians is {gap:.0f} ns, "
                             f"under a tenth of the fast band's; no two bands")
        wrong = [(i, v) for i in byg for v in byg[i] if (v > lo + gap / 2) == (i in fast)]
        pairs = sum(len(v) for v in byg.values())
        if len(wrong) > 0.05 * pairs:
            raise ValueError(f"reader SM {reader}: {len(wrong)} of {pairs} pairs lie in their group's other band, "
                             f"e.g. group {wrong[0][0]} at {wrong[0][1]:.0f} ns")
        if where[0] not in fast:
            raise ValueError(f"reader SM {reader}: SM 0's own group is in the slow band")
        fast_sets.append(fast)
        out["readers"][str(reader)] = {"group_median_ns": {str(i): round(med[i], 1) for i in sorted(med)},
                                       "sm0_half_groups": sorted(fast)}
    if any(f != fast_sets[0] for f in fast_sets):
        raise ValueError(f"the readers split the groups differently: {[sorted(f) for f in fast_sets]}")
    out["sm0_half"] = sorted(v for i in fast_sets[0] for v in groups[i])
    return out


def main(meas, groups_file, span=None):
    g = json.load(open(groups_file))
    try:
        out = split([json.loads(line) for line in open(meas)], g["groups"], g["sms"], span)
    except ValueError as e:
        sys.exit(f"halves: {meas}: {e}")
    out = {"sms": out.pop("sms"), "groups_file": groups_file.split("/")[-1], **out}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
