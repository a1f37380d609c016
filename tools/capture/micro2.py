"""micro2: direct measurements of three arsim device parameters that were so far fitted to allreduce data.

  empty_kernel (launch cudagraph / eager back_to_back)  -> gpu.launch_graph
  fence (new kind)                                      -> gpu.fence_sys
  sm_access op read_reduce / read_only_loop             -> gpu.reduce_loop_overhead
plus pointer_chase (host, local, peer) again, for the round trips of the same run.
GPU0 runs everything; GPU1 only holds the peer buffers (NVLink, cudaDeviceEnablePeerAccess).
Every measurement is wrapped by Recorder.guard; all records go to OUT/micro2.jsonl.
"""
import os, statistics, time
import numpy as np

from common import Recorder, log, summarize
import kernels
from micro import Micro, HostBuf

FENCE_VARIANTS = [(0, "store"), (1, "store+fence_sys"), (2, "16x16B+fence_sys"), (3, "store+fence_gpu"),
                  (4, "st_release_sys"), (5, "16x16B")]


class Micro2:
    def __init__(self, out_dir, quick=False, m=None):
        self.m = m or Micro(out_dir, quick)
        self.cp = self.m.cp
        self.quick = quick
        self.rec = Recorder(out_dir, "micro2")
        self.m.rec_sm = self.rec          # pointer_chase of Micro writes here too
        with self.cp.cuda.Device(0):
            self.mod = self.cp.RawModule(code=kernels.MICRO2_SRC, options=("-std=c++17",))
            self.res = self.cp.zeros(2, dtype=self.cp.int64)
        self.s = self.m.streams[0][5]
        self.clk_ghz = None

    def fn(self, name):
        return self.mod.get_function(name)

    # ---------- SM clock actually running (cycles vs %globaltimer over ~10 ms) -------------------
    def calibrate(self, tag):
        cp = self.cp
        vals = []
        with cp.cuda.Device(0):
            for _ in range(3):
                self.fn("clk_cal")((1,), (1,), (np.int64(20_000_000), self.res), stream=self.s)
                self.s.synchronize()
                c, g = (int(x) for x in self.res.get())
                vals.append(c / g)
        ghz = statistics.median(vals)
        self.clk_ghz = ghz
        self.rec.emit({"kind": "device_info", "clock": "sm_clock64", "what": "sm_clock_calibration", "tag": tag,
                       "clock_ghz_measured": ghz, "trials_ghz": vals, "clock_khz_nominal": self.m.clock_khz})
        log("sm clock", tag, f"{ghz:.4f} GHz (nominal {self.m.clock_khz / 1e6:.3f})")
        return ghz

    # ---------- 1. launch gap per kernel node in a CUDA graph ------------------------------------
    def launch_graph(self):
        cp = self.cp
        k, spin, s = self.fn("empty_kernel2"), self.fn("spin_ns"), self.s
        trials = 7
        for blocks, threads in ((1, 32), (1, 512), (36, 512)):
            for K in (20, 100):
                for prefill_us in (0, 3000):
                    def meas(blocks=blocks, threads=threads, K=K, prefill_us=prefill_us):
                        with cp.cuda.Device(0):
                            s.begin_capture()
                            try:
                                for _ in range(K):
                                    k((blocks,), (threads,), (), stream=s)
                            finally:
                                g = s.end_capture()
                            g.launch(stream=s); s.synchronize()
                            R = max(5, (4000 if not self.quick else 1000) // K)
                            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                            ts, hs = [], []
                            for _ in range(trials):
                                if prefill_us:
                                    spin((1,), (1,), (np.int64(prefill_us * 1000),), stream=s)
                                e0.record(s)
                                h0 = time.perf_counter()
                                for _ in range(R):
                                    g.launch(stream=s)
                                hs.append((time.perf_counter() - h0) * 1e6)
                                e1.record(s); e1.synchronize()
                                ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1000.0 / (R * K))
                        med, lo, hi = summarize(ts)
                        rec = {"kind": "empty_kernel", "clock": "device_events", "launch": "cudagraph",
                               "mode": "graph_replay", "graph_nodes": K, "replays": R, "trials": trials,
                               "blocks": blocks, "threads": threads, "prefill_us": prefill_us,
                               "host_issue_us_per_replay": statistics.median(hs) / R,
                               "us": med, "us_min": lo, "us_max": hi}
                        before = os.environ.get("CAPTURE_PHASES_BEFORE")
                        if before is not None:  # run by capture.py all: the phases this process ran before
                            rec["state"] = "micro2 after phases: " + (before or "none")
                        self.rec.emit(rec)
                    self.rec.guard(f"launch_graph K={K} {blocks}x{threads} prefill={prefill_us}", meas)
            # the same back to back, eager
            for prefill_us in (0, 20000):
                def meas_e(blocks=blocks, threads=threads, prefill_us=prefill_us):
                    n = 2000 if not self.quick else 500
                    with cp.cuda.Device(0):
                        k((blocks,), (threads,), (), stream=s); s.synchronize()
                        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                        ts, hs = [], []
                        for _ in range(trials):
                            if prefill_us:
                                spin((1,), (1,), (np.int64(prefill_us * 1000),), stream=s)
                            e0.record(s)
                            h0 = time.perf_counter()
                            for _ in range(n):
                                k((blocks,), (threads,), (), stream=s)
                            hs.append((time.perf_counter() - h0) * 1e6)
                            e1.record(s); e1.synchronize()
                            ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1000.0 / n)
                    med, lo, hi = summarize(ts)
                    self.rec.emit({"kind": "empty_kernel", "clock": "device_events", "launch": "eager",
                                   "mode": "back_to_back", "iters": n, "trials": trials, "blocks": blocks,
                                   "threads": threads, "prefill_us": prefill_us,
                                   "host_issue_us_per_launch": statistics.median(hs) / n,
                                   "us": med, "us_min": lo, "us_max": hi})
                self.rec.guard(f"eager b2b {blocks}x{threads} prefill={prefill_us}", meas_e)

    # ---------- 2. fence cost per target ---------------------------------------------------------
    def fences(self):
        cp = self.cp
        nb = 256 << 10
        hb = HostBuf(nb)
        with cp.cuda.Device(0):
            loc = cp.zeros(nb // 4, dtype=cp.int32)
        targets = [("local", loc.data.ptr), ("host", hb.ptr)]
        peer = None
        if self.m.ndev >= 2 and self.m.peer_ok:
            with cp.cuda.Device(1):
                peer = cp.zeros(nb // 4, dtype=cp.int32)
                cp.cuda.Device(1).synchronize()
            targets.insert(1, ("peer", peer.data.ptr))
        f = self.fn("fence_loop")
        n = 2000
        for tname, base in targets:
            for threads in (1, 32):
                for vid, vname in FENCE_VARIANTS:
                    def meas(tname=tname, base=base, threads=threads, vid=vid, vname=vname):
                        args = (np.uint64(base), np.uint64(base + 4096), np.int32(n), np.int32(vid), self.res)
                        cyc, gns = [], []
                        with cp.cuda.Device(0):
                            f((1,), (threads,), args, stream=self.s); self.s.synchronize()   # warm-up (TLB)
                            for _ in range(7):
                                f((1,), (threads,), args, stream=self.s); self.s.synchronize()
                                c, g = (int(x) for x in self.res.get())
                                cyc.append(c / n); gns.append(g / n)
                        c = statistics.median(cyc)
                        self.rec.emit({"kind": "fence", "clock": "sm_clock64", "target": tname, "variant": vname,
                                       "blocks": 1, "threads": threads, "iters": n, "trials": 7,
                                       "ns_per_iter": c / self.clk_ghz, "ns_per_iter_min": min(cyc) / self.clk_ghz,
                                       "ns_per_iter_max": max(cyc) / self.clk_ghz, "cycles_per_iter": c,
                                       "clock_ghz": self.clk_ghz, "ns_per_iter_globaltimer": statistics.median(gns)})
                    self.rec.guard(f"fence {tname} {vname} {threads}", meas)
        del loc, peer
        hb.free()

    # ---------- 3. pull-reduce loop vs pure remote-read loop -------------------------------------
    def reduce_loop(self):
        cp = self.cp
        small, big = 1 << 20, 32 << 20
        hb = HostBuf(big)
        hb.array(np.uint32)[...] = 0x3f803f80          # bf16 1.0 pairs: 1 + 1 = 2.0 (0x4000)
        with cp.cuda.Device(0):
            loc = cp.full(big // 4, 0x3f803f80, dtype=cp.uint32)
            rloc = cp.full(big // 4, 0x3f803f80, dtype=cp.uint32)
            out = cp.zeros(big // 4, dtype=cp.uint32)
            sink = cp.zeros(256 * 4, dtype=cp.int32)
            cp.cuda.Device(0).synchronize()
        targets = [("host", np.uint64(hb.ptr), "volatile"), ("local", rloc, "plain")]
        peer = None
        if self.m.ndev >= 2 and self.m.peer_ok:
            with cp.cuda.Device(1):
                peer = cp.full(big // 4, 0x3f803f80, dtype=cp.uint32)
                cp.cuda.Device(1).synchronize()
            targets.insert(0, ("peer", peer, "plain"))
        s = self.s
        # (blocks, threads, bytes): 1 MiB as asked; 32 MiB at 1x512 as a check that repeated passes
        # over 1 MiB are not served from a cache
        cfgs = [(1, 32, small), (1, 512, small), (36, 512, small), (1, 512, big)]
        for tname, rem, load in targets:
            sfx = "vol" if load == "volatile" else "plain"
            for blocks, threads, nbytes in cfgs:
                n16 = nbytes // 16
                for op, kname in (("read_reduce", "read_reduce_" + sfx), ("read_only_loop", "read_only_" + sfx)):
                    kern = self.fn(kname)

                    def launch(kern=kern, op=op, rem=rem, blocks=blocks, threads=threads, n16=n16):
                        if op == "read_reduce":
                            kern((blocks,), (threads,), (rem, loc, out, np.int64(n16), self.res), stream=s)
                        else:
                            kern((blocks,), (threads,), (rem, sink, np.int64(n16), self.res), stream=s)

                    def meas(tname=tname, load=load, blocks=blocks, threads=threads, op=op, launch=launch,
                             nbytes=nbytes, n16=n16):
                        with cp.cuda.Device(0):
                            out.fill(0)
                        med, lo, hi, it = self.m.time_events(0, launch, s, trials=5, target_ms=3.0, max_iters=200)
                        cyc = []
                        with cp.cuda.Device(0):
                            for _ in range(5):
                                launch(); s.synchronize()
                                cyc.append(int(self.res.get()[0]))
                        T = blocks * threads
                        iters_per_thread = -(-n16 // T)
                        gbps = nbytes / med / 1e3
                        kern_ns = statistics.median(cyc) / self.clk_ghz
                        r = {"kind": "sm_access", "clock": "device_events", "op": op, "target": tname,
                             "load": load, "blocks": blocks, "threads": threads, "bytes_per_access": 16,
                             "bytes": nbytes, "us": med, "us_min": lo, "us_max": hi, "iters": it, "gbps": gbps,
                             "iters_per_thread": iters_per_thread,
                             "ns_per_iter": 16 * T / gbps,
                             "kernel_us_block0": kern_ns / 1e3,
                             "ns_per_iter_kernel": kern_ns / iters_per_thread, "clock_ghz": self.clk_ghz}
                        if op == "read_reduce":
                            with cp.cuda.Device(0):
                                r["correct"] = bool(cp.all(out[:nbytes // 4] == np.uint32(0x40004000)).get())
                        self.rec.emit(r)
                    self.rec.guard(f"{op} {tname} {blocks}x{threads} {nbytes}", meas)
        del loc, rloc, out, peer
        hb.free()


    # ---------- 1b. the graph gap against what the process holds --------------------------------
    def launch_state(self):
        """The graph gap per empty kernel (1 x 32 threads, graphs of 20 and 100 nodes, behind a 3-ms spin) as the
        process grows: fresh; holding 1, 8, 32 and 96 GiB of device memory (CuPy arrays, touched); after freeing
        them and emptying CuPy's pool; holding 1 GiB of pinned, mapped host memory; after freeing it; with
        the per-block suite's module loaded; then after the process's first kernels that touch memory, in the order
        LAUNCH_STATE_ORDER gives (default dev,load,store): dev, a kernel loading and storing device memory; load, a
        kernel loading a word of pinned host memory; store, a kernel storing one; stream2, the dev kernel on another
        stream; null, on the legacy default stream; other_module, the empty kernel of the micro module; pb_cal_short
        and pb_cal_long, the per-block module's clock calibration kernel for 1,000 or 20 M cycles; stream2_short and
        stream2_long, this module's calibration kernel on another stream for 1,000 or 20 M cycles; pb_cal_long_s2, the
        per-block one on another stream; newmod_cal_long, the per-block one from a module compiled anew (_s2: on another
        stream); newres_cal_long_s2, on another stream writing a fresh array. Each record says
        the state (field state) and what is held."""
        cp = self.cp
        k, spin, s = self.fn("empty_kernel2"), self.fn("spin_ns"), self.s
        GiB = 1 << 30
        held = {"dev": 0, "host": 0}

        def measure(state):
            for K in (20, 100):
                with cp.cuda.Device(0):
                    s.begin_capture()
                    try:
                        for _ in range(K):
                            k((1,), (32,), (), stream=s)
                    finally:
                        g = s.end_capture()
                    g.launch(stream=s); s.synchronize()
                    R = max(5, 4000 // K)
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                    ts = []
                    for _ in range(7):
                        spin((1,), (1,), (np.int64(3000 * 1000),), stream=s)
                        e0.record(s)
                        for _ in range(R):
                            g.launch(stream=s)
                        e1.record(s); e1.synchronize()
                        ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1000.0 / (R * K))
                med, lo, hi = summarize(ts)
                self.rec.emit({"kind": "empty_kernel", "clock": "device_events", "launch": "cudagraph",
                               "mode": "graph_replay", "graph_nodes": K, "replays": R, "trials": 7, "blocks": 1,
                               "threads": 32, "prefill_us": 3000, "us": med, "us_min": lo, "us_max": hi,
                               "state": state, "device_held_bytes": held["dev"], "host_pinned_bytes": held["host"]})
                log("launch_state", state, K, f"{med:.4f} us")

        self.rec.guard("launch_state fresh", measure, "fresh")
        arrays = []
        for gib in (1, 8, 32, 96):
            def grow(gib=gib):
                with cp.cuda.Device(0):
                    a = cp.zeros((gib * GiB - held["dev"]) // 4, dtype=cp.uint32)
                    cp.cuda.Device(0).synchronize()
                arrays.append(a)
                held["dev"] = gib * GiB
                measure(f"device {gib} GiB")
            self.rec.guard(f"launch_state device {gib} GiB", grow)
        arrays.clear()
        cp.get_default_memory_pool().free_all_blocks()
        held["dev"] = 0
        self.rec.guard("launch_state device freed", measure, "device freed")
        bufs = []
        for gib in (1,):
            def pin(gib=gib):
                bufs.append(HostBuf(gib * GiB - held["host"]))
                held["host"] = gib * GiB
                measure(f"pinned {gib} GiB")
            self.rec.guard(f"launch_state pinned {gib} GiB", pin)
        for b in bufs:
            b.free()
        held["host"] = 0
        self.rec.guard("launch_state pinned freed", measure, "pinned freed")

        def module():
            with cp.cuda.Device(0):
                self.pb_mod = cp.RawModule(code=kernels.PERBLOCK_SRC, options=("-std=c++17",))
                self.pb_mod.get_function("pb_ll")
            measure("per-block module loaded")
        self.rec.guard("launch_state module", module)

        touch = cp.RawModule(code=r"""
extern "C" __global__ void touch_dev(unsigned* p) { p[threadIdx.x] += 1u; }
extern "C" __global__ void touch_load(const unsigned* h, unsigned* out) {
  out[threadIdx.x] = *(volatile const unsigned*)(h + threadIdx.x);
}
extern "C" __global__ void touch_store(unsigned* h) { *(volatile unsigned*)(h + threadIdx.x) = 7u; }
""")
        hb = HostBuf(1 << 20)
        with cp.cuda.Device(0):
            dbuf = cp.zeros(1024, dtype=cp.uint32)
        hp = np.uint64(hb.ptr)
        with cp.cuda.Device(0):
            s2 = cp.cuda.Stream(non_blocking=True)
        runs = {"dev": lambda: touch.get_function("touch_dev")((1,), (32,), (dbuf,), stream=s),
                "stream2": lambda: touch.get_function("touch_dev")((1,), (32,), (dbuf,), stream=s2),
                "null": lambda: touch.get_function("touch_dev")((1,), (32,), (dbuf,), stream=cp.cuda.Stream.null),
                "other_module": lambda: self.m.mods[0].get_function("empty_kernel")((1,), (32,), (), stream=s),
                "pb_cal_short": lambda: self.pb_mod.get_function("pb_clk_cal")((1,), (1,), (np.int64(1000), self.res), stream=s),
                "pb_cal_long": lambda: self.pb_mod.get_function("pb_clk_cal")((1,), (1,), (np.int64(20_000_000), self.res), stream=s),
                "stream2_long": lambda: self.fn("clk_cal")((1,), (1,), (np.int64(20_000_000), self.res), stream=s2),
                "stream2_short": lambda: self.fn("clk_cal")((1,), (1,), (np.int64(1000), self.res), stream=s2),
                "pb_cal_long_s2": lambda: self.pb_mod.get_function("pb_clk_cal")((1,), (1,), (np.int64(20_000_000), self.res), stream=s2),
                "newmod_cal_long": lambda: cp.RawModule(code=kernels.PERBLOCK_SRC, options=("-std=c++17",)).get_function("pb_clk_cal")(
                    (1,), (1,), (np.int64(20_000_000), self.res), stream=s),
                "newmod_cal_long_s2": lambda: cp.RawModule(code=kernels.PERBLOCK_SRC, options=("-std=c++17",)).get_function("pb_clk_cal")(
                    (1,), (1,), (np.int64(20_000_000), self.res), stream=s2),
                "newres_cal_long_s2": lambda: self.pb_mod.get_function("pb_clk_cal")(
                    (1,), (1,), (np.int64(20_000_000), cp.zeros(2 * 1024, dtype=cp.int64)), stream=s2),
                "load": lambda: touch.get_function("touch_load")((1,), (32,), (hp, dbuf), stream=s),
                "store": lambda: touch.get_function("touch_store")((1,), (32,), (hp,), stream=s)}
        order = [w for w in os.environ.get("LAUNCH_STATE_ORDER", "dev,load,store").split(",") if w]
        done = []
        for what in order:
            def after(what=what):
                with cp.cuda.Device(0):
                    runs[what]()
                    cp.cuda.Device(0).synchronize()
                done.append(what)
                measure("after kernels: " + "+".join(done))
            self.rec.guard(f"launch_state after {what}", after)
        hb.free()
        for stack in [int(v) for v in os.environ.get("LAUNCH_STATE_STACK", "").split(",") if v]:
            # The context's per-thread stack limit (cudaLimitStackSize = 0), which sizes its local-memory
            # reservation: kernels that need more stack than it grow it at their first launch.
            def grow_stack(stack=stack):
                with cp.cuda.Device(0):
                    cp.cuda.runtime.deviceSetLimit(0, stack)
                    got = cp.cuda.runtime.deviceGetLimit(0)
                log("launch_state stack limit", stack, "->", got)
                measure(f"stack limit {got} B")
            self.rec.guard(f"launch_state stack {stack}", grow_stack)
        if os.environ.get("LAUNCH_STATE_PERBLOCK"):
            # Bisect what a per-block run does to the gap: its set-up, its clock calibration, one of its parts.
            import tempfile
            import perblock
            pb = perblock.PerBlock(tempfile.mkdtemp(), True)
            with cp.cuda.Device(0):
                log("launch_state stack limit before the per-block kernels", cp.cuda.runtime.deviceGetLimit(0))
                for name in ("pb_clk_cal", "pb_ll", "pb_group_barrier", "pb_ll128w"):
                    log("launch_state", name, "local bytes per thread", pb.fn(name).attributes.get("local_size_bytes"))
            measure("per-block set up")
            step = os.environ.get("LAUNCH_STATE_PB_STEP", "")
            if step:
                with cp.cuda.Device(0):
                    for _ in range(3):
                        pb.fn("pb_clk_cal")((1,), (1,), (np.int64(20_000_000), pb.res), stream=pb.s)
                        pb.s.synchronize()
                        if step == "launch_get":
                            pb.res[:2].get()
                measure("per-block calibration kernels, " + step)
            pb.calibrate("start")
            with cp.cuda.Device(0):
                log("launch_state stack limit after pb_clk_cal", cp.cuda.runtime.deviceGetLimit(0))
            measure("per-block clock calibrated")
            getattr(pb, os.environ["LAUNCH_STATE_PERBLOCK"])()
            measure("per-block part " + os.environ["LAUNCH_STATE_PERBLOCK"])
            pb.free()
            measure("per-block freed")


def run(out_dir, quick, m=None):
    t_all = time.time()
    m2 = Micro2(out_dir, quick, m)
    m2.rec.guard("calibrate", m2.calibrate, "start")
    if m2.clk_ghz is None:
        m2.clk_ghz = m2.m.clock_khz / 1e6
    parts = [p for p in os.environ.get("MICRO2_PARTS", "").split(",") if p] or ["launch_graph", "fences", "reduce_loop"]
    for name in parts:
        if name not in ("launch_graph", "fences", "reduce_loop", "launch_state"):
            raise ValueError(f"micro2: unknown part {name!r} (launch_graph, fences, reduce_loop, launch_state)")
        t0 = time.time()
        m2.rec.guard(name, getattr(m2, name))
        log(name, f"{time.time() - t0:.1f}s")
    t0 = time.time()
    m2.rec.guard("pointer_chase", m2.m.pointer_chase)
    log("pointer_chase", f"{time.time() - t0:.1f}s")
    m2.rec.guard("calibrate", m2.calibrate, "end")
    log("micro2 done", f"{time.time() - t_all:.1f}s;", m2.rec.n, "records,", m2.rec.nerr, "errors")
    return m2.m
