"""PyTorch-level operations whose cost is mostly the host's: the `torch` and `nccl-host` subcommands.

Why: arsim's PyTorch host-issue parameters (torch.copy_issue_*, torch.p2p_copy_overhead*,
torch.symm_mem_eager_issue, torch.nccl_eager_issue) must come from the project's own captures, so that the shared
h200x2 set stays a held-out test. This module measures what those parameters describe, the way the shared set's
records were taken (PyTorch calls, CUDA events, back-to-back issue), and repeats the host-bound parts in several
fresh process launches, because a host's issue cost differs from one process to the next.

`torch` (--torch-parts copy,symm):
  - tensor.copy_ (non_blocking) h2d / d2h (pinned host memory, GPU0) and p2p (GPU0 -> GPU1), 4 B ... 256 MiB x2;
    records kind memcpy, api "torch.copy_"; repeated in --reps fresh processes (records carry process_rep).
  - symmetric-memory one_shot_all_reduce / two_shot_all_reduce_ (torch.ops.symm_mem), eager and inside CUDA graphs
    of 20 operations, 64 B ... 64 MiB x2, one process per GPU; repeated in --reps fresh process launches
    (records carry process_rep).
`nccl-host`: eager NCCL allreduce (auto/auto) at small sizes, p2p and shm, in --reps fresh process launches
(nccl_bench with isolation=process; records carry process_rep).

Timing as in the shared set: 5 untimed calls, one timed call sets the iteration count (about 10 ms per trial,
3...300 iterations, agreed between ranks), then 3 trials of that many back-to-back calls between one event pair;
us = median trial / iterations.
"""
import os, time

from common import Recorder, log, pow_sizes, spawn_and_wait, summarize

GRAPH_OPS = 20
SYMM_OPS = (("one_shot", "one_shot_all_reduce"), ("two_shot", "two_shot_all_reduce_"))


def _timed(torch, fn, agree=None, target_ms=10.0, lo=3, hi=300):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    one = max(s.elapsed_time(e), 1e-3)
    iters = int(min(max(target_ms / one, lo), hi))
    if agree is not None:
        iters = agree(iters)
    ts = []
    for _ in range(3):
        if agree is not None:
            agree(0)
        s.record()
        for _ in range(iters):
            fn()
        e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 1000.0 / iters)
    return summarize(ts) + (iters,)


def copy_sweeps(out_dir, quick, deadline, rep=None):
    import torch
    rec = Recorder(out_dir, "torch_copy")
    hi = (1 << 20) if quick else (1 << 28)
    dev0 = torch.device("cuda:0")
    plans = [("h2d", "d2h"), ("p2p",)] if torch.cuda.device_count() >= 2 else [("h2d", "d2h")]
    for group in plans:
        for dr in group:
            for n in pow_sizes(4, hi):
                if deadline.expired():
                    rec.error(f"copy {dr} {n} skipped: deadline")
                    return

                def meas(n=n, dr=dr):
                    if dr == "h2d":
                        src = torch.empty(n, dtype=torch.uint8).pin_memory()
                        dst = torch.empty(n, dtype=torch.uint8, device=dev0)
                    elif dr == "d2h":
                        src = torch.empty(n, dtype=torch.uint8, device=dev0)
                        dst = torch.empty(n, dtype=torch.uint8).pin_memory()
                    else:
                        src = torch.empty(n, dtype=torch.uint8, device=dev0)
                        dst = torch.empty(n, dtype=torch.uint8, device="cuda:1")
                    fn = lambda: dst.copy_(src, non_blocking=True)
                    med, lo, hi_, it = _timed(torch, fn)
                    rec.emit({"kind": "memcpy", "clock": "device_events", "launch": "eager", "engine": "copy_engine",
                              "api": "torch.copy_", "dir": dr, "bytes": n, "streams": 1, "us": med, "us_min": lo,
                              "us_max": hi_, "gbps": n / med / 1e3, "iters": it, "process_rep": rep})
                    del src, dst
                rec.guard(f"copy {dr} {n}", meas)
    log("torch copies:", rec.n, "records,", rec.nerr, "errors")


