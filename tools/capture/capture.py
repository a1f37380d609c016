#!/usr/bin/env python3
"""arsim trace capture: measure a multi-GPU host and write traces in format v1 (traces/FORMAT.md).

  python3 capture.py [--out DIR] [--quick] [--budget-s S] SUBCOMMAND

subcommands: system, memcpy, sm, micro2, flag-kernels, nccl, nccl-seq, torch, nccl-host, barrier, perblock, nccl-self,
native-issue, sass, all, merge
Raw records go to DIR/*.jsonl (flushed per record), failures to DIR/*.errors.jsonl; `merge`
(run by `all` at the end) writes DIR/measurements.jsonl with only valid format-v1 records.
"""
import argparse, json, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("PYTHONUNBUFFERED", "1")

from common import Recorder, log  # noqa: E402


def cmd_system(a):
    import sysinfo
    sysinfo.run(a.out)


def cmd_memcpy(a):
    import micro
    return micro.run_memcpy(a.out, a.quick)


def cmd_sm(a, m=None):
    import micro
    return micro.run_sm(a.out, a.quick, m)


def cmd_micro2(a, m=None):
    import micro2
    return micro2.run(a.out, a.quick, m)


def cmd_flag(a):
    import flagar
    flagar.run(a.out, a.quick)


def cmd_nccl(a, budget=None, sequence_only=False):
    import nccl_bench
    cfgs = None
    if a.configs and not sequence_only:
        cfgs = [tuple(c.split("/")) for c in a.configs.split(",")]
    extra_env = {}
    for kv in a.env or []:
        k, sep, v = kv.partition("=")
        if not sep or not k.startswith("NCCL_") or k in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE"):
            raise SystemExit(f"--env {kv!r}: expected NCCL_NAME=value (ALGO/PROTO go through --configs, "
                             "P2P_DISABLE through --transports)")
        extra_env[k] = v
    sizes = [int(x) for x in a.sizes.split(",")] if a.sizes else None
    launches = tuple(a.launches.split(","))
    if any(l not in ("cudagraph", "eager") for l in launches):
        raise SystemExit(f"--launches {a.launches!r}: cudagraph and/or eager")
    nccl_bench.run(a.out, a.quick, transports=tuple(a.transports.split(",")),
                   budget_s=budget or a.budget_s, isolation=a.isolation, configs=cfgs, sequence_only=sequence_only,
                   extra_env=extra_env, sizes=sizes, launches=launches)


def cmd_nccl_seq(a, budget=None):
    """Only the allreduce_sequence records (default communicator), every transport in --transports."""
    cmd_nccl(a, budget, sequence_only=True)


def cmd_perblock(a):
    import perblock
    perblock.run(a.out, a.quick)


def cmd_nccl_self(a):
    import nccl_self
    nccl_self.run(a.out, a.quick)


def cmd_native_issue(a):
    import native_issue
    native_issue.run(a.out, a.quick, os.environ.get("ARSIM_SYSTEM_ID", "unknown"))


def cmd_sass(a):
    import sass
    sass.run(a.out)


def cmd_barrier(a):
    import barrier
    barrier.run(a.out, a.quick)


def cmd_torch(a, budget=None):
    import torch_ops
    from common import Deadline
    torch_ops.run(a.out, a.quick, a.reps, Deadline(budget or a.budget_s), tuple(a.torch_parts.split(",")))


def cmd_nccl_host(a, budget=None):
    import torch_ops
    sizes = [int(x) for x in a.sizes.split(",")] if a.sizes else [8, 64, 512, 4096, 32768, 262144]
    torch_ops.run_nccl_host(a.out, a.quick, a.reps, budget or a.budget_s or 300, sizes)


def cmd_merge(a):
    import validate
    n, bad, extra = validate.merge(a.out, os.path.join(a.out, "measurements.jsonl"), a.system_id)
    os.makedirs(os.path.join(a.out, "system"), exist_ok=True)
    with open(os.path.join(a.out, "system", "device_info.json"), "w") as f:
        json.dump(extra, f, indent=1)
    c, nbad = validate.validate_file(os.path.join(a.out, "measurements.jsonl"))
    log("merged", n, "records;", bad, "invalid dropped;", dict(c))


