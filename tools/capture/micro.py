"""Copy-engine and SM-level micro-benchmarks with CuPy (one process, every visible GPU).

Subcommands `memcpy` and `sm` of capture.py land here. Every measurement is wrapped by
Recorder.guard: an exception is logged to <name>.errors.jsonl and the sweep goes on.
"""
import collections, json, os, statistics, time
import numpy as np

from common import Recorder, log, pow_sizes, summarize
import kernels

HOST_PORTABLE, HOST_MAPPED = 1, 2
MEMCPY_DEFAULT = 4


def _cp():
    import cupy as cp
    return cp


class HostBuf:
    """Pinned, mapped, portable host memory; `ptr` is valid on every GPU (UVA)."""

    def __init__(self, nbytes):
        cp = _cp()
        self.nbytes = nbytes
        self.ptr = cp.cuda.runtime.hostAlloc(nbytes, HOST_PORTABLE | HOST_MAPPED)
        mem = cp.cuda.UnownedMemory(self.ptr, nbytes, self)
        self.memptr = cp.cuda.MemoryPointer(mem, 0)

    def array(self, dtype, count=None, offset=0):
        cp = _cp()
        count = count if count is not None else (self.nbytes - offset) // np.dtype(dtype).itemsize
        return cp.ndarray((count,), dtype=dtype, memptr=self.memptr + offset)

    def free(self):
        if self.ptr:
            _cp().cuda.runtime.freeHost(self.ptr)
            self.ptr = 0


