"""Barrier cost versus thread blocks, slot layout and barrier kind (capture.py barrier; CuPy, one process).

Why: PyTorch's symmetric-memory kernels and vLLM's custom allreduce meet their peers once per thread block, each
block through its own signal slot. arsim models a barrier per rank; if the per-block signals (atomic
compare-and-swap in PyTorch, flag stores in vLLM) cost more as blocks are added, for example because the slots of
many blocks share cache lines, the model misses it. This measures it directly: kernel barrier_k (kernels.py:
BARRIER_SRC) runs nb barriers back to back; the time per barrier is the difference between nb = 1 + NB and nb = 1,
divided by NB, so launch and graph costs cancel.

Method as flagar.py: every GPU from one process, peer access on, K launches captured in one CUDA graph per GPU,
each GPU's graph launched back to back, timed per GPU with events over `reps` batches, 5 trials. Records: kind
"barrier", `barrier` cas | flag, `stride_words` 1 (slots packed, 4 B apart: up to 32 per 128-byte line) or 32
(one line per slot), `blocks`, `threads` 512, `barriers_per_launch` nb, `us` per launch (rank 0, median of
trials), `us_per_rank`. Time per barrier = (us at nb = 17 − us at nb = 1) / 16.
"""
import statistics, time
import numpy as np

from common import Recorder, log, summarize
from flagar import time_batches
import kernels

MAXW = 8
MAXB = 128
K = 20
NB = 16


class Barriers:
    def __init__(self, out_dir, quick=False):
        import cupy as cp
        self.cp = cp
        self.quick = quick
        self.rec = Recorder(out_dir, "barrier")
        self.world = min(cp.cuda.runtime.getDeviceCount(), MAXW)
        if self.world < 2:
            raise RuntimeError("barriers need >= 2 GPUs")
        W = self.world
        for a in range(W):
            with cp.cuda.Device(a):
                for b in range(W):
                    if a != b:
                        try:
                            cp.cuda.runtime.deviceEnablePeerAccess(b)
                        except Exception as e:
                            if "ALREADY" not in repr(e).upper():
                                raise
        self.dev = []
        for r in range(W):
            with cp.cuda.Device(r):
                m = cp.RawModule(code=kernels.BARRIER_SRC, options=("-std=c++17",))
                self.dev.append({"f": m.get_function("barrier_k"), "stream": cp.cuda.Stream(non_blocking=True),
                                 "sig": cp.zeros(MAXB * MAXW * 32, dtype=cp.uint32),
                                 "epoch": cp.zeros(MAXB, dtype=cp.uint32), "err": cp.zeros(1, dtype=cp.int32)})
        self.tab = []
        for r in range(W):
            t = np.zeros(MAXW, dtype=np.uint64)
            for p in range(W):
                t[p] = self.dev[p]["sig"].data.ptr
            with cp.cuda.Device(r):
                self.tab.append(cp.asarray(t))
        self.reset()

    def reset(self):
        for r in range(self.world):
            with self.cp.cuda.Device(r):
                self.dev[r]["stream"].synchronize()
                self.dev[r]["sig"][...] = 0
                self.dev[r]["epoch"][...] = 0
                self.dev[r]["err"][...] = 0
                self.cp.cuda.Device(r).synchronize()

    def _launch(self, r, blocks, nb, stride, kind):
        d = self.dev[r]
        d["f"]((blocks,), (512,), (self.tab[r], np.int32(r), np.int32(self.world), np.int32(nb), np.int32(stride),
                                    np.int32(kind), d["epoch"], d["err"]), stream=d["stream"])

    def time_launch(self, blocks, nb, stride, kind):
        cp, W = self.cp, self.world
        self.reset()
        for r in range(W):  # warm-up (eager), both ranks
            with cp.cuda.Device(r):
                self._launch(r, blocks, nb, stride, kind)
        for r in range(W):
            self.dev[r]["stream"].synchronize()
        graphs = []
        for r in range(W):
            with cp.cuda.Device(r):
                s = self.dev[r]["stream"]
                s.begin_capture()
                for _ in range(K):
                    self._launch(r, blocks, nb, stride, kind)
                graphs.append(s.end_capture())

        def batch():
            for r in range(W):
                with cp.cuda.Device(r):
                    graphs[r].launch(stream=self.dev[r]["stream"])

        batch()
        for r in range(W):
            self.dev[r]["stream"].synchronize()
        per_rank, reps = time_batches(cp, [self.dev[r]["stream"] for r in range(W)], batch, K)
        err = max(int(self.dev[r]["err"].get()[0]) for r in range(W))
        med, lo, hi = summarize(per_rank[0])
        return med, lo, hi, [round(statistics.median(x), 4) for x in per_rank], reps, bool(err)

    def measure(self, blocks, stride, kind):
        names = {0: "cas", 1: "flag"}
        for nb in (1, 1 + NB):
            med, lo, hi, pr, reps, timeout = self.time_launch(blocks, nb, stride, kind)
            self.rec.emit({"kind": "barrier", "clock": "device_events", "launch": "cudagraph", "world": self.world,
                           "barrier": names[kind], "stride_words": stride, "blocks": blocks, "threads": 512,
                           "barriers_per_launch": nb, "us": med, "us_min": lo, "us_max": hi, "us_per_rank": pr,
                           "ops_per_graph": K, "reps": reps, "spin_timeout": timeout})


def run(out_dir, quick):
    b = Barriers(out_dir, quick)
    blocks = [1, 4, 16] if quick else [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128]
    t0 = time.time()
    for kind in (0, 1):
        for stride in (1, 32):
            for bl in blocks:
                b.rec.guard(f"barrier kind {kind} stride {stride} blocks {bl}", b.measure, bl, stride, kind)
            log("barrier", kind, stride, f"{time.time() - t0:.1f}s")