def _symm_worker(rank, world, job):
    import faulthandler
    faulthandler.dump_traceback_later(max(30, job["timeout"] - 10), exit=False)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(job["port"])
    import datetime
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
    torch.cuda.set_device(rank)
    dev = torch.device(f"cuda:{rank}")
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev,
                            timeout=datetime.timedelta(seconds=120))
    gname = dist.group.WORLD.group_name
    try:
        symm_mem.enable_symm_mem_for_group(gname)
    except Exception:  # noqa: BLE001 - absent in newer PyTorch, where rendezvous suffices
        pass
    rec = Recorder(job["out"], "torch_symm") if rank == 0 else None

    def agree(i):
        t = torch.tensor([i], dtype=torch.int64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return int(t.item())

    hi = (1 << 20) if job["quick"] else (1 << 26)
    for algo, opname in SYMM_OPS:
        f = getattr(torch.ops.symm_mem, opname)
        for launch in ("eager", "cudagraph"):
            for n in pow_sizes(64, hi):
                # every rank takes the same branch: stop when any rank is past its deadline (MIN of "in time")
                if agree(0 if time.time() > job["t_end"] else 1) == 0:
                    if rec:
                        rec.error(f"symm {algo} {launch} {n} skipped: deadline")
                    break
                elems = max(n // 2, 1)
                try:
                    t = symm_mem.empty(elems, dtype=torch.bfloat16, device=dev)
                    symm_mem.rendezvous(t, gname)
                    t.copy_(torch.randn(elems, device=dev))
                    fn = lambda: f(t, "sum", gname)
                    if launch == "eager":
                        med, lo, hi_, it = _timed(torch, fn, agree)
                    else:
                        for _ in range(3):
                            fn()
                        torch.cuda.synchronize()
                        g = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(g):
                            for _ in range(GRAPH_OPS):
                                fn()
                        med, lo, hi_, it = _timed(torch, g.replay, agree)
                        med, lo, hi_ = med / GRAPH_OPS, lo / GRAPH_OPS, hi_ / GRAPH_OPS
                        del g
                    if rec:
                        r = {"kind": "allreduce", "clock": "device_events", "launch": launch, "world": world,
                             "dtype": "bf16", "bytes": elems * 2, "impl": "torch_symm_mem", "algo": algo,
                             "transport": "p2p", "us": med, "us_min": lo, "us_max": hi_, "iters": it,
                             "process_rep": job["rep"], "torch_op": opname}
                        if launch == "cudagraph":
                            r["ops_per_graph"] = GRAPH_OPS
                        rec.emit(r)
                    del t
                except Exception as e:  # noqa: BLE001 - one size failing must not end the sweep
                    if rec:
                        rec.error(f"symm {algo} {launch} {n}", e)
                    torch.cuda.synchronize()
                    break
    dist.barrier()
    dist.destroy_process_group()


def symm_reps(out_dir, quick, reps, deadline):
    import torch
    world = torch.cuda.device_count()
    if world < 2:
        raise RuntimeError("symmetric-memory allreduce needs >= 2 GPUs")
    for rep in range(reps):
        left = deadline.left()
        if left < 30:
            Recorder(out_dir, "torch_symm").error(f"symm rep {rep} skipped: deadline")
            return
        share = min(left, left / (reps - rep) * 1.5) if left != float("inf") else 300
        job = {"out": out_dir, "quick": quick, "rep": rep, "port": 29700 + rep, "t_end": time.time() + share - 15,
               "timeout": int(share)}
        t0 = time.time()
        codes = spawn_and_wait(_symm_worker, [(r, world, job) for r in range(world)], job["t_end"], "symm worker")
        log(f"symm rep {rep}: exit {codes} in {time.time() - t0:.1f}s")


def _copy_proc(out_dir, quick, t_end, rep):
    from common import Deadline
    copy_sweeps(out_dir, quick, Deadline(max(1.0, t_end - time.time())), rep)


def copy_reps(out_dir, quick, reps, deadline):
    """The tensor.copy_ sweeps, each in a fresh process (PyTorch's host cost differs between processes)."""
    for rep in range(reps):
        left = deadline.left()
        if left < 10:
            Recorder(out_dir, "torch_copy").error(f"copy rep {rep} skipped: deadline")
            return
        share = min(left, left / (reps - rep) * 1.5) if left != float("inf") else 120
        t0 = time.time()
        t_end = time.time() + share - 5
        codes = spawn_and_wait(_copy_proc, [(out_dir, quick, t_end, rep)], t_end, "copy process")
        log(f"copy rep {rep}: exit {codes} in {time.time() - t0:.1f}s")


def run(out_dir, quick, reps, deadline, parts=("copy", "symm")):
    if "copy" in parts:
        copy_reps(out_dir, quick, reps, deadline)
    if "symm" in parts:
        symm_reps(out_dir, quick, reps, deadline)


def run_nccl_host(out_dir, quick, reps, budget_s, sizes):
    """Eager NCCL auto/auto at small sizes, both transports, in `reps` fresh process launches."""
    import nccl_bench
    t0 = time.time()
    for rep in range(reps):
        left = budget_s - (time.time() - t0)
        if left < 20:
            Recorder(out_dir, "nccl_p2p").error(f"nccl-host rep {rep} skipped: deadline")
            return
        os.environ["ARSIM_PROCESS_REP"] = str(rep)  # Recorder adds process_rep (workers inherit the environment)
        nccl_bench.run(out_dir, quick, transports=("p2p", "shm"), budget_s=left / (reps - rep),
                       isolation="process", configs=[("auto", "auto")], sizes=sizes, launches=("eager",),
                       eager_timing=(10.0, 300))  # as the shared set: about 10 ms per trial, at most 300 calls
    os.environ.pop("ARSIM_PROCESS_REP", None)