class Micro:
    def __init__(self, out_dir, quick=False):
        cp = _cp()
        self.cp = cp
        self.quick = quick
        self.ndev = cp.cuda.runtime.getDeviceCount()
        self.rec_mem = Recorder(out_dir, "memcpy")
        self.rec_sm = Recorder(out_dir, "sm")
        self.mods, self.streams = {}, {}
        for d in range(self.ndev):
            with cp.cuda.Device(d):
                self.mods[d] = cp.RawModule(code=kernels.MICRO_SRC, options=("-std=c++17",))
                self.streams[d] = [cp.cuda.Stream(non_blocking=True) for _ in range(10)]
        props = cp.cuda.runtime.getDeviceProperties(0)
        self.clock_khz = props["clockRate"]
        self.sms = props["multiProcessorCount"]
        self.peer_ok = self.enable_peer()
        self.rec_sm.emit({"kind": "device_info", "clock": "host", "ndev": self.ndev, "sms": self.sms,
                          "clock_khz": self.clock_khz, "peer_access": self.peer_ok,
                          "name": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])})

    def enable_peer(self):
        cp = self.cp
        ok = True
        for a in range(self.ndev):
            for b in range(self.ndev):
                if a == b:
                    continue
                with cp.cuda.Device(a):
                    if not cp.cuda.runtime.deviceCanAccessPeer(a, b):
                        ok = False
                        continue
                    try:
                        cp.cuda.runtime.deviceEnablePeerAccess(b)
                    except Exception as e:  # already enabled is fine
                        if "ALREADY" not in repr(e).upper():
                            log("peer access", a, b, repr(e))
        return ok

    def fn(self, dev, name):
        return self.mods[dev].get_function(name)

    # ---------- timing helpers -------------------------------------------------------------
    def time_events(self, dev, op, stream, trials=5, target_ms=3.0, max_iters=200, iters=None):
        """Per-op time in us: warm-up, adaptive iteration count, `trials` trials of iters ops."""
        cp = self.cp
        with cp.cuda.Device(dev):
            op(); stream.synchronize()
            s, e = cp.cuda.Event(), cp.cuda.Event()
            if iters is None:
                s.record(stream); op(); e.record(stream); e.synchronize()
                one = max(cp.cuda.get_elapsed_time(s, e), 1e-4)
                iters = int(min(max(target_ms / one, 1), max_iters))
            ts = []
            for _ in range(trials):
                s.record(stream)
                for _ in range(iters):
                    op()
                e.record(stream); e.synchronize()
                ts.append(cp.cuda.get_elapsed_time(s, e) * 1000.0 / iters)
        return summarize(ts) + (iters,)

    # ---------- copy engine ------------------------------------------------------------------
    def memcpy_sweep(self):
        cp = self.cp
        hi = (16 << 20) if self.quick else (256 << 20)
        dirs = ["h2d", "d2h"] + (["p2p"] if self.ndev >= 2 else [])
        hb = HostBuf(hi)
        with cp.cuda.Device(0):
            d0 = cp.empty(hi, dtype=cp.uint8)
        d1 = None
        if self.ndev >= 2:
            with cp.cuda.Device(1):
                d1 = cp.empty(hi, dtype=cp.uint8)
        s = self.streams[0][0]
        for dr in dirs:
            for n in pow_sizes(4, hi, 2):
                def op(n=n, dr=dr):
                    if dr == "h2d":
                        cp.cuda.runtime.memcpyAsync(d0.data.ptr, hb.ptr, n, MEMCPY_DEFAULT, s.ptr)
                    elif dr == "d2h":
                        cp.cuda.runtime.memcpyAsync(hb.ptr, d0.data.ptr, n, MEMCPY_DEFAULT, s.ptr)
                    else:
                        cp.cuda.runtime.memcpyPeerAsync(d1.data.ptr, 1, d0.data.ptr, 0, n, s.ptr)

                def meas(n=n, dr=dr, op=op):
                    med, lo, hi_, it = self.time_events(0, op, s)
                    self.rec_mem.emit({"kind": "memcpy", "clock": "device_events", "launch": "eager",
                                       "engine": "copy_engine", "api": "cudaMemcpyAsync", "dir": dr, "bytes": n, "streams": 1,
                                       "us": med, "us_min": lo, "us_max": hi_, "iters": it,
                                       "gbps": n / med / 1e3})
                self.rec_mem.guard(f"memcpy {dr} {n}", meas)
        del d0, d1
        hb.free()

    def memcpy_multistream(self):
        """1, 2, 4 concurrent copy-engine transfers of 64 MiB each on separate streams of GPU0."""
        cp = self.cp
        per = (16 << 20) if self.quick else (64 << 20)
        maxs = 4
        hbs = [HostBuf(per) for _ in range(2 * maxs)]
        with cp.cuda.Device(0):
            dbs = [cp.empty(per, dtype=cp.uint8) for _ in range(2 * maxs)]
        pbs = []
        if self.ndev >= 2:
            with cp.cuda.Device(1):
                pbs = [cp.empty(per, dtype=cp.uint8) for _ in range(maxs)]
        dirs = ["h2d", "d2h", "bidir"] + (["p2p"] if self.ndev >= 2 else [])
        main = self.streams[0][9]
        for dr in dirs:
            for ns in (1, 2, 4):
                def op(dr=dr, ns=ns):
                    ev0 = cp.cuda.Event(disable_timing=True)
                    ev0.record(main)
                    evs = []
                    for i in range(ns):
                        for sub in ((0, 1) if dr == "bidir" else (0,)):
                            st = self.streams[0][i + sub * maxs if dr == "bidir" else i]
                            st.wait_event(ev0)
                            k = i + sub * maxs
                            if dr == "h2d" or (dr == "bidir" and sub == 0):
                                cp.cuda.runtime.memcpyAsync(dbs[k].data.ptr, hbs[k].ptr, per, MEMCPY_DEFAULT, st.ptr)
                            elif dr == "d2h" or dr == "bidir":
                                cp.cuda.runtime.memcpyAsync(hbs[k].ptr, dbs[k].data.ptr, per, MEMCPY_DEFAULT, st.ptr)
                            else:
                                cp.cuda.runtime.memcpyPeerAsync(pbs[i].data.ptr, 1, dbs[i].data.ptr, 0, per, st.ptr)
                            e = cp.cuda.Event(disable_timing=True)
                            e.record(st)
                            evs.append(e)
                    for e in evs:
                        main.wait_event(e)

                def meas(dr=dr, ns=ns, op=op):
                    med, lo, hi_, it = self.time_events(0, op, main, trials=5, iters=2)
                    nb = per * ns * (2 if dr == "bidir" else 1)
                    self.rec_mem.emit({"kind": "memcpy", "clock": "device_events", "launch": "eager",
                                       "engine": "copy_engine", "api": "cudaMemcpyAsync", "dir": dr, "bytes": per, "streams": ns,
                                       "transfers": ns * (2 if dr == "bidir" else 1), "bytes_total": nb,
                                       "us": med, "us_min": lo, "us_max": hi_, "gbps_total": nb / med / 1e3})
                self.rec_mem.guard(f"memcpy multistream {dr} {ns}", meas)
        del dbs, pbs
        for h in hbs:
            h.free()

    # ---------- SM accesses --------------------------------------------------------------------
    def sm_access_sweep(self):
        cp = self.cp
        n = (16 << 20) if self.quick else (64 << 20)
        hb = HostBuf(n)
        with cp.cuda.Device(0):
            local = cp.full(n // 4, 0x5a5a5a5a, dtype=cp.uint32)
            sink = cp.zeros(256 * 4, dtype=cp.int32)
        peer = None
        if self.ndev >= 2 and self.peer_ok:
            with cp.cuda.Device(1):
                peer = cp.full(n // 4, 0x5a5a5a5a, dtype=cp.uint32)
        hb.array(np.uint32)[...] = 0x5a5a5a5a
        cp.cuda.Device(0).synchronize()
        targets = [("host", np.uint64(hb.ptr)), ("local", local)] + ([("peer", peer)] if peer is not None else [])
        blocks_list = (1, 4, 16, 66, 132, 264) if self.quick else (1, 2, 4, 8, 16, 33, 66, 132, 264)
        rd, wr = self.fn(0, "sm_read16"), self.fn(0, "sm_write16")
        s = self.streams[0][0]
        n16 = np.int64(n // 16)
        for tname, buf in targets:
            for threads in (128, 512):
                for blocks in blocks_list:
                    for opn in ("read", "write"):
                        def op(blocks=blocks, threads=threads, opn=opn, buf=buf):
                            if opn == "read":
                                rd((blocks,), (threads,), (buf, sink, n16), stream=s)
                            else:
                                wr((blocks,), (threads,), (buf, n16), stream=s)

                        def meas(tname=tname, blocks=blocks, threads=threads, opn=opn, op=op):
                            med, lo, hi_, it = self.time_events(0, op, s, trials=5, iters=1)
                            self.rec_sm.emit({"kind": "sm_access", "clock": "device_events", "op": opn,
                                              "target": tname, "blocks": blocks, "threads": threads,
                                              "bytes_per_access": 16, "bytes": n, "us": med, "us_min": lo,
                                              "us_max": hi_, "gbps": n / med / 1e3})
                        self.rec_sm.guard(f"sm_access {tname} {opn} {blocks}x{threads}", meas)
        del local, peer
        hb.free()

    def pointer_chase(self):
        cp = self.cp
        n = 64 << 20
        stride = (4096 + 64) // 8
        steps = 2000
        hb = HostBuf(n)
        bufs = [("host", hb.array(np.int64))]
        with cp.cuda.Device(0):
            bufs.append(("local", cp.zeros(n // 8, dtype=cp.int64)))
            out = cp.zeros(1, dtype=cp.int64)
            res = cp.zeros(2, dtype=cp.int64)
        if self.ndev >= 2 and self.peer_ok:
            with cp.cuda.Device(1):
                bufs.append(("peer", cp.zeros(n // 8, dtype=cp.int64)))
        chase = self.fn(0, "chase")
        nsteps = (n // 8) // stride
        for tname, arr in bufs:
            def meas(tname=tname, arr=arr):
                dev = 1 if tname == "peer" else 0
                with cp.cuda.Device(dev):
                    order = cp.arange(nsteps, dtype=cp.int64) * stride
                    arr[order] = cp.roll(order, -1)
                    cp.cuda.Device(dev).synchronize()
                with cp.cuda.Device(0):
                    cyc, gns = [], []
                    chase((1,), (1,), (arr, np.int32(steps), out, res))  # warm-up (TLB)
                    cp.cuda.Device(0).synchronize()
                    for _ in range(5):
                        chase((1,), (1,), (arr, np.int32(steps), out, res))
                        cp.cuda.Device(0).synchronize()
                        r = res.get()
                        cyc.append(r[0] / steps)
                        gns.append(r[1] / steps)
                c = statistics.median(cyc)
                self.rec_sm.emit({"kind": "pointer_chase", "clock": "sm_clock64", "target": tname,
                                  "ns_per_step": c / (self.clock_khz / 1e6), "cycles_per_step": c,
                                  "clock_khz": self.clock_khz, "ns_per_step_globaltimer": statistics.median(gns),
                                  "steps": steps, "stride_bytes": stride * 8})
            self.rec_sm.guard(f"pointer_chase {tname}", meas)
        hb.free()

    def flag_pingpong(self):
        if self.ndev < 2:
            return
        cp = self.cp
        n = 2000
        hb = HostBuf(4096)
        hflags = hb.array(np.int32)
        with cp.cuda.Device(0):
            f0 = cp.zeros(64, dtype=cp.int32); err0 = cp.zeros(1, dtype=cp.int32)
        with cp.cuda.Device(1):
            f1 = cp.zeros(64, dtype=cp.int32); err1 = cp.zeros(1, dtype=cp.int32)
        for via in ("host", "peer"):
            def meas(via=via):
                if via == "host":
                    a, b = hflags[0:1], hflags[32:33]   # 128 bytes apart
                else:
                    a, b = f0[0:1], f1[0:1]             # each GPU polls its own HBM, writes the peer's
                res = []
                for _ in range(5):
                    for arr, d in ((a, 0 if via == "peer" else 0), (b, 1 if via == "peer" else 0)):
                        with cp.cuda.Device(d):
                            arr[...] = 0
                    for d in (0, 1):
                        cp.cuda.Device(d).synchronize()
                    s0, s1 = self.streams[0][1], self.streams[1][1]
                    with cp.cuda.Device(1):
                        self.fn(1, "pingpong")((1,), (1,), (b, a, np.int32(n), np.int32(0), err1), stream=s1)
                    with cp.cuda.Device(0):
                        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                        e0.record(s0)
                        self.fn(0, "pingpong")((1,), (1,), (a, b, np.int32(n), np.int32(1), err0), stream=s0)
                        e1.record(s0); e1.synchronize()
                        res.append(cp.cuda.get_elapsed_time(e0, e1) * 1000.0 / n / 2)
                    s1.synchronize()
                if int(err0.get()[0]) or int(err1.get()[0]):
                    raise RuntimeError("pingpong spin limit hit")
                self.rec_sm.emit({"kind": "flag_pingpong", "clock": "device_events", "via": via,
                                  "one_way_us": statistics.median(res), "one_way_us_min": min(res),
                                  "one_way_us_max": max(res), "round_trips": n,
                                  "note": "one thread per GPU; each polls its own flag (volatile) and writes the other's "
                                          "then __threadfence_system; round trip / 2"})
            self.rec_sm.guard(f"flag_pingpong {via}", meas)
        hb.free()

    def empty_kernel(self):
        cp = self.cp
        k = self.fn(0, "empty_kernel")
        s = self.streams[0][0]

        def single():
            ts = []
            with cp.cuda.Device(0):
                k((1,), (32,), (), stream=s); s.synchronize()
                for _ in range(50):
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                    e0.record(s); k((1,), (32,), (), stream=s); e1.record(s); e1.synchronize()
                    ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1000.0)
            med, lo, hi = summarize(ts)
            self.rec_sm.emit({"kind": "empty_kernel", "clock": "device_events", "mode": "single",
                              "us": med, "us_min": lo, "us_max": hi})
        self.rec_sm.guard("empty_kernel single", single)

        def b2b():
            med, lo, hi, it = self.time_events(0, lambda: k((1,), (32,), (), stream=s), s, trials=5, iters=1000)
            self.rec_sm.emit({"kind": "empty_kernel", "clock": "device_events", "mode": "back_to_back",
                              "iters": it, "us": med, "us_min": lo, "us_max": hi})
        self.rec_sm.guard("empty_kernel b2b", b2b)

    def host_link_concurrency(self):
        cp = self.cp
        n = (64 << 20) if self.quick else (256 << 20)
        gpus_sets = [list(range(1))] + ([list(range(self.ndev))] if self.ndev >= 2 else [])
        hbs = [HostBuf(n) for _ in range(self.ndev)]
        dbs, sinks = [], []
        for d in range(self.ndev):
            with cp.cuda.Device(d):
                dbs.append(cp.empty(n, dtype=cp.uint8))
                sinks.append(cp.zeros(1024, dtype=cp.int32))

        def launch(d, what, blocks=132):
            s, s2 = self.streams[d][2], self.streams[d][3]
            with cp.cuda.Device(d):
                if what == "sm_read":
                    self.fn(d, "sm_read16")((264,), (512,), (np.uint64(hbs[d].ptr), sinks[d], np.int64(n // 16)), stream=s)
                elif what == "sm_write":
                    self.fn(d, "sm_write16")((264,), (512,), (np.uint64(hbs[d].ptr), np.int64(n // 16)), stream=s)
                elif what == "sm_bidir":
                    # SM loads of host memory and SM stores to it at once, half the bytes each, 132 blocks
                    # each, on two streams; events time each direction.
                    h = n // 2
                    ev = self.bidir_events[d]
                    ev[0].record(s)
                    self.fn(d, "sm_read16")((blocks,), (512,), (np.uint64(hbs[d].ptr), sinks[d], np.int64(h // 16)), stream=s)
                    ev[1].record(s)
                    ev[2].record(s2)
                    self.fn(d, "sm_write16")((blocks,), (512,), (np.uint64(hbs[d].ptr + h), np.int64(h // 16)), stream=s2)
                    ev[3].record(s2)
                elif what == "ce_h2d":
                    cp.cuda.runtime.memcpyAsync(dbs[d].data.ptr, hbs[d].ptr, n, MEMCPY_DEFAULT, s.ptr)
                elif what == "ce_d2h":
                    cp.cuda.runtime.memcpyAsync(hbs[d].ptr, dbs[d].data.ptr, n, MEMCPY_DEFAULT, s.ptr)
                else:
                    h = n // 2
                    cp.cuda.runtime.memcpyAsync(dbs[d].data.ptr, hbs[d].ptr, h, MEMCPY_DEFAULT, s.ptr)
                    cp.cuda.runtime.memcpyAsync(hbs[d].ptr + h, dbs[d].data.ptr + h, h, MEMCPY_DEFAULT, s2.ptr)

        def sync(devs):
            for d in devs:
                self.streams[d][2].synchronize(); self.streams[d][3].synchronize()

        self.bidir_events = []
        for d in range(self.ndev):
            with cp.cuda.Device(d):
                self.bidir_events.append([cp.cuda.Event() for _ in range(4)])
        parts = [p for p in os.environ.get("HOST_LINK_PARTS", "").split(",") if p]
        configs = []
        for what in parts or ("ce_h2d", "ce_d2h", "ce_bidir", "sm_read", "sm_write", "sm_bidir"):
            for devs in gpus_sets:
                configs.append((what, devs, 132))
            if what == "sm_bidir":
                # fewer blocks each way, on GPU 0 alone
                configs += [(what, [0], b) for b in (1, 2, 4, 8, 16, 32, 66)]
        for what, devs, blocks in configs:
                def meas(what=what, devs=devs, blocks=blocks):
                    for d in devs:
                        launch(d, what, blocks)
                    sync(devs)
                    ts, rd, wr = [], [], []
                    for _ in range(5):
                        t0 = time.perf_counter()
                        for d in devs:
                            launch(d, what, blocks)
                        sync(devs)
                        ts.append((time.perf_counter() - t0) * 1e6)
                        if what == "sm_bidir":
                            ev = self.bidir_events[devs[0]]
                            rd.append(cp.cuda.get_elapsed_time(ev[0], ev[1]) * 1e3)
                            wr.append(cp.cuda.get_elapsed_time(ev[2], ev[3]) * 1e3)
                    med, lo, hi = summarize(ts)
                    rec = {"kind": "host_link_concurrency", "clock": "host", "what": what,
                           "gpus": len(devs), "bytes_per_gpu": n, "us": med, "us_min": lo, "us_max": hi,
                           "gbps_per_gpu": n / med / 1e3, "gbps_total": n * len(devs) / med / 1e3}
                    if what == "sm_bidir":
                        # GPU 0's two directions, each timed on its own stream (device events): half the
                        # bytes each way, `blocks` × 512 threads each.
                        rec["blocks"], rec["threads"] = blocks, 512
                        rec["read_us"], rec["write_us"] = summarize(rd)[0], summarize(wr)[0]
                        rec["gbps_read"] = n / 2 / rec["read_us"] / 1e3
                        rec["gbps_write"] = n / 2 / rec["write_us"] / 1e3
                    self.rec_sm.emit(rec)
                self.rec_sm.guard(f"host_link_concurrency {what} {len(devs)} {blocks}", meas)
        del dbs
        for h in hbs:
            h.free()


    def read_beside_write(self):
        """SM loads of host memory beside SM stores to it, GPU 0: a reader of R blocks × 512 threads loads 32 MiB
        of pinned host memory while a writer of W blocks × 512 threads (W = 0: none) stores 2 × 192 MiB to another
        part of it on a second stream, meant to outlast the reader (a reader slower than about 4 GB/s outlives it:
        compare us with write_us; the loops variant's writer outlasts every reader); CUDA events time each. The read's
        rate beside the writes against its rate alone (W = 0, same R) says what the writes cost the reads: the
        reads' requests go up the same link as the writes' data."""
        cp = self.cp
        n, rbytes, wbytes = 256 << 20, 32 << 20, 192 << 20
        hb = HostBuf(n)
        sink = None
        with cp.cuda.Device(0):
            sink = cp.zeros(1024, dtype=cp.int32)
            ev = [cp.cuda.Event() for _ in range(4)]
            local = cp.empty(wbytes, dtype=cp.uint8)
        s, s2 = self.streams[0][2], self.streams[0][3]
        rd, wr = self.fn(0, "sm_read16"), self.fn(0, "sm_write16")
        rloop = self.fn(0, "read_loop")
        # "loops": one reader block whose loop keeps 1, 4 or 8 loads a thread in flight (read_loop, as place_rw's
        # readers; field loads_in_flight) loading 2 MiB beside W = 0, 2, 8, 132 (8 launches of the writer, so that
        # it outlasts the slowest reader), each a kernel of its own
        # READ_BESIDE_WRITE_VARIANTS, comma-separated: "base" (the default: the writer stores 512-thread blocks to
        # host memory, W = 0, 1, 8, 132), "local" (to the
        # GPU's own memory instead: no PCIe), "t32" (to host memory from 32-thread blocks), "wsweep" (W = 2, 4,
        # 16, 32, 66 at R = 1, 4, 16, 132), "paced" (each writer thread pauses after each store so that the
        # writer stores about PACE_GBPS together, default 10; W = 8, 132; 2 × 24 MiB, still outlasting the loads),
        # "vol" (volatile stores, as the one-shot stages its data; W = 8, 132), "fenced" (volatile stores and a
        # system fence after every 4 of a thread's, W = 8, 132; field write_mode)
        variants = [v for v in os.environ.get("READ_BESIDE_WRITE_VARIANTS", "").split(",") if v] or ["base"]
        variants = ["" if v == "base" else v for v in variants]
        # PACE_GBPS: the paced writers' rates, comma-separated (each a run of the variant; field write_pause_ns);
        # PACED_W: the paced variant's writer blocks (8 and 132 by default)
        paces = [float(v) for v in os.environ.get("PACE_GBPS", "10").split(",") if v]
        paced_ws = tuple(int(v) for v in os.environ.get("PACED_W", "8,132").split(",") if v)
        wrp, wrv = self.fn(0, "sm_write16_paced"), self.fn(0, "sm_write16_vol")
        for variant in variants:
          wthreads = 32 if variant == "t32" else 512
          wdst = np.uint64(local.data.ptr) if variant == "local" else np.uint64(hb.ptr + (64 << 20))
          rs_list = (1, 4, 16, 132) if variant in ("wsweep", "paced", "vol", "fenced") else (1, 2, 4, 8, 16, 32, 66, 132)
          if variant == "loops":
              rs_list = (1, 4, 8)  # here: the reader's loads a thread in flight, one block
          ws_list = {"": (0, 1, 8, 132), "wsweep": (2, 4, 16, 32, 66), "paced": paced_ws, "vol": (8, 132),
                     "fenced": (8, 132), "loops": (0, 2, 8, 132)}.get(variant, (1, 8, 132))
          # READ_BESIDE_WRITE_R, READ_BESIDE_WRITE_W (comma-separated): the readers' blocks and the writer's blocks
          # instead of the variant's lists (not for "loops")
          if variant != "loops":
              rs_list = tuple(int(v) for v in os.environ.get("READ_BESIDE_WRITE_R", "").split(",") if v) or rs_list
              ws_list = tuple(int(v) for v in os.environ.get("READ_BESIDE_WRITE_W", "").split(",") if v) or ws_list
          # READ_BESIDE_WRITE_RT: the reader's threads a block (default 512; not for "loops"), each a run of the
          # variant's configurations
          rts = [int(v) for v in os.environ.get("READ_BESIDE_WRITE_RT", "512").split(",") if v]
          if variant == "loops" or any(v <= 0 or v > 1024 or v % 32 for v in rts):
              rts = [512]
          for R, W, pace_gbps, rt in [(R, W, g, rt) for rt in rts for g in (paces if variant == "paced" else paces[:1])
                                      for R in rs_list for W in ws_list]:
                def meas(R=R, W=W, variant=variant, wthreads=wthreads, wdst=wdst, pace_gbps=pace_gbps, rt=rt):
                    wb = (24 << 20) if variant == "paced" else wbytes
                    pace_ns = int(W * wthreads * 16 / pace_gbps)  # one 16-B store a thread per pause
                    def once(alone=False):
                        with cp.cuda.Device(0):
                            if W:
                                ev[2].record(s2)
                                for _ in range(8 if variant == "loops" else 2):
                                    if variant == "paced":
                                        wrp((W,), (wthreads,), (wdst, np.int64(wb // 16), np.int64(pace_ns * 198 // 100)), stream=s2)
                                    elif variant in ("vol", "fenced"):
                                        wrv((W,), (wthreads,), (wdst, np.int64(wb // 16), np.int32(4 if variant == "fenced" else 0)), stream=s2)
                                    else:
                                        wr((W,), (wthreads,), (wdst, np.int64(wb // 16)), stream=s2)
                                ev[3].record(s2)
                            if alone:
                                s2.synchronize()
                                return
                            ev[0].record(s)
                            if variant == "loops":
                                rloop((1,), (512,), (np.uint64(hb.ptr), sink, np.int64((2 << 20) // 16),
                                                     np.int32({1: 0, 4: 2, 8: 3}[R])), stream=s)
                            else:
                                rd((R,), (rt,), (np.uint64(hb.ptr), sink, np.int64(rbytes // 16)), stream=s)
                            ev[1].record(s)
                        s.synchronize(); s2.synchronize()
                    once()
                    rs, ws, was = [], [], []
                    for _ in range(5):
                        once()
                        rs.append(cp.cuda.get_elapsed_time(ev[0], ev[1]) * 1e3)
                        if W:
                            ws.append(cp.cuda.get_elapsed_time(ev[2], ev[3]) * 1e3)
                            # the same writer with no reader, between the timed pairs: write_alone_us, so that
                            # the writer's rate while the reader ran follows from write_us - write_alone_us
                            once(alone=True)
                            was.append(cp.cuda.get_elapsed_time(ev[2], ev[3]) * 1e3)
                    med, lo, hi = summarize(rs)
                    nb = (2 << 20) if variant == "loops" else rbytes
                    rec = {"kind": "host_link_concurrency", "clock": "device_events", "what": "sm_read_beside_write",
                           "gpus": 1, "bytes_per_gpu": nb, "blocks": 1 if variant == "loops" else R, "threads": rt,
                           "write_blocks": W,
                           "write_threads": wthreads, "write_target": "local" if variant == "local" else "host",
                           "us": med, "us_min": lo, "us_max": hi,
                           "gbps_per_gpu": nb / med / 1e3, "gbps_total": nb / med / 1e3,
                           "gbps_read": nb / med / 1e3}
                    if variant == "loops":
                        rec["loads_in_flight"] = R
                    if W:
                        wmed = summarize(ws)[0]
                        nw = 8 if variant == "loops" else 2
                        rec["write_bytes"], rec["write_us"] = nw * wb, wmed
                        rec["gbps_write"] = nw * wb / wmed / 1e3
                        rec["write_alone_us"] = summarize(was)[0]
                        if variant == "paced":
                            rec["write_pause_ns"] = pace_ns
                        if variant in ("vol", "fenced"):
                            rec["write_mode"] = "volatile_fence4" if variant == "fenced" else "volatile"
                    self.rec_sm.emit(rec)
                self.rec_sm.guard(f"read_beside_write {variant} {R} {W} {pace_gbps:g} {rt}", meas)
        del local
        hb.free()


    def _chase_host(self, n):
        """n bytes of pinned host memory whose first 32 MiB hold a pointer chase (a 4,160 B stride, so each step
        is a line of its own page): (buffer, chase array, stride in words, out, res)."""
        cp = self.cp
        hb = HostBuf(n)
        stride = (4096 + 64) // 8
        arr = hb.array(np.int64, count=(32 << 20) // 8)
        nsteps = ((32 << 20) // 8) // stride
        with cp.cuda.Device(0):
            order = cp.arange(nsteps, dtype=cp.int64) * stride
            arr[order] = cp.roll(order, -1)
            cp.cuda.Device(0).synchronize()
            out = cp.zeros(1, dtype=cp.int64)
            res = cp.zeros(3, dtype=cp.int64)
        return hb, arr, stride, out, res

    def chase_beside_write(self):
        """A dependent load's round trip to pinned host memory (pointer chase, 300 steps a 4,160 B stride, one
        thread) while W = 0, 1, 2, 8 or 132 blocks × 512 threads store to another part of it, or 132 blocks paced
        to about 10 GB/s together (as read_beside_write's writers): what the stores add to a load's round trip."""
        cp = self.cp
        n, wbytes, steps = 256 << 20, 192 << 20, 300
        hb, arr, stride, out, res = self._chase_host(n)
        s, s2, s3 = self.streams[0][2], self.streams[0][3], self.streams[0][1]
        chase, wr, wrp = self.fn(0, "chase"), self.fn(0, "sm_write16"), self.fn(0, "sm_write16_paced")
        rd = self.fn(0, "sm_read16")
        with cp.cuda.Device(0):
            sink = cp.zeros(1024, dtype=cp.int32)
        wdst = np.uint64(hb.ptr + (64 << 20))
        rsrc, rbytes = np.uint64(hb.ptr + (32 << 20)), 16 << 20
        # CHASE_READERS: also run readers of R blocks × 512 threads loading host memory (16 MiB at a time, again
        # while the chase runs) beside the chase and 132 plain writers, R in the list (field read_blocks)
        readers = [int(v) for v in os.environ.get("CHASE_READERS", "").split(",") if v]
        configs = [(0, False, 0, 10.0), (1, False, 0, 10.0), (2, False, 0, 10.0), (8, False, 0, 10.0),
                   (132, False, 0, 10.0), (132, True, 0, 10.0)]
        if readers:
            configs = [(132, False, R, 10.0) for R in readers]
        # CHASE_PACED=W:GBPS,…: instead, W writer blocks paced to about GBPS together (2 × 96 MiB, outlasting the
        # chase), and W unpaced for reference
        paced_list = [v.split(":") for v in os.environ.get("CHASE_PACED", "").split(",") if v]
        if paced_list:
            configs = [(int(w), True, 0, float(g)) for w, g in paced_list]
            configs += [(w, False, 0, 10.0) for w in sorted({c[0] for c in configs})]
        for W, paced, R, gbps in configs:
            def meas(W=W, paced=paced, R=R, gbps=gbps):
                pace_ns = int(W * 512 * 16 / gbps)
                wb = ((96 << 20) if paced_list else (24 << 20)) if paced else wbytes
                def once():
                    with cp.cuda.Device(0):
                        if W:
                            for _ in range(2):
                                if paced:
                                    wrp((W,), (512,), (wdst, np.int64(wb // 16), np.int64(pace_ns * 198 // 100)), stream=s2)
                                else:
                                    wr((W,), (512,), (wdst, np.int64(wb // 16)), stream=s2)
                        if R:
                            for _ in range(8):
                                rd((R,), (512,), (rsrc, sink, np.int64(rbytes // 16)), stream=s3)
                        chase((1,), (1,), (arr, np.int32(steps), out, res), stream=s)
                    s.synchronize(); s2.synchronize(); s3.synchronize()
                    r = res.get()
                    return r[0] / steps, r[1] / steps
                once()
                cyc, gns = [], []
                for _ in range(5):
                    c, g = once()
                    cyc.append(c); gns.append(g)
                c = statistics.median(cyc)
                rec = {"kind": "pointer_chase", "clock": "sm_clock64", "target": "host",
                       "ns_per_step": c / (self.clock_khz / 1e6), "cycles_per_step": c, "clock_khz": self.clock_khz,
                       "ns_per_step_globaltimer": statistics.median(gns), "steps": steps, "stride_bytes": stride * 8,
                       "write_blocks": W}
                if W:
                    rec["write_threads"], rec["write_target"] = 512, "host"
                if paced:
                    rec["write_pause_ns"] = pace_ns
                if R:
                    rec["read_blocks"] = R
                self.rec_sm.emit(rec)
            self.rec_sm.guard(f"chase_beside_write {W} {paced} {R} {gbps:g}", meas)
        hb.free()


    def chase_grid(self):
        """Loads of pinned host memory beside stores to it, over a grid of W storing and R loading blocks (separate
        launches, 512 threads a block, as read_beside_write's): the writers (W blocks, 8 × 192 MiB, outlasting the
        rest) start first, then the readers (R blocks of sm_read16, K launches of rb bytes, sized from a warm-up to
        last about 8 ms), then a one-thread pointer chase (its steps sized to last about half the readers' time).
        Per (W, R): the chase's round trip (kind pointer_chase, write_blocks, read_blocks) and, with R > 0, the
        readers' rate (kind host_link_concurrency, sm_read_beside_write) with the writers' own; so a configuration's
        bytes in flight are its readers' rate times the round trip measured while they load. CHASE_GRID_W and
        CHASE_GRID_R (comma-separated) override the grid; CHASE_GRID_WT and CHASE_GRID_RT (comma-separated, 32–1024)
        the writers' and the readers' threads a block (default 512 each; records write_threads, and threads or
        read_threads); CHASE_GRID_RL (comma-separated, 0, 1, 4, 8) the readers' loads a batch: 0 (the default)
        sm_read16's loop, 1, 4, 8 read_loop's, whose machine code keeps 1, 6, 4 loads a thread in flight (each block its own part of the readers' bytes; records
        loads_in_flight)."""
        cp = self.cp
        n, wbytes, nw = 256 << 20, 192 << 20, 8
        hb, arr, stride, out, res = self._chase_host(n)
        # CHASE_GRID_TARGET=local: the chase walks the same 32 MiB pattern in the GPU's own memory (records target
        # local) while the readers and writers load and store host memory as ever: do loads of GPU memory wait
        # behind the GPU's loads of host memory?
        target = os.environ.get("CHASE_GRID_TARGET", "host")
        if target not in ("host", "local"):
            raise ValueError(f"CHASE_GRID_TARGET={target!r}: host or local")
        if target == "local":
            with cp.cuda.Device(0):
                arr = cp.zeros((32 << 20) // 8, dtype=cp.int64)
                order = cp.arange(((32 << 20) // 8) // stride, dtype=cp.int64) * stride
                arr[order] = cp.roll(order, -1)
                cp.cuda.Device(0).synchronize()
        with cp.cuda.Device(0):
            sink = cp.zeros(1024, dtype=cp.int32)
            ev = [cp.cuda.Event() for _ in range(4)]
        s, s2, s3 = self.streams[0][2], self.streams[0][3], self.streams[0][1]
        chase, wr, rd = self.fn(0, "chase_at"), self.fn(0, "sm_write16"), self.fn(0, "sm_read16")
        rloop = self.fn(0, "read_loop")
        # CHASE_GRID_WRITER=own: the writer kernel's blocks each rewrite their own MiB (write_own, as read_placement's
        # one-launch writers; records write_span own_mib) instead of striding together over 192 MiB (sm_write16)
        writer = os.environ.get("CHASE_GRID_WRITER", "grid")
        if writer not in ("grid", "own"):
            raise ValueError(f"CHASE_GRID_WRITER={writer!r}: grid or own")
        wown = self.fn(0, "write_own")
        # CHASE_GRID_SMS=0,2,126: the chase from each of these SMs in turn (chase_on: the first of 33 × SMs one-thread
        # blocks to land there chases, the rest wait for its claim, up to 2 ms, and return; records chase_sm), and the writer kernel's SMs probed on the
        # idle GPU (where_sm, the same grid; records write_sms)
        pin = [int(x) for x in os.environ.get("CHASE_GRID_SMS", "").split(",") if x] or [None]
        if any(v is not None and not 0 <= v < self.sms for v in pin):
            raise ValueError(f"CHASE_GRID_SMS={pin}: SMs below {self.sms}")
        chase_on, where = self.fn(0, "chase_on"), self.fn(0, "where_sm")
        with cp.cuda.Device(0):
            # a fresh claim word for each pinned chase launch (zeroed here, before any kernel runs)
            claim, wsm = cp.zeros(1 << 16, dtype=cp.int32), cp.zeros(4096, dtype=cp.int32)
        nclaim = [0]
        loop_mode = {1: 0, 4: 2, 8: 3}
        rsrc, wdst = np.uint64(hb.ptr + (32 << 20)), np.uint64(hb.ptr + (64 << 20))

        def grid(name, default):
            v = [int(x) for x in os.environ.get(name, "").split(",") if x]
            return v or default
        lifs = grid("CHASE_GRID_RL", [0])
        bad = [x for x in lifs if x and x not in loop_mode]
        if bad:
            raise ValueError(f"CHASE_GRID_RL: {bad} not among 0, 1, 4, 8")
        confs = [(W, R, wth, rth, lif, at) for W in grid("CHASE_GRID_W", [0, 1, 2, 4, 8, 32, 132])
                 for wth in (grid("CHASE_GRID_WT", [512]) if W else [512])
                 for R in grid("CHASE_GRID_R", [0, 1, 4, 16, 66, 132])
                 for rth in (grid("CHASE_GRID_RT", [512]) if R else [512])
                 for lif in (lifs if R else [0]) for at in pin]
        for W, R, wth, rth, lif, at in confs:
                def meas(W=W, R=R, wth=wth, rth=rth, lif=lif, at=at):
                    def per_block(rb):
                        # read_loop: each block loads n16 16-B words of its own part, a multiple of lif × threads,
                        # within the 32 MiB before the writers' buffer
                        unit = lif * rth
                        return max(unit, min(rb, 32 << 20) // 16 // R // unit * unit)

                    sms_seen = []

                    def once(rb, k, steps):
                        with cp.cuda.Device(0):
                            if W:
                                ev[2].record(s2)
                                for _ in range(nw):
                                    if writer == "own":
                                        wown((W,), (wth,), (wdst, np.int64(65536), np.int32(max(1, wbytes // (W << 20)))),
                                             stream=s2)
                                    else:
                                        wr((W,), (wth,), (wdst, np.int64(wbytes // 16)), stream=s2)
                                ev[3].record(s2)
                            if R:
                                ev[0].record(s3)
                                for _ in range(k):
                                    if lif:
                                        rloop((R,), (rth,), (rsrc, sink, np.int64(per_block(rb)), np.int32(loop_mode[lif])),
                                              stream=s3)
                                    else:
                                        rd((R,), (rth,), (rsrc, sink, np.int64(rb // 16)), stream=s3)
                                ev[1].record(s3)
                            ci = nclaim[0]
                            if at is None:
                                chase((1,), (1,), (arr, np.int32(steps), out, res), stream=s)
                            else:
                                if ci >= claim.size:
                                    raise RuntimeError("chase_grid: out of claim words")
                                nclaim[0] += 1
                                chase_on((33 * self.sms,), (1,), (arr, np.int32(steps), out, res, np.int32(at),
                                                       np.uint64(claim.data.ptr + 4 * ci)), stream=s)
                        s.synchronize(); s2.synchronize(); s3.synchronize()
                        if at is not None and int(claim[ci].get()) != 1:
                            raise RuntimeError(f"chase_grid: no block of the chase kernel landed on SM {at}")
                        rus = cp.cuda.get_elapsed_time(ev[0], ev[1]) * 1e3 if R else 0.0
                        wus = cp.cuda.get_elapsed_time(ev[2], ev[3]) * 1e3 if W else 0.0
                        r = res.get()
                        sms_seen.append(int(r[2]))
                        return rus, wus, r[0] / steps / (self.clock_khz / 1e6), r[1] / steps
                    # warm-up: one reader launch of 16 MiB (fewer where that would take over 8 ms) and 50 steps
                    rb, k = 16 << 20, 1
                    rus, _, rt, _ = once(rb, k, 50)
                    if R and rus > 8000:
                        rb = max(1 << 20, (int(rb * 8000 / rus) >> 20) << 20)
                        rus, _, rt, _ = once(rb, k, 50)
                    if lif:
                        rb = per_block(rb) * 16 * R  # the bytes read_loop loads
                    if R:
                        k = max(1, min(16, int(8000 / max(rus, 1.0))))
                    window = (k * rus if R else 8000.0) / 2
                    steps = max(20, min(300, int(window * 1e3 / max(rt, 500.0))))
                    rs, ws, cs, gs = [], [], [], []
                    for _ in range(5):
                        a, b, c, g = once(rb, k, steps)
                        rs.append(a); ws.append(b); cs.append(c); gs.append(g)
                    c = statistics.median(cs)
                    crec = {"kind": "pointer_chase", "clock": "sm_clock64", "target": target, "ns_per_step": c,
                            "cycles_per_step": c * self.clock_khz / 1e6, "clock_khz": self.clock_khz,
                            "ns_per_step_globaltimer": statistics.median(gs), "steps": steps,
                            "stride_bytes": stride * 8}
                    if W:
                        crec.update({"write_blocks": W, "write_threads": wth, "write_target": "host"})
                        if writer == "own":
                            crec["write_span"] = "own_mib"
                    # the SM the chase ran on in most trials (carried: whether it shares an SM with a writer block)
                    crec["chase_sm"] = collections.Counter(sms_seen).most_common(1)[0][0]
                    if at is not None and W:
                        # where the writer kernel's blocks land: the same grid on the idle GPU
                        with cp.cuda.Device(0):
                            where((W,), (wth,), (wsm,))
                            cp.cuda.Device(0).synchronize()
                            crec["write_sms"] = ",".join(str(int(v)) for v in wsm[:W].get())
                    if R:
                        crec["read_blocks"] = R
                        if rth != 512:
                            crec["read_threads"] = rth
                        if lif:
                            crec["loads_in_flight"] = lif
                    self.rec_sm.emit(crec)
                    if not R:
                        return
                    med, lo, hi = summarize(rs)
                    nb = k * rb
                    rec = {"kind": "host_link_concurrency", "clock": "device_events", "what": "sm_read_beside_write",
                           "gpus": 1, "bytes_per_gpu": nb, "blocks": R, "threads": rth, "write_blocks": W,
                           "us": med, "us_min": lo, "us_max": hi, "gbps_per_gpu": nb / med / 1e3,
                           "gbps_total": nb / med / 1e3, "gbps_read": nb / med / 1e3}
                    if lif:
                        rec["loads_in_flight"] = lif
                    if W:
                        wmed = summarize(ws)[0]
                        rec.update({"write_threads": wth, "write_target": "host", "write_bytes": nw * wbytes,
                                    "write_us": wmed, "gbps_write": nw * wbytes / wmed / 1e3})
                        if writer == "own":
                            rec["write_span"] = "own_mib"
                        if med > wmed:
                            log("chase_grid", f"W={W} R={R}: the readers ({med:.0f} us) outlived the writers ({wmed:.0f} us)")
                    self.rec_sm.emit(rec)
                self.rec_sm.guard(f"chase_grid {W} {R} {wth} {rth} {lif} {at}", meas)
        hb.free()

    @staticmethod
    def write_span(spec=None):
        """The writers' span from PLACE_WRITES (or spec): "" or "own_mib" (each writer rewrites its own MiB), "wide"
        (the writers stride together across 128 MiB), "own:<n>k" (each its own n KiB) or "wide:<n>m" (together
        across n MiB), n a power of two. Returns (wide, span16, the record's fields)."""
        v = os.environ.get("PLACE_WRITES", "") if spec is None else spec
        if v in ("", "own_mib"):
            return 0, 65536, {"write_span": "own_mib"}
        if v == "wide":
            return 1, 1 << 23, {"write_span": "wide"}
        kind, _, size = v.partition(":")
        unit = {"own": ("k", 1 << 10), "wide": ("m", 1 << 20)}.get(kind)
        if unit is None or not size.endswith(unit[0]) or not size[:-1].isdigit():
            raise ValueError(f"PLACE_WRITES={v!r}: own_mib, wide, own:<n>k or wide:<n>m")
        nbytes = int(size[:-1]) * unit[1]
        limit = (1 << 20) if kind == "own" else (256 << 20)
        if nbytes < 4096 or nbytes & (nbytes - 1) or nbytes > limit:
            raise ValueError(f"PLACE_WRITES={v!r}: a power of two from 4 KiB to {limit >> 20} MiB")
        return int(kind == "wide"), nbytes // 16, {"write_span": kind, "write_span_bytes": nbytes}

    def _placer(self, hb, smem, span=None, slots=1):
        """place_rw's launcher on GPU 0 with smem bytes of dynamic shared memory a block: launch(roles, rbytes,
        mode=0, steps=0) returns each block's [SM, role, start ns, end ns] and the writers' [16-B stores, first
        start, last end]. span: write_span's (wide, span16, fields), else PLACE_WRITES's. slots: blocks an SM (the
        grid slots × SMs, roles slots × SMs long, a block's role roles[slots × SM + its arrival on the SM]). Raises
        unless every SM holds exactly slots blocks."""
        cp, sms = self.cp, self.sms
        src, dst = np.uint64(hb.ptr), np.uint64(hb.ptr + (256 << 20))
        f = self.fn(0, "place_rw")
        try:
            f.max_dynamic_shared_size_bytes = max(smem, 1)
        except AttributeError:
            cp.cuda.driver.funcSetAttribute(f.ptr, 8, smem)  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        s = self.streams[0][2]
        with cp.cuda.Device(0):
            roles_d = cp.zeros(sms * slots, dtype=cp.int8)
            claim = cp.zeros(sms, dtype=cp.int32)
            state = cp.zeros(8, dtype=cp.int32)
            out = cp.zeros(4 * sms * slots, dtype=cp.int64)
            wstat = cp.zeros(3, dtype=cp.uint64)
            sink = cp.zeros(1024, dtype=cp.int32)

        wide, span16, _ = span if span is not None else self.write_span()
        wide, span16 = np.int32(wide), np.int64(span16)

        # READ_DEPTH_WRANK=reverse: the striding (wide) writers take their places in the stride from the last SM
        # (records write_rank_order reverse): whether the order the SMs' stores interleave in is what a load waits by
        rank_order = os.environ.get("READ_DEPTH_WRANK", "forward")
        if rank_order not in ("forward", "reverse"):
            raise ValueError(f"READ_DEPTH_WRANK={rank_order!r}: forward or reverse")

        def launch(roles, rbytes, mode=0, steps=0, chase_src=None, rthreads=512):
            with cp.cuda.Device(0), s:
                roles_d.set(np.asarray(roles, dtype=np.int8))
                claim.fill(0); out.fill(0)
                wstat.set(np.array([0, 2**64 - 1, 0], dtype=np.uint64))
                st = np.zeros(8, dtype=np.int32)
                st[2], st[3] = sum(1 for v in roles if v == 2), sum(1 for v in roles if v == 1)
                st[5] = 1 if rank_order == "reverse" else 0
                state.set(st)
                f((sms * slots,), (512,), (src if chase_src is None else chase_src, dst, roles_d, claim, np.int64(rbytes // 16), state, out, sink,
                                   np.int32(mode), np.int32(steps), wstat, wide, np.int32(rthreads), span16, np.int32(slots)),
                  shared_mem=smem, stream=s)
                s.synchronize()
                o, stv, w = out.get().reshape(sms * slots, 4), state.get(), wstat.get()
            if stv[4]:
                raise RuntimeError(f"place_rw: a wait ran out (state {list(stv)})")
            return o, w

        o, _ = launch([0] * (sms * slots), 1 << 20)
        per = collections.Counter(int(v) for v in o[:, 0])
        if len(per) != sms or max(per) >= sms or set(per.values()) != {slots}:
            raise RuntimeError(f"place_rw: blocks did not land {slots} per SM with {smem} B of shared memory: "
                               f"{sorted(per.items())}")
        return launch

    def _place_rec(self, name, writers, rsm, nread, rbytes, ns_list, smem, w=None, span=None):
        ns = statistics.median(ns_list)
        rec = {"kind": "host_link_concurrency", "clock": "sm_clock64", "what": "sm_read_beside_write",
               "gpus": 1, "bytes_per_gpu": rbytes, "blocks": nread, "threads": 512,
               "write_blocks": len(writers), "placement": "by_sm", "read_sm": rsm,
               "write_sms": ",".join(str(v) for v in writers), "write_set": name, "smem_bytes": smem,
               **(span if span is not None else self.write_span())[2],
               "us": ns / 1e3, "us_min": min(ns_list) / 1e3, "us_max": max(ns_list) / 1e3,
               "gbps_per_gpu": nread * rbytes / ns, "gbps_total": nread * rbytes / ns, "gbps_read": nread * rbytes / ns}
        if writers:
            rec["write_threads"], rec["write_target"] = 512, "host"
            if w is not None and w[2] > w[1]:
                rec["gbps_write"] = 16 * float(w[0]) / float(w[2] - w[1])
            if os.environ.get("READ_DEPTH_WRANK") == "reverse" and rec.get("write_span") == "wide":
                rec["write_rank_order"] = "reverse"
        return rec

    def write_system_json(self, name, obj):
        """Writes obj as compact JSON to system/name beside the records (files that are not trace records)."""
        sysdir = os.path.join(os.path.dirname(self.rec_sm.path), "system")
        os.makedirs(sysdir, exist_ok=True)
        with open(os.path.join(sysdir, name), "w") as f:
            json.dump(obj, f, separators=(",", ":"))

    def landing(self):
        """Where a kernel's blocks land on the idle GPU, and where a one-block kernel launched while they run lands
        (kernel where_sm_spin: each block writes its SM, then stays resident 2 ms): a first kernel of W blocks × 512
        threads (W = 1-9, 12, 16, 24, 32, 66, 131, 132) on one stream, then one block × 32 threads on another stream,
        and the reverse order (the one block first), 8 times each. Writes system/landing.json (per W and order, the
        first kernel's SMs by block and the second's SMs, each launch); no records. Whether the SMs a kernel's blocks
        run on, and those of a kernel beside it, follow from its shape (chase_grid's writer kernels and chases, and the
        schedules' kernels, do not record theirs)."""
        cp = self.cp
        fn = self.fn(0, "where_sm_spin")
        s1, s2 = self.streams[0][0], self.streams[0][1]
        out = {}
        for W in (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 66, 131, 132):
            for order in ("wide_first", "one_first"):
                runs = []
                for _ in range(8):
                    with cp.cuda.Device(0):
                        a = cp.full(W, -1, dtype=cp.int32)
                        b = cp.full(1, -1, dtype=cp.int32)
                        cp.cuda.Device(0).synchronize()
                        if order == "wide_first":
                            fn((W,), (512,), (a, np.int64(2_000_000)), stream=s1)
                            fn((1,), (32,), (b, np.int64(200_000)), stream=s2)
                        else:
                            fn((1,), (32,), (b, np.int64(2_000_000)), stream=s2)
                            fn((W,), (512,), (a, np.int64(200_000)), stream=s1)
                        cp.cuda.Device(0).synchronize()
                        runs.append({"blocks": a.get().tolist(), "one": int(b.get()[0])})
                out[f"{W}:{order}"] = runs
        self.write_system_json("landing.json", {"threads": 512, "spin_ns": 2_000_000, "runs": out})
        first = out["8:wide_first"]
        log("landing", "8 blocks:", sorted(first[0]["blocks"]), "then one on", [r["one"] for r in first])

    def line_latency(self):
        """Each line's L2 round trip from one SM (kernel line_lat): 1,024 consecutive 128-B lines of local memory and
        1,024 lines 64 KiB + 128 B apart, 64 dependent volatile loads of a line's first word each, from SMs 0, 33, 66,
        99 and the last, a trial each after a warm-up pass. Writes system/line_latency.json (cycles per load, by SM and
        line; the SM clock in kHz); no records. Whether a flag's round trip in GPU memory is one number, or two by
        where its line lies relative to the SM (the L2's two halves)."""
        cp = self.cp
        n = 80 << 20
        with cp.cuda.Device(0):
            buf = cp.zeros(n // 8, dtype=cp.int64)
            offs = cp.asarray([l * 16 for l in range(1024)] + [l * (65664 // 8) for l in range(1024)], dtype=cp.int64)
            res = cp.zeros(2 * 2048, dtype=cp.int64)
            claim = cp.zeros(1, dtype=cp.int32)
        k = self.fn(0, "line_lat")
        reps, dump = 64, []
        sms = sorted({0, 33, 66, 99, self.sms - 1})
        for sm in sms:
            def meas(sm=sm):
                with cp.cuda.Device(0):
                    for _ in range(2):  # a warm-up pass (TLB, L2), then the one kept
                        claim.fill(0)
                        k((2 * self.sms,), (32,), (buf, offs, np.int32(2048), np.int32(reps), np.int32(sm), claim, res))
                        cp.cuda.Device(0).synchronize()
                    r = res.get().reshape(2048, 2)
                dump.append({"sm": sm, "clock_khz": self.clock_khz, "reps": reps,
                             "offsets_bytes": [int(o) * 8 for o in offs.get()],
                             "cycles_per_load": [float(c) / reps for c in r[:, 0]]})
                c = sorted(float(x) / reps for x in r[:, 0])
                log("line_latency sm", sm, "cycles per load: p10", round(c[204]), "median", round(c[1024]),
                    "p90", round(c[1843]))
            self.rec_sm.guard(f"line_latency sm {sm}", meas)
        self.write_system_json("line_latency.json", dump)

    def line_place(self):
        """Whether a flag's place in the L2 (line_latency's two halves) costs what quiet loads show: in one allocation
        of local memory, each of 256 lines timed from SM 33 and SM 99 (line_lat; the two see opposite halves), each
        line called near 33 or near 99 by which SM loads it faster; then atomics on each line from SM 33
        (line_atomic_lat), and a ping-pong between the first blocks on SMs 33 and 99 (pp_place, 2,000 round trips)
        with its two flags (the one SM 33 polls, the one SM 99 polls) on lines near 33 / near 33, near 99 / near 99,
        near each's poller and near each's partner, three pairs of lines each; and the same between SMs 33 and 131
        (one half's SMs). Writes system/line_place.json; no records."""
        cp = self.cp
        n, nl, reps = 1 << 20, 256, 64
        with cp.cuda.Device(0):
            buf = cp.zeros(n // 8, dtype=cp.int64)
            offs = cp.asarray([l * 16 for l in range(nl)], dtype=cp.int64)
            res = cp.zeros(2 * nl, dtype=cp.int64)
            claim = cp.zeros(2, dtype=cp.int32)
            out = cp.zeros(1, dtype=cp.int64)
            err = cp.zeros(1, dtype=cp.int32)
        lat, at, pp = self.fn(0, "line_lat"), self.fn(0, "line_atomic_lat"), self.fn(0, "pp_place")
        grid = (2 * self.sms,)

        def per_line(kernel, sm):
            with cp.cuda.Device(0):
                for _ in range(2):
                    claim.fill(0)
                    kernel(grid, (32,), (buf, offs, np.int32(nl), np.int32(reps), np.int32(sm), claim, res))
                    cp.cuda.Device(0).synchronize()
                return [float(c) / reps for c in res.get().reshape(nl, 2)[:, 0]]
        dump = {"clock_khz": self.clock_khz, "lines_bytes": [l * 128 for l in range(nl)]}
        dump["load_33"], dump["load_99"] = per_line(lat, 33), per_line(lat, 99)
        dump["atomic_33"], dump["atomic_99"] = per_line(at, 33), per_line(at, 99)
        near33 = [l for l in range(nl) if dump["load_33"][l] < dump["load_99"][l] - 10]
        near99 = [l for l in range(nl) if dump["load_99"][l] < dump["load_33"][l] - 10]
        log("line_place: lines near 33", len(near33), "near 99", len(near99))
        e0 = [1]
        cases = []
        for partner in (99, 131):
            for name, la, lb in (("a_near_a", near33, near33), ("both_near_b", near99, near99),
                                 ("each_near_poller", near33, near99), ("each_near_partner", near99, near33)):
                for k in range(3):
                    if len(la) < 8 or len(lb) < 8:
                        continue
                    a, b = la[2 * k], lb[2 * k + 1]
                    if a == b:
                        continue
                    vals = []
                    for _ in range(5):
                        with cp.cuda.Device(0):
                            claim.fill(0)
                            err.fill(0)
                            pp(grid, (32,), (buf, np.int64(a * 128), np.int64(b * 128), np.int32(33), np.int32(partner),
                                             np.int32(2000), np.uint32(e0[0]), claim, err, out))
                            e0[0] += 2000
                            cp.cuda.Device(0).synchronize()
                            vals.append(float(out.get()[0]) / 2000 / 2)
                    cases.append({"partner_sm": partner, "case": name, "line_a": a, "line_b": b,
                                  "spin_timeout": bool(int(err.get()[0])),
                                  "one_way_cycles": statistics.median(vals)})
                    log("line_place", partner, name, a, b, round(statistics.median(vals)))
        dump["pingpong"] = cases
        self.write_system_json("line_place.json", dump)

    def line_atomics(self, offs, reps=64):
        """64 dependent atomicAdd(0)s from SM 33 (line_atomic_lat) on the word at each of offs (in 8-B words) of a
        64 MiB allocation of local memory: the allocation's address modulo 2 MiB and the cycles per atomic at each."""
        cp = self.cp
        with cp.cuda.Device(0):
            buf = cp.zeros((64 << 20) // 8, dtype=cp.int64)
            d_offs = cp.asarray(offs, dtype=cp.int64)
            res = cp.zeros(2 * len(offs), dtype=cp.int64)
            claim = cp.zeros(1, dtype=cp.int32)
        at = self.fn(0, "line_atomic_lat")
        with cp.cuda.Device(0):
            for _ in range(2):
                claim.fill(0)
                at((2 * self.sms,), (32,), (buf, d_offs, np.int32(len(offs)), np.int32(reps), np.int32(33), claim, res))
                cp.cuda.Device(0).synchronize()
            cyc = [float(c) / reps for c in res.get().reshape(len(offs), 2)[:, 0]]
        return int(buf.data.ptr) % (2 << 20), cyc

    def write_line_atomics(self, name, extra, base_mod, cyc):
        """Logs the spread of line_atomics' cycles and writes them to system/<name>.json with extra."""
        c = sorted(cyc)
        log(f"{name}: cycles p10", round(c[len(c) // 10]), "median", round(c[len(c) // 2]), "p90", round(c[9 * len(c) // 10]))
        self.write_system_json(f"{name}.json", {"clock_khz": self.clock_khz, "sm": 33, "base_mod_2mib": base_mod, **extra,
                                                "cycles_per_atomic": cyc})

    def atomic_pages(self):
        """Local atomics by page (line_atomics): the first line of each 4 KiB page of a 64 MiB allocation of local
        memory (16,384 pages). Writes system/atomic_pages.json; no records. Which address bits make a line's atomics
        slow (line_place.json: 158 against 255 ns, pages alternating by two)."""
        base_mod, cyc = self.line_atomics([pg * 512 for pg in range(16384)])
        self.write_line_atomics("atomic_pages", {"page_bytes": 4096}, base_mod, cyc)

    def atomic_lines(self):
        """Local atomics by line (line_atomics): every 128-B line of the first 16 4 KiB pages of a 64 MiB allocation
        of local memory (512 lines), and every 32-B sector of the first two lines of the first four pages. Writes
        system/atomic_lines.json; no records. Whether address bits 7-11 take part in the parity that makes a word's
        atomics slow (atomic_pages.json: bits 12, 13, 15, 17 and 19 within a 2 MiB page, first lines only)."""
        offs = [(pg * 4096 + ln * 128) // 8 for pg in range(16) for ln in range(32)]
        offs += [(pg * 4096 + ln * 128 + sec * 32) // 8 for pg in range(4) for ln in range(2) for sec in range(4)]
        base_mod, cyc = self.line_atomics(offs)
        self.write_line_atomics("atomic_lines", {"byte_offsets": [o * 8 for o in offs]}, base_mod, cyc)

    def pp_pages(self):
        """Whether plain flags pay for the page that makes atomics slow (atomic_pages.json: 163 or 257 ns by page):
        in one 2-MiB-aligned allocation of local memory, each of its first eight 4 KiB pages' first line timed with
        64 dependent atomics from SM 33 (line_atomic_lat) and called fast or slow; then ping-pongs (pp_place, 2,000
        round trips, median of five runs) between the first blocks on SM 33 and SM 131, and on SM 33 and SM 99, with
        the two flags on lines of fast / fast, slow / slow, fast / slow and slow / fast pages (SM 33's polled flag
        first), two pairs of lines each. Writes system/pp_pages.json; no records."""
        cp = self.cp
        n = 4 << 20
        with cp.cuda.Device(0):
            buf = cp.zeros(n // 8, dtype=cp.int64)
            offs = cp.asarray([pg * 512 for pg in range(8)], dtype=cp.int64)
            res = cp.zeros(16, dtype=cp.int64)
            claim = cp.zeros(2, dtype=cp.int32)
            out = cp.zeros(1, dtype=cp.int64)
            err = cp.zeros(1, dtype=cp.int32)
        at, pp = self.fn(0, "line_atomic_lat"), self.fn(0, "pp_place")
        grid = (2 * self.sms,)
        with cp.cuda.Device(0):
            for _ in range(2):
                claim.fill(0)
                at(grid, (32,), (buf, offs, np.int32(8), np.int32(64), np.int32(33), claim, res))
                cp.cuda.Device(0).synchronize()
            cyc = [float(c) / 64 for c in res.get().reshape(8, 2)[:, 0]]
        mid = (min(cyc) + max(cyc)) / 2
        fast = [pg for pg in range(8) if cyc[pg] < mid]
        slow = [pg for pg in range(8) if cyc[pg] >= mid]
        log("pp_pages: atomic cycles by page", [round(c) for c in cyc], "fast", fast, "slow", slow)
        dump = {"clock_khz": self.clock_khz, "base_mod_2mib": int(buf.data.ptr) % (2 << 20), "atomic_cycles": cyc,
                "fast_pages": fast, "slow_pages": slow, "pingpong": []}
        e0 = [1]
        if len(fast) >= 2 and len(slow) >= 2:
            for partner in (131, 99):
                for name, pa, pb in (("fast_fast", fast, fast), ("slow_slow", slow, slow), ("fast_slow", fast, slow),
                                     ("slow_fast", slow, fast)):
                    for k in range(2):
                        a = pa[k] * 4096 + 256 * (2 * k)
                        b = pb[(k + 1) % 2] * 4096 + 256 * (2 * k + 1)
                        vals = []
                        for _ in range(5):
                            with cp.cuda.Device(0):
                                claim.fill(0)
                                err.fill(0)
                                pp(grid, (32,), (buf, np.int64(a), np.int64(b), np.int32(33), np.int32(partner),
                                                 np.int32(2000), np.uint32(e0[0]), claim, err, out))
                                e0[0] += 2000
                                cp.cuda.Device(0).synchronize()
                                vals.append(float(out.get()[0]) / 2000 / 2)
                        dump["pingpong"].append({"partner_sm": partner, "case": name, "offset_a": a, "offset_b": b,
                                                 "spin_timeout": bool(int(err.get()[0])),
                                                 "one_way_cycles": statistics.median(vals)})
                        log("pp_pages", partner, name, a, b, round(statistics.median(vals)))
        self.write_system_json("pp_pages.json", dump)

    def sm_groups(self):
        """Which SMs share a GPC: a thread-block cluster's blocks run on one GPC, so every SM a cluster's blocks land
        on is in that cluster's GPC (kernel cluster_sm: clusters of 8 blocks, at most two blocks an SM). Launches of
        8 to 528 blocks, each block resident 0, 20 µs or 200 µs, 4 times each; SMs joined by any cluster form a group
        (union-find). Writes system/sm_groups.json (the groups, sorted by their least SM; launches, clusters and SMs
        seen) and keeps the groups for read_depth's READ_DEPTH_SETS=groups; no records."""
        cp = self.cp
        try:
            with cp.cuda.Device(0):
                fn = cp.RawModule(code=kernels.CLUSTER_SRC, options=("-std=c++17",)).get_function("cluster_sm")
        except Exception as e:  # noqa: BLE001
            raise RuntimeError(f"sm_groups: the cluster kernel did not build: {e!r}")
        parent = list(range(self.sms))

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a
        launches, clusters, seen = 0, 0, set()
        for spin in (0, 20000, 200000):
            for g in (8, 16, 32, 64, 128, 264, 528):
                for _ in range(4):
                    with cp.cuda.Device(0):
                        out = cp.full(4 * g, -1, dtype=cp.int32)
                        fn((g,), (1024,), (out, np.uint64(spin)))
                        cp.cuda.Device(0).synchronize()
                        o = out.get().reshape(-1, 4)
                    launches += 1
                    if (o[:, 2] != 8).any() or (o[:, 0] < 0).any() or (o[:, 0] >= self.sms).any():
                        raise RuntimeError(f"sm_groups: {g} blocks: cluster sizes {sorted(set(o[:, 2].tolist()))}, "
                                           f"SMs {int(o[:, 0].min())}..{int(o[:, 0].max())}: not clusters of 8 on "
                                           f"SMs below {self.sms}")
                    by = collections.defaultdict(set)
                    for sm, cid, _, _ in o.tolist():
                        by[cid].add(sm)
                    for sms in by.values():
                        clusters += 1
                        first = min(sms)
                        seen.update(sms)
                        for v in sms:
                            parent[find(v)] = find(first)
        comp = collections.defaultdict(list)
        for v in sorted(seen):
            comp[find(v)].append(v)
        groups = sorted(comp.values())
        self.groups = groups
        log("sm_groups", len(groups), "groups of", [len(x) for x in groups], "SMs;", len(seen), "SMs seen,",
            clusters, "clusters in", launches, "launches")
        self.write_system_json("sm_groups.json", {"cluster_blocks": 8, "launches": launches, "clusters": clusters,
                                                  "sms_seen": len(seen), "sms": self.sms, "groups": groups})

    def halves(self):
        """The chip's two halves of SMs, with any SM capture: sm_groups, then read_placement's pair scan (SM 0 and
        each other SM storing across 128 MiB, the last SM's thread 0 chasing, about 10 s; its records kept), split
        at the gap between the groups' median chases (halves.py). Writes system/measurements.halves.json, which
        validate reads beside the capture's measurements.jsonl (docs/TRACE_FORMAT.md); a scan without two clear
        bands is an error of this part and writes nothing."""
        import halves as split_halves
        self.sm_groups()
        keys = {"READ_PLACEMENT": "depth", "READ_DEPTH_SPANS": "wide", "READ_DEPTH_MODES": "1", "READ_DEPTH_NS": "2",
                "READ_DEPTH_STRIDES": ",".join(str(v) for v in range(1, self.sms - 1)),
                "READ_DEPTH_READERS": str(self.sms - 1), "READ_DEPTH_SETS": "", "READ_DEPTH_BASES": "",
                "READ_DEPTH_UNROLL": "", "READ_DEPTH_CHASE": "", "READ_DEPTH_RTHREADS": "", "READ_DEPTH_CROWD": ""}
        saved = {k: os.environ.get(k) for k in keys}
        start = os.path.getsize(self.rec_sm.path) if os.path.exists(self.rec_sm.path) else 0
        for k, v in keys.items():
            if v:
                os.environ[k] = v
            else:
                os.environ.pop(k, None)
        try:
            self.read_placement()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        with open(self.rec_sm.path) as f:
            f.seek(start)
            recs = [json.loads(line) for line in f if line.strip()]
        out = split_halves.split(recs, self.groups, self.sms, "wide")
        self.write_system_json("measurements.halves.json", out)
        log("halves", len(out["sm0_half"]), "SMs in SM 0's half:", out["readers"])

    def read_placement(self):
        """Loads of host memory by SM, beside stores to it from chosen SMs, GPU 0: one launch of one block × 512
        threads per SM (place_rw; 120 KiB of dynamic shared memory keeps a second block off an SM), each block
        taking the role its SM is given: writers store to host memory until the readers are done, readers start
        20 us after every writer runs and load 2 MiB each (1 MiB when many read at once), timing their own loads.
        READ_PLACEMENT=depth runs read_depth instead. Writer sets: none, SM 0, SMs 0-1, 0-7, eight SMs 16 apart,
        every SM but the reader's; one reader at a time on each other SM; then readers on every other SM at once
        beside SMs 0-1 and beside the eight spread SMs (a record per reading block, `gbps_read` its own rate).
        Whether a load waits behind the stores, and how long, by where its SM lies (read_beside_write's loads
        depend on how many blocks store and load, not only whether the link is full)."""
        if os.environ.get("READ_PLACEMENT") == "depth":
            return self.read_depth()
        sms, smem = self.sms, 120 << 10
        hb = HostBuf(512 << 20)
        launch = self._placer(hb, smem)
        spread = list(range(0, sms, 16))[:8]
        sets = [("none", []), ("sm0", [0]), ("sm0-1", [0, 1]), ("sm0-7", list(range(8))), ("spread8", spread),
                ("all_but_reader", None)]
        for name, writers in sets:
            def meas(name=name, writers=writers):
                for r in range(sms):
                    ws = [w for w in range(sms) if w != r] if writers is None else writers
                    if r in ws:
                        continue
                    roles = [0] * sms
                    for w in ws:
                        roles[w] = 1
                    roles[r] = 2
                    times = []
                    for trial in range(4):
                        o, _ = launch(roles, 2 << 20)
                        row = [v for v in o if int(v[0]) == r][0]
                        if trial:
                            times.append(float(row[3] - row[2]))
                    rec = self._place_rec(name, ws, r, 1, 2 << 20, times, smem)
                    del rec["smem_bytes"]
                    self.rec_sm.emit(rec)
            self.rec_sm.guard(f"read_placement {name}", meas)
        for name, writers in (("sm0-1", [0, 1]), ("spread8", spread)):
            def meas(name=name, writers=writers):
                roles = [2] * sms
                for w in writers:
                    roles[w] = 1
                per = {}
                for trial in range(4):
                    o, _ = launch(roles, 1 << 20)
                    if trial:
                        for v in o:
                            if int(v[1]) == 2:
                                per.setdefault(int(v[0]), []).append(float(v[3] - v[2]))
                for r, times in sorted(per.items()):
                    rec = self._place_rec(name, writers, r, sms - len(writers), 1 << 20, times, smem)
                    del rec["smem_bytes"]
                    rec["gbps_per_gpu"] = rec["gbps_total"] = rec["gbps_read"] = (1 << 20) / statistics.median(times)
                    self.rec_sm.emit(rec)
            self.rec_sm.guard(f"read_placement crowd {name}", meas)
        hb.free()

    def _chase_buffer(self):
        """read_placement's pinned buffer (512 MiB): its first 8 MiB a pointer chain 4,160 B a step (each 8-B word
        the index of the next), the writers' region 256 MiB in. Returns the buffer, the step in words and the
        chain's word indices (on GPU 0)."""
        cp = self.cp
        hb = HostBuf(512 << 20)
        stride = (4096 + 64) // 8
        arr = hb.array(np.int64, count=(8 << 20) // 8)
        with cp.cuda.Device(0):
            order = cp.arange(((8 << 20) // 8) // stride, dtype=cp.int64) * stride
            arr[order] = cp.roll(order, -1)
            cp.cuda.Device(0).synchronize()
        return hb, stride, order

    def read_cores(self):
        """Readers beside storing blocks on the same SMs or on others (MICRO_PARTS=read_cores): place_rw with two
        blocks an SM (100 KiB of dynamic shared memory each keeps a third off), the first block of SMs 0..n-1
        storing to host memory (each its own MiB) and the second block of R SMs reading 2 MiB each with the plain
        loop (one 16-B load a thread in flight): the R SMs from SM 0 (reader_sm with_storer: each reader beside a
        storing block on its SM) or from SM n (reader_sm without_storer: on SMs that store nothing), n = READ_CORES_NS (8, 66, 131
        by default), R = READ_CORES_R (1, 4, 16, 64) where they fit; then the chase (thread 0 of one second block,
        200 steps) on SM 0 or on SM n. A record per configuration (placement by_sm, blocks R, read_sms)."""
        cp, sms = self.cp, self.sms
        hb, stride, order = self._chase_buffer()
        smem, steps = 100 << 10, 200
        ns = [int(v) for v in os.environ.get("READ_CORES_NS", "8,66,131").split(",") if v]
        rs = [int(v) for v in os.environ.get("READ_CORES_R", "1,4,16,64").split(",") if v]
        # READ_CORES_SPANS=own_mib,wide: the whole part once for each writers' span (PLACE_WRITES's forms)
        for spec in [v for v in os.environ.get("READ_CORES_SPANS", "own_mib").split(",") if v]:
            span = self.write_span(spec)
            try:
                launch = self._placer(hb, smem, span, slots=2)
            except RuntimeError as e:
                self.rec_sm.error("read_cores", e)
                continue
            self._read_cores_span(launch, span, ns, rs, smem, steps, stride)
        hb.free()

    def _read_cores_span(self, launch, span, ns, rs, smem, steps, stride):
        """read_cores at one writers' span (launch: its placer)."""
        sms = self.sms
        for n in ns:
            for shares in (1, 0):
                for nr in rs + [0]:  # 0: the chase
                    first = 0 if shares else n
                    count = max(nr, 1)
                    if first + count > sms or (shares and count > n):
                        continue
                    def meas(n=n, shares=shares, nr=nr, first=first, count=count):
                        roles = [0] * (2 * sms)
                        for w in range(n):
                            roles[2 * w] = 1
                        readers = list(range(first, first + count))
                        for r in readers:
                            roles[2 * r + 1] = 2
                        mode = 1 if nr == 0 else 0
                        times, wl = [], []
                        for trial in range(4):
                            o, w = launch(roles, 2 << 20, mode, steps, None)
                            rows = [v for v in o if int(v[1]) == 2]
                            if len(rows) != count:
                                raise RuntimeError(f"read_cores: {len(rows)} readers ran, {count} placed")
                            if trial:
                                times.append(float(max(v[3] for v in rows) - min(v[2] for v in rows)))
                                wl.append(w)
                        ws = list(range(n))
                        rec = self._place_rec(f"first{n}", ws, first, count, 2 << 20, times, smem, wl[len(wl) // 2], span)
                        rec["read_sms"] = f"{first}-{first + count - 1}"
                        rec["loads_in_flight"] = 1
                        rec["reader_sm"] = "with_storer" if shares else "without_storer"
                        if nr == 0:
                            t = statistics.median(times) / steps
                            rec = {"kind": "pointer_chase", "clock": "sm_clock64", "target": "host", "ns_per_step": t,
                                   "ns_per_step_globaltimer": t, "steps": steps, "stride_bytes": stride * 8,
                                   "write_blocks": n, "placement": "by_sm", "read_sm": first, "write_sms": rec["write_sms"],
                                   "write_set": f"first{n}", **span[2], "smem_bytes": smem,
                                   "reader_sm": "with_storer" if shares else "without_storer", "write_threads": 512,
                                   "write_target": "host",
                                   **({"gbps_write": rec["gbps_write"]} if "gbps_write" in rec else {})}
                        self.rec_sm.emit(rec)
                    self.rec_sm.guard(f"read_cores {span[2]} {n} {shares} {nr}", meas)

    def read_gpcs(self):
        """Readers beside one storing block, placed by GPC (MICRO_PARTS=sm_groups,read_gpcs): place_rw with two
        blocks an SM (100 KiB of dynamic shared memory each), the first block of SM w storing to host memory (its own
        MiB) and the second block of R SMs reading 2 MiB each with the plain loop (one 16-B load a thread in flight).
        w = READ_GPCS_W (0 and 124 by default). The R SMs are the first R of one of four sets (field read_set): the
        writer's GPC (the other SMs of its sm_groups group, or of the SMs in no group), group 0 or the SMs in no group
        (whichever the writer is not in), group 4, and the first SM of each group the writer is not in (one a GPC);
        R = READ_GPCS_R (1, 2, 4, 7), each with the storing block (write_set first1) and without it (first0). A
        record per configuration (placement by_sm, blocks R, read_sms the SMs, reader_sm without_storer)."""
        groups, loose = self._gpc_groups("read_gpcs")
        ws = [int(v) for v in os.environ.get("READ_GPCS_W", "0,124").split(",") if v]
        rs = [int(v) for v in os.environ.get("READ_GPCS_R", "1,2,4,7").split(",") if v]
        if any(not 0 <= w < self.sms for w in ws) or any(r < 1 for r in rs):
            raise ValueError(f"READ_GPCS_W={ws}, READ_GPCS_R={rs}: SMs of this GPU, readers ≥ 1")
        runs = []
        for w in ws:
            own = next((g for g in groups if w in g), loose)
            sets = {"own_gpc": [s for s in own if s != w]}
            if own is loose:
                sets["group0"] = groups[0]
            else:
                sets["no_group"] = loose
            if len(groups) > 4 and w not in groups[4]:
                sets["group4"] = groups[4]
            sets["one_a_gpc"] = [g[0] for g in groups if w not in g] + ([loose[0]] if loose and own is not loose else [])
            runs += [(w, name, members[:nr], 0, 512) for name, members in sets.items() for nr in rs if nr <= len(members)]
        self._readers_beside_one("read_gpcs", runs)

    def read_count(self):
        """Readers beside one storing block by their count (MICRO_PARTS=sm_groups,read_count): read_gpcs's launch (the
        storing block on SM 0, its own MiB; readers of 512 threads, one 16-B load a thread in flight, 2 MiB each, 100
        KiB of shared memory a block) with R readers taken round-robin over the GPCs (sm_groups' groups, then the SMs
        in no group, each in SM order, SM 0 left out), R = READ_COUNT_R (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 131),
        or the forms READ_COUNT_FORMS gives (R, the readers' loop and threads), with the storing block and without it.
        A record per configuration (read_gpcs's fields, read_set round_robin)."""
        groups, loose = self._gpc_groups("read_count")
        lists = groups + [loose]
        order, depth = [], 0
        while len(order) < self.sms - 1 and depth < self.sms:
            for g in lists:
                if depth < len(g) and g[depth] != 0:
                    order.append(g[depth])
            depth += 1
        # READ_COUNT_FORMS=R:mode:threads,…: instead of READ_COUNT_R, readers in these forms (place_rw's mode 0, the
        # plain loop; 2 and 3, four and eight independent loads a thread; 4, only the first threads of each block
        # loading, 2 MiB × threads / 512 each, so as many round trips), fields loads_in_flight and threads
        forms = []
        for v in [v for v in os.environ.get("READ_COUNT_FORMS", "").split(",") if v]:
            r, mode, th = (int(x) for x in v.split(":"))
            if mode not in (0, 2, 3, 4) or not 1 <= th <= 512 or (mode != 4 and th != 512):
                raise ValueError(f"READ_COUNT_FORMS={v!r}: R:mode:threads, mode 0, 2, 3 (512 threads) or 4")
            forms.append((r, mode, th))
        if not forms:
            forms = [(int(v), 0, 512) for v in os.environ.get("READ_COUNT_R", "1,2,4,8,12,16,24,32,48,64,96,131").split(",") if v]
        if any(not 1 <= f[0] <= len(order) for f in forms):
            raise ValueError(f"READ_COUNT_R/FORMS={forms}: 1 to {len(order)} readers")
        self._readers_beside_one("read_count", [(0, "round_robin", order[:nr], mode, th) for nr, mode, th in forms])

    def _gpc_groups(self, part):
        """sm_groups' groups (each sorted) and the SMs in none, for a part that needs them."""
        if not getattr(self, "groups", None):
            raise RuntimeError(f"{part}: run sm_groups first (MICRO_PARTS=sm_groups,{part})")
        groups = [sorted(g) for g in self.groups]
        grouped = {s for g in groups for s in g}
        return groups, [s for s in range(self.sms) if s not in grouped]

    def _readers_beside_one(self, part, runs):
        """read_gpcs's and read_count's launch: for each (w, read_set, reader SMs, place_rw mode, threads) in runs,
        one place_rw launch with two blocks an SM (100 KiB of shared memory each; READ_COUNT_SLOTS=1: one, 120 KiB),
        the first block of SM w storing to host memory (its own MiB) and the last block of each reader SM loading 2 MiB
        × threads / 512, with the storing block and without it; a record each (the median of three timed launches
        after one untimed; field smem_bytes)."""
        # READ_COUNT_SLOTS=1: one block an SM (120 KiB of shared memory each), the readers on SMs that store nothing
        slots = int(os.environ.get("READ_COUNT_SLOTS", "2"))
        if slots not in (1, 2):
            raise ValueError(f"READ_COUNT_SLOTS={slots}: 1 or 2")
        hb, _, _ = self._chase_buffer()
        smem = (100 << 10) if slots == 2 else (120 << 10)
        span = self.write_span("own_mib")
        try:
            launch = self._placer(hb, smem, span, slots=slots)
        except RuntimeError as e:
            self.rec_sm.error(part, e)
            hb.free()
            return
        for w, name, readers, mode, th in runs:
            if slots == 1 and w in readers:
                continue
            rbytes = (2 << 20) * th // 512
            for writing in (1, 0):
                def meas(w=w, name=name, readers=readers, mode=mode, th=th, rbytes=rbytes, writing=writing):
                    roles = [0] * (slots * self.sms)
                    if writing:
                        roles[slots * w] = 1
                    for r in readers:
                        roles[slots * r + slots - 1] = 2
                    times, wl = [], []
                    for trial in range(4):
                        o, wst = launch(roles, rbytes, mode, 0, None, th)
                        rows = [v for v in o if int(v[1]) == 2]
                        if len(rows) != len(readers):
                            raise RuntimeError(f"{part}: {len(rows)} readers ran, {len(readers)} placed")
                        if trial:
                            times.append(float(max(v[3] for v in rows) - min(v[2] for v in rows)))
                            wl.append(wst)
                    writers = [w] if writing else []
                    rec = self._place_rec(f"first{len(writers)}", writers, readers[0], len(readers), rbytes,
                                          times, smem, wl[len(wl) // 2], span)
                    rec["threads"] = th
                    rec["read_sms"] = ",".join(str(v) for v in readers)
                    rec["read_set"] = name
                    rec["loads_in_flight"] = {0: 1, 2: 4, 3: 8, 4: 1}[mode]
                    rec["reader_sm"] = "without_storer"
                    self.rec_sm.emit(rec)
                self.rec_sm.guard(f"{part} {w} {name} {len(readers)} {mode} {th} {writing}", meas)
        hb.free()

    def read_depth(self):
        """The stores' queue in front of loads by the SMs that store (READ_PLACEMENT=depth): place_rw with the
        first n SMs storing (n = 0, 1, 2, 4, 8, 16, 32, 66, 131) and the last SM reading: a 2 MiB streaming load
        (host_link_concurrency) and a 200-step pointer chase, 4,160 B a step (pointer_chase, its thread 0 alone);
        then 16 readers (the last 16 SMs) beside n = 2, 8, 66; each with 120 KiB of dynamic shared memory a block
        and with none (field smem_bytes). The writers' rate from their own count of stores (gbps_write).
        READ_DEPTH_NS: other storing-SM counts (comma separated, each < the SMs)."""
        cp, sms = self.cp, self.sms
        hb, stride, order = self._chase_buffer()
        steps, rsm = 200, sms - 1
        # READ_DEPTH_UNROLL=1: no shared memory, and streaming readers keeping 1, 4 and 8 loads a thread in flight
        # (place_rw modes 0, 2, 3; field loads_in_flight), no 16-reader launches
        unroll = os.environ.get("READ_DEPTH_UNROLL") == "1"
        # (place_rw mode, loading threads)
        modes = tuple((m, 512) for m in ((0, 2, 3, 1) if unroll else (0, 1)))
        # READ_DEPTH_CHASE=local: only the chase, walking the same pattern in the GPU's own memory (records target
        # local), on the last SM while the first n store to host memory: do the GPU's own loads wait behind stores
        # that other SMs stream to host memory?
        # READ_DEPTH_RTHREADS=32,128: besides the 512-thread streaming block and the chase, streaming blocks of which
        # only the first 32, 128 … threads load (place_rw mode 4, field threads; 2 MiB × threads / 512, so as many
        # round trips) and the chase by a whole warp (mode 5: 512 B a step; field chase_lanes 32)
        rts = [int(v) for v in os.environ.get("READ_DEPTH_RTHREADS", "").split(",") if v]
        if any(t < 1 or t > 512 for t in rts):
            raise ValueError(f"READ_DEPTH_RTHREADS={rts}: 1–512 threads")
        if rts:
            unroll, modes = True, ((0, 512), (1, 512), (5, 512)) + tuple((4, t) for t in rts)
        chase_target, chase_src = os.environ.get("READ_DEPTH_CHASE", "host"), None
        if chase_target not in ("host", "local"):
            raise ValueError(f"READ_DEPTH_CHASE={chase_target!r}: host or local")
        # READ_DEPTH_MODES=0,1: only these place_rw modes (0 the plain loop, 1 the lone chase, 2 and 3 four and
        # eight loads a thread, 5 the warp's chase), 512 threads, no shared memory
        if os.environ.get("READ_DEPTH_MODES"):
            picked = [int(v) for v in os.environ["READ_DEPTH_MODES"].split(",") if v]
            if any(m not in (0, 1, 2, 3, 5) for m in picked):
                raise ValueError(f"READ_DEPTH_MODES={picked}: modes 0, 1, 2, 3, 5")
            unroll, modes = True, tuple((m, 512) for m in picked)
        if chase_target == "local":
            unroll, modes = True, ((1, 512),)
            with cp.cuda.Device(0):
                darr = cp.zeros((8 << 20) // 8, dtype=cp.int64)
                darr[order] = cp.roll(order, -1)
                cp.cuda.Device(0).synchronize()
            chase_src = np.uint64(darr.data.ptr)
        # READ_DEPTH_SPANS=own_mib,wide:1m,…: the whole part once for each writers' span (PLACE_WRITES's forms),
        # in that order; the records carry write_span (and write_span_bytes)
        spans = [self.write_span(v) for v in os.environ.get("READ_DEPTH_SPANS", "").split(",") if v] or [None]
        for smem, span in ((m, p) for p in spans for m in ((0,) if unroll else (120 << 10, 0))):
            try:
                launch = self._placer(hb, smem, span)
            except RuntimeError as e:
                self.rec_sm.error(f"read_depth smem {smem}", e)
                continue
            ns = [int(v) for v in os.environ.get("READ_DEPTH_NS", "").split(",") if v] or [0, 1, 2, 4, 8, 16, 32, 66, 131]
            # READ_DEPTH_STRIDES=1,2,16: the n storing SMs every s-th SM from SM 0 (SMs 0, s, 2s, …; record field
            # write_set first<n> at s = 1, stride<s>_<n> else), each count n once per stride with its last storing
            # SM below the reading one: whether the wait follows where the storing SMs lie as well as their number.
            # READ_DEPTH_BASES=0,2: from each of these SMs instead of SM 0 alone (from<b>_stride<s>_<n>).
            # READ_DEPTH_SETS="0,1,8,9;2,3,4,5": besides, each ;-separated list of SMs as the storing set (list<n>)
            strides = [int(v) for v in os.environ.get("READ_DEPTH_STRIDES", "").split(",") if v] or [1]
            bases = [int(v) for v in os.environ.get("READ_DEPTH_BASES", "").split(",") if v] or [0]
            if any(v < 1 for v in strides) or any(not 0 <= b < rsm for b in bases):
                raise ValueError(f"READ_DEPTH_STRIDES={strides}, READ_DEPTH_BASES={bases}: strides of 1 SM or more, "
                                 f"bases below SM {rsm}")
            sets = []
            for b in bases:
                for sd in strides:
                    for n in ns:
                        if (n == 0 and (b, sd) != (bases[0], strides[0])) or (sd > 1 and n < 2) or b + (n - 1) * sd >= rsm:
                            continue
                        name = (f"first{n}" if sd == 1 else f"stride{sd}_{n}") if b == 0 else f"from{b}_stride{sd}_{n}"
                        sets.append((name, [b + i * sd for i in range(n)], sd))
            # READ_DEPTH_SETS=groups (after sm_groups in the same process): for each group of SMs that share a GPC,
            # all of it, its first two and its first eight SMs, and for each two groups four SMs of each, every set
            # without the readers' SMs (list<n> as any listed set)
            # READ_DEPTH_SETS=gpc_sweep (after sm_groups): for each group (SMs 124-131, in no cluster on an H200,
            # one more), its first k TPCs (SMs 2t, 2t + 1) for every k, and one SM of each of its TPCs; for each two
            # groups taken in turn, the first 1, 2 and 4 TPCs of each; the readers' SMs left out
            given = os.environ.get("READ_DEPTH_SETS", "")
            if given.strip() in ("gpc_sweep", "tpc_subsets", "tpc_sets", "groups"):
                # the sets made from sm_groups' groups, without the readers' SMs
                if not getattr(self, "groups", None):
                    raise ValueError(f"READ_DEPTH_SETS={given.strip()}: run sm_groups before read_placement (MICRO_PARTS)")
                rdrs = {int(v) for v in os.environ.get("READ_DEPTH_READERS", "").split(",") if v} or {rsm}
            if given.strip() == "gpc_sweep":
                grps = [list(x) for x in self.groups]
                rest = sorted(set(range(sms)) - {v for x in grps for v in x})
                if rest:
                    grps.append(rest)
                tpcs = [sorted({v // 2 for v in x}) for x in grps]
                def of(ts):
                    return [v for t in ts for v in (2 * t, 2 * t + 1) if v not in rdrs]
                picks = []
                for ts in tpcs:
                    picks += [of(ts[:k]) for k in range(1, len(ts) + 1)]
                    picks.append([2 * t for t in ts if 2 * t not in rdrs])
                for i in range(len(tpcs)):
                    j = (i + 1) % len(tpcs)
                    picks += [of(tpcs[i][:k]) + of(tpcs[j][:k]) for k in (1, 2, 4)]
                given = ";".join(",".join(map(str, x)) for x in picks if len(x) >= 1)
                log("read_depth gpc_sweep sets", given)
            # READ_DEPTH_SETS=tpc_sets (after sm_groups): for each group of 16 or more SMs holding no reader, sets of
            # its TPCs by their place in the group (1 its least SM's TPC, 2 the next, …), both SMs of each: the
            # subsets TPC_SUBSETS lists, those within the group's TPCs
            # READ_DEPTH_SETS=tpc_subsets (after sm_groups): every set of 3 and of 4 (READ_DEPTH_TPC_SIZES) of the
            # first eight (READ_DEPTH_TPC_PLACES) TPCs (by place) of each group READ_DEPTH_TPC_GROUPS lists (indices
            # in sm_groups' order), both SMs of each
            if given.strip() == "tpc_subsets":
                import itertools
                idx = [int(v) for v in os.environ.get("READ_DEPTH_TPC_GROUPS", "").split(",") if v]
                if not idx or any(not 0 <= i < len(self.groups) for i in idx):
                    raise ValueError(f"READ_DEPTH_TPC_GROUPS={idx}: indices of the {len(self.groups)} groups")
                places = int(os.environ.get("READ_DEPTH_TPC_PLACES", "8"))
                sizes = [int(v) for v in os.environ.get("READ_DEPTH_TPC_SIZES", "3,4").split(",") if v]
                if places < 1 or not sizes or any(not 1 <= k <= places for k in sizes):
                    raise ValueError(f"READ_DEPTH_TPC_PLACES={places}, READ_DEPTH_TPC_SIZES={sizes}: sizes 1 to the places")
                picks = []
                for i in idx:
                    ts = sorted({v // 2 for v in self.groups[i]})[:places]
                    for k in sizes:
                        for sub in itertools.combinations(ts, k):
                            picks.append([v for t in sub for v in (2 * t, 2 * t + 1)])
                given = ";".join(",".join(map(str, x)) for x in picks)
                log("read_depth tpc_subsets", len(picks), "sets")
            if given.strip() == "tpc_sets":
                subsets = [[1, 2], [1, 4], [1, 7], [1, 2, 3], [1, 4, 7], [2, 5, 8], [4, 5, 6], [1, 2, 4], [1, 2, 3, 4],
                           [2, 3, 4, 5], [1, 2, 3, 5], [1, 2, 3, 6], [1, 2, 4, 7], [5, 6, 7, 8], [1, 2, 3, 4, 5, 6],
                           [1, 2, 4, 5, 7, 8], [3, 4, 5, 6, 7, 8]]
                picks = []
                for grp in self.groups:
                    if len(grp) < 16 or rdrs & set(grp):
                        continue
                    ts = sorted({v // 2 for v in grp})
                    for sub in subsets:
                        if max(sub) <= len(ts):
                            picks.append([v for i in sub for v in (2 * ts[i - 1], 2 * ts[i - 1] + 1)])
                given = ";".join(",".join(map(str, x)) for x in picks)
                log("read_depth tpc_sets", given)
            if given.strip() == "groups":
                free = [[v for v in grp if v not in rdrs] for grp in self.groups]
                picks = []
                for grp in free:
                    picks += [grp, grp[:2]] + ([grp[:8]] if len(grp) > 9 else [])
                for i in range(len(free)):
                    for j in range(i + 1, len(free)):
                        picks.append(free[i][:4] + free[j][:4])
                given = ";".join(",".join(map(str, x)) for x in picks if len(x) >= 2)
                log("read_depth groups sets", given)
            for v in given.split(";"):
                if v.strip():
                    lst = [int(x) for x in v.split(",")]
                    if len(set(lst)) != len(lst) or any(not 0 <= x < sms for x in lst):
                        raise ValueError(f"READ_DEPTH_SETS: {v!r}: distinct SMs below {sms}")
                    sets.append((f"list{len(lst)}", lst, 0))
            # READ_DEPTH_READERS=131,130,123: the chase and the streaming block on each of these SMs in turn (the
            # last SM when not given; field read_sm), each storing set that leaves it out
            readers = [int(v) for v in os.environ.get("READ_DEPTH_READERS", "").split(",") if v] or [rsm]
            if any(not 0 <= v < sms for v in readers):
                raise ValueError(f"READ_DEPTH_READERS={readers}: SMs below {sms}")
            for rd, wset, ws, sd in ((r, *z) for r in readers for z in sets if r not in z[1]):
                n = len(ws)
                def meas(n=n, sd=sd, ws=ws, wset=wset, smem=smem, launch=launch, span=span, rsm=rd):
                    roles = [0] * sms
                    for w in ws:
                        roles[w] = 1
                    roles[rsm] = 2
                    for mode, rt in modes:
                        rb = (2 << 20) * rt // 512
                        times, wl = [], []
                        for trial in range(4):
                            o, w = launch(roles, rb, mode, steps, chase_src if mode in (1, 5) else None, rt)
                            row = [v for v in o if int(v[0]) == rsm][0]
                            if trial:
                                times.append(float(row[3] - row[2]))
                                wl.append(w)
                        rec = self._place_rec(wset, ws, rsm, 1, rb, times, smem, wl[len(wl) // 2], span)
                        rec["threads"] = rt
                        if sd > 1:
                            rec["write_stride_sms"] = sd
                        if wset.startswith("from"):
                            rec["write_base_sm"] = ws[0]
                        if unroll and mode not in (1, 5):
                            rec["loads_in_flight"] = {0: 1, 2: 4, 3: 8, 4: 1}[mode]
                        if mode in (1, 5):
                            ns = statistics.median(times) / steps
                            rec = {"kind": "pointer_chase", "clock": "sm_clock64", "target": chase_target,
                                   "ns_per_step": ns, "ns_per_step_globaltimer": ns, "steps": steps,
                                   "stride_bytes": stride * 8, "write_blocks": n, "placement": "by_sm",
                                   "read_sm": rsm, "write_sms": rec["write_sms"], "write_set": wset, "write_span": rec["write_span"],
                                   **({"write_rank_order": rec["write_rank_order"]} if "write_rank_order" in rec else {}),
                                   **({"write_stride_sms": sd} if sd > 1 else {}),
                                   **({"write_base_sm": ws[0]} if wset.startswith("from") else {}),
                                   **({"write_span_bytes": rec["write_span_bytes"]} if "write_span_bytes" in rec else {}),
                                   "smem_bytes": smem, **({"write_threads": 512, "write_target": "host",
                                                           "gbps_write": rec["gbps_write"]} if "gbps_write" in rec else {}),
                                   **({"chase_lanes": 32} if mode == 5 else {})}
                        self.rec_sm.emit(rec)
                self.rec_sm.guard(f"read_depth {smem} {wset} reader {rd} {(span or self.write_span())[2]}", meas)
            # READ_DEPTH_CROWD=4,16,64: instead of 16 readers beside n = 2, 8, 66 (without READ_DEPTH_UNROLL), the
            # last R SMs read at once (the plain loop, 2 MiB each) beside each READ_DEPTH_NS count n ≥ 1 with n + R
            # below the SMs, for each R listed, whatever READ_DEPTH_UNROLL says
            crowd = [int(v) for v in os.environ.get("READ_DEPTH_CROWD", "").split(",") if v]
            pairs = [(n, r) for n in ns for r in crowd if n >= 1 and n + r < sms] if crowd else \
                [(n, 16) for n in (() if unroll else (2, 8, 66))]
            for n, nr in pairs:
                def meas(n=n, nr=nr, smem=smem, launch=launch, span=span):
                    ws = list(range(n))
                    readers = list(range(sms - nr, sms))
                    roles = [0] * sms
                    for w in ws:
                        roles[w] = 1
                    for r in readers:
                        roles[r] = 2
                    times, wl = [], []
                    for trial in range(4):
                        o, w = launch(roles, 2 << 20)
                        rows = [v for v in o if int(v[1]) == 2]
                        if trial:
                            times.append(float(max(v[3] for v in rows) - min(v[2] for v in rows)))
                            wl.append(w)
                    rec = self._place_rec(f"first{n}", ws, sms - nr, nr, 2 << 20, times, smem, wl[len(wl) // 2], span)
                    rec["read_sms"] = f"{sms - nr}-{sms - 1}"
                    if unroll:
                        rec["loads_in_flight"] = 1
                    self.rec_sm.emit(rec)
                self.rec_sm.guard(f"read_depth {nr} readers {smem} {n}", meas)
        hb.free()


def run_memcpy(out_dir, quick):
    m = Micro(out_dir, quick)
    for name in ("memcpy_sweep", "memcpy_multistream"):
        t0 = time.time()
        m.rec_mem.guard(name, getattr(m, name))
        log(name, f"{time.time() - t0:.1f}s")
    return m


def run_sm(out_dir, quick, m=None):
    m = m or Micro(out_dir, quick)
    only = [p for p in os.environ.get("MICRO_PARTS", "").split(",") if p]
    for name in only or ("empty_kernel", "sm_access_sweep", "pointer_chase", "flag_pingpong", "host_link_concurrency"):
        t0 = time.time()
        m.rec_sm.guard(name, getattr(m, name))
        log(name, f"{time.time() - t0:.1f}s")
    return m
