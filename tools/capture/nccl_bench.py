"""NCCL allreduce through torch.distributed, one process per GPU.

NCCL reads NCCL_P2P_DISABLE once per process (cached parameter), but NCCL_ALGO / NCCL_PROTO at every
communicator's tuning step. So one process launch per transport (p2p, shm) is made, and inside it one
fresh NCCL communicator (torch.distributed.new_group) per algo/proto configuration, created with
os.environ set to that configuration. Each record carries `env_confirmed`: whether rank 0's NCCL log
shows the ALGO/PROTO setting being read for that communicator. `--nccl-isolation process` instead
spawns a fresh process pair for every configuration (slower, no reliance on per-communicator reads).
Rank 0 writes records straight to OUT/nccl_<transport>.jsonl, flushed per record.
"""
import glob, json, os, statistics, sys, time

from common import Recorder, graph_gap, log, spawn_and_wait, summarize

K = 20
CONFIGS = [("auto", "auto"), ("ring", "ll"), ("ring", "ll128"), ("ring", "simple"),
           ("tree", "ll"), ("tree", "ll128"), ("tree", "simple")]
NCCL_ALGO = {"ring": "Ring", "tree": "Tree"}
NCCL_PROTO = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
DTYPES = ("bf16", "fp16", "fp32")
TOKENS = (1, 3, 4, 8, 16, 64)
HIDDEN = 7168
SEQ_COUNT = 122   # allreduces per verify pass (61 layers x 2)
# NCCL_SEQ_COUNTS (e.g. 20,61,122): sequences of these many allreduces instead of SEQ_COUNT alone, to tell whether the
# calls of a long graph cost more than those of a short one (NCCL_SEQ_TOKENS: only these token counts, e.g. 1,3)
SEQ_COUNTS = tuple(int(v) for v in os.environ.get("NCCL_SEQ_COUNTS", "").split(",") if v) or (SEQ_COUNT,)
SEQ_TOKENS = tuple(int(v) for v in os.environ.get("NCCL_SEQ_TOKENS", "").split(",") if v) or None
SEQ_WARMUP = 2    # untimed sequence runs / graph replays before timing
SEQ_REPS = 10     # timed sequence runs / graph replays, each with its own event pair


def size_plan(quick, transport, algo, proto, sizes=None):
    """(dtype, bytes) list: bf16 everywhere, fp16/fp32 at a subset of sizes, caps per protocol; or only the bf16
    sizes asked for."""
    if sizes:
        return [("bf16", n) for n in sizes]
    if quick:
        bf = [8, 512, 14336, 43008, 1 << 20]
        other = [512, 43008]
    else:
        bf = sorted(set([8 * 4 ** k for k in range(13)] + [256 << 20] + [t * HIDDEN * 2 for t in TOKENS]))
        other = [8, 128, 2048, 32768, 43008, 524288, 8 << 20, 128 << 20]
    cap = 256 << 20
    if transport == "shm":
        cap = (256 << 20) if (algo, proto) == ("auto", "auto") else (64 << 20)
    if proto == "ll":
        cap = min(cap, (32 << 20) if transport == "p2p" else (8 << 20))
    plan = [("bf16", n) for n in bf if n <= cap]
    plan += [(dt, n) for dt in ("fp16", "fp32") for n in other if n <= cap]
    return plan


def _env_for(algo, proto):
    e = {}
    if algo != "auto":
        e["NCCL_ALGO"] = NCCL_ALGO[algo]
    if proto != "auto":
        e["NCCL_PROTO"] = NCCL_PROTO[proto]
    return e


