"""Shared helpers: output records (flushed per record), statistics, sizes, logging."""
import json, os, statistics, sys, time, traceback

DEFAULT_SYSTEM_ID = "h200x2-arsim"


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


class Recorder:
    """Appends JSON records to OUT/<name>.jsonl, one flushed line per record.

    Failures go to OUT/<name>.errors.jsonl, so a failed measurement never stops the run."""

    def __init__(self, out_dir, name):
        os.makedirs(out_dir, exist_ok=True)
        self.path = os.path.join(out_dir, name + ".jsonl")
        self.f = open(self.path, "a")
        self.ef = open(os.path.join(out_dir, name + ".errors.jsonl"), "a")
        self.n = 0
        self.nerr = 0

    def emit(self, rec):
        r = {"system": os.environ.get("ARSIM_SYSTEM_ID", DEFAULT_SYSTEM_ID)}  # read per record: --system-id sets it after import
        if os.environ.get("ARSIM_PROCESS_REP"):  # torch_ops.run_nccl_host: which fresh process launch this is
            r["process_rep"] = int(os.environ["ARSIM_PROCESS_REP"])
        r.update(rec)
        for k in ("us", "us_min", "us_max", "gbps", "gbps_total", "gbps_per_gpu", "one_way_us",
                  "one_way_us_min", "one_way_us_max", "ns_per_step", "ns_per_step_globaltimer", "max_abs_err",
                  "ns_per_iter", "ns_per_iter_min", "ns_per_iter_max", "ns_per_iter_globaltimer", "ns_per_iter_kernel",
                  "kernel_us_block0", "clock_ghz", "cycles_per_iter", "host_issue_us_per_replay",
                  "host_issue_us_per_launch", "us_back_to_back"):
            if isinstance(r.get(k), float):
                r[k] = round(r[k], 4)
        self.f.write(json.dumps(r) + "\n")
        self.f.flush()
        self.n += 1

    def error(self, what, exc=None, **kw):
        r = {"what": what, "error": repr(exc)[:500] if exc is not None else None,
             "trace": traceback.format_exc()[-2000:] if exc is not None else None}
        r.update(kw)
        self.ef.write(json.dumps(r) + "\n")
        self.ef.flush()
        self.nerr += 1
        log("ERROR", what, repr(exc)[:300])

    def guard(self, what, fn, *a, **kw):
        """Run one measurement; on exception log it and carry on."""
        try:
            return fn(*a, **kw)
        except Exception as e:  # noqa: BLE001 - deliberately broad: one failure must not end the run
            self.error(what, e)
            return None


def summarize(trials):
    """trials: per-trial mean times in us -> (median, min, max)."""
    return statistics.median(trials), min(trials), max(trials)


def pow_sizes(lo, hi, factor=2):
    s = lo
    while s <= hi:
        yield s
        s *= factor


def spawn_and_wait(target, arg_tuples, t_end, what):
    """Start one spawned process per argument tuple, wait for all until t_end + 30 s, kill the stuck ones;
    returns their exit codes."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    ps = [ctx.Process(target=target, args=a) for a in arg_tuples]
    for p in ps:
        p.start()
    for p in ps:
        p.join(timeout=max(5, t_end + 30 - time.time()))
    for p in ps:
        if p.is_alive():
            log("killing stuck", what, p.pid)
            p.kill()
            p.join(5)
    return [p.exitcode for p in ps]


class Deadline:
    """Wall-clock budget for a phase: measurements check it and skip what no longer fits."""

    def __init__(self, seconds):
        self.t_end = time.time() + seconds if seconds else None

    def left(self):
        return float("inf") if self.t_end is None else self.t_end - time.time()

    def expired(self, margin=0.0):
        return self.left() <= margin


def torch_graph_gaps(nodes, reps, trials):
    """µs per empty kernel node (torch.cuda._sleep(0)) of a CUDA graph of nodes made now on GPU 0 and replayed reps
    times a trial, one value per trial."""
    import torch
    with torch.cuda.device(0):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(0)
        s.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(nodes):
                torch.cuda._sleep(0)
        g.replay()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        per = []
        for _ in range(trials):
            with torch.cuda.stream(s):
                e0.record(s)
                for _ in range(reps):
                    g.replay()
                e1.record(s)
            e1.synchronize()
            per.append(e0.elapsed_time(e1) * 1000.0 / (reps * nodes))
    return per


def graph_gap(rec, where, nodes=100, reps=40, trials=7):
    """The graph gap per empty kernel node on GPU 0 now, in this process: an empty_kernel record (field state names
    where in the run it was taken). On an H200 it steps from about 0.53 to 0.71 µs once a process has made about five
    graphs or launched about 1,400 (testdata/h200x1-arsim/graph_gap_state.jsonl), so each capture phase
    that times kernels in CUDA graphs says which state its process was in. Uses PyTorch when it is loaded, else CuPy."""
    if "torch" in sys.modules:
        per = torch_graph_gaps(nodes, reps, trials)
    else:
        import cupy as cp
        with cp.cuda.Device(0):
            k = cp.RawKernel(r'extern "C" __global__ void gap_empty() {}', "gap_empty")
            s = cp.cuda.Stream(non_blocking=True)
            k((1,), (32,), (), stream=s)
            s.begin_capture()
            for _ in range(nodes):
                k((1,), (32,), (), stream=s)
            g = s.end_capture()
            g.launch(stream=s)
            s.synchronize()
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            per = []
            for _ in range(trials):
                e0.record(s)
                for _ in range(reps):
                    g.launch(stream=s)
                e1.record(s)
                e1.synchronize()
                per.append(cp.cuda.get_elapsed_time(e0, e1) * 1000.0 / (reps * nodes))
    med, lo, hi = summarize(per)
    rec.emit({"kind": "empty_kernel", "clock": "device_events", "launch": "cudagraph", "mode": "graph_replay",
              "graph_nodes": nodes, "replays": reps, "trials": trials, "blocks": 1, "threads": 32, "prefill_us": 0,
              "us": med, "us_min": lo, "us_max": hi, "state": where})
    log("graph gap", where, f"{med:.3f} us")
