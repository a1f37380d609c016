"""Which half of the SMs each SM lies in, read off a capture's pair scan: python3 halves.py MEASUREMENTS SM_GROUPS [SPAN],
or off its flag scan: python3 halves.py --flags MEASUREMENTS [SMS [SM_GROUPS]] (split_flags; SMS 132 unless given;
with SM_GROUPS the GPCs split whole).

MEASUREMENTS holds read_placement's pair scan (READ_PLACEMENT=depth READ_DEPTH_NS=2 READ_DEPTH_STRIDES=1,...,N-1:
SM 0 and SM s storing, one SM chasing; records pointer_chase, write_set first2 or stride<s>_2); SM_GROUPS is
sm_groups' system/sm_groups.json (which SMs share a GPC). A load of host memory waits behind the stores of its own
half of the SMs about twice as long as behind the other half's, so with SM 0 storing, the pairs whose second SM lies in
SM 0's half fall in the fast band from any reader. Each group (each TPC of the SMs in no cluster one more group) takes the median
chase of its pairs; the groups split at the largest gap between those medians. Prints the halves file validate reads
beside a trace (system/<trace>.halves.json, docs/TRACE_FORMAT.md): the SMs of SM 0's half. SPAN keeps the pairs of
that write_span only (a capture that scanned at several spans: the widest span's bands are the clearest). Exits 1 with the reason
when the bands are not clear (the gap less than a tenth of the fast band's median, or over 5 % of the pairs on the
wrong side of the gap's middle)."""
import json, statistics, sys


def with_tpcs(groups, sms):
    """The GPC groups (sm_groups) and, each a group of its own, the TPCs (SMs 2t, 2t + 1) of the SMs in no cluster
    (an H200's or H100's 124-131): they are TPCs of several GPCs (read_halves_3.jsonl: SMs 128 and 129 in the half
    without 124-127 and 130; h100x1-arsim perblock_10.jsonl: SMs 126 and 127 apart)."""
    out = [list(x) for x in groups]
    rest = sorted(set(range(sms)) - {v for x in out for v in x})
    for t in sorted({v // 2 for v in rest}):
        out.append([v for v in rest if v // 2 == t])
    return out


def split(records, groups, sms, span=None):
    """The halves dict (sm0_half, per reader the groups' median chases) from pair-scan records (dicts) and the
    groups of SMs that share a GPC; raises ValueError with the reason when the bands are not clear."""
    groups = with_tpcs(groups, sms)
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


def split_flags(records, sms, groups=None):
    """The halves dict from a flag scan (perblock part sm_halves: block_pingpong records of a launch of one block an
    SM, lead block 0, each other block a partner, sm_a and sm_b recorded). A flag handed across the halves takes about
    100 ns more one way than within one (one H100: 175-279 against 320-369 ns), so the lead's half is the fast band.
    With groups (sm_groups' GPCs; each TPC of the SMs in no cluster one more group, as split() takes them) each group
    takes the median of its SMs' medians and the groups split whole at the largest gap between those; without, each
    SM's median one-way handoff splits at the largest gap between them. Either way the split leaves at least a
    quarter of the SMs on each side: a lone fast SM (the lead's own TPC's other SM, 199 ns where the rest of its half
    took 250-283 on one H100) is not a half, and on another H100 a few SMs of the fast half's GPCs took 275-309 ns
    in one process, closing every gap between SMs, where the GPCs' medians still lay 67 ns apart. Raises ValueError
    with the reason when the bands are not clear (the gap under a tenth of the fast band's median), an SM is
    missing, a record names an SM outside 0..sms-1, or the lead's group is not in the fast band."""
    by, leads = {}, set()
    for r in records:
        if r.get("kind") != "block_pingpong" or r.get("launched_blocks") != sms or r.get("lead_block") != 0:
            continue
        a, b = r.get("sm_a"), r.get("sm_b")
        if not all(isinstance(v, int) and 0 <= v < sms for v in (a, b)):
            raise ValueError(f"a flag-scan record names SMs {a}, {b}, not both in 0..{sms - 1}")
        leads.add(a)
        by.setdefault(b, []).append(r["one_way_ns"])
    if not by:
        raise ValueError(f"no flag scan (block_pingpong from lead block 0 of a launch of {sms} blocks)")
    if len(leads) != 1:
        raise ValueError(f"block 0 landed on several SMs {sorted(leads)}: one scan, one lead")
    lead = leads.pop()
    missing = sorted(set(range(sms)) - set(by) - {lead})
    if missing:
        raise ValueError(f"SMs {missing} were no partner of the scan")
    med = {sm: statistics.median(v) for sm, v in by.items()}
    if groups:
        units = with_tpcs(groups, sms)
    else:
        units = [[sm] for sm in range(sms)]
    value = {i: statistics.median(med[v] for v in u if v in med) for i, u in enumerate(units) if any(v in med for v in u)}
    order = sorted(value, key=value.get)
    size = {i: len(units[i]) for i in order}
    least = sms // 4
    cands = [(value[order[k + 1]] - value[order[k]], k) for k in range(len(order) - 1)
             if least <= sum(size[i] for i in order[:k + 1]) <= sms - least]
    if not cands:
        raise ValueError("no split leaves a quarter of the SMs on each side")
    gap, k = max(cands)
    fast = {v for i in order[:k + 1] for v in units[i]}
    if lead not in fast and any(lead in units[i] for i in order):  # its group measured through its other SMs
        raise ValueError(f"block 0's SM {lead} lies in the slow band of its own scan")
    fast.add(lead)
    if gap < 0.1 * statistics.median(value[i] for i in order[:k + 1]):
        raise ValueError(f"the largest gap between {'groups' if groups else 'SMs'}' handoffs is {gap:.0f} ns, under a "
                         f"tenth of the fast band's; no two bands")
    half0 = fast if 0 in fast else set(range(sms)) - fast
    return {"sms": sms, "flag_lead_sm": lead, "flag_by": "groups" if groups else "sms", "flag_gap_ns": round(gap, 1),
            "flag_bands_ns": [round(value[order[0]], 1), round(value[order[k]], 1), round(value[order[k + 1]], 1),
                              round(value[order[-1]], 1)],
            "sm0_half": sorted(half0)}


def main_flags(meas, sms, groups_file=None):
    groups = json.load(open(groups_file))["groups"] if groups_file else None
    try:
        out = split_flags([json.loads(line) for line in open(meas)], int(sms), groups)
    except ValueError as e:
        sys.exit(f"halves: {meas}: {e}")
    if groups_file:
        out["groups_file"] = groups_file.split("/")[-1]
    print(json.dumps(out, indent=1))


def main(meas, groups_file, span=None):
    g = json.load(open(groups_file))
    try:
        out = split([json.loads(line) for line in open(meas)], g["groups"], g["sms"], span)
    except ValueError as e:
        sys.exit(f"halves: {meas}: {e}")
    out = {"sms": out.pop("sms"), "groups_file": groups_file.split("/")[-1], **out}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    if len(sys.argv) in (3, 4, 5) and sys.argv[1] == "--flags":
        main_flags(sys.argv[2], *(sys.argv[3:] or [132]))
        sys.exit(0)
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
