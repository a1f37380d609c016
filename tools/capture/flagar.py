"""arsim's own one-shot / two-shot allreduce kernels on vLLM's flag protocol (CuPy, one process).

Method: every GPU of the host is driven from ONE process (cudaDeviceEnablePeerAccess between all
pairs). Each rank r has its own input, output, epoch counters (device memory) and signal block:
in device memory for transport p2p (peers write into it over NVLink), in pinned mapped host memory
for transport host_memory. For timing, K=20 launches of the kernel are captured into a CUDA graph per
GPU (each on its own non-blocking stream); a trial launches every GPU's graph back to back from the
host, `reps` times, and times each GPU's stream with CUDA events: us = elapsed / (reps * K). The
record carries rank 0's time as `us` and every rank's median in `us_per_rank`. The skew between the
graph launches on the two GPUs (a few us) is paid once per trial, not per operation.
Correctness: fresh random bf16 inputs per size, output poisoned (0xFFFF = NaN) before the check run,
compared with the fp32 sum in rank order rounded to bf16 (bitwise equality expected).
"""
import os, statistics, time
import numpy as np

from common import Recorder, graph_gap, log, summarize
import kernels

MAXB, MAXW = 512, 8
SIG_WORDS = 3 * MAXB * MAXW
K = 20


def bf16_to_f32(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(f):
    u = f.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def vllm_blocks(npacks, threads=512, limit=36):
    return max(1, min(limit, (npacks + threads - 1) // threads))


def time_batches(cp, streams, batch, ops, trials=5, devs=None):
    """Per-op time on every GPU of `batch()` (one CUDA-graph launch per GPU of `ops` ops each): reps chosen so a
    trial lasts ~3 ms, then `trials` trials timed with events on each GPU's stream. Returns (per_rank lists of
    us per op, reps)."""
    def sync():
        for s in streams:
            s.synchronize()
    t0 = time.perf_counter(); batch(); sync()
    reps = int(min(max(3e-3 / max(time.perf_counter() - t0, 1e-6), 2), 50))
    devs = devs or list(range(len(streams)))
    evs = []
    for r in range(len(streams)):
        with cp.cuda.Device(devs[r]):
            evs.append((cp.cuda.Event(), cp.cuda.Event()))
    per_rank = [[] for _ in streams]
    for _ in range(trials):
        for r, s in enumerate(streams):
            with cp.cuda.Device(devs[r]):
                evs[r][0].record(s)
        for _ in range(reps):
            batch()
        for r, s in enumerate(streams):
            with cp.cuda.Device(devs[r]):
                evs[r][1].record(s)
        sync()
        for r in range(len(streams)):
            per_rank[r].append(cp.cuda.get_elapsed_time(evs[r][0], evs[r][1]) * 1000.0 / (reps * ops))
    return per_rank, reps


class FlagAllreduce:
    def __init__(self, out_dir, quick=False):
        import cupy as cp
        from micro import HostBuf
        self.cp, self.HostBuf = cp, HostBuf
        self.quick = quick
        self.rec = Recorder(out_dir, "flag_kernels")
        # FLAGAR_ONE_GPU=1: two ranks on GPU 0, each with its own buffers, signals and stream, their kernels running
        # side by side; "peer" memory is then the GPU's own (no NVLink, no PCIe between the ranks)
        self.one_gpu = os.environ.get("FLAGAR_ONE_GPU") == "1"
        # FLAGAR_MID: how the two-shot over GPU memory meets at its mid barrier (records say mid_barrier): default
        # fence_release, a system fence and a release store, acquire polls; volatile, volatile flags and no fence;
        # release, a release store and acquire polls without the separate fence (vLLM's); fence_volatile, a system
        # fence, then volatile flags
        self.mid = os.environ.get("FLAGAR_MID", "fence_release")
        modes = {"volatile": 0, "fence_release": 1, "release": 2, "fence_volatile": 3}
        if self.mid not in modes:
            raise ValueError(f"FLAGAR_MID={self.mid!r}: want one of {', '.join(modes)}")
        self.mid_options = () if self.mid == "fence_release" else (f"-DTWO_SHOT_MID_MODE={modes[self.mid]}",)
        self.world = 2 if self.one_gpu else cp.cuda.runtime.getDeviceCount()
        if self.world < 2:
            raise RuntimeError("flag kernels need >= 2 GPUs (or FLAGAR_ONE_GPU=1)")
        self.world = min(self.world, MAXW)
        for a in ([] if self.one_gpu else range(self.world)):
            with cp.cuda.Device(a):
                for b in range(self.world):
                    if a != b:
                        try:
                            cp.cuda.runtime.deviceEnablePeerAccess(b)
                        except Exception as e:
                            if "ALREADY" not in repr(e).upper():
                                raise
        self.maxbytes = (4 << 20)
        W = self.world
        self.mods, self.streams, self.dev = [], [], []
        hsig = HostBuf(W * SIG_WORDS * 4)
        self.hsig = hsig
        self.hstage = [HostBuf(self.maxbytes) for _ in range(W)]
        self.htmp = [HostBuf(self.maxbytes) for _ in range(W)]
        hsig.array(np.uint32)[...] = 0
        for r in range(W):
            with cp.cuda.Device(self.gpu(r)):
                m = cp.RawModule(code=kernels.FLAG_SRC, options=("-std=c++17",) + self.mid_options)
                d = {"mod": m, "stream": cp.cuda.Stream(non_blocking=True),
                     "in": cp.zeros(self.maxbytes // 2, dtype=cp.uint16),
                     "out": cp.zeros(self.maxbytes // 2, dtype=cp.uint16),
                     "tmp": cp.zeros(self.maxbytes // 2, dtype=cp.uint16),
                     "sig": cp.zeros(SIG_WORDS, dtype=cp.uint32),
                     "err": cp.zeros(1, dtype=cp.int32)}
                # separate epoch counters per (impl, transport) kernel so each sees its own sequence
                d["epoch"] = {k: cp.zeros(MAXB, dtype=cp.uint32) for k in
                              ("one_shot_p2p", "two_shot_p2p", "one_shot_host", "two_shot_host")}
                self.dev.append(d)
        for r in range(W):
            cp.cuda.Device(self.gpu(r)).synchronize()
        self.args = {}
        for transport in ("p2p", "host_memory"):
            for r in range(W):
                tab = np.zeros(5 * MAXW, dtype=np.uint64)
                for p in range(W):
                    tab[0 * MAXW + p] = self.dev[p]["in"].data.ptr
                    tab[1 * MAXW + p] = self.dev[p]["tmp"].data.ptr
                    tab[2 * MAXW + p] = (self.dev[p]["sig"].data.ptr if transport == "p2p"
                                         else hsig.ptr + p * SIG_WORDS * 4)
                    tab[3 * MAXW + p] = self.hstage[p].ptr
                    tab[4 * MAXW + p] = self.htmp[p].ptr
                with cp.cuda.Device(self.gpu(r)):
                    self.args[(transport, r)] = cp.asarray(tab)

    def gpu(self, r):
        """The GPU rank r runs on."""
        return 0 if self.one_gpu else r

    def _launch_one(self, kname, transport, r, npacks, blocks, threads):
        cp = self.cp
        d = self.dev[r]
        f = d["mod"].get_function(kname)
        a = self.args[(transport, r)]
        common = (np.int64(npacks), np.int32(r), np.int32(self.world), d["epoch"][kname], d["err"])
        if transport == "p2p":
            f((blocks,), (threads,), (a, d["out"]) + common, stream=d["stream"])
        else:
            f((blocks,), (threads,), (a, d["in"], d["out"]) + common, stream=d["stream"])

    def _launch_all(self, kname, transport, npacks, blocks, threads):
        for r in range(self.world):
            with self.cp.cuda.Device(self.gpu(r)):
                self._launch_one(kname, transport, r, npacks, blocks, threads)

    def _sync(self):
        for r in range(self.world):
            self.dev[r]["stream"].synchronize()

    def _check(self, nbytes, ref):
        cp = self.cp
        n = nbytes // 2
        errs = []
        exact = True
        for r in range(self.world):
            got = cp.asnumpy(self.dev[r]["out"][:n])
            if not np.array_equal(got, ref):
                exact = False
            g, e = bf16_to_f32(got).astype(np.float64), bf16_to_f32(ref).astype(np.float64)
            errs.append(float(np.nanmax(np.abs(g - e))) if np.all(np.isfinite(g)) else float("inf"))
        return exact, max(errs)

    def measure(self, algo, transport, nbytes, blocks, threads, graph=True):
        cp = self.cp
        W = self.world
        kname = ("one_shot_" if algo == "one_shot" else "two_shot_") + ("p2p" if transport == "p2p" else "host")
        npacks = nbytes // 16
        n = nbytes // 2
        # fresh random inputs (bf16 of N(0,1)), fp32 reference in rank order
        rng = np.random.default_rng(nbytes * 131 + blocks)
        ins = [f32_to_bf16(rng.standard_normal(n).astype(np.float32)) for _ in range(W)]
        acc = np.zeros(n, dtype=np.float32)
        for r in range(W):
            acc = acc + bf16_to_f32(ins[r])
        ref = f32_to_bf16(acc)
        for r in range(W):
            with cp.cuda.Device(self.gpu(r)):
                self.dev[r]["in"][:n] = cp.asarray(ins[r])
                self.dev[r]["out"][:n] = 0xFFFF
                self.dev[r]["err"][...] = 0
                cp.cuda.Device(self.gpu(r)).synchronize()
        # eager correctness run + warm-up
        self._launch_all(kname, transport, npacks, blocks, threads)
        self._sync()
        exact_eager, err_eager = self._check(nbytes, ref)
        launch = "eager"
        graphs = None
        if graph:
            try:
                graphs = []
                for r in range(W):
                    with cp.cuda.Device(self.gpu(r)):
                        s = self.dev[r]["stream"]
                        s.begin_capture()
                        for _ in range(K):
                            self._launch_one(kname, transport, r, npacks, blocks, threads)
                        graphs.append(s.end_capture())
                launch = "cudagraph"
            except Exception as e:
                self.rec.error(f"graph capture {kname}", e)
                for r in range(W):
                    try:
                        s = self.dev[r]["stream"]
                        if s.is_capturing():
                            s.end_capture()
                    except Exception:
                        pass
                graphs = None

        def one_batch():
            if graphs is not None:
                for r in range(W):
                    with cp.cuda.Device(self.gpu(r)):
                        graphs[r].launch(stream=self.dev[r]["stream"])
            else:
                for _ in range(K):
                    self._launch_all(kname, transport, npacks, blocks, threads)

        # poison, warm replay, then check the output again after graph replays
        for r in range(W):
            with cp.cuda.Device(self.gpu(r)):
                self.dev[r]["out"][:n] = 0xFFFF
            cp.cuda.Device(self.gpu(r)).synchronize()
        one_batch(); self._sync()
        exact_g, err_g = self._check(nbytes, ref)
        per_rank, reps = time_batches(cp, [self.dev[r]["stream"] for r in range(W)], one_batch, K,
                                      devs=[self.gpu(r) for r in range(W)])
        errflag = max(int(self.dev[r]["err"].get()[0]) for r in range(W))
        med, lo, hi = summarize(per_rank[0])
        self.rec.emit({"kind": "allreduce", "clock": "device_events", "launch": launch, "world": W,
                       "dtype": "bf16", "bytes": nbytes, "impl": "arsim_flag_" + algo, "algo": algo,
                       "transport": transport, "blocks": blocks, "threads": threads,
                       "us": med, "us_min": lo, "us_max": hi,
                       "us_per_rank": [round(statistics.median(x), 4) for x in per_rank],
                       "ops_per_graph": K, "reps": reps, "gpus": 1 if self.one_gpu else W,
                       **({"mid_barrier": self.mid} if algo == "two_shot" and transport == "p2p" else {}),
                       "correct": bool(exact_eager and exact_g and errflag == 0),
                       "bitwise_equal": bool(exact_eager and exact_g), "max_abs_err": max(err_eager, err_g),
                       "spin_timeout": bool(errflag)})
        if errflag:
            # a timed-out barrier leaves epochs out of step; re-zero every signal and epoch
            self.reset()

    def reset(self):
        cp = self.cp
        self._sync()
        self.hsig.array(np.uint32)[...] = 0
        for r in range(self.world):
            with cp.cuda.Device(self.gpu(r)):
                self.dev[r]["sig"][...] = 0
                for e in self.dev[r]["epoch"].values():
                    e[...] = 0
                self.dev[r]["err"][...] = 0
                cp.cuda.Device(self.gpu(r)).synchronize()


def run(out_dir, quick):
    fa = FlagAllreduce(out_dir, quick)
    if quick:
        sizes = [1024, 14336, 43008, 262144, 4 << 20]
    else:
        sizes = sorted(set([1 << k for k in range(10, 23)] + [14336, 43008, 57344, 114688, 229376, 917504]))
    combos = [(a, t) for t in ("host_memory", "p2p") for a in ("one_shot", "two_shot")]
    t0 = time.time()
    fa.rec.guard("graph gap start", graph_gap, fa.rec, "flag kernels: start")
    try:
        _run(fa, quick, sizes, combos, t0)
    finally:
        fa.rec.guard("graph gap end", graph_gap, fa.rec, "flag kernels: end")


def _run(fa, quick, sizes, combos, t0):
    if fa.one_gpu:
        # both ranks on GPU 0: the block sweep of the kernels exchanging through GPU memory ("p2p" on one GPU)
        for algo in ("one_shot", "two_shot"):
            for nb in [14336, 43008]:
                for bl in [1, 2, 4, 8, 16, 36]:
                    for th in (128, 512):
                        if bl * th * 16 > nb * 4 and bl > 1:
                            continue
                        fa.rec.guard(f"flag one-gpu {algo} {nb} {bl}x{th}", fa.measure, algo, "p2p", nb, bl, th)
        log("flag one-gpu sweep", f"{time.time() - t0:.1f}s")
        return
    # 1) vLLM's launch rule (512 threads, blocks = min(36, packs/512)) at every size
    for algo, transport in combos:
        for nb in sizes:
            npk = nb // 16
            bl = vllm_blocks(npk if algo == "one_shot" else max(1, npk // fa.world))
            fa.rec.guard(f"flag {algo} {transport} {nb} {bl}x512", fa.measure, algo, transport, nb, bl, 512)
        log("flag", algo, transport, f"{time.time() - t0:.1f}s")
    # 2) launch-configuration sweep at a few sizes
    sweep_sizes = [43008] if quick else [14336, 43008, 1 << 20]
    blocks_list = [1, 4, 36] if quick else [1, 2, 4, 8, 16, 36, 72, 132]
    for algo, transport in combos:
        for nb in sweep_sizes:
            for bl in blocks_list:
                for th in ((512,) if quick else (128, 512)):
                    if bl * th * 16 > nb * 4 and bl > 1:   # far more threads than packs: skip
                        continue
                    fa.rec.guard(f"flag sweep {algo} {transport} {nb} {bl}x{th}", fa.measure, algo, transport, nb, bl, th)
    log("flag sweep", f"{time.time() - t0:.1f}s")