def cmd_all(a):
    t0 = time.time()
    run_rec = Recorder(a.out, "run")
    phases = [p for p in a.phases.split(",") if p]
    m = None
    done = []
    for ph in phases:
        t = time.time()
        log("=== phase", ph, f"(elapsed {t - t0:.0f}s)")
        # what this process ran before the phase: micro2 writes it into its graph gaps' state (a process's graph gap
        # steps up once it has run long kernels or made a few graphs)
        os.environ["CAPTURE_PHASES_BEFORE"] = ",".join(done)
        try:
            if ph == "system":
                cmd_system(a)
            elif ph == "memcpy":
                m = cmd_memcpy(a)
            elif ph == "sm":
                m = cmd_sm(a, m)
            elif ph == "micro2":
                m = cmd_micro2(a, m)
            elif ph == "flag-kernels":
                cmd_flag(a)
            elif ph == "barrier":
                cmd_barrier(a)
            elif ph == "perblock":
                cmd_perblock(a)
            elif ph == "native-issue":
                cmd_native_issue(a)
            elif ph == "sass":
                cmd_sass(a)
            elif ph in ("torch", "nccl-host"):
                left = (a.budget_s - (time.time() - t0)) if a.budget_s else None
                share = None
                if left:
                    rest = [q for q in phases[phases.index(ph):] if q in ("torch", "nccl-host", "nccl", "nccl-seq")]
                    share = max(30, (left - 20) / len(rest))
                (cmd_torch if ph == "torch" else cmd_nccl_host)(a, budget=share)
            elif ph in ("nccl", "nccl-seq"):
                if m is not None:
                    try:
                        import cupy as cp
                        cp.get_default_memory_pool().free_all_blocks()
                    except Exception:
                        pass
                left = (a.budget_s - (time.time() - t0)) if a.budget_s else None
                cmd_nccl(a, budget=max(30, left - 20) if left else None, sequence_only=(ph == "nccl-seq"))
        except Exception as e:  # noqa: BLE001
            run_rec.error(f"phase {ph}", e)
        log("=== phase", ph, f"done in {time.time() - t:.0f}s")
        done.append(ph)
    cmd_merge(a)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.environ.get("CAPTURE_OUT", "./capture_out"))
    p.add_argument("--quick", action="store_true", help="short sweeps (smoke test)")
    p.add_argument("--budget-s", type=float, default=None, help="wall-clock budget for nccl / all")
    p.add_argument("--system-id", default=None, help="override the `system` field when merging")
    p.add_argument("--transports", default="p2p,shm")
    p.add_argument("--configs", default=None, help="NCCL configs algo/proto,… (default: auto + ring/tree × ll/ll128/simple)")
    p.add_argument("--isolation", choices=("group", "process"), default="group",
                   help="NCCL: one process per transport with a communicator per config, or a process per config")
    p.add_argument("--env", action="append", metavar="NCCL_NAME=VALUE",
                   help="NCCL: extra environment for every NCCL process (repeatable), e.g. NCCL_NTHREADS=128; "
                        "recorded in each record's nccl_env (and max_channels for NCCL_MAX_NCHANNELS)")
    p.add_argument("--sizes", default=None, help="NCCL: only these bf16 sizes in bytes, comma-separated (no fp16/fp32, "
                                                 "no verify-pass sequences)")
    p.add_argument("--launches", default="cudagraph,eager", help="NCCL: cudagraph and/or eager")
    p.add_argument("--reps", type=int, default=3, help="torch / nccl-host: fresh process launches (host costs "
                                                          "differ between processes)")
    p.add_argument("--torch-parts", default="copy,symm", help="torch: copy (tensor.copy_ sweeps) and/or symm "
                                                                  "(symmetric-memory allreduce)")
    p.add_argument("--phases", default="system,memcpy,sm,flag-kernels,nccl", help="phases run by `all`")
    p.add_argument("cmd", choices=("system", "memcpy", "sm", "micro2", "flag-kernels", "nccl", "nccl-seq", "torch",
                                   "nccl-host", "barrier", "perblock", "nccl-self", "native-issue", "sass", "all", "merge"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    if a.system_id:
        os.environ["ARSIM_SYSTEM_ID"] = a.system_id
    {"system": cmd_system, "memcpy": cmd_memcpy, "sm": cmd_sm, "micro2": cmd_micro2, "flag-kernels": cmd_flag,
     "nccl": cmd_nccl, "nccl-seq": cmd_nccl_seq, "torch": cmd_torch, "nccl-host": cmd_nccl_host, "barrier": cmd_barrier, "nccl-self": cmd_nccl_self, "native-issue": cmd_native_issue, "sass": cmd_sass, "perblock": cmd_perblock, "all": cmd_all, "merge": cmd_merge}[a.cmd](a)


if __name__ == "__main__":
    main()
