"""Merge raw capture output into one measurements.jsonl and check it against traces/FORMAT.md (v1)."""
import glob, json, os, sys

KINDS = {"allreduce", "allreduce_sequence", "memcpy", "sm_access", "pointer_chase", "flag_pingpong",
         "empty_kernel", "host_link_concurrency", "fence", "barrier", "poll", "block_pingpong", "loop", "nccl_kernel"}
CLOCKS = {"device_events", "host", "sm_clock64"}
REQ = {
    "allreduce": ["world", "dtype", "bytes", "impl", "algo", "transport", "launch", "us", "us_min", "us_max"],
    "allreduce_sequence": ["world", "dtype", "bytes", "impl", "count", "tokens", "hidden", "transport", "launch",
                           "us", "us_min", "us_max"],
    "memcpy": ["bytes", "dir", "us", "us_min", "us_max"],
    "sm_access": ["op", "target", "blocks", "threads", "bytes", "us", "us_min", "us_max", "gbps"],
    "pointer_chase": ["target", "ns_per_step"],
    "flag_pingpong": ["via", "one_way_us"],
    "empty_kernel": ["us", "us_min"],
    "nccl_kernel": ["nccl_op", "launch", "us", "us_min", "us_max"],
    "host_link_concurrency": ["what", "gpus", "bytes_per_gpu", "gbps_per_gpu", "gbps_total"],
    "fence": ["target", "variant", "threads", "ns_per_iter"],
    "poll": ["target", "request", "spacing_bytes", "blocks", "ns_per_op"],
    "block_pingpong": ["target", "mode", "spacing_bytes", "pairs", "one_way_ns"],
    "loop": ["loop", "blocks", "threads", "ns_per_iter"],
    "barrier": ["world", "barrier", "stride_words", "blocks", "threads", "barriers_per_launch", "us", "us_min", "us_max"],
}
# perblock's ll128_spin: the spinning blocks' reloads, and readers beside them (bytes_per_block, not bytes_per_gpu)
SPIN_WHATS = {"sm_ll128_spin", "sm_read_beside_ll128_spin"}
ENUMS = {
    "impl": {"nccl", "torch_symm_mem", "host_staged_one_shot", "arsim_flag_one_shot", "arsim_flag_two_shot"},
    "algo": {"ring", "tree", "auto", "one_shot", "two_shot"},
    "proto": {"ll", "ll128", "simple", "auto"},
    "transport": {"p2p", "shm", "host_memory"},
    "launch": {"cudagraph", "eager"},
    "dir": {"h2d", "d2h", "p2p", "bidir"},
    "op": {"read", "write", "read_reduce", "read_only_loop"},
    "variant": {"store", "store+fence_sys", "16x16B+fence_sys", "store+fence_gpu", "st_release_sys", "16x16B"},
    "target": {"host", "local", "peer"},
    "via": {"host", "peer"},
    "dtype": {"bf16", "fp16", "fp32"},
    "request": {"load_volatile", "load_acquire", "load_relaxed", "atomic_add", "atomic_cas"},
    "nccl_op": {"allreduce_group", "self_sendrecv", "allreduce_one_rank", "allreduce_one_rank_inplace", "torch_allreduce_one_rank", "memcpy_d2d", "empty_kernel"},
    "loop": {"ll", "ll128", "ll128w", "ll_steps", "ll128_steps", "group_barrier", "copy", "simple_step", "fence", "fence_burst", "fence_after_pull", "pull", "host_shot", "host_readback"},
    "what": {"ce_h2d", "ce_d2h", "ce_bidir", "sm_read", "sm_write", "sm_bidir", "sm_read_beside_write", "sm_ll128_spin",
             "sm_read_beside_ll128_spin"},
    "issuer": {"native"},
    "placement": {"by_sm"},
    "write_span": {"own_mib", "wide", "own"},
    "write_rank_order": {"forward", "reverse"},
    "reader_sm": {"with_storer", "without_storer"},
    "atomic_page": {"fast", "slow"},
}


def check(rec):
    errs = []
    for k in ("system", "kind", "clock"):
        if k not in rec:
            errs.append(f"missing {k}")
    if rec.get("kind") not in KINDS:
        errs.append(f"kind {rec.get('kind')}")
        return errs
    if rec.get("clock") not in CLOCKS:
        errs.append(f"clock {rec.get('clock')}")
    spin = rec["kind"] == "host_link_concurrency" and rec.get("what") in SPIN_WHATS
    for k in REQ[rec["kind"]]:
        if k not in rec and not (spin and k == "bytes_per_gpu"):
            errs.append(f"missing {k}")
    for k, allowed in ENUMS.items():
        if k in rec and rec[k] not in allowed:
            errs.append(f"{k}={rec[k]!r}")
    if rec["kind"] == "allreduce" and rec.get("impl") == "nccl" and "proto" not in rec:
        errs.append("nccl without proto")
    if rec["kind"] == "fence" and not (isinstance(rec.get("ns_per_iter"), (int, float)) and rec["ns_per_iter"] > 0):
        errs.append(f"ns_per_iter={rec.get('ns_per_iter')!r}")
    for k in ("us", "us_min", "us_max"):
        if k in rec and not (isinstance(rec[k], (int, float)) and rec[k] > 0):
            errs.append(f"{k}={rec[k]!r}")
    if "us_min" in rec and "us_max" in rec and "us" in rec and not (rec["us_min"] <= rec["us"] <= rec["us_max"]):
        errs.append("us not within [us_min, us_max]")
    return errs


def merge(raw_dir, out_path, system_id=None):
    """Concatenate raw *.jsonl (not *.errors.jsonl); drop non-format records; optionally set system."""
    n, bad, extra = 0, 0, []
    with open(out_path, "w") as out:
        for p in sorted(glob.glob(os.path.join(raw_dir, "*.jsonl"))):
            if p.endswith(".errors.jsonl") or os.path.abspath(p) == os.path.abspath(out_path):
                continue
            for line in open(p):
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                if system_id:
                    r["system"] = system_id
                if r.get("kind") not in KINDS:
                    extra.append(r)
                    continue
                e = check(r)
                if e:
                    bad += 1
                    print("INVALID", p, e, line[:200], file=sys.stderr)
                    continue
                out.write(json.dumps(r) + "\n")
                n += 1
    return n, bad, extra


def validate_file(path):
    from collections import Counter
    c, nbad = Counter(), 0
    for i, line in enumerate(open(path), 1):
        r = json.loads(line)
        e = check(r)
        if e:
            nbad += 1
            print(f"{path}:{i}: {e}", file=sys.stderr)
        c[r.get("kind")] += 1
    return c, nbad


if __name__ == "__main__":
    c, nbad = validate_file(sys.argv[1])
    print(dict(c), "invalid:", nbad)
    sys.exit(1 if nbad else 0)