def worker(rank, world, job):
    import faulthandler
    faulthandler.dump_traceback_later(job["timeout"] - 15, exit=False)
    os.environ.update(job["env"])
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(job["port"])
    import datetime
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dev = torch.device(f"cuda:{rank}")
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev,
                            timeout=datetime.timedelta(seconds=120))
    rec = Recorder(job["out"], f"nccl_{job['tag']}") if rank == 0 else None
    transport, quick = job["transport"], job["quick"]
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    t_end = job["t_end"]

    def agree(i):
        t = torch.tensor([i], dtype=torch.int64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return int(t.item())

    def timed(fn, target_ms=2.0, max_iters=200):
        fn(); fn(); torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        one = max(s.elapsed_time(e), 1e-3)
        iters = agree(int(min(max(target_ms / one, 1), max_iters)))
        ts = []
        for _ in range(3):
            agree(0)
            s.record()
            for _ in range(iters):
                fn()
            e.record(); torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) * 1000.0 / iters)
        return summarize(ts) + (iters,)

    def log_count(pred):
        if rank != 0:
            return None
        n = 0
        for p in glob.glob(job["env"].get("NCCL_DEBUG_FILE", "/nonexistent").replace("%h", "*").replace("%p", str(os.getpid()))):
            try:
                with open(p, errors="replace") as f:
                    n += sum(1 for ln in f if pred(ln))
            except OSError:
                pass
        return n

    def log_lines():
        return log_count(lambda ln: "set by environment to" in ln and ("NCCL_ALGO" in ln or "NCCL_PROTO" in ln))

    def p2p_read_logged():
        """Whether rank 0's NCCL log shows a connection in P2P read mode ("via P2P/.../read"), where the run set
        NCCL_P2P_READ_ENABLE; None otherwise."""
        if "NCCL_P2P_READ_ENABLE" not in job.get("extra_env", {}):
            return None
        n = log_count(lambda ln: "via P2P" in ln and "/read" in ln)
        return None if n is None else n > 0

    def capture_allreduces(x, group, count):
        """Warm NCCL up on a side stream (3 calls), then capture count back-to-back allreduces of x in one CUDA graph."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                dist.all_reduce(x, group=group)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(count):
                dist.all_reduce(x, group=group)
        torch.cuda.synchronize()
        return g

    def measure(group, algo, proto, dtype, nbytes, confirmed, launch, comm):
        esize = torch.tensor([], dtype=tdt[dtype]).element_size()
        elems = max(nbytes // esize, 1)
        x = torch.randn(elems, device=dev).to(tdt[dtype])
        if launch == "eager":
            fn = lambda: dist.all_reduce(x, group=group)
            med, lo, hi, it = timed(fn, *job.get("eager_timing", (2.0, 200)))
        else:
            g = capture_allreduces(x, group, K)
            med, lo, hi, it = timed(g.replay, target_ms=3.0, max_iters=50)
            med, lo, hi = med / K, lo / K, hi / K
            del g
        if rec:
            r = {"kind": "allreduce", "clock": "device_events", "launch": launch, "world": world,
                 "dtype": dtype, "bytes": elems * esize, "impl": "nccl", "algo": algo, "proto": proto,
                 "transport": transport, "us": med, "us_min": lo, "us_max": hi, "iters": it}
            if launch == "cudagraph":
                r["ops_per_graph"] = K
            if confirmed is not None:
                r["env_confirmed"] = confirmed
            r["nccl_comm"] = comm
            if job.get("extra_env"):
                r["nccl_env"] = dict(job["extra_env"])
                if "NCCL_MAX_NCHANNELS" in job["extra_env"]:
                    r["max_channels"] = int(job["extra_env"]["NCCL_MAX_NCHANNELS"])
                read = p2p_read_logged()
                if read is not None:
                    r["p2p_read_logged"] = read
            rec.emit(r)

    def sequence(group, launch):
        """122 back-to-back allreduces (one verify pass; NCCL_SEQ_COUNTS for others). cudagraph: all captured in ONE graph; the graph is
        replayed SEQ_WARMUP times untimed (first launch / upload), then SEQ_REPS times, each replay timed alone
        with its own event pair after an all-ranks agree (ranks start together). eager: the same with the 122
        dist.all_reduce calls issued from Python. us = median over the timed runs (one whole sequence)."""
        warm, reps = (1, 5) if quick else (SEQ_WARMUP, SEQ_REPS)
        for tokens, count in [(t, c) for t in (SEQ_TOKENS or TOKENS) for c in SEQ_COUNTS]:
            if time.time() > t_end:
                if rec:
                    rec.error(f"sequence {launch} {tokens}x{count} skipped: deadline")
                return
            x = torch.randn(tokens, HIDDEN, device=dev).to(torch.bfloat16)
            g = None
            try:
                if launch == "eager":
                    def fn():
                        for _ in range(count):
                            dist.all_reduce(x, group=group)
                else:
                    g = capture_allreduces(x, group, count)
                    fn = g.replay
                for _ in range(warm):  # warm-up (not timed): graph upload / first launch, NCCL lazy setup
                    agree(0)
                    fn()
                    torch.cuda.synchronize()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                ts = []
                for _ in range(reps):
                    agree(0)
                    s.record()
                    fn()
                    e.record()
                    e.synchronize()
                    ts.append(s.elapsed_time(e) * 1000.0)
                med, lo, hi = summarize(ts)
                # diagnostic: the same runs issued back to back between one event pair (pipelined; per sequence)
                agree(0)
                s.record()
                for _ in range(reps):
                    fn()
                e.record()
                e.synchronize()
                b2b = s.elapsed_time(e) * 1000.0 / reps
                if rec:
                    r = {"kind": "allreduce_sequence", "clock": "device_events", "launch": launch,
                         "impl": "nccl", "algo": "auto", "proto": "auto", "transport": transport,
                         "world": world, "dtype": "bf16", "count": count, "tokens": tokens,
                         "hidden": HIDDEN, "bytes": x.numel() * 2, "us": med, "us_min": lo, "us_max": hi,
                         "iters": reps, "warmup_replays": warm, "us_back_to_back": b2b}
                    if job.get("extra_env"):
                        r["nccl_env"] = dict(job["extra_env"])
                    rec.emit(r)
            except Exception as ex:
                if rec:
                    rec.error(f"sequence {launch} {tokens}x{count}", ex)
            finally:
                del g
                torch.cuda.synchronize()

    configs = job["configs"]
    for ci, (algo, proto) in enumerate(configs):
        if time.time() > t_end:
            if rec:
                rec.error(f"config {algo}/{proto} skipped: deadline")
            continue
        t0 = time.time()
        env = _env_for(algo, proto)
        for k in ("NCCL_ALGO", "NCCL_PROTO"):
            os.environ.pop(k, None)
        os.environ.update(env)
        before = log_lines()
        if job.get("env_preset"):
            os.environ.update(env)
        try:
            if job.get("env_preset") or ((algo, proto) == ("auto", "auto") and not env):
                group = None  # the default communicator (created with this config's env already set)
            else:
                group = dist.new_group(list(range(world)), backend="nccl")
            w = torch.ones(16, device=dev)
            dist.all_reduce(w, group=group)  # makes sure the communicator exists (eager init)
            torch.cuda.synchronize()
        except Exception as e:
            if rec:
                rec.error(f"group {algo}/{proto}", e)
            continue
        for k in env:
            os.environ.pop(k, None)
        after = log_lines()
        confirmed = None if not env or before is None else (after is not None and after > before)
        if job.get("env_preset") and env and after is not None:
            confirmed = after > 0
        comm = "process" if job.get("env_preset") else ("default" if group is None else "new_group")
        for launch in (() if job.get("sequence_only") else job.get("launches", ("cudagraph", "eager"))):
            for dtype, nbytes in size_plan(quick, transport, algo, proto, job.get("sizes")):
                if time.time() > t_end:
                    break
                try:
                    measure(group, algo, proto, dtype, nbytes, confirmed, launch, comm)
                except Exception as e:
                    if rec:
                        rec.error(f"allreduce {algo}/{proto} {launch} {dtype} {nbytes}", e)
                    torch.cuda.synchronize()
        if (algo, proto) == ("auto", "auto") and job.get("sequence", True):
            sequence(group, "cudagraph")
            sequence(group, "eager")
        if group is not None:
            try:
                dist.destroy_process_group(group)
            except Exception:
                pass
        if rank == 0:
            log(f"nccl {transport} {algo}/{proto}: {time.time() - t0:.1f}s")
    if rec:
        # the graph gap this process ended in (graph_gap_state.jsonl: it steps after enough graph work)
        rec.guard("graph gap end", graph_gap, rec, f"nccl {transport}: end")
    dist.barrier()
    dist.destroy_process_group()


def run_job(job, world):
    return spawn_and_wait(worker, [(r, world, job) for r in range(world)], job["t_end"], "NCCL worker")


def run(out_dir, quick, transports=("p2p", "shm"), budget_s=None, isolation="group", configs=None,
        sequence_only=False, extra_env=None, sizes=None, launches=("cudagraph", "eager"), eager_timing=None):
    """sequence_only: only the allreduce_sequence records (default communicator, auto/auto), per transport.
    extra_env: NCCL variables set in every NCCL process (recorded in nccl_env); sizes: only these bf16 sizes
    (and no sequences); launches: which of cudagraph / eager to time; eager_timing: (ms per trial, max iterations)
    for eager calls, default (2.0, 200)."""
    import torch
    world = torch.cuda.device_count()
    if world < 2:
        raise RuntimeError("NCCL allreduce needs >= 2 GPUs")
    logdir = os.path.join(out_dir, "nccl_logs")
    os.makedirs(logdir, exist_ok=True)
    cfgs = configs or (CONFIGS[:1] + [CONFIGS[1], CONFIGS[3]] if quick else CONFIGS)
    if sequence_only:
        cfgs, isolation = [("auto", "auto")], "group"
    t_start = time.time()
    budget_s = budget_s or (120 if quick else 600)
    port = 29600
    for ti, transport in enumerate(transports):
        env = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH,TUNING,ENV",
               "NCCL_DEBUG_FILE": os.path.join(logdir, f"nccl_{transport}.%h.%p.log"),
               "NCCL_TOPO_DUMP_FILE": os.path.join(logdir, f"nccl_topo_{transport}.xml"),
               "NCCL_GRAPH_DUMP_FILE": os.path.join(logdir, f"nccl_graph_{transport}.xml")}
        if transport == "shm":
            env.update({"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "0"})
        env.update(extra_env or {})
        # share the remaining budget between the remaining transports
        left = budget_s - (time.time() - t_start)
        share = left / (len(transports) - ti)
        groups = [cfgs] if isolation == "group" else [[c] for c in cfgs]
        for gi, cg in enumerate(groups):
            left = budget_s - (time.time() - t_start)
            t_end = time.time() + (share if isolation == "group" else min(left, share / (len(groups) - gi) * 1.5))
            jenv = dict(env)
            if isolation == "process":
                jenv.update(_env_for(*cg[0]))
            job = {"env": jenv, "env_preset": isolation == "process", "port": port, "out": out_dir, "tag": transport, "transport": transport,
                   "quick": quick, "configs": cg, "t_end": t_end, "timeout": int(t_end - time.time() + 60),
                   "sequence": (isolation == "group" or cg[0] == ("auto", "auto")) and not sizes,
                   "sequence_only": sequence_only, "extra_env": dict(extra_env or {}), "sizes": sizes,
                   "launches": tuple(launches)}
            if eager_timing:
                job["eager_timing"] = tuple(eager_timing)
            port += 1
            t0 = time.time()
            codes = run_job(job, world)
            log(f"nccl job {transport} {cg}: exit {codes} in {time.time() - t0:.1f}s")
            if any(c != 0 for c in codes):
                Recorder(out_dir, f"nccl_{transport}").error(f"nccl job {transport} {cg} exit codes {codes}")
