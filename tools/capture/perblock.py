"""perblock: what one thread block can do, on one GPU (capture.py perblock; CuPy, kernels.py: PERBLOCK_SRC).

Why: a kernel's rate is the sum over its thread blocks of what each keeps in flight over what each loop iteration
waits on, and polls and atomics are requests that queue at the memory they touch. These records measure the terms
on GPU 0 alone, with pinned host memory standing in for memory across PCIe:

  poll            B blocks, thread 0 each, issue dependent loads (volatile / acquire / relaxed) or system atomics
                  (add, compare-and-swap that never matches) to one shared word, or each to its own word 32, 128 or
                  4096 bytes apart, in host or local memory: ns per request, per block
  block_pingpong  pairs of blocks of the GPU exchange flags (host or local memory; vLLM's volatile flag, release /
                  acquire, volatile + system fence) while the other pairs do the same: one-way ns
  loop ll         NCCL LL-style loops, one 16-B line per thread per iteration (recv / send / recv-send /
                  recv-reduce-send / recv-reduce-copy-send), lines in host or local memory, 64-1024 threads,
                  1-132 blocks: ns per iteration per block
  loop copy       Simple-style copies with 1, 2, 4, 8 independent 16-B loads in flight per source, 1 or 2 sources,
                  host or local sources and destinations, 128/512 threads, 1-132 blocks
  loop simple_step  Simple's per-slice bookkeeping: a counter poll, two block barriers, a slice copy, a fence
                  (none / acq_rel.sys / sc.sys) and a flag store, per step
  loop fence      a fence (none / acq_rel.sys / sc.sys) after 1 or 16 stores per thread to host or local memory
  loop pull       a one-shot's pull-and-reduce over world 2 or 4 sources (rank 0 local, the others host memory):
                  loop over ranks bounded at run time, or unrolled with every load issued before the adds

Timing: clock64 per block (thread 0, between block barriers where the whole block takes part), converted with the
SM clock measured against %globaltimer in the same run; every configuration is launched once to warm up, then
`TRIALS` times; a record's value is the median over trials of the median over blocks (`_max`: the slowest block).
"""
import json, os, statistics, time
import numpy as np

from common import Recorder, log
import kernels
from micro import HostBuf

TRIALS = 5
BLOCKS = [1, 2, 4, 8, 16, 32, 66, 132]
POLL_OPS = ["load_volatile", "load_acquire", "load_relaxed", "atomic_add", "atomic_cas"]
PP_MODES = ["volatile", "release_acquire", "volatile_fence"]
LL_OPS = {"recv": 1 | 8, "send": 2 | 4, "recv_send": 1 | 4, "recv_reduce_send": 1 | 2 | 4,
          "recv_reduce_copy_send": 1 | 2 | 4 | 8, "recv_copy_send": 1 | 4 | 8, "recv_reduce_copy": 1 | 2 | 8}
LL_FIXED = {"recv": "pb_ll_fixed_recv", "send": "pb_ll_fixed_send", "recv_send": "pb_ll_fixed_rs",
            "recv_reduce_send": "pb_ll_fixed_rrs", "recv_reduce_copy_send": "pb_ll_fixed_rrcs",
            "recv_copy_send": "pb_ll_fixed_rcs", "recv_reduce_copy": "pb_ll_fixed_rrc"}
FENCES = ["none", "acq_rel", "sc"]
MB = 1 << 20


class PerBlock:
    def __init__(self, out_dir, quick=False):
        import cupy as cp
        self.cp, self.quick = cp, quick
        # PERBLOCK_BLOCK_SMS=1: the suite's ping-pongs and 32-thread barriers record where their blocks land
        # (block_sms, from pb_smid launched just before each measurement)
        self.with_block_sms = os.environ.get("PERBLOCK_BLOCK_SMS", "") == "1"
        self.rec = Recorder(out_dir, "perblock")
        with cp.cuda.Device(0):
            self.mod = cp.RawModule(code=kernels.PERBLOCK_SRC, options=("-std=c++17",))
            self.s = cp.cuda.Stream(non_blocking=True)
            self.res = cp.zeros(2 * 1024, dtype=cp.int64)
            self.err = cp.zeros(1, dtype=cp.int32)
            props = cp.cuda.runtime.getDeviceProperties(0)
            self.sms = props["multiProcessorCount"]
        self.ghz = None
        self.big = (64 if quick else 256) * MB
        self.h = {}  # host buffers by role
        self.d = {}  # device buffers by role

    def fn(self, name):
        return self.mod.get_function(name)

    def calibrate(self, tag):
        cp = self.cp
        vals = []
        with cp.cuda.Device(0):
            for _ in range(3):
                self.fn("pb_clk_cal")((1,), (1,), (np.int64(20_000_000), self.res), stream=self.s)
                self.s.synchronize()
                c, g = (int(x) for x in self.res[:2].get())
                vals.append(c / g)
        self.ghz = statistics.median(vals)
        self.rec.emit({"kind": "device_info", "clock": "sm_clock64", "what": "sm_clock_calibration", "tag": tag,
                       "clock_ghz_measured": self.ghz, "trials_ghz": vals, "sms": self.sms})
        log("perblock sm clock", tag, f"{self.ghz:.4f} GHz")

    # ---------- buffers ---------------------------------------------------------------------------------------
    def host(self, role, nbytes):
        """The pinned host buffer of a role, at least nbytes: a part that asks for more than an earlier part of the
        same run allocated gets a new, larger one (its contents are not kept; parts fill what they read)."""
        h = self.h.get(role)
        if h is None or h.nbytes < nbytes:
            if h is not None:
                self.cp.cuda.Device(0).synchronize()
                h.free()
            self.h[role] = HostBuf(nbytes)
        return self.h[role]

    def dev(self, role, nbytes):
        """The device buffer of a role, at least nbytes (larger than an earlier part's: a new one, zeroed)."""
        cp = self.cp
        a = self.d.get(role)
        if a is None or a.size * 4 < nbytes:
            with cp.cuda.Device(0):
                cp.cuda.Device(0).synchronize()
                self.d[role] = cp.zeros(nbytes // 4, dtype=cp.uint32)
        return self.d[role]

    def peer(self, role, nbytes):
        """A buffer in GPU 1's memory, mapped for GPU 0 (peer access over NVLink or PCIe)."""
        cp = self.cp
        key = "peer:" + role
        if key not in self.d:
            with cp.cuda.Device(0):
                if not getattr(self, "peer_on", False):
                    if cp.cuda.runtime.getDeviceCount() < 2 or not cp.cuda.runtime.deviceCanAccessPeer(0, 1):
                        raise RuntimeError("perblock peer: needs a second GPU that GPU 0 can access")
                    cp.cuda.runtime.deviceEnablePeerAccess(1)
                    self.peer_on = True
            with cp.cuda.Device(1):
                self.d[key] = cp.zeros(nbytes // 4, dtype=cp.uint32)
        return self.d[key]

    def ptr(self, where, role, nbytes):
        if where == "host":
            return np.uint64(self.host(role, nbytes).ptr)
        if where == "peer":
            return np.uint64(self.peer(role, nbytes).data.ptr)
        return self.dev(role, nbytes)

    def fill(self, where, role, nbytes, words):
        """Fill a buffer with a repeating pattern of uint32 words."""
        cp = self.cp
        pat = np.array(words, dtype=np.uint32)
        if where == "host":
            a = self.host(role, nbytes).array(np.uint32)
            n = a.size // pat.size * pat.size
            with cp.cuda.Device(0):
                a[:n] = cp.tile(cp.asarray(pat), n // pat.size)
                cp.cuda.Device(0).synchronize()
        else:
            a = self.dev(role, nbytes)
            n = a.size // pat.size * pat.size
            with cp.cuda.Device(0):
                a[:n] = cp.tile(cp.asarray(pat), n // pat.size)
                cp.cuda.Device(0).synchronize()

    # ---------- running -------------------------------------------------------------------------------------------
    def trials(self, launch, blocks, per):
        """Warm-up, then TRIALS launches; per(block cycles) -> value per block. Returns (median over trials of the
        median over blocks, min, max over trials of that, median over trials of the slowest block, block 0)."""
        cp = self.cp
        meds, slow, b0 = [], [], []
        with cp.cuda.Device(0):
            self.err[...] = 0
            launch(); self.s.synchronize()
            for _ in range(TRIALS):
                launch(); self.s.synchronize()
                cyc = self.res[:2 * blocks].get()[0::2]
                vals = [per(int(c)) for c in cyc]
                meds.append(statistics.median(vals))
                slow.append(max(vals))
                b0.append(vals[0])
            err = int(self.err.get()[0])
        return statistics.median(meds), min(meds), max(meds), statistics.median(slow), statistics.median(b0), bool(err)

    def emit(self, rec, vals, unit):
        med, lo, hi, slow, b0, err = vals
        rec.update({"clock": "sm_clock64", unit: med, unit + "_min": lo, unit + "_max": hi,
                    unit + "_slowest_block": slow, unit + "_block0": b0, "clock_ghz": self.ghz,
                    "trials": TRIALS, "spin_timeout": err})
        self.rec.emit(rec)

    # ---------- polls and atomics -----------------------------------------------------------------------------------
    def page_atomics(self, role, nbytes, base):
        """One block's atomic_add (pb_poll, one word, 2,000 iterations) on the word at base + k * 4 KiB, k < 8, each on
        a page of its own, the local buffer of role (nbytes) zeroed before each: ns per atomic, one value a page."""
        k = self.fn("pb_poll")
        at_i = POLL_OPS.index("atomic_add")
        probe = []
        for pg in range(8):
            self.fill("local", role, nbytes, [0])
            vals = self.trials(lambda pg=pg: k((1,), (32,), (np.uint64(base + pg * 4096), np.int32(0), np.int32(at_i),
                                                             np.int32(2000), self.res), stream=self.s),
                               1, lambda c: c / self.ghz / 2000)
            probe.append(statistics.median(vals))
        return probe

    def atomic_page_probe(self, buf, role="poll", nbytes=1 * MB):
        """Which kind of page the local poll buffer's first word lies on (page_atomics on its first eight pages). A
        word's atomics take one of two times by its page (163-182 or 257-299 ns on H200s and H100s,
        atomic_pages.json): the first page is "slow" if its time lies above the middle of the eight's fastest and
        slowest, "fast" if below; "" where the eight do not differ by a quarter. Returns the class and the times."""
        probe = self.page_atomics(role, nbytes, int(buf.data.ptr))
        lo, hi = min(probe), max(probe)
        cls = ""
        if hi > 1.25 * lo:
            cls = "slow" if probe[0] > (lo + hi) / 2 else "fast"
        log(f"{role}: one block's atomics on the buffer's first eight pages (ns)", [round(v) for v in probe],
            "first page:", cls or "not told apart")
        return cls, probe

    def polls(self, targets=("host", "local"), spacings=(0, 4, 8, 16, 32, 128, 4096), blocks=None, ops=None):
        """Polls and atomics of one word or of a word a block `spacing` bytes apart, 1-132 blocks of 32 threads, in
        host and local memory. Local atomics whose words all lie on the buffer's first 4-KiB page carry atomic_page,
        the class atomic_page_probe gives that page (the probe writes no record; its times go to the log)."""
        cp = self.cp
        k = self.fn("pb_poll")
        blocks = blocks or ([1, 8, 66] if self.quick else BLOCKS)
        for target in targets:
            buf = self.ptr(target, "poll", 1 * MB)
            page_cls = ""
            if target == "local" and (ops is None or any(o.startswith("atomic") for o in ops)):
                page_cls = self.rec.guard("polls atomic_page_probe", lambda: self.atomic_page_probe(buf)[0]) or ""
            for spacing in spacings:
                for op_i, op in enumerate(POLL_OPS):
                    if ops is not None and op not in ops:
                        continue
                    if 0 < spacing < 32 and (target == "local" or op_i not in (0, 3)):
                        continue  # packed words: volatile loads and atomics of host memory only
                    for b in blocks:
                        def meas(target=target, buf=buf, spacing=spacing, op_i=op_i, op=op, b=b):
                            self.fill(target, "poll", 1 * MB, [0])
                            sw = spacing // 4

                            def launch(iters):
                                k((b,), (32,), (buf, np.int32(sw), np.int32(op_i), np.int32(iters), self.res),
                                  stream=self.s)
                            # choose iters so the slowest block runs ~4 ms
                            with cp.cuda.Device(0):
                                launch(16); self.s.synchronize()
                                cyc = max(int(c) for c in self.res[:2 * b].get()[0::2])
                            est = cyc / self.ghz / 16
                            iters = int(min(max(4e6 / max(est, 1.0), 32), 4000))
                            vals = self.trials(lambda: launch(iters), b, lambda c: c / self.ghz / iters)
                            rec = {"kind": "poll", "target": target, "request": op, "spacing_bytes": spacing,
                                   "blocks": b, "threads": 32, "iters": iters}
                            one_page = int(buf.data.ptr) % 4096 + spacing * (b - 1) < 4096 if target == "local" else False
                            if page_cls and op.startswith("atomic") and one_page:
                                rec["atomic_page"] = page_cls
                            self.emit(rec, vals, "ns_per_op")
                        self.rec.guard(f"poll {target} {op} {spacing} {b}", meas)

    def poll_pages(self):
        """Local atomics on a page that makes them fast and on one that makes them slow (atomic_pages.json: 163 or
        257 ns by page): the first eight 4 KiB pages of a 2-MiB-aligned local buffer probed with one block's
        atomic_add (pb_poll), the fastest and the slowest page kept; then atomic_add and atomic_cas on each, one
        shared word (spacing 0) at 1-132 blocks, words 32 B apart at 1-64 blocks and 128 B apart at 1-32 blocks
        (every word in the page); records carry atomic_page (fast or slow)."""
        cp = self.cp
        k = self.fn("pb_poll")
        arr = self.dev("pollpg", 4 * MB)
        base = int(arr.data.ptr)

        def run(off, sw, op_i, b, iters):
            k((b,), (32,), (np.uint64(base + off), np.int32(sw), np.int32(op_i), np.int32(iters), self.res), stream=self.s)

        probe = self.page_atomics("pollpg", 4 * MB, base)
        fast, slow = probe.index(min(probe)), probe.index(max(probe))
        log("poll_pages: one block's atomics by page (ns)", [round(v) for v in probe], "fast", fast, "slow", slow)
        for name, pg in (("fast", fast), ("slow", slow)):
            for spacing, blocks in ((0, BLOCKS), (32, [b for b in BLOCKS if b <= 64]), (128, [b for b in BLOCKS if b <= 32])):
                for op in ("atomic_add", "atomic_cas"):
                    for b in blocks:
                        def meas(pg=pg, name=name, spacing=spacing, op=op, b=b):
                            self.fill("local", "pollpg", 4 * MB, [0])
                            op_i = POLL_OPS.index(op)
                            with cp.cuda.Device(0):
                                run(pg * 4096, spacing // 4, op_i, b, 16); self.s.synchronize()
                                cyc = max(int(c) for c in self.res[:2 * b].get()[0::2])
                            est = cyc / self.ghz / 16
                            iters = int(min(max(4e6 / max(est, 1.0), 32), 4000))
                            vals = self.trials(lambda: run(pg * 4096, spacing // 4, op_i, b, iters), b,
                                               lambda c: c / self.ghz / iters)
                            self.emit({"kind": "poll", "target": "local", "request": op, "spacing_bytes": spacing,
                                       "blocks": b, "threads": 32, "iters": iters, "atomic_page": name}, vals, "ns_per_op")
                        self.rec.guard(f"poll_pages {name} {op} {spacing} {b}", meas)

    def flag_pages(self):
        """Flags handed from block to block on a fast page and on a slow page of local memory (a page's class as
        poll_pages finds it: one block's atomic_add on each of the first eight 4 KiB pages of a 2-MiB-aligned buffer,
        the fastest and the slowest kept): one ping-pong pair (pb_pingpong, volatile and release/acquire, flags 4 and
        128 B apart) and one group's barrier (pb_group_barrier, packed at 2, 4 and 8 ranks, a line a slot at 2 and 4
        ranks, 32 threads), every flag on the page; records carry atomic_page. Whether a store that another SM's poll
        must see waits on the page as an atomic does (the suite's local ping-pongs and barriers run in two bands by
        instance, 270-273 against 346-363 ns one way)."""
        cp = self.cp
        arr = self.dev("flagpg", 4 * MB)
        base = int(arr.data.ptr)
        probe = self.page_atomics("flagpg", 4 * MB, base)
        lo, hi = min(probe), max(probe)
        log("flag_pages: one block's atomics by page (ns)", [round(v) for v in probe])
        if hi <= 1.25 * lo:
            log("flag_pages: the eight pages do not differ by a quarter; no records")
            return
        kp, kb = self.fn("pb_pingpong"), self.fn("pb_group_barrier")
        e0 = [0]
        for name, pg in (("fast", probe.index(lo)), ("slow", probe.index(hi))):
            at = np.uint64(base + pg * 4096)
            for mode_i, mode in enumerate(PP_MODES):
                if mode not in ("volatile", "release_acquire"):
                    continue
                for spacing in (4, 128):
                    def meas_pp(at=at, name=name, mode_i=mode_i, mode=mode, spacing=spacing):
                        self.fill("local", "flagpg", 4 * MB, [0])
                        e0[0] = 0
                        n = 2000

                        def launch():
                            kp((2,), (32,), (at, np.int32(1), np.int32(spacing // 4), np.int32(n), np.uint32(e0[0]),
                                             np.int32(mode_i), self.err, self.res), stream=self.s)
                            e0[0] += n
                        vals = self.trials(launch, 1, lambda c: c / self.ghz / n / 2)
                        self.emit({"kind": "block_pingpong", "target": "local", "mode": mode, "spacing_bytes": spacing,
                                   "pairs": 1, "blocks": 2, "threads": 32, "round_trips": n, "atomic_page": name},
                                  vals, "one_way_ns")
                    self.rec.guard(f"flag_pages pingpong {name} {mode} {spacing}", meas_pp)
            for layout, sr, sp, worlds in (("packed", 8, 1, (2, 4, 8)), ("line_per_slot", 8 * 32, 32, (2, 4))):
                for W in worlds:
                    def meas_gb(at=at, name=name, layout=layout, sr=sr, sp=sp, W=W):
                        self.fill("local", "flagpg", 4 * MB, [0])
                        e0[0] = 0
                        nb = 200

                        def launch():
                            kb((W,), (32,), (at, np.int32(W), np.int32(sr), np.int32(sp), np.int32(nb),
                                             np.uint32(e0[0]), self.err, self.res), stream=self.s)
                            e0[0] += nb
                        vals = self.trials(launch, W, lambda c: c / self.ghz / nb)
                        self.emit({"kind": "loop", "loop": "group_barrier", "target": "local", "layout": layout,
                                   "world": W, "groups": 1, "blocks": W, "threads": 32, "barriers_per_launch": nb,
                                   "atomic_page": name}, vals, "ns_per_iter")
                    self.rec.guard(f"flag_pages group_barrier {name} {layout} W{W}", meas_gb)
        with cp.cuda.Device(0):
            self.s.synchronize()

    def block_sms(self, blocks):
        """The SMs a launch of `blocks` blocks of 32 threads lands on, block by block (pb_smid, launched just before
        the measured kernel of the same shape; its blocks wait for one another as the measured kernel's do)."""
        cp = self.cp
        k = self.fn("pb_smid")
        sms = cp.full(blocks, -1, dtype=cp.int32)
        arrived = cp.zeros(1, dtype=cp.uint32)
        with cp.cuda.Device(0):
            k((blocks,), (32,), (sms, arrived), stream=self.s)
            self.s.synchronize()
            return [int(v) for v in sms.get()]

    def sm_halves(self):
        """flag_sms from block 0 to every other block of a launch of one block an SM: each SM's handoff time from
        block 0's SM, by which the SMs split into the chip's two sets (flag_sms.jsonl: 175-271 ns within a set,
        329-366 across, on one H100). Writes the split (halves.py --flags) to system/measurements.halves.json,
        which validate reads beside the merged measurements.jsonl, unless a halves file is already there (the part
        micro halves' pair scan writes it too; on one H100 both split the SMs alike); a scan without two clear bands
        writes nothing. Run the micro part sm_groups first (phase sm, MICRO_PARTS=sm_groups) for a split by GPC,
        which holds where single SMs blur the bands."""
        start = os.path.getsize(self.rec.path)
        self.flag_sms(leads=(0,), partners=tuple(range(1, self.sms)))
        self.rec.guard("sm_halves split", write_flag_halves, self.rec.path, start, self.sms)

    def flag_sms(self, leads=(0, 1, 33, 66), partners=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 66, 80, 96, 112, 128, 131)):
        """One volatile ping-pong (pb_pingpong_sm, flags 128 B apart on one page of local memory) between two chosen
        blocks of a launch of one block an SM (the other blocks return at once), lead block a in leads and partner b
        in partners, each record naming both blocks' SMs (sm_a, sm_b) and the page's class (atomic_page): whether a
        flag's handoff between SMs takes a time of its own by where the two SMs sit (the H200 suite's local
        ping-pongs and barriers, blocks 0 and 1, run in two bands by instance, 270-273 against 346-363 ns)."""
        cp = self.cp
        k = self.fn("pb_pingpong_sm")
        buf = self.dev("flagsm", 1 * MB)
        page_cls = self.rec.guard("flag_sms atomic_page_probe", lambda: self.atomic_page_probe(buf, "flagsm", 1 * MB)[0]) or ""
        sms = cp.zeros(self.sms, dtype=cp.int32)
        n = 2000
        e0 = [0]
        seen = set()
        for a in leads:
            for b in partners:
                if a == b or b >= self.sms or (a, b) in seen:
                    continue
                seen.add((a, b))

                def meas(a=a, b=b):
                    self.fill("local", "flagsm", 1 * MB, [0])
                    e0[0] = 0

                    def launch():
                        k((self.sms,), (32,), (buf, np.int32(a), np.int32(b), np.int32(n), np.uint32(e0[0]), self.err,
                                               self.res, sms), stream=self.s)
                        e0[0] += n
                    vals = self.trials(launch, 1, lambda c: c / self.ghz / n / 2)
                    with cp.cuda.Device(0):
                        ids = sms.get()
                    rec = {"kind": "block_pingpong", "target": "local", "mode": "volatile", "spacing_bytes": 128,
                           "pairs": 1, "blocks": 2, "threads": 32, "round_trips": n, "lead_block": a, "partner_block": b,
                           "launched_blocks": self.sms, "sm_a": int(ids[a]), "sm_b": int(ids[b])}
                    if page_cls:
                        rec["atomic_page"] = page_cls
                    self.emit(rec, vals, "one_way_ns")
                self.rec.guard(f"flag_sms {a} {b}", meas)

    def pingpong_sector(self):
        """Ping-pong pairs through host flags 4 B apart, 1-8 pairs (2-16 pollers; a 32-B sector holds 8 flags), one
        pair added at a time, volatile and release/acquire: where the superlinear growth of the one-way time starts."""
        self.pingpong(pairs_l=[1, 2, 3, 4, 5, 6, 7, 8], targets=("host",), modes=("volatile", "release_acquire"),
                      spacings=(4,))

    def pingpong_line(self):
        """pingpong_sector past one sector: 8-16 pairs through host flags 4 B apart fill one 128-B line (16-32
        pollers), 20-32 pairs two; volatile and release/acquire: whether a line's changing flags keep costing each
        poller the same, or the time stops growing."""
        self.pingpong(pairs_l=[8, 10, 12, 14, 16, 20, 24, 32], targets=("host",), modes=("volatile", "release_acquire"),
                      spacings=(4,))

    def pingpong_spacing(self):
        """pingpong_sector at other distances: 1-16 pairs through host flags 8, 16 and 32 B apart (16, 8 and 4 flags
        to a 128-B line), volatile and release/acquire: whether a line's changing flags are one queue whatever the
        sectors they fill."""
        self.pingpong(pairs_l=[1, 2, 3, 4, 6, 8, 12, 16], targets=("host",), modes=("volatile", "release_acquire"),
                      spacings=(8, 16, 32))

    def pingpong_heldout(self):
        """Ping-pong pairs through host flags 12, 24, 48 and 64 B apart (sectors of 2-3 flags, irregular; a sector each,
        two or three to a line), 1-16 pairs, volatile and release/acquire: spacings no fit saw, for the model's line
        terms (a further poller of a sector's changing flags on the line, hostmem.changing_flag_wait; another flag of
        the line, hostmem.line_contention). The model's values were written down before the run (testdata README)."""
        self.pingpong(pairs_l=[1, 2, 3, 4, 6, 8, 12, 16], targets=("host",), modes=("volatile", "release_acquire"),
                      spacings=(12, 24, 48, 64))

    def page_touch(self):
        """Whether a kernel pays for the address translation of the pages it touches: launches of one block whose
        threads each load one word of their own page (1-256 pages, 4 KiB, 64 KiB or 2 MiB apart) of pinned host
        memory or local memory, 8 launches in a row, each touching the same pages (repeat) or pages no launch has
        touched (fresh); the slowest load's latency per launch, median over launches 2-8."""
        cp = self.cp
        nb = 1 << 30
        hb = self.host("pt_host", nb)
        bufs = {"host": np.uint64(hb.ptr), "local": self.dev("pt_local", nb)}
        k = self.fn("pb_page_touch")
        L = 8
        res = cp.zeros(L, dtype=cp.uint64)
        for target in ("host", "local"):
            for stride in (4096, 65536, 2 << 20):
                for pages in (1, 8, 64, 256):
                    for fresh in (0, 1):
                        if (L * pages if fresh else pages) * stride > nb:
                            continue

                        def meas(target=target, stride=stride, pages=pages, fresh=fresh):
                            vals = []
                            for _ in range(1 if fresh else 3):  # a fresh trial's pages are touched once only
                                res.fill(0)
                                for launch in range(L):
                                    k((1,), (max(32, pages),), (bufs[target], np.int64(stride // 4), np.int32(pages),
                                                               np.int32(launch), np.int32(fresh), res), stream=self.s)
                                self.s.synchronize()
                                vals.append(statistics.median([int(c) / self.ghz for c in res.get()[1:]]))
                            self.rec.emit({"kind": "pointer_chase", "clock": "sm_clock64", "target": target,
                                           "pages": pages, "stride_bytes": stride,
                                           "touch": "fresh" if fresh else "repeat", "launches": L, "steps": 1,
                                           "ns_per_step": statistics.median(vals), "clock_ghz": self.ghz})
                        self.rec.guard(f"page_touch {target} {stride} {pages} fresh={fresh}", meas)

    def pingpong(self, pairs_l=None, targets=("host", "local"), modes=None, spacings=(4, 128)):
        k = self.fn("pb_pingpong")
        pairs_l = pairs_l or ([1, 8, 33] if self.quick else [1, 2, 4, 8, 16, 33, 66])
        for target in targets:
            buf = self.ptr(target, "pp", 1 * MB)
            page_cls = ""
            if target == "local":  # the flags' page, where they all lie on the first (flag_pages)
                page_cls = self.rec.guard("pingpong atomic_page_probe", lambda: self.atomic_page_probe(buf, "pp", 1 * MB)[0]) or ""
            self.fill(target, "pp", 1 * MB, [0])
            e0 = [0]
            for mode_i, mode in enumerate(PP_MODES):
                if modes is not None and mode not in modes:
                    continue
                for spacing in spacings:
                    for pairs in pairs_l:
                        if 2 * pairs > self.sms:
                            continue

                        def meas(target=target, buf=buf, mode_i=mode_i, mode=mode, spacing=spacing, pairs=pairs):
                            n = 500 if target == "host" else 2000

                            def launch():
                                k((2 * pairs,), (32,), (buf, np.int32(pairs), np.int32(spacing // 4), np.int32(n),
                                                        np.uint32(e0[0]), np.int32(mode_i), self.err, self.res),
                                  stream=self.s)
                                e0[0] += n
                            vals = self.trials(launch, pairs, lambda c: c / self.ghz / n / 2)
                            rec = {"kind": "block_pingpong", "target": target, "mode": mode,
                                   "spacing_bytes": spacing, "pairs": pairs, "blocks": 2 * pairs, "threads": 32,
                                   "round_trips": n}
                            if self.with_block_sms:
                                rec["block_sms"] = self.block_sms(2 * pairs)
                            if page_cls and int(buf.data.ptr) % 4096 + 2 * pairs * spacing <= 4096:
                                rec["atomic_page"] = page_cls
                            self.emit(rec, vals, "one_way_ns")
                        self.rec.guard(f"pingpong {target} {mode} {spacing} {pairs}", meas)

    def host_load(self, counts=(0, 4, 8, 16, 32, 64, 128)):
        """One ping-pong pair through two host lines (4 KiB apart) beside 0-128 neighbour blocks, each on a line of
        its own 64 KiB on (pb_line_probe, place 64k_on_lines_apart), that poll their word, store to it without pause
        or every 1,000 ns, or ping-pong in pairs: whether requests to other lines of host memory slow a flag's round
        trip as they grow in number."""
        self.line_probe(cases=[(op, "64k_on_lines_apart", 16384, 32, nb, gap) for op, gap in
                               (("poll", 0), ("store", 0), ("store", 1000), ("pingpong", 0)) for nb in counts if nb] +
                        [("none", "same_sector", 1, 1, 0, 0)] * 2)

    def fence_pollers(self, counts=(0, 1, 2, 4, 8, 16, 32, 64, 128)):
        """One ping-pong pair through two host lines (4 KiB apart) with release stores and acquire polls
        (pb_line_probe_rel), and the same pair volatile (pb_line_probe, op 0), beside 0-128 neighbour blocks each polling
        a word of its own on a line of its own 64 KiB on: whether each release store waits for the neighbours' loads of
        host memory as fence_polls.jsonl's fences do (the model's rule, fitted there)."""
        self.line_probe(cases=[("poll", "64k_on_lines_apart", 16384, 32, nb, 0) for nb in counts if nb] +
                        [("none", "same_sector", 1, 1, 0, 0)])
        k = self.fn("pb_line_probe_rel")
        buf = self.ptr("host", "lp", 1 * MB)
        done = self.dev("lpdone", 4096)
        lb, n, e0 = 1024, 500, [1 << 20]
        for nb in counts:
            def meas(nb=nb):
                def launch():
                    k((2 + nb,), (32,), (buf, np.int32(lb), np.int32(16384), np.int32(32), np.int32(n), np.uint32(e0[0]),
                                         done, self.err, self.res), stream=self.s)
                    e0[0] += n
                vals = self.trials(launch, 2, lambda c: c / self.ghz / n / 2)
                rec = {"kind": "block_pingpong", "target": "host", "mode": "release_acquire", "spacing_bytes": 4 * lb,
                       "pairs": 1, "blocks": 2 + nb, "threads": 32, "round_trips": n, "neighbours": nb}
                if nb:
                    rec.update({"neighbour_op": "poll", "neighbour_place": "64k_on_lines_apart"})
                self.emit(rec, vals, "one_way_ns")
            self.rec.guard(f"fence_pollers rel {nb}", meas)

    def store_rate(self):
        """Barriers through host memory at ranks and group counts no earlier run measured with the ranks' sectors 4 KiB
        apart or a line per slot (W = 3 and 6 up to 132 blocks; W = 4 at 32 groups), then a flag's round trip beside
        32-128 blocks storing to other lines with a pause of 100 or 300 ns after each store, and beside 40-56 storing
        without pause: where the GPU's stores to host memory stop leaving as fast as they come."""
        for W, groups in ((3, (1, 2, 4, 8, 16, 32, 44)), (6, (1, 2, 4, 8, 16, 22)), (4, (32,))):
            self.group_barriers(layouts=(("packed_4k", 1024, 1), ("line_per_slot", 8 * 32, 32)), worlds=(W,),
                                groups=groups, buf_name="gbq", targets=("host",))
        self.line_probe(cases=[("store", "64k_on_lines_apart", 16384, 32, nb, gap) for gap, counts in
                               ((100, (32, 48, 64, 96, 128)), (300, (32, 64, 96, 128)), (0, (40, 48, 56)))
                               for nb in counts] + [("none", "same_sector", 1, 1, 0, 0)])

    def store_lines(self, lines=16):
        """store_loop with each neighbour cycling its stores over 16 lines of its own (pb_store_stream_lines), so that no
        two stores in a row go to one word: whether stores to one word leave faster than stores to distinct lines."""
        self.store_loop(kernel="pb_store_stream_lines", lines=lines,
                        cases=[(0, nb) for nb in (8, 16, 20, 24, 28, 32, 40, 48)] +
                              [(100, nb) for nb in (32, 48, 64, 72, 80, 96, 112, 128)])

    def store_width(self):
        """store_loop with each neighbour a warp storing 4, 32, 128 or 512 contiguous bytes at once (1, 8 or 32 lanes of
        4 B, or 32 lanes of 16 B; pb_store_stream_wide), without pause: whether the queue a flag waits behind once the
        GPU's small stores to host memory come faster than they leave counts stores or bytes, and how long it is."""
        widths = (((1, 4), (16, 32, 40, 44, 48, 64)), ((8, 4), (16, 32, 40, 44, 48, 64)),
                  ((32, 4), (4, 8, 12, 16, 20, 24, 32, 48, 64)), ((32, 16), (2, 4, 6, 8, 12, 16, 32, 64)))
        for wide, counts in widths:
            self.store_loop(kernel="pb_store_stream_wide", wide=wide, cases=[(0, nb) for nb in counts])

    def store_depth(self):
        """store_width past the fill for every width: each neighbour a warp storing 4, 32, 64 or 128 contiguous bytes
        at once (1, 8, 16 or 32 lanes of 4 B), without pause, up to 128 neighbours: how long the full queue makes a
        flag wait behind stores of each width."""
        widths = (((1, 4), (32, 48, 64, 80, 96, 112, 128)), ((8, 4), (32, 48, 64, 80, 96, 112, 128)),
                  ((16, 4), (32, 48, 56, 64, 72, 80, 96, 128)), ((32, 4), (16, 24, 32, 40, 48, 64, 96)))
        for wide, counts in widths:
            self.store_loop(kernel="pb_store_stream_wide", wide=wide, cases=[(0, nb) for nb in counts])

    def store_loop(self, kernel="pb_store_stream", lines=0, cases=None, wide=None):
        """A flag's round trip beside 4-128 blocks storing to words of their own (a line each, 64 KiB on), without
        pause or with 100 ns after each store, each neighbour timing its own stores (pb_store_stream): the stores a
        block issues per ns when the GPU's store queue keeps up, and the block count at which the pair's round trip
        jumps, so that the queue's service is their ratio."""
        cp = self.cp
        k = self.fn(kernel)
        buf = self.ptr("host", "lp", 1 * MB)
        self.fill("host", "lp", 1 * MB, [0])
        done = self.dev("lpdone", 4096)
        lb, n, e0 = 1024, 500, [0]
        if cases is None:
            cases = [(0, nb) for nb in (4, 16, 32, 36, 40, 44, 48, 56, 64)] + [(100, nb) for nb in (4, 64, 96, 104, 112, 120, 128)]
        stride = 32 * lines if lines else 32  # words between the neighbours' first lines
        if wide:
            stride = 128  # words: each neighbour's 512 B of its own
        for gap, nb in cases:
            def run(gap=gap, nb=nb):
                meds, per = [], []
                with cp.cuda.Device(0):
                    self.err[...] = 0
                    for t in range(TRIALS + 1):
                        args = (buf, np.int32(lb), np.int32(16384), np.int32(stride))
                        if lines:
                            args += (np.int32(lines),)
                        if wide:
                            args += (np.int32(wide[0]), np.int32(wide[1]))
                        k((2 + nb,), (32,), args + (np.int32(gap), np.int32(n), np.uint32(e0[0]), done, self.err, self.res),
                          stream=self.s)
                        e0[0] += n
                        self.s.synchronize()
                        if t == 0:
                            continue  # warm-up
                        r = self.res[:2 * (2 + nb)].get()
                        meds.append(statistics.median([int(c) / self.ghz / n / 2 for c in r[0:4:2]]))
                        per.append(statistics.median([int(r[2 * b]) / self.ghz / max(int(r[2 * b + 1]), 1)
                                                      for b in range(2, 2 + nb)]))
                    err = bool(int(self.err.get()[0]))
                rec = {"kind": "block_pingpong", "target": "host", "mode": "volatile", "spacing_bytes": 4 * lb, "pairs": 1,
                       "blocks": 2 + nb, "threads": 32, "round_trips": n, "neighbours": nb, "neighbour_op": "store",
                       "neighbour_place": "64k_on_lines_apart", "neighbour_ns_per_store": statistics.median(per)}
                if lines:
                    rec["neighbour_lines"] = lines
                if wide:
                    rec["neighbour_store_bytes"] = wide[0] * wide[1]
                if gap:
                    rec["neighbour_gap_ns"] = gap
                rec.update({"clock": "sm_clock64", "one_way_ns": statistics.median(meds), "one_way_ns_min": min(meds),
                            "one_way_ns_max": max(meds), "clock_ghz": self.ghz, "trials": TRIALS, "spin_timeout": err})
                self.rec.emit(rec)
            self.rec.guard(f"store_loop {kernel} {wide} gap {gap} {nb}", run)

    def line_probe(self, cases=None):
        """One ping-pong pair through two host lines (4 KiB apart), beside 0-6 neighbour blocks that poll, store
        to, or ping-pong through other words near the pair's: in its sector, another sector of its 64-B half, the
        line's other half, the next line, 1 KiB or 64 KiB on; a side's neighbours in one sector or each on a line
        of its own (pb_line_probe)."""
        k = self.fn("pb_line_probe")
        buf = self.ptr("host", "lp", 1 * MB)
        self.fill("host", "lp", 1 * MB, [0])
        done = self.dev("lpdone", 4096)
        lb = 1024  # words: line B is 4 KiB after line A
        n = 500
        e0 = [0]
        if cases is None:
            places = (("same_sector", 1, 1), ("same_half", 8, 1), ("other_half", 16, 1), ("other_line", 32, 1))
            cases = [("none", "same_sector", 1, 1, 0, 0)]
            for op in ("pingpong", "poll", "store"):
                for place, off, stride in places:
                    for nb in (2, 6):
                        cases.append((op, place, off, stride, nb, 2000 if op == "store" else 0))
            for op in ("pingpong", "poll"):
                for place, off, stride in (("lines_apart", 32, 32), ("1k_on", 256, 1), ("64k_on", 16384, 1),
                                           ("64k_on_lines_apart", 16384, 32)):
                    cases.append((op, place, off, stride, 6, 0))
            for place, off, stride in places:
                cases.append(("store", place, off, stride, 6, 200))
            cases.append(("none", "same_sector", 1, 1, 0, 0))  # the baseline again, last
        ops = {"none": 0, "poll": 0, "store": 1, "pingpong": 2}
        for op, place, off, stride, nb, gap in cases:
            def meas(op=op, off=off, stride=stride, nb=nb, gap=gap):
                def launch():
                    k((2 + nb,), (32,), (buf, np.int32(lb), np.int32(ops[op]), np.int32(off), np.int32(stride),
                                         np.int32(gap), np.int32(n), np.uint32(e0[0]), done, self.err, self.res),
                      stream=self.s)
                    e0[0] += n
                return self.trials(launch, 2, lambda c: c / self.ghz / n / 2)
            def run(op=op, place=place, off=off, stride=stride, nb=nb, gap=gap):
                vals = meas(op, off, stride, nb, gap)
                rec = {"kind": "block_pingpong", "target": "host", "mode": "volatile", "spacing_bytes": 4 * lb,
                       "pairs": 1, "blocks": 2 + nb, "threads": 32, "round_trips": n, "neighbours": nb}
                if nb:
                    rec.update({"neighbour_op": op, "neighbour_place": place})
                    if op == "store" and gap:
                        rec["neighbour_gap_ns"] = gap
                self.emit(rec, vals, "one_way_ns")
            self.rec.guard(f"line_probe {op} {place} {stride} {nb} gap {gap}", run)

    # ---------- LL loops ------------------------------------------------------------------------------------------
    def ll(self, combos=None, block_combos=None, threads=None, blocks=None):
        k = self.fn("pb_ll")
        flag = 1
        nb = 96 * MB
        for where in ("host", "local"):
            self.fill(where, "llrecv", nb, [7, flag, 9, flag])
        combos = combos or [("recv", "local", "none"), ("recv", "host", "none"),
                  ("send", "none", "local"), ("send", "none", "host"),
                  ("recv_send", "local", "local"), ("recv_send", "host", "local"),
                  ("recv_send", "local", "host"), ("recv_send", "host", "host"),
                  ("recv_reduce_send", "local", "local"), ("recv_reduce_send", "host", "local"),
                  ("recv_reduce_send", "local", "host"), ("recv_reduce_send", "host", "host"),
                  ("recv_reduce_copy_send", "local", "local"), ("recv_reduce_copy_send", "host", "host")]
        src = self.dev("llsrc", nb)
        out = self.dev("llout", nb)

        def run(op, recv, dst, b, t, iters):
            rp = self.ptr(recv if recv != "none" else "local", "llrecv", nb)
            dp = self.ptr(dst if dst != "none" else "local", "lldst", nb)

            def launch():
                k((b,), (t,), (rp, src, dp, out, np.int32(iters), np.int32(LL_OPS[op]), np.uint32(flag), self.err,
                               self.res), stream=self.s)
            vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
            self.emit({"kind": "loop", "loop": "ll", "ll_op": op, "recv": recv, "dst": dst, "blocks": b, "threads": t,
                       "iters": iters, "bytes_per_thread_iter": 8}, vals, "ns_per_iter")

        threads = threads or ([128, 512] if self.quick else [64, 128, 256, 512, 1024])
        for op, recv, dst in combos:
            for t in threads:
                self.rec.guard(f"ll {op} {recv} {dst} 1x{t}", run, op, recv, dst, 1, t, 256)
        blocks = blocks or ([1, 8, 66] if self.quick else BLOCKS)
        for op, recv, dst in [] if block_combos == [] else block_combos or [("recv_reduce_send", "local", "local"), ("recv_reduce_send", "host", "host"),
                                              ("recv", "host", "none"), ("send", "none", "host")]:
            for b in blocks:
                self.rec.guard(f"ll {op} {recv} {dst} {b}x512", run, op, recv, dst, b, 512, 64)

    def ll_one_block(self):
        """Fills the one-block LL loops' buffers and returns run(kname, op, recv, t, code, tag), which measures kernel
        kname (pb_ll or a pb_ll_fixed_*) doing op over lines in recv memory ("none": a send, no lines polled) with
        one block of t threads, 256 iterations, sends to local memory, and emits one record."""
        flag = 1
        nb = 96 * MB
        for where in ("host", "local"):
            self.fill(where, "llrecv", nb, [7, flag, 9, flag])
        src = self.dev("llsrc", nb)
        out = self.dev("llout", nb)
        dp = self.ptr("local", "lldst", nb)

        def run(kname, op, recv, t, code, tag):
            k = self.fn(kname)
            rp = self.ptr("local" if recv == "none" else recv, "llrecv", nb)

            def meas():
                def launch():
                    k((1,), (t,), (rp, src, dp, out, np.int32(256), np.int32(LL_OPS[op]), np.uint32(flag),
                                   self.err, self.res), stream=self.s)
                vals = self.trials(launch, 1, lambda c: c / self.ghz / 256)
                self.emit({"kind": "loop", "loop": "ll", "ll_op": op, "recv": recv,
                           "dst": "local" if LL_OPS[op] & 4 else "none", "blocks": 1, "threads": t,
                           "iters": 256, "bytes_per_thread_iter": 8, "code": code}, vals, "ns_per_iter")
            self.rec.guard(f"{tag} {op} {recv} 1x{t} {code}", meas)
        return run

    def ll_code(self):
        """pb_ll's receive (op recv) and recv_reduce_send (op 7) against the same loops with the op fixed at compile
        time (pb_ll_fixed_recv, pb_ll_fixed_rrs), lines in local and host memory, one block of 64-1024 threads, 256
        iterations, interleaved on the same buffers as the ll part: whether testing the op each iteration costs the
        loop anything (field code: runtime_op or fixed_op)."""
        run = self.ll_one_block()
        for op in ("recv", "recv_reduce_send"):
            for recv in ("local", "host"):
                for t in [64, 128, 256, 512, 1024]:
                    for code, kname in (("runtime_op", "pb_ll"), ("fixed_op", LL_FIXED[op]), ("runtime_op", "pb_ll")):
                        run(kname, op, recv, t, code, "ll_code")

    def ll_ops(self):
        """Every LL operation NCCL's ring and tree run (send, recv, recv_send, recv_reduce_send, recv_copy_send,
        recv_reduce_copy, recv_reduce_copy_send), each compiled for its op (pb_ll_fixed_*), lines in local and host
        memory (send: none), sends to local memory, one block of 64-1024 threads, 256 iterations: what each op costs
        an iteration per warp."""
        run = self.ll_one_block()
        for op, kname in LL_FIXED.items():
            for recv in (("none",) if not LL_OPS[op] & 1 else ("local", "host")):
                for t in [64, 128, 256, 512, 1024]:
                    run(kname, op, recv, t, "fixed_op", "ll_ops")

    def src_residency(self):
        """pb_ll's and pb_ll128w's recv_reduce_send over local lines with the reduction's user buffer in the L2
        (src local: the same region every launch) or streamed from HBM (src local_streamed: each launch reads a region
        of a 512 MiB buffer none of the 64 launches before read), as NCCL's user buffers are when a call's working set
        exceeds the L2."""
        cp = self.cp
        flag = 1
        nb = 96 * MB
        big = 512 * MB
        self.fill("local", "llrecv", nb, [7, flag, 9, flag])
        self.fill("local", "l128", nb, [7, 8, 9, 10] * 7 + [7, 8, 9, flag])
        stream = self.dev("srcstream", big)
        base = np.uint64(stream.data.ptr)
        launches = [0]

        def run(loop, t, streamed):
            iters = 256 if loop == "ll" else 64
            per_launch = iters * t * (8 if loop == "ll" else 64)
            regions = big // per_launch

            def src_ptr():
                if not streamed:
                    return base
                launches[0] += 1
                return np.uint64(int(base) + (launches[0] % regions) * per_launch)
            dp = self.ptr("local", "lldst", nb)
            if loop == "ll":
                k, rp = self.fn("pb_ll"), self.ptr("local", "llrecv", nb)
                out = self.dev("llout", nb)

                def launch():
                    k((1,), (t,), (rp, src_ptr(), dp, out, np.int32(iters), np.int32(LL_OPS["recv_reduce_send"]),
                                   np.uint32(flag), self.err, self.res), stream=self.s)
            else:
                k, rp = self.fn("pb_ll128w"), self.ptr("local", "l128", nb)

                def launch():
                    k((1,), (t,), (rp, src_ptr(), dp, np.int32(iters), np.int32(3), np.uint32(flag), self.err,
                                   self.res), stream=self.s)
            vals = self.trials(launch, 1, lambda c: c / self.ghz / iters)
            self.emit({"kind": "loop", "loop": loop, "ll_op": "recv_reduce_send", "recv": "local", "dst": "local",
                       "src": "local_streamed" if streamed else "local", "blocks": 1, "threads": t, "iters": iters,
                       "bytes_per_thread_iter": 8 if loop == "ll" else 64}, vals, "ns_per_iter")

        for loop, threads in (("ll", [128, 512, 1024]), ("ll128w", [128, 256, 640])):
            for t in threads:
                for streamed in (False, True):
                    self.rec.guard(f"src_residency {loop} 1x{t} streamed{streamed}", run, loop, t, streamed)

    def ll_steps(self):
        """An LL recv_reduce_send loop over local lines (pb_ll's op 7) in NCCL's steps of 32 KiB: 8 iterations of
        512 threads (4096 / threads × 8 iterations at other thread counts, 32 KiB a step), with and without NCCL's
        per-step bookkeeping around the loop (a block barrier at the step's start, a barrier and the head store at its
        end: prims_ll.h waitSend, postRecv). 64 steps a launch; lines and destination local."""
        self.step_loops("pb_ll_steps", "ll_steps", "llrecv", [7, 1, 9, 1], 8, 32 * 1024, 64,
                        [256, 512] if self.quick else [64, 128, 256, 512, 1024])

    def ll128_steps(self):
        """ll_steps for LL128 (kernel pb_ll128_steps, NCCL's LL128 layout, recv_reduce_send over local lines): steps
        of NCCL's 576,000 data bytes (15 iterations of 640 threads; 576,000 / (threads × 60) at other thread counts),
        with and without NCCL's per-step bookkeeping (prims_ll128.h GenericOp: barriers before and after the loop, the
        head store). 16 steps a launch."""
        self.step_loops("pb_ll128_steps", "ll128_steps", "l128", [7, 8, 9, 10] * 7 + [7, 8, 9, 1], 64, 576000, 16,
                        [256, 640] if self.quick else [128, 256, 512, 640])

    def step_loops(self, kernel, loop, lines, pattern, per_thread, step_data, steps, threads):
        """Runs kernel (pb_ll_steps or pb_ll128_steps) over local lines filled with pattern (flag 1), in steps of
        step_data payload bytes (per_thread bytes a thread per iteration, of which 60/64 are data for LL128), each
        thread count with (book 1) and without (book 0) the steps' bookkeeping."""
        k = self.fn(kernel)
        flag = 1
        nb = 96 * MB
        self.fill("local", lines, nb, pattern)
        src = self.dev("llsrc", nb)
        head = self.dev("llhead", 4096)
        data = per_thread if per_thread == 8 else 60

        def run(t, book):
            per_step = max(1, round(step_data / (t * data)))
            iters = steps * per_step
            rp, dp = self.ptr("local", lines, nb), self.ptr("local", "lldst", nb)

            def launch():
                k((1,), (t,), (rp, src, dp, np.int32(iters), np.int32(per_step), np.int32(book), np.uint32(flag), head,
                               self.err, self.res), stream=self.s)
            vals = self.trials(launch, 1, lambda c: c / self.ghz / iters)
            rec = {"kind": "loop", "loop": loop, "ll_op": "recv_reduce_send", "recv": "local", "dst": "local",
                   "blocks": 1, "threads": t, "iters": iters, "bytes_per_thread_iter": per_thread}
            if book:
                rec["iters_per_step"] = per_step  # with NCCL's per-step bookkeeping; without: no steps
            self.emit(rec, vals, "ns_per_iter")

        for t in threads:
            for book in (0, 1):
                self.rec.guard(f"{loop} 1x{t} book{book}", run, t, book)

    def ll_live(self):
        """LL receive loops whose lines another block of the GPU is writing at the same time (NCCL's LL between
        two GPUs: the sender's stores land while the receiver polls), against lines written by earlier launches.
        The lines live in pinned host memory (NCCL's SHM FIFO) or local memory. producer: live (the producer
        block stores as fast as it can, ahead of the receiver), paced (it pauses so as to store one iteration in
        about the receiver's time), before (the launch just before wrote them; timed alone), stale (one launch wrote
        them before the first trial; every trial reads the same lines), evicted (written just before, then 128 MiB
        of other host memory written, as part ll's 96 MiB fill does before its loops)."""
        cp = self.cp
        k = self.fn("pb_ll_live")
        iters = 256
        tmax = 1024
        nb = iters * tmax * 16
        out = self.dev("llliveout", nb)
        counter = [100]

        def next_flag():
            counter[0] += 1
            return np.uint32(counter[0])

        def run(where, producer, t):
            lp = self.ptr(where, "lllive", nb)
            pace = {"live": 0, "paced": int(1.3 * self.ghz * 1000) if where == "host" else int(0.25 * self.ghz * 1000)}
            meds, slow = [], []
            with cp.cuda.Device(0):
                self.err[...] = 0
                stale = next_flag()
                if producer == "stale":
                    k((1,), (t,), (lp, out, np.int32(iters), np.int32(1), stale, np.int64(0), self.err, self.res),
                      stream=self.s)
                    self.s.synchronize()
                for trial in range(TRIALS + 1):
                    flag = next_flag()
                    if producer == "evicted":
                        # written just before, then 128 MiB of other host memory written by the GPU, which
                        # pushes the lines out of the host's last-level cache
                        k((1,), (t,), (lp, out, np.int32(iters), np.int32(1), flag, np.int64(0), self.err, self.res),
                          stream=self.s)
                        self.s.synchronize()
                        self.fill("host", "llevict", 128 * MB, [trial, 3])
                        k((1,), (t,), (lp, out, np.int32(iters), np.int32(2), flag, np.int64(0), self.err, self.res),
                          stream=self.s)
                        self.s.synchronize()
                        cyc = int(self.res[0].get())
                    elif producer == "stale":
                        k((1,), (t,), (lp, out, np.int32(iters), np.int32(2), stale, np.int64(0), self.err, self.res),
                          stream=self.s)
                        self.s.synchronize()
                        cyc = int(self.res[0].get())
                    elif producer == "before":
                        k((1,), (t,), (lp, out, np.int32(iters), np.int32(1), flag, np.int64(0), self.err, self.res),
                          stream=self.s)
                        self.s.synchronize()
                        k((1,), (t,), (lp, out, np.int32(iters), np.int32(2), flag, np.int64(0), self.err, self.res),
                          stream=self.s)
                        self.s.synchronize()
                        cyc = int(self.res[0].get())
                    else:
                        k((2,), (t,), (lp, out, np.int32(iters), np.int32(0), flag, np.int64(pace[producer]), self.err,
                                       self.res), stream=self.s)
                        self.s.synchronize()
                        cyc = int(self.res[2].get())
                    if trial > 0:  # the first is the warm-up
                        meds.append(cyc / self.ghz / iters)
                err = bool(int(self.err.get()[0]))
            vals = (statistics.median(meds), min(meds), max(meds), max(meds), statistics.median(meds), err)
            rec = {"kind": "loop", "loop": "ll", "ll_op": "recv", "recv": where, "dst": "none", "blocks": 1,
                   "threads": t, "iters": iters, "bytes_per_thread_iter": 8, "producer": producer}
            if producer == "paced":
                rec["producer_pause_ns"] = round(pace["paced"] / self.ghz, 1)
            self.emit(rec, vals, "ns_per_iter")

        for where in ("host", "local"):
            for producer in ("stale", "before", "evicted", "live", "paced"):
                for t in ([192, 512] if self.quick else [64, 192, 320, 512, 640, 1024]):
                    self.rec.guard(f"ll_live {where} {producer} 1x{t}", run, where, producer, t)

    def ll128_live(self):
        """ll_live for LL128 (kernel pb_ll128_live, NCCL's LL128 layout): one block receives lines that another block
        of the GPU stores at the same time (live), or that a launch just before wrote (before), one launch before
        every trial wrote (stale), or a launch just before wrote and 128 MiB of other host memory then pushed out of
        the caches (evicted). Lines in pinned host memory (NCCL's SHM FIFO) or local memory; 64–640 threads."""
        cp = self.cp
        k = self.fn("pb_ll128_live")
        iters = 64
        tmax = 640
        nb = iters * tmax * 64
        out = self.dev("ll128liveout", nb)
        counter = [1000]

        def next_flag():
            counter[0] += 1
            return np.uint32(counter[0])

        def launch(grid, t, lp, role, flag):
            k((grid,), (t,), (lp, out, np.int32(iters), np.int32(role), flag, self.err, self.res), stream=self.s)
            self.s.synchronize()

        def run(where, producer, t):
            lp = self.ptr(where, "ll128live", nb)
            meds = []
            with cp.cuda.Device(0):
                self.err[...] = 0
                stale = next_flag()
                if producer == "stale":
                    launch(1, t, lp, 1, stale)
                for trial in range(TRIALS + 1):
                    flag = next_flag()
                    if producer == "live":
                        launch(2, t, lp, 0, flag)
                        cyc = int(self.res[2].get())
                    else:
                        if producer != "stale":
                            launch(1, t, lp, 1, flag)
                        if producer == "evicted":
                            self.fill("host", "llevict", 128 * MB, [trial, 5])
                        launch(1, t, lp, 2, stale if producer == "stale" else flag)
                        cyc = int(self.res[0].get())
                    if trial > 0:  # the first is the warm-up
                        meds.append(cyc / self.ghz / iters)
                err = bool(int(self.err.get()[0]))
            vals = (statistics.median(meds), min(meds), max(meds), max(meds), statistics.median(meds), err)
            self.emit({"kind": "loop", "loop": "ll128w", "ll_op": "recv", "recv": where, "dst": "none", "blocks": 1,
                       "threads": t, "iters": iters, "bytes_per_thread_iter": 64, "producer": producer},
                      vals, "ns_per_iter")

        for where in ("host", "local"):
            for producer in ("stale", "before", "evicted", "live"):
                for t in ([256, 640] if self.quick else [64, 128, 256, 640]):
                    self.rec.guard(f"ll128_live {where} {producer} 1x{t}", run, where, producer, t)

    def ll128_live_pairs(self):
        """ll128_live's live receive for P = 1–66 pairs at once (kernel pb_ll128_live_pairs: block 2p stores pair p's
        lines while block 2p + 1 receives them, each pair its own lines): lines in pinned host memory, then in local
        memory; 640 threads, 64 iterations. The record's blocks are the P receiving blocks (producer: live), its time
        the receivers' median and slowest block."""
        cp = self.cp
        k = self.fn("pb_ll128_live_pairs")
        iters, t = 64, 640
        pairs = (1, 2, 4, 8, 16, 33, 66)
        nb = max(pairs) * iters * t * 64
        out = self.dev("ll128pairsout", nb)
        with cp.cuda.Device(0):
            res = cp.zeros(2 * 2 * max(pairs), dtype=cp.int64)
        counter = [5000]

        def run(where, p):
            lp = self.ptr(where, "ll128pairs", nb)
            meds, slow, b0 = [], [], []
            with cp.cuda.Device(0):
                self.err[...] = 0
                for trial in range(TRIALS + 1):
                    counter[0] += 1
                    k((2 * p,), (t,), (lp, out, np.int32(iters), np.uint32(counter[0]), self.err, res), stream=self.s)
                    self.s.synchronize()
                    cyc = res[: 4 * p].get()[0::2][1::2]  # the receiving blocks' cycles
                    vals = [int(c) / self.ghz / iters for c in cyc]
                    if trial > 0:  # the first is the warm-up
                        meds.append(statistics.median(vals))
                        slow.append(max(vals))
                        b0.append(vals[0])
                err = bool(int(self.err.get()[0]))
            vals = (statistics.median(meds), min(meds), max(meds), statistics.median(slow), statistics.median(b0), err)
            self.emit({"kind": "loop", "loop": "ll128w", "ll_op": "recv", "recv": where, "dst": "none", "blocks": p,
                       "threads": t, "iters": iters, "bytes_per_thread_iter": 64, "producer": "live"},
                      vals, "ns_per_iter")

        for where in ("host", "local"):
            for p in pairs:
                self.rec.guard(f"ll128_live_pairs {where} {p}", run, where, p)

    def ll128_spin(self):
        """What a waiting LL128 receive's reloads of its host lines cost the data (kernel pb_ll128_spin): P = 0, 1, 2,
        4, 8, 16 blocks of 640 threads spin on lines of pinned host memory whose flag never comes, reloading every
        lane's four 16-B words each round as NCCL's LL128 receive does while it waits, beside R = 0, 4 and 16 reader
        blocks of 640 threads (one launch, one block size) each reading 4 MiB of pinned host memory with one 16-B load a thread in flight. Each
        record gives the readers' GB/s and the pollers' rounds a microsecond (their reload traffic: 40,960 B a block
        a round). Written down before the run, arsim's twins (validate TestLL128SpinTwinsPredict): a spinning block's
        rounds take one LL128 iteration over host lines, 24.3 GB/s of reloads at one block, 48.7 at two, 51.1 from
        four; 16 readers move 51.1 GB/s alone, 26.7 beside one spinning block and 24.7 beside 2-16; 4 readers 28.4
        alone, 26.7 and 24.7 beside. The other reading: the reloads cost the readers little (within 10 %)."""
        cp = self.cp
        k = self.fn("pb_ll128_spin")
        # one block size for both roles (one launch): NCCL's LL128 threads (640), or LL128_SPIN_THREADS=320,1024,…
        sizes = [int(x) for x in os.environ.get("LL128_SPIN_THREADS", "640").split(",") if x]
        if any(x % 32 or not 32 <= x <= 1024 for x in sizes):
            raise ValueError(f"LL128_SPIN_THREADS={sizes}: whole warps, 32 to 1024 threads")
        flag = 0x5eed
        words_per_reader = 4 * MB // 16
        max_poll, max_read = 16, 16
        lines = self.ptr("host", "ll128spin", max_poll * max(sizes) * 64)
        self.fill("host", "ll128spin", max_poll * max(sizes) * 64, [1, 2, 3, flag - 1])
        rbuf = self.ptr("host", "ll128spinread", max_read * words_per_reader * 16)
        self.fill("host", "ll128spinread", max_read * words_per_reader * 16, [0])
        with cp.cuda.Device(0):
            stop = cp.zeros(1, dtype=cp.uint32)
        max_rounds = 20000

        def run(p, r, t):
            if p + r == 0:
                return
            meds = {"poll": [], "read": []}
            with cp.cuda.Device(0):
                self.err[...] = 0
                for trial in range(TRIALS + 1):
                    stop.fill(0)
                    k((p + r,), (t,),
                      (lines, rbuf, np.int64(words_per_reader), np.int32(p), np.int32(r), np.int64(max_rounds),
                       np.uint32(flag), stop, self.err, self.res), stream=self.s)
                    self.s.synchronize()
                    out = self.res[:2 * (p + r)].get()
                    if trial == 0:
                        continue  # warm-up
                    if p:
                        meds["poll"].append(statistics.median(
                            int(out[2 * b + 1]) / (int(out[2 * b]) / self.ghz / 1000) for b in range(p)))
                    if r:
                        meds["read"].append(statistics.median(
                            int(out[2 * b + 1]) / (int(out[2 * b]) / self.ghz) for b in range(p, p + r)) * r)
                err = bool(int(self.err.get()[0]))
            rec = {"kind": "host_link_concurrency", "what": "sm_read_beside_ll128_spin" if r else "sm_ll128_spin",
                   "clock": "sm_clock64", "gpus": 1, "spin_blocks": p, "spin_threads": t, "clock_ghz": self.ghz,
                   "trials": TRIALS, "spin_timeout": err}
            if p:
                rec["spin_rounds_per_us"] = statistics.median(meds["poll"])
                rec["spin_gbps_per_block"] = rec["spin_rounds_per_us"] * t * 64 / 1000
            if r:  # the readers' rate
                rec.update({"blocks": r, "threads": t, "bytes_per_block": words_per_reader * 16,
                            "gbps_total": statistics.median(meds["read"])})
            else:  # the spinning blocks' reloads, bytes a second
                rec["gbps_total"] = rec["spin_gbps_per_block"] * p
            rec["gbps_per_gpu"] = rec["gbps_total"]
            self.rec.emit(rec)

        for t in sizes:
            for r in (0, 4, 16):
                for p in (0, 1, 2, 4, 8, 16):
                    self.rec.guard(f"ll128_spin P{p} R{r} T{t}", run, p, r, t)

    def ll128(self):
        k = self.fn("pb_ll128")
        flag = 1
        nb = 96 * MB
        for where in ("host", "local"):
            self.fill(where, "llrecv", nb, [7, 8, 9, flag])
        src = self.dev("llsrc", nb)

        def run(op, recv, dst, b, t, iters):
            rp = self.ptr(recv, "llrecv", nb)
            dp = self.ptr(dst, "lldst", nb)

            def launch():
                k((b,), (t,), (rp, src, dp, np.int32(iters), np.int32(op), np.uint32(flag), self.err, self.res),
                  stream=self.s)
            vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
            self.emit({"kind": "loop", "loop": "ll128", "ll_op": "recv_reduce_send" if op & 2 else "recv_send",
                       "recv": recv, "dst": dst, "blocks": b, "threads": t, "iters": iters,
                       "bytes_per_thread_iter": 64}, vals, "ns_per_iter")

        for op in (1, 3):
            for recv, dst in (("local", "local"), ("host", "host"), ("local", "host")):
                for t in ([640] if self.quick else [64, 128, 256, 640]):
                    self.rec.guard(f"ll128 {op} {recv} {dst} 1x{t}", run, op, recv, dst, 1, t, 64)
        for b in ([1, 8] if self.quick else BLOCKS):
            self.rec.guard(f"ll128 3 local local {b}x640", run, 3, "local", "local", b, 640, 16)

    def group_barriers(self, layouts=(("packed", 8, 1), ("line_per_slot", 8 * 32, 32)), worlds=(2, 3, 4, 6, 8),
                       groups=(1, 4, 16), buf_name="gb", targets=("host", "local"), threads=(32,)):
        """W-rank barriers among the GPU's blocks; a layout is (name, words between the ranks' slot groups, words
        between a rank's slots); blocks of each of threads (the first W threads take part, all of them meet at
        __syncthreads)."""
        k = self.fn("pb_group_barrier")
        nb = 200
        for target in targets:
            buf = self.ptr(target, buf_name, 4 * MB)
            page_cls = ""
            if target == "local":  # the flags' page, where they all lie on the first (flag_pages)
                page_cls = self.rec.guard("group_barriers atomic_page_probe",
                                          lambda: self.atomic_page_probe(buf, buf_name, 4 * MB)[0]) or ""
            self.fill(target, buf_name, 4 * MB, [0])
            e0 = [0]
            for layout, sr, sp in layouts:
                for W in worlds:
                    for G in groups:
                        if G * W > self.sms:
                            continue
                        for T in threads:
                            def meas(target=target, buf=buf, layout=layout, sr=sr, sp=sp, W=W, G=G, T=T):
                                def launch():
                                    k((G * W,), (T,), (buf, np.int32(W), np.int32(sr), np.int32(sp), np.int32(nb),
                                                       np.uint32(e0[0]), self.err, self.res), stream=self.s)
                                    e0[0] += nb
                                vals = self.trials(launch, G * W, lambda c: c / self.ghz / nb)
                                rec = {"kind": "loop", "loop": "group_barrier", "target": target, "layout": layout,
                                       "world": W, "groups": G, "blocks": G * W, "threads": T, "barriers_per_launch": nb}
                                if self.with_block_sms and T == 32:
                                    rec["block_sms"] = self.block_sms(G * W)
                                if page_cls and int(buf.data.ptr) % 4096 + 4 * ((G * W - 1) * sr + (W - 1) * sp) < 4096:
                                    rec["atomic_page"] = page_cls
                                self.emit(rec, vals, "ns_per_iter")
                            self.rec.guard(f"group_barrier {target} {layout} W{W} G{G} {T} threads", meas)

    def barrier_modes_w(self):
        """barrier_modes at 2, 4 and 8 ranks (1 and 4 groups, 512 threads, as vLLM launches), local and host memory:
        whether the release store's fence costs the same whatever the ranks (the W storing threads of a block are
        one warp)."""
        self.barrier_modes(worlds=(2, 4, 8), threads=(512,), groups=(1, 4), buf_name="gbw")

    def fence_groups(self):
        """barrier_modes at group counts and ranks no earlier run measured (2 ranks at 2, 8, 32 and 64 groups; 3 ranks
        at 1, 8 and 32; 6 ranks at 1, 4 and 16; 512 threads), local and host memory: whether a barrier's system fence
        waits for the other groups' polls of host memory as fence_polls.jsonl's fences wait for other blocks' (the
        model's rule), and whether it waits for its own ranks' polls beyond two ranks."""
        for W, groups in ((2, (2, 8, 32, 64)), (3, (1, 8, 32)), (6, (1, 4, 16))):
            self.barrier_modes(worlds=(W,), threads=(512,), groups=groups, buf_name="gbf")

    def barrier_modes(self, worlds=(2,), threads=(32, 512), groups=(1, 4, 16), buf_name="gbm"):
        """The flag kernels' per-block barrier (every thread p < W stores and polls, its own rank's slot included) among
        the GPU's blocks, flags in local and in pinned host memory (each rank's sector 4 KiB from the next), W = 2, 1,
        4 and 16 groups, 32 and 512 threads, in four modes: volatile; __threadfence_system then st.release.sys and
        ld.acquire.sys polls (the two-shot's mid barrier, vLLM's); release/acquire without the fence; the fence then
        volatile. What the mid barrier's release, acquire and fence cost beyond a volatile barrier."""
        k = self.fn("pb_group_barrier_mode")
        nb = 200
        modes = ("volatile", "fence_release_acquire", "release_acquire", "fence_volatile")
        for target in ("local", "host"):
            buf = self.ptr(target, buf_name, 4 * MB)
            self.fill(target, buf_name, 4 * MB, [0])
            e0 = [0]
            for T, G, W in ((T, G, W) for W in worlds for T in threads for G in groups):
                if G * W > self.sms:
                    continue
                for mi, mode in enumerate(modes):

                    def meas(target=target, buf=buf, T=T, G=G, mi=mi, mode=mode, W=W):
                        def launch():
                            k((G * W,), (T,), (buf, np.int32(W), np.int32(1024), np.int32(1), np.int32(nb),
                                               np.uint32(e0[0]), np.int32(mi), self.err, self.res), stream=self.s)
                            e0[0] += nb
                        vals = self.trials(launch, G * W, lambda c: c / self.ghz / nb)
                        self.emit({"kind": "loop", "loop": "group_barrier", "target": target, "layout": "packed_4k",
                                   "self_slot": 1, "mode": mode, "world": W, "groups": G, "blocks": G * W,
                                   "threads": T, "barriers_per_launch": nb}, vals, "ns_per_iter")
                    self.rec.guard(f"barrier_modes {target} {mode} W{W} G{G} {T}", meas)

    def barrier_sleep(self):
        """W-rank barriers in local memory (packed_4k, one group, 32 threads), W 2, 4, 8, the poll loop pausing 0, 100,
        300 or 1000 ns (__nanosleep) after each load that does not see its flag: if a barrier grows with the ranks
        because the last of several flags is seen up to a poll period late, the growth grows with the period."""
        k = self.fn("pb_group_barrier_sleep")
        nb = 200
        buf = self.ptr("local", "gbz", 4 * MB)
        self.fill("local", "gbz", 4 * MB, [0])
        e0 = [0]
        for sleep_ns in (0, 100, 300, 1000):
            for W in (2, 4, 8):
                def meas(W=W, sleep_ns=sleep_ns):
                    def launch():
                        k((W,), (32,), (buf, np.int32(W), np.int32(1024), np.int32(1), np.int32(nb), np.uint32(e0[0]),
                                        np.uint32(sleep_ns), self.err, self.res), stream=self.s)
                        e0[0] += nb
                    vals = self.trials(launch, W, lambda c: c / self.ghz / nb)
                    self.emit({"kind": "loop", "loop": "group_barrier", "target": "local", "layout": "packed_4k",
                               "world": W, "groups": 1, "blocks": W, "threads": 32, "barriers_per_launch": nb,
                               "poll_sleep_ns": sleep_ns}, vals, "ns_per_iter")
                self.rec.guard(f"barrier_sleep W{W} sleep {sleep_ns}", meas)

    def barrier_sleep_host(self):
        """barrier_sleep's barriers (pb_group_barrier_sleep: a pause after every poll that does not see its flag) in
        pinned host memory: W 2, 4, 8, one group, 32 threads, the ranks' sectors 4 KiB apart (packed_4k: no two
        collide) or 128 B apart (packed_128: lines 0-7 of a kibibyte, which collide by address bits), pauses of 0, 20,
        50, 100, 200 and 500 ns; two passes in a shuffled order (a fixed seed). Whether polls that pause see a flag in
        host memory sooner than polls back to back."""
        import random
        k = self.fn("pb_group_barrier_sleep")
        nb = 200
        buf = self.ptr("host", "gbzh", 4 * MB)
        self.fill("host", "gbzh", 4 * MB, [0])
        e0 = [0]
        configs = [(lay, st, W, sl) for lay, st in (("packed_4k", 1024), ("packed_128", 32)) for W in (2, 4, 8)
                   for sl in (0, 20, 50, 100, 200, 500)]
        rng = random.Random(20261206)
        for ps in range(2):
            order = configs[:]
            rng.shuffle(order)
            for lay, st, W, sl in order:
                def meas(lay=lay, st=st, W=W, sl=sl):
                    def launch():
                        k((W,), (32,), (buf, np.int32(W), np.int32(st), np.int32(1), np.int32(nb), np.uint32(e0[0]),
                                        np.uint32(sl), self.err, self.res), stream=self.s)
                        e0[0] += nb
                    vals = self.trials(launch, W, lambda c: c / self.ghz / nb)
                    self.emit({"kind": "loop", "loop": "group_barrier", "target": "host", "layout": lay,
                               "world": W, "groups": 1, "blocks": W, "threads": 32, "barriers_per_launch": nb,
                               "poll_sleep_ns": sl}, vals, "ns_per_iter")
                self.rec.guard(f"barrier_sleep_host {lay} W{W} sleep {sl} pass {ps}", meas)

    def barrier_threads(self):
        """W-rank barriers with each rank's slots in one sector and the ranks' sectors 4 KiB apart (packed_4k), in host
        and local memory, W 2, 4, 8, one group, blocks of 32-1024 threads: what the block's meeting at
        __syncthreads costs as the block grows (only the first W threads store and poll)."""
        self.group_barriers(layouts=(("packed_4k", 1024, 1),), worlds=(2, 4, 8), groups=(1,), buf_name="gbt",
                            threads=(32, 64, 128, 256, 512, 1024))

    def barrier_lines(self):
        """W-rank barriers with each rank's slots packed in one 32-B sector and the ranks' sectors 32, 64 or 128 B
        apart (layout packed, packed_64, packed_128): how many sectors that are written and polled at once share a
        128-B line; W 2, 4 and 8, 1-32 groups at once (at most 132 blocks)."""
        self.group_barriers(layouts=(("packed", 8, 1), ("packed_64", 16, 1), ("packed_128", 32, 1)), worlds=(2, 4, 8),
                            groups=(1, 2, 4, 8, 16, 32), buf_name="gbl")

    def barrier_spacing(self):
        """Host-memory W-rank barriers with each rank's slots in one sector and the ranks' sectors 128 B to 4 KiB
        apart (layouts packed_128, packed_256, packed_512, packed_1k, packed_2k, packed_4k): whether what a barrier
        and groups of barriers at once cost depends on how near their sectors lie; W 2, 4 and 8 at 1-16 groups for
        128 B, 256 B and 4 KiB, at 1 and 4 groups for the others; then packed_128 and packed_4k again (the run's
        drift); then, one group, a line per slot both ways round (line_per_slot_t: a writer's slots in consecutive
        lines, a poller's W lines apart; line_per_slot: the reverse)."""
        lay = {"packed_128": 32, "packed_256": 64, "packed_512": 128, "packed_1k": 256, "packed_2k": 512, "packed_4k": 1024}
        sweep = lambda names, groups: self.group_barriers(layouts=tuple((n, lay[n], 1) for n in names), worlds=(2, 4, 8),
                                                          groups=groups, buf_name="gbs", targets=("host",))
        sweep(("packed_128", "packed_256", "packed_4k"), (1, 2, 4, 8, 16))
        sweep(("packed_512", "packed_1k", "packed_2k"), (1, 4))
        sweep(("packed_128", "packed_4k"), (1, 4))
        # One group only: rank r's slot for peer p at line p*W + r, so that a writer's slots lie in consecutive lines
        # and a poller's slots W lines apart (line_per_slot the other way round).
        for W in (2, 4, 8):
            self.group_barriers(layouts=(("line_per_slot_t", 32, W * 32),), worlds=(W,), groups=(1,), buf_name="gbs",
                                targets=("host",))
        self.group_barriers(layouts=(("line_per_slot", 8 * 32, 32),), worlds=(2, 4, 8), groups=(1,), buf_name="gbs",
                            targets=("host",))

    def barrier_chunks(self):
        """Host-memory W-rank barriers in vLLM's rank-major layout (each rank's array 16 KiB after the previous one's,
        a group's slots in one 32-B sector, groups 32 B apart) with the groups in chunks of four, one 128-B line each,
        the chunks 128 B (vLLM's, adjacent lines), 256, 512, 1024 or 4096 B apart (pb_group_barrier_rmc; layouts vllm,
        vllm_chunk256 ... vllm_chunk4k); W 4 and 8, 8 and 16 groups, and 4 groups (one chunk): whether vLLM's barriers
        past a line slow each other by the lines' nearness, and over what distance."""
        k = self.fn("pb_group_barrier_rmc")
        nb = 200
        stride_rank = 4096  # words: 16 KiB
        buf = self.ptr("host", "gbc", 4 * MB)
        self.fill("host", "gbc", 4 * MB, [0])
        e0 = [0]
        chunks = (("vllm", 128), ("vllm_chunk256", 256), ("vllm_chunk512", 512), ("vllm_chunk1k", 1024), ("vllm_chunk4k", 4096))
        for W in (4, 8):
            for layout, chunk, G in [("vllm", 128, 4)] + [(l, c, G) for G in (8, 16) for l, c in chunks]:
                if G * W > self.sms:
                    continue

                def meas(layout=layout, chunk=chunk, W=W, G=G):
                    def launch():
                        k((G * W,), (32,), (buf, np.int32(W), np.int32(stride_rank), np.int32(8), np.int32(4),
                                           np.int32(chunk // 4), np.int32(nb), np.uint32(e0[0]), self.err, self.res),
                          stream=self.s)
                        e0[0] += nb
                    vals = self.trials(launch, G * W, lambda c: c / self.ghz / nb)
                    self.emit({"kind": "loop", "loop": "group_barrier", "target": "host", "layout": layout,
                               "world": W, "groups": G, "blocks": G * W, "threads": 32,
                               "barriers_per_launch": nb}, vals, "ns_per_iter")
                self.rec.guard(f"barrier_chunks {layout} W{W} G{G}", meas)

    def barrier_chunks_2(self):
        """barrier_chunks again, three passes in a shuffled order (a fixed seed) on one instance, with the chunk
        distances 128 B-2 KiB and the first chunk moved 0, 256, 512 or 1024 B into each rank's array (flag_offset):
        whether a distance's cost repeats within an instance, and whether it follows the distance or where the
        chunks land in the page. W 4 and 8; 8 and 16 groups (two and four chunks of four groups), and 4 groups (one
        chunk) at each offset for reference."""
        import random
        k = self.fn("pb_group_barrier_rmc")
        nb = 200
        stride_rank = 4096  # words: 16 KiB
        base = self.ptr("host", "gbc2", 4 * MB)
        self.fill("host", "gbc2", 4 * MB, [0])
        log("perblock", f"barrier_chunks_2: host buffer at {int(base):#x} ({int(base) % (2 << 20):#x} into 2 MiB)")
        e0 = [0]
        names = {128: "vllm", 256: "vllm_chunk256", 384: "vllm_chunk384", 512: "vllm_chunk512", 768: "vllm_chunk768",
                 1024: "vllm_chunk1k", 2048: "vllm_chunk2k"}
        configs = []
        for W in (4, 8):
            for off in (0, 256, 512, 1024):
                configs.append((W, 4, 128, off))
                for G in (8, 16):
                    for d in names:
                        if G * W <= self.sms:
                            configs.append((W, G, d, off))
        rng = random.Random(20261202)
        for ps in range(3):
            order = configs[:]
            rng.shuffle(order)
            for W, G, d, off in order:
                def meas(W=W, G=G, d=d, off=off, ps=ps):
                    buf = np.uint64(int(base) + off)

                    def launch():
                        k((G * W,), (32,), (buf, np.int32(W), np.int32(stride_rank), np.int32(8), np.int32(4),
                                           np.int32(d // 4), np.int32(nb), np.uint32(e0[0]), self.err, self.res),
                          stream=self.s)
                        e0[0] += nb
                    vals = self.trials(launch, G * W, lambda c: c / self.ghz / nb)
                    self.emit({"kind": "loop", "loop": "group_barrier", "target": "host", "layout": names[d],
                               "flag_offset": off, "world": W, "groups": G, "blocks": G * W,
                               "threads": 32, "barriers_per_launch": nb}, vals, "ns_per_iter")
                self.rec.guard(f"barrier_chunks_2 {names[d]} off {off} W{W} G{G} pass {ps}", meas)
            log("perblock", f"barrier_chunks_2: pass {ps} done, {self.rec.n} records so far")

    def barrier_pairs(self):
        """Two-rank host-memory barriers, one group (pb_group_barrier_rmc), the two ranks' sectors at A and A + x bytes
        into a page-aligned buffer (layout rank_stride, stride_bytes x, flag_offset A): A 0, 128, 256, 384, 512, 1024
        and 2048 B, x every 128 B while both lie in the first 4 KiB page, and x 4, 8 and 16 KiB; two passes in a shuffled
        order (a fixed seed). Which pairs of lines slow each other: by their distance, or by address bits."""
        import random
        k = self.fn("pb_group_barrier_rmc")
        nb = 200
        base = self.ptr("host", "gbp", 4 * MB)
        self.fill("host", "gbp", 4 * MB, [0])
        log("perblock", f"barrier_pairs: host buffer at {int(base):#x} ({int(base) % (2 << 20):#x} into 2 MiB)")
        e0 = [0]
        configs = []
        for A in (0, 128, 256, 384, 512, 1024, 2048):
            for x in list(range(128, 4096 - A, 128)) + [4096, 8192, 16384]:
                configs.append((A, x))
        rng = random.Random(20261203)
        for ps in range(2):
            order = configs[:]
            rng.shuffle(order)
            for A, x in order:
                def meas(A=A, x=x):
                    buf = np.uint64(int(base) + A)

                    def launch():
                        k((2,), (32,), (buf, np.int32(2), np.int32(x // 4), np.int32(8), np.int32(4), np.int32(32),
                                        np.int32(nb), np.uint32(e0[0]), self.err, self.res), stream=self.s)
                        e0[0] += nb
                    vals = self.trials(launch, 2, lambda c: c / self.ghz / nb)
                    self.emit({"kind": "loop", "loop": "group_barrier", "target": "host", "layout": "rank_stride",
                               "stride_bytes": x, "flag_offset": A, "world": 2, "groups": 1, "blocks": 2,
                               "threads": 32, "barriers_per_launch": nb}, vals, "ns_per_iter")
                self.rec.guard(f"barrier_pairs A {A} x {x} pass {ps}", meas)
            log("perblock", f"barrier_pairs: pass {ps} done, {self.rec.n} records so far")

    def barrier_groups_apart(self):
        """Host-memory barriers of W = 2 and 4 ranks, G groups at once, each rank's array 16 KiB after the previous
        one's (pb_group_barrier_rmc, layout rank_stride, stride_bytes 16 KiB) and group g's sector g * d bytes into it
        (group_stride_bytes d = 128, 256, 384, 512, 640, 768 or 1024 B: a line per group), G = 1, 2, 3, 4, 6, 8, 16
        and 32; two passes in a shuffled order (a fixed seed). How much the other groups' lines that collide with a
        polled one (by address bits) cost, and whether it grows with their number."""
        configs = [(W, G, 16384, d) for W in (2, 4) for d in (128, 256, 384, 512, 640, 768, 1024)
                   for G in (1, 2, 3, 4, 6, 8, 16, 32) if G * W <= self.sms and not (G == 1 and d != 128)]
        self._rank_stride_barriers("barrier_groups_apart", "gbg", configs, 20261204)

    def _rank_stride_barriers(self, name, role, configs, seed):
        """Host-memory barriers of layout rank_stride (pb_group_barrier_rmc), configs (W, G, stride_bytes,
        group_stride_bytes): group g's rank r sector at r * stride_bytes + g * group_stride_bytes of a 4-MiB buffer
        (role), 32 threads, 200 barriers a launch, two passes over the configs in a shuffled order (seed)."""
        import random
        k = self.fn("pb_group_barrier_rmc")
        nb = 200
        base = self.ptr("host", role, 4 * MB)
        self.fill("host", role, 4 * MB, [0])
        log("perblock", f"{name}: host buffer at {int(base):#x} ({int(base) % (2 << 20):#x} into 2 MiB)")
        e0 = [0]
        rng = random.Random(seed)
        for ps in range(2):
            order = configs[:]
            rng.shuffle(order)
            for W, G, st, d in order:
                def meas(W=W, G=G, st=st, d=d):
                    def launch():
                        k((G * W,), (32,), (base, np.int32(W), np.int32(st // 4), np.int32(d // 4), np.int32(G), np.int32(0),
                                           np.int32(nb), np.uint32(e0[0]), self.err, self.res), stream=self.s)
                        e0[0] += nb
                    vals = self.trials(launch, G * W, lambda c: c / self.ghz / nb)
                    self.emit({"kind": "loop", "loop": "group_barrier", "target": "host", "layout": "rank_stride",
                               "stride_bytes": st, "group_stride_bytes": d, "world": W, "groups": G,
                               "blocks": G * W, "threads": 32, "barriers_per_launch": nb}, vals, "ns_per_iter")
                self.rec.guard(f"{name} W{W} G{G} s {st} d {d} pass {ps}", meas)
            log("perblock", f"{name}: pass {ps} done, {self.rec.n} records so far")

    def barrier_line_groups(self):
        """Two-rank host-memory barriers, G groups at once (pb_group_barrier_rmc, layout rank_stride: group g's rank r
        sector at r * stride_bytes + g * group_stride_bytes), the lines holding: both ranks of two groups (32 and 64 B,
        as layout packed; 64 and 32 B), both ranks of one group (32 and 128 B; 64 and 128 B, as packed_64), one rank of
        four groups (128 and 32 B; 16 KiB and 32 B, as vllm), G = 1, 2, 4 and 16 where no two sectors meet; two passes
        in a shuffled order (a fixed seed). Which lines make layout packed's barriers of many groups two to three times
        slower than vllm's. Readings and the model's values written down before the run (README)."""
        configs = [(2, G, st, d) for st, d, G in
                   [(32, 64, G) for G in (1, 2, 4, 16)] + [(64, 32, 2)] + [(32, 128, G) for G in (1, 2, 4, 16)] +
                   [(128, 32, G) for G in (2, 4)] + [(16384, 32, G) for G in (1, 2, 4, 16)] + [(64, 128, G) for G in (2, 4, 16)]]
        self._rank_stride_barriers("barrier_line_groups", "gbl", configs, 20261206)

    def barrier_line_apart(self):
        """Host-memory barriers of layout rank_stride (pb_group_barrier_rmc), two ranks whose lines lie 256, 384, 512,
        640 or 768 B or 16 KiB apart, each holding its rank's sectors of 2 or 4 groups 32 B apart; three ranks'
        sectors 32 B apart (as packed) at 2, 8 and 32 groups; four ranks' at 2 and 8: the held-out side of the
        crowded lines (fitted on two-rank packed barriers): slow where the ranks' lines collide by
        hostmem.collision_mask (512 and 640 B), fast where not. Readings and the model's values written down before
        the run (README)."""
        configs = [(2, G, st, 32) for st in (256, 384, 512, 640, 768) for G in (2, 4)] + [(2, G, 16384, 32) for G in (2, 4)] + \
                  [(3, G, 32, 96) for G in (2, 8, 32)] + [(4, G, 32, 128) for G in (2, 8)]
        self._rank_stride_barriers("barrier_line_apart", "gba", configs, 20261207)

    def barrier_class(self):
        """One-group host-memory barriers of W = 2, 3, 4, 6, 8 ranks (pb_group_barrier_tab) in which the first m ranks'
        sectors lie on lines of one page that collide by address bits (lines 0, 1, 4, 5: m = 2, 3, 4) and every other
        rank's sector on a page of its own (m = 1: none collide); three passes in a shuffled order (a fixed seed).
        What one collision costs as the ranks, and so the stores landing on each line, grow, and whether the barrier
        goes at its most-colliding rank's pace or its median rank's."""
        klass = (0, 128, 512, 640)  # lines 0, 1, 4, 5 of the first page: they collide pairwise
        configs = [(f"W{W} m{m}", [klass[r] if r < m else (r + 1) * 4096 for r in range(W)])
                   for W in (2, 3, 4, 6, 8) for m in (1, 2, 3, 4) if m <= W]
        self.offset_barriers("barrier_class", "gbt2", configs, passes=3, seed=20261205)

    def barrier_mix(self):
        """One-group host-memory barriers (pb_group_barrier_tab) whose ranks' sectors fill two lines of one page: k
        ranks' sectors 32 B apart on line 0, the other W - k ranks' 32 B apart on line 1 (which collides with line 0
        by address bits: hostmem.collision_mask) or on line 2 (which does not). W = 2, 4, 5, 6, 8; two passes in a
        shuffled order (a fixed seed). What a colliding line adds to a sector whose own line is crowded: the model
        adds hostmem.sector_collision per colliding sector to the line's own queue (hostmem.line_contention)."""
        configs = [(f"W{W} k{kk} line at {other}", [32 * r if r < kk else other + 32 * (r - kk) for r in range(W)])
                   for W, kk in ((2, 1), (4, 2), (4, 3), (4, 4), (5, 4), (6, 3), (6, 4), (8, 4))
                   for other in (128, 256) if not (kk == W and other == 256)]
        self.offset_barriers("barrier_mix", "gbmix", configs, passes=2, seed=20261206)

    def offset_barriers(self, part, role, configs, passes, seed):
        """One-group host-memory barriers (pb_group_barrier_tab), each rank's sector at its byte offset into a page-
        aligned 4 MiB buffer of role: configs are (label, offsets), run passes times in an order shuffled by seed."""
        import random
        cp = self.cp
        k = self.fn("pb_group_barrier_tab")
        nb = 200
        base = self.ptr("host", role, 4 * MB)
        self.fill("host", role, 4 * MB, [0])
        log("perblock", f"{part}: host buffer at {int(base):#x} ({int(base) % (2 << 20):#x} into 2 MiB)")
        e0 = [0]
        rng = random.Random(seed)
        for ps in range(passes):
            order = configs[:]
            rng.shuffle(order)
            for label, offs in order:
                W = len(offs)
                with cp.cuda.Device(0):
                    dev = cp.asarray(np.array([o // 4 for o in offs], dtype=np.int32))

                def meas(W=W, offs=offs, dev=dev):
                    def launch():
                        k((W,), (32,), (base, np.int32(W), dev, np.int32(nb), np.uint32(e0[0]), self.err, self.res),
                          stream=self.s)
                        e0[0] += nb
                    vals = self.trials(launch, W, lambda c: c / self.ghz / nb)
                    self.emit({"kind": "loop", "loop": "group_barrier", "target": "host", "layout": "rank_offsets",
                               "rank_offsets": ",".join(str(o) for o in offs), "world": W, "groups": 1, "blocks": W,
                               "threads": 32, "barriers_per_launch": nb}, vals, "ns_per_iter")
                self.rec.guard(f"{part} {label} pass {ps}", meas)
            log("perblock", f"{part}: pass {ps} done, {self.rec.n} records so far")

    def barrier_layout(self):
        """Host-memory W-rank barriers laid out rank-major (kernel pb_group_barrier_rm): each rank's slots in an array
        of its own, 16 KiB after the previous rank's, a group's W slots in one 32-B sector of it. Layout vllm: the
        groups' sectors adjacent (32 B apart, four groups to a 128-B line, as vLLM's Signal and the flag kernels of
        flagar.py); vllm_line: 128 B apart (a line each); vllm_off64: 32 B apart from 64 B into a line (groups 0-1
        share the first line, 2-5 the next). W 2, 4, 8; 1-32 groups (at most 132 blocks)."""
        # The same instance's barriers with each rank's sector 4 KiB from the next (no line shared), to compare with.
        self.group_barriers(layouts=(("packed_4k", 1024, 1),), worlds=(2, 4, 8), groups=(1, 4), buf_name="gbs",
                            targets=("host",))
        k = self.fn("pb_group_barrier_rm")
        nb = 200
        stride_rank = 4096  # words: 16 KiB
        buf = self.ptr("host", "gbr", 4 * MB)
        self.fill("host", "gbr", 4 * MB, [0])
        e0 = [0]
        plan = (("vllm", 8, 0, (1, 2, 3, 4, 8, 16, 32)), ("vllm_line", 32, 0, (1, 4, 16)), ("vllm_off64", 8, 16, (2, 4, 6)),
                ("vllm", 8, 0, (1, 4)))
        for layout, stride_g, off, groups in plan:
            for W in (2, 4, 8):
                for G in groups:
                    if G * W > self.sms:
                        continue

                    def meas(layout=layout, stride_g=stride_g, off=off, W=W, G=G):
                        def launch():
                            k((G * W,), (32,), (np.uint64(int(buf) + 4 * off), np.int32(W), np.int32(stride_rank),
                                               np.int32(stride_g), np.int32(nb), np.uint32(e0[0]), self.err, self.res),
                              stream=self.s)
                            e0[0] += nb
                        vals = self.trials(launch, G * W, lambda c: c / self.ghz / nb)
                        self.emit({"kind": "loop", "loop": "group_barrier", "target": "host", "layout": layout,
                                   "world": W, "groups": G, "blocks": G * W, "threads": 32,
                                   "barriers_per_launch": nb}, vals, "ns_per_iter")
                    self.rec.guard(f"group_barrier host {layout} W{W} G{G}", meas)

    def ll128w(self, pairs=None, block_pair=("local", "local"), threads=None, blocks=None):
        k = self.fn("pb_ll128w")
        flag = 1
        nb = 96 * MB
        # every 8th vector's last word is the flag
        for where in ("host", "local"):
            self.fill(where, "l128", nb, [7, 8, 9, 10] * 7 + [7, 8, 9, flag])
        src = self.dev("llsrc", nb)

        def run(op, recv, dst, b, t, iters):
            rp = self.ptr(recv, "l128", nb)
            dp = self.ptr(dst, "lldst", nb)

            def launch():
                k((b,), (t,), (rp, src, dp, np.int32(iters), np.int32(op), np.uint32(flag), self.err, self.res),
                  stream=self.s)
            vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
            self.emit({"kind": "loop", "loop": "ll128w", "ll_op": "recv_reduce_send" if op & 2 else "recv_send",
                       "recv": recv, "dst": dst, "blocks": b, "threads": t, "iters": iters,
                       "bytes_per_thread_iter": 64}, vals, "ns_per_iter")

        for op in (1, 3):
            for recv, dst in pairs if pairs is not None else (("local", "local"), ("host", "host"), ("local", "host")):
                for t in threads if threads is not None else ([640] if self.quick else [64, 128, 256, 640]):
                    self.rec.guard(f"ll128w {op} {recv} {dst} 1x{t}", run, op, recv, dst, 1, t, 64)
        for b in blocks if blocks is not None else ([1, 8] if self.quick else BLOCKS):
            self.rec.guard(f"ll128w 3 {block_pair[0]} {block_pair[1]} {b}x640", run, 3, *block_pair, b, 640, 16)

    def ll128_residency(self):
        """pb_ll128w's recv_reduce_send over local lines, 640 threads, at 1-32 blocks and iterations chosen so the
        launch's footprint (lines, user buffer and destination, 192 B a thread and iteration) is 8-126 MB, below and
        above the 50 MB L2: does an iteration slow with the footprint (its loads from device memory) or with the
        blocks (32 blocks, 63 MB: 1.6 us against 1.03 at 16 blocks, 31 MB, in perblock*.jsonl)?"""
        k = self.fn("pb_ll128w")
        flag = 1
        nb = 96 * MB
        self.fill("local", "l128", nb, [7, 8, 9, 10] * 7 + [7, 8, 9, flag])
        src = self.dev("llsrc", nb)
        rp = self.ptr("local", "l128", nb)
        dp = self.ptr("local", "lldst", nb)
        for b, iters in ((1, 64), (1, 512), (1, 1024), (8, 8), (8, 64), (8, 128), (16, 4), (16, 32), (16, 64),
                         (24, 16), (24, 32), (32, 4), (32, 8), (32, 16), (32, 32)):
            def meas(b=b, iters=iters):
                def launch():
                    k((b,), (640,), (rp, src, dp, np.int32(iters), np.int32(3), np.uint32(flag), self.err, self.res),
                      stream=self.s)
                vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                self.emit({"kind": "loop", "loop": "ll128w", "ll_op": "recv_reduce_send", "recv": "local", "dst": "local",
                           "blocks": b, "threads": 640, "iters": iters, "bytes_per_thread_iter": 64}, vals, "ns_per_iter")
            self.rec.guard(f"ll128_residency {b}x640 {iters}", meas)

    def ll_residency(self):
        """pb_ll's recv_reduce_send over local lines with its destination local, 512 threads, at 1-132 blocks and
        iterations chosen so the launch's footprint (lines, user buffer and destination: 40 B a thread and iteration)
        lies well inside the 50 MB L2 (11-22 MB) or well past it (84-173 MB): does an LL loop slow with its footprint
        (its loads from device memory, under their own load) and not with its blocks, as ll128_residency.jsonl's LL128
        loops on an H100 did?"""
        k = self.fn("pb_ll")
        flag = 1
        nb = 192 * MB
        self.fill("local", "llres_recv", nb, [7, flag, 9, flag])
        src = self.dev("llres_src", nb)
        out = self.dev("llres_out", nb)
        rp = self.ptr("local", "llres_recv", nb)
        dp = self.ptr("local", "llres_dst", nb)
        for b, iters in ((1, 512), (1, 8192), (8, 64), (8, 1024), (16, 32), (16, 256), (32, 16), (32, 128),
                         (66, 8), (66, 64), (132, 4), (132, 64)):
            def meas(b=b, iters=iters):
                def launch():
                    k((b,), (512,), (rp, src, dp, out, np.int32(iters), np.int32(LL_OPS["recv_reduce_send"]),
                                     np.uint32(flag), self.err, self.res), stream=self.s)
                vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                self.emit({"kind": "loop", "loop": "ll", "ll_op": "recv_reduce_send", "recv": "local", "dst": "local",
                           "blocks": b, "threads": 512, "iters": iters, "bytes_per_thread_iter": 8}, vals, "ns_per_iter")
            self.rec.guard(f"ll_residency {b}x512 {iters}", meas)

    def ll128_src_blocks(self):
        """pb_ll128w's recv_reduce_send over local lines at 1-32 blocks of 640 threads, 8 iterations, the lines and the
        destination in the L2 (the same 21 MB at most every launch) and the reduction's user buffer either in the L2
        too (src local) or streamed from HBM (src local_streamed: each launch a region of a 512 MiB buffer none of the
        launches before read), as NCCL's FIFO lines stay in the L2 while a large call's user buffer streams: does the
        user buffer's load hide behind the poll at every block count (src_residency.jsonl: within 4 % at one)?"""
        flag = 1
        nb = 96 * MB
        big = 512 * MB
        iters = 8
        self.fill("local", "l128", nb, [7, 8, 9, 10] * 7 + [7, 8, 9, flag])
        stream = self.dev("srcstream", big)
        base = np.uint64(stream.data.ptr)
        k, rp, dp = self.fn("pb_ll128w"), self.ptr("local", "l128", nb), self.ptr("local", "lldst", nb)
        launches = [0]
        for b in (1, 8, 16, 24, 32):
            for streamed in (False, True):
                per_launch = b * iters * 640 * 64
                regions = big // per_launch

                def meas(b=b, streamed=streamed, per_launch=per_launch, regions=regions):
                    def src_ptr():
                        if not streamed:
                            return base
                        launches[0] += 1
                        return np.uint64(int(base) + (launches[0] % regions) * per_launch)

                    def launch():
                        k((b,), (640,), (rp, src_ptr(), dp, np.int32(iters), np.int32(3), np.uint32(flag), self.err,
                                         self.res), stream=self.s)
                    vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                    self.emit({"kind": "loop", "loop": "ll128w", "ll_op": "recv_reduce_send", "recv": "local", "dst": "local",
                               "src": "local_streamed" if streamed else "local", "blocks": b, "threads": 640,
                               "iters": iters, "bytes_per_thread_iter": 64}, vals, "ns_per_iter")
                self.rec.guard(f"ll128_src_blocks {b}x640 streamed{streamed}", meas)

    def ll128_host_blocks(self):
        """NCCL's SHM FIFO on one GPU: LL128 loops (recv_reduce_send, 640 threads) over lines in pinned host memory
        with their destination there too, at 1–132 blocks; the same over local memory for this instance's reference;
        and the LL loop (512 threads) over host lines at 1–132 blocks, as ll_live.jsonl has it."""
        self.ll128w(pairs=(), threads=(), block_pair=("host", "host"))
        self.ll128w(pairs=(), threads=(), block_pair=("local", "local"))
        self.ll(combos=[("recv_reduce_send", "host", "host")], block_combos=[("recv_reduce_send", "host", "host")],
                threads=[512])

    def heldout(self):
        """Configurations the rest of the suite does not run, for predictions nobody fitted: host polls at word
        spacings 12 and 24 B and at 12, 24, 48 and 96 blocks; LL and LL128 loops at 384, 512 and 768 threads; copies
        at 24, 48 and 96 blocks."""
        self.polls(targets=("host",), spacings=(4, 8, 12, 16, 24), blocks=[2, 6, 12, 24, 48, 96], ops=("load_volatile",))
        self.ll(combos=[("recv", "local", "none"), ("recv", "host", "none"), ("send", "none", "local"),
                        ("send", "none", "host"), ("recv_reduce_send", "local", "local"), ("recv_reduce_send", "host", "host")],
                block_combos=[], threads=[384, 768])
        self.ll128w(threads=[384, 512], blocks=[])
        self.copies(pairs=[("local", "local"), ("local", "host")], single=False, blocks=[24, 48, 96])

    def peer_loops(self):
        """NCCL-style loops whose stores go to GPU 1's memory (peer access), as NCCL's P2P sends do: LL, LL128 and
        copies with their lines or sources local, destination peer; needs two GPUs."""
        self.ll(combos=[("send", "none", "peer"), ("recv_send", "local", "peer"), ("recv_reduce_send", "local", "peer")],
                block_combos=[("recv_reduce_send", "local", "peer"), ("recv_reduce_send", "local", "local")])
        self.ll128w(pairs=(("local", "peer"),), block_pair=("local", "peer"))
        self.copies(pairs=[("local", "peer")], block_pairs=[("local", "peer"), ("local", "local")])

    # ---------- Simple-style copies -----------------------------------------------------------------------------------
    def copy_runner(self):
        """Fills the copy loops' buffers and returns run(U, S, src, dst, blocks, threads, iters, fenced=False), which
        measures and emits one copy record (fenced: the copy ends with fence.sc.sys, kernel pb_copy_fenced_8_1)."""
        nb = self.big
        for where in ("host", "local"):
            self.fill(where, "cpa", nb, [0x01010101])
        self.fill("local", "cpb", nb, [0x02020202])
        off = [0]

        def run(U, S, src, dst, b, t, iters, fenced=False, bound=1024, resident=None, nccl=False, pages=None,
                vol=False):
            name = f"pb_copy_fenced_{U}_{S}" if fenced else f"pb_copy_{U}_{S}"
            if bound != 1024:
                name = f"pb_copy_lb{bound}_{U}_{S}"
            if nccl:
                name = f"pb_nccl_copy_{U}_{S}"
            k = self.fn(name)
            a = self.ptr(src, "cpa", nb)
            bb = self.dev("cpb", nb)
            d = self.ptr(dst, "cpd", nb)
            span = b * iters * U * t  # int4 per launch
            n16 = nb // 16

            def launch():
                if off[0] + span > n16:
                    off[0] = 0
                k((b,), (t,), (a, bb, d, np.int64(off[0]), np.int32(iters), np.int32(vol or src == "host"),
                               np.int32(vol), self.res), stream=self.s)
                if not resident:
                    off[0] += span  # fresh data every launch: no L2 reuse between launches
            if resident:
                off[0] = 0  # the same region every launch: in the L2 after the warm-up
            vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
            rec = {"kind": "loop", "loop": "copy", "unroll": U, "sources": S, "src": src, "dst": dst,
                   "blocks": b, "threads": t, "iters": iters, "bytes_per_thread_iter": 16 * U, "kernel": name}
            if fenced:
                rec["fence"] = "sc"
            if resident is not None:
                rec["src_residency"] = "l2" if resident else "fresh"
            if pages:
                rec["src_pages"] = pages
            if vol:
                rec["src_loads"] = "volatile"  # every source read with ld.volatile.global (not cached in the L1)
            if nccl:
                rec["code"] = "nccl_hunks"
            elif bound != 1024:
                rec["launch_bound"] = bound
            self.emit(rec, vals, "ns_per_iter")
        return run

    def write_buffer(self):
        """Copies to pinned host memory whose blocks fill the link, 8 loads in flight, 2-32 blocks x 512 threads, as
        the launch grows from 4 to 128 iterations; each plain and ending with a system-scope fence. If stores still in
        flight between the SMs and the link when a block ends are not in its time, a plain copy's time per iteration
        grows with the launch towards the link's rate and the fenced one's does not."""
        run = self.copy_runner()
        for fenced in (False, True):
            for b in (2, 4, 8, 16, 32):
                for iters in (4, 8, 16, 32, 64, 128):
                    self.rec.guard(f"write_buffer U8 {b}x512 {iters} fenced={fenced}", run, 8, 1, "local", "host", b,
                                   512, iters, fenced)

    def copy_registers(self):
        """Two-source copies (4 and 8 loads per source in flight) as compiled for 1024-thread blocks (64 registers:
        ptxas reuses a load's register or spills) and for 512-thread blocks (128 registers), 1 block of 128 and 512
        threads, local to local, host to local, local to host; the one-source copies of 8 loads beside them."""
        run = self.copy_runner()
        for src, dst in (("local", "local"), ("host", "local"), ("local", "host")):
            for t in (128, 512):
                for U, S, bound in ((4, 2, 1024), (4, 2, 512), (8, 2, 1024), (8, 2, 512), (8, 1, 1024)):
                    self.rec.guard(f"copy_registers U{U} S{S} lb{bound} {src}->{dst} 1x{t}", run, U, S, src, dst, 1, t,
                                   max(8, 256 // U), False, bound)

    def copy_threads(self):
        """The plain copy (pb_copy_U_S, built for 1,024-thread blocks) at thread counts no earlier part ran it at: one
        block of 256, 384, 768 and 1,024 threads, one and two sources, 2, 4 and 8 loads a source in flight, local to
        local and host to local, max(8, 256 // U) iterations, fresh data every launch. Predicted before the run
        (testdata README): a two-source copy's iteration grows with the warps as a one-source copy of as many stores
        does, and from host memory each further wait of the compiled loop costs about a third of a round trip."""
        run = self.copy_runner()
        for src, dst in (("local", "local"), ("host", "local")):
            for t in (256, 384, 768, 1024):
                for U in (2, 4, 8):
                    for S in (1, 2):
                        self.rec.guard(f"copy_threads U{U} S{S} {src}->{dst} 1x{t}", run, U, S, src, dst, 1, t,
                                       max(8, 256 // U))

    def spill_threads(self):
        """Loops whose SASS spills registers, at thread counts where the spilled bytes' issue would bound them (the
        model issues them at the SM's load and store rates; predicted before the run, testdata README):
        pb_nccl_reduce_lb1024_u8_4 at 768 and 1,024 threads and pb_nccl_reduce_5_1 at 512 and 640, sources fresh from
        HBM; the plain copy pb_copy_8_2 at 640 and 896 threads, local to local and host to local."""
        self.reduce_grid("spill_threads", [(4, 8)], ((False, (768, 1024)),),
                         name_of=lambda S, U: f"pb_nccl_reduce_lb1024_u{U}_{S}", bound=1024)
        self.reduce_grid("spill_threads", [(5, 8)], ((False, (512, 640)),))
        run = self.copy_runner()
        for src in ("local", "host"):
            for t in (640, 896):
                self.rec.guard(f"spill_threads copy U8 S2 {src}->local 1x{t}", run, 8, 2, src, "local", 1, t, 32)

    def spill_reloads(self):
        """Whether a spilling copy's reloads wait on the L1 or beyond it: one block of 128-512 threads copying local
        to local with its sources read plain (cached in the L1) and with ld.volatile.global (not cached there), the
        spilling two-source copy pb_copy_8_2 beside the same loop built for 512-thread blocks, which does not spill
        (pb_copy_lb512_8_2), and two loops that do not spill (pb_copy_4_2, pb_copy_8_1); and pb_copy_8_2 and
        pb_copy_lb512_8_2 local to host at 128 threads both ways. Readings written down before the run (testdata
        README)."""
        run = self.copy_runner()
        for t in (128, 256, 384, 512):
            for U, S, bound in ((8, 2, 1024), (8, 2, 512), (4, 2, 1024), (8, 1, 1024)):
                for vol in (False, True):
                    self.rec.guard(f"spill_reloads U{U} S{S} lb{bound} vol={vol} 1x{t}", run, U, S, "local", "local",
                                   1, t, max(8, 256 // U), False, bound, vol=vol)
        for U, S, bound in ((8, 2, 1024), (8, 2, 512)):
            for vol in (False, True):
                self.rec.guard(f"spill_reloads U{U} S{S} lb{bound} vol={vol} local->host 1x128", run, U, S, "local",
                               "host", 1, 128, 32, False, bound, vol=vol)

    def volatile_loads(self):
        """One block copying local to local with its sources read plain (cached in the L1) and with
        ld.volatile.global (src_loads: volatile), at thread counts and loop shapes spill_reloads did not run: the plain
        copy pb_copy_U_S at U 1, 2, 4, 8 and S 1, 2 (not the spilling pb_copy_8_2) and pb_copy_lb512_4_2, at 128, 256,
        640 and 1,024 threads (the 512-thread build at 128 and 256), max(8, 256 // U) iterations, fresh data every
        launch. spill_reloads found volatile sources 7-19 % faster on loops that do not spill, about 40-90 ns a wait of
        the compiled loop: does a cost per wait hold across loads in flight, waits and threads?"""
        run = self.copy_runner()
        shapes = [(U, S, 1024) for U in (1, 2, 4, 8) for S in (1, 2) if (U, S) != (8, 2)] + [(4, 2, 512)]
        for U, S, bound in shapes:
            for t in ((128, 256) if bound == 512 else (128, 256, 640, 1024)):
                for vol in (False, True):
                    self.rec.guard(f"volatile_loads U{U} S{S} lb{bound} vol={vol} 1x{t}", run, U, S, "local", "local",
                                   1, t, max(8, 256 // U), False, bound, vol=vol)

    def host_copy_mix(self):
        """Copies from pinned host memory to pinned host memory by 4-32 blocks of 512 threads beside the same loops to
        GPU memory and the stores alone: pb_copy_4_1 and pb_copy_4_2 (its second source in GPU memory), host to
        host, host to local and local to host, 16 iterations, fresh data every launch. Configurations no earlier
        part ran; the model routes a host-to-host copy's stores over the link's direction towards the host beside
        its read requests (prediction written down before the run, testdata README)."""
        run = self.copy_runner()
        for S in (1, 2):
            for src, dst in (("host", "host"), ("host", "local"), ("local", "host")):
                for b in (4, 8, 16, 32):
                    self.rec.guard(f"host_copy_mix U4 S{S} {src}->{dst} {b}x512", run, 4, S, src, dst, b, 512, 16)

    def push_threads(self):
        """push_wide's one-shot push to D = 3 and 7 buffers in pinned host memory at one block of 192, 256, 320, 384,
        768 and 1,024 threads (it ran 128 and 512), plain: a thread's stores, one pack to each destination, set the
        loop's issue per warp (predicted before the run, testdata README)."""
        self.push_wide(dests=(3, 7), fences=(0,), threads=(192, 256, 320, 384, 768, 1024), blocks=(1,))

    def heldout_2(self):
        """Block counts no earlier part ran, for gpu.mem_loaded_latency and pcie.posted_write_buffer: one-load copies
        local to local at 12-120 blocks x 512 threads (64 iterations); copies to host memory with 8 loads in flight at
        3, 6, 12 and 24 blocks, 8 and 32 iterations, plain and ending with fence.sc.sys."""
        run = self.copy_runner()
        for b in (12, 20, 40, 80, 100, 120):
            self.rec.guard(f"heldout_2 copy U1 local {b}x512", run, 1, 1, "local", "local", b, 512, 64)
        for fenced in (False, True):
            for b in (3, 6, 12, 24):
                for iters in (8, 32):
                    self.rec.guard(f"heldout_2 copy U8 host {b}x512 {iters} fenced={fenced}", run, 8, 1, "local", "host",
                                   b, 512, iters, fenced)

    def heldout_3(self):
        """Configurations no earlier part ran, for the pull's batches and single vector-load extra and the push's
        store rate: pulls over 2, 4 and 8 buffers at 2, 4 and 16 blocks of 256 threads; pushes to 3 and 7 host
        buffers at 1, 2, 4 and 16 blocks of 256 threads."""
        self.pull_wide(worlds=(2, 4, 8), threads=(256,), blocks=(2, 4, 16))
        self.push_wide(dests=(3, 7), fences=(0,), threads=(256,), blocks=(1, 2, 4, 16))

    def fence_blocks(self):
        """One store of 16 B per thread then a system-scope fence, 32 threads, from 1-132 blocks at once, each block
        in its own 4 KiB of local or pinned host memory: does a fence take longer while other blocks fence?"""
        k = self.fn("pb_fence_blocks")
        iters = 200
        for dst in ("local", "host"):
            d = self.ptr(dst, "fbdst", 16 * MB)
            for f_i, f in ((1, "acq_rel"), (2, "sc")):
                for b in BLOCKS:
                    def meas(dst=dst, d=d, f_i=f_i, f=f, b=b):
                        def launch():
                            k((b,), (32,), (d, np.int32(1), np.int32(f_i), np.int32(iters), np.int64(256), self.res),
                              stream=self.s)
                        vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                        self.emit({"kind": "loop", "loop": "fence", "dst": dst, "stores_per_thread": 1, "fence": f,
                                   "blocks": b, "threads": 32, "iters": iters, "spacing_bytes": 4096}, vals,
                                  "ns_per_iter")
                    self.rec.guard(f"fence_blocks {dst} {f} {b}", meas)

    def host_readback(self):
        """One block of 32 or 512 threads reads 16-B words of pinned host memory with volatile loads, one in flight
        (each address depending on the load before), 64 iterations: words the CPU wrote (memset) just before the launch,
        or words the block itself stored with volatile stores and fenced (fence.sc.sys) just before. Are lines the GPU
        wrote served from its L2?"""
        import ctypes
        k = self.fn("pb_host_readback")
        nb = 16 * MB
        hb = self.host("hrb", nb)
        iters = 64
        for T in (32, 512):
            for write_first in (0, 1, 0, 1):
                buf = self.ptr("host", "hrb", nb)

                def meas(T=T, write_first=write_first, buf=buf):
                    def launch():
                        if not write_first:
                            ctypes.memset(hb.ptr, 5, T * iters * 16)  # the CPU writes the lines itself
                        k((1,), (T,), (buf, np.int32(iters), np.int32(write_first), self.res), stream=self.s)
                    vals = self.trials(launch, 1, lambda c: c / self.ghz / iters)
                    rec = {"kind": "loop", "loop": "host_readback", "src": "host", "blocks": 1, "threads": T,
                           "iters": iters, "bytes_per_thread_iter": 16}
                    if write_first:
                        rec["producer"] = "before"
                    self.emit(rec, vals, "ns_per_iter")
                self.rec.guard(f"host_readback {T} {write_first}", meas)

    def fence_kinds(self):
        """fence_polls with fence.acq_rel.sys (pb_fence_polls_ar) and again with fence.sc.sys on the same instance,
        beside 0-128 blocks polling pinned host memory: whether the weaker fence waits for their loads as the SC one
        does."""
        self.fence_polls(kernel="pb_fence_polls_ar", fence="acq_rel", pplaces=("host",))
        self.fence_polls(pplaces=("host",))

    def fence_threads(self):
        """A fence after one 16-B store per thread to host memory (one warp, fence.sc.sys, 200 iterations) beside 1, 8
        and 32 blocks of which 1, 32, 128 or 512 threads each poll a word of their own in pinned host memory, each in a
        32-B sector of its own (pb_fence_polls_t): whether the fence waits for each load in flight or each polling
        block. Records: neighbours = blocks, neighbour_threads = polling threads a block."""
        k = self.fn("pb_fence_polls_t")
        iters = 200
        done = self.dev("ftdone", 4096)
        stop = [1 << 24]
        polls = self.ptr("host", "ftpolls", 4 * MB)
        self.fill("host", "ftpolls", 4 * MB, [0])
        f = self.ptr("host", "ftf", 1 * MB)
        cases = [(0, 1)] + [(nb, pt) for nb in (1, 8, 32) for pt in (1, 32, 128, 512)]
        for nb, pt in cases:
            def meas(nb=nb, pt=pt):
                cp = self.cp
                vals = []
                with cp.cuda.Device(0):
                    self.err[...] = 0
                    for t in range(TRIALS + 1):
                        stop[0] += 1
                        k((nb + 1,), (max(pt, 32),), (polls, np.int32(4096), np.int32(pt), f, np.int32(iters), done,
                                                     np.uint32(stop[0]), self.err, self.res), stream=self.s)
                        self.s.synchronize()
                        if t == 0:
                            continue
                        cyc = self.res[:2 * (nb + 1)].get()[0::2]
                        vals.append(int(cyc[nb]) / self.ghz / iters)
                    err = bool(int(self.err.get()[0]))
                rec = {"kind": "loop", "loop": "fence", "dst": "host", "stores_per_thread": 1, "fence": "sc",
                       "blocks": 1, "threads": 32, "iters": iters, "clock": "sm_clock64",
                       "ns_per_iter": statistics.median(vals), "ns_per_iter_min": min(vals),
                       "ns_per_iter_max": max(vals), "clock_ghz": self.ghz, "trials": TRIALS, "spin_timeout": err}
                if nb:
                    rec.update({"neighbours": nb, "neighbour_op": "poll", "neighbour_place": "host",
                                "neighbour_threads": pt})
                self.rec.emit(rec)
            self.rec.guard(f"fence_threads {nb} {pt}", meas)

    def fence_queue(self):
        """fence_threads' fence beside 1-131 blocks of 32-512 threads each polling a word of its own in pinned host
        memory, a 32-B sector (spacing 32) or a 128-B line (spacing 128) apart (pb_fence_polls_q), with the pollers'
        own period counted: do the polls' requests queue in the GPU beyond some number in flight, and does the fence
        wait for that queue? Cases from FENCE_QUEUE_CASES (blocks:threads, comma-separated), spacings from
        FENCE_QUEUE_SPACING (bytes). Records as fence_threads' plus neighbour_spacing_bytes and neighbour_poll_ns
        (the median polling block's time over its thread 0's polls)."""
        k = self.fn("pb_fence_polls_q")
        iters = 200
        done = self.dev("fqdone", 4096)
        stop = [1 << 25]
        polls = self.ptr("host", "fqpolls", 16 * MB)
        self.fill("host", "fqpolls", 16 * MB, [0])
        f = self.ptr("host", "fqf", 1 * MB)
        default = "0:1,1:32,1:512,4:512,8:128,8:256,8:512,16:256,16:512,32:128,32:256,32:512,64:256,64:512,131:512"
        cases = [tuple(int(x) for x in c.split(":")) for c in os.environ.get("FENCE_QUEUE_CASES", default).split(",") if c]
        spacings = [int(x) for x in os.environ.get("FENCE_QUEUE_SPACING", "32,128").split(",") if x]
        for sp in spacings:
            for nb, pt in cases:
                if nb == 0 and sp != spacings[0]:
                    continue
                stride = max(4096, pt * sp // 4)

                def meas(nb=nb, pt=pt, sp=sp, stride=stride):
                    cp = self.cp
                    vals, periods = [], []
                    with cp.cuda.Device(0):
                        self.err[...] = 0
                        for t in range(TRIALS + 1):
                            stop[0] += 1
                            k((nb + 1,), (max(pt, 32),), (polls, np.int32(stride), np.int32(pt), np.int32(sp // 4), f,
                                                         np.int32(iters), done, np.uint32(stop[0]), self.err, self.res),
                              stream=self.s)
                            self.s.synchronize()
                            if t == 0:
                                continue
                            r = self.res[:2 * (nb + 1)].get()
                            cyc, cnt = r[0::2], r[1::2]
                            vals.append(int(cyc[nb]) / self.ghz / iters)
                            if nb:
                                periods.append(statistics.median(int(cyc[b]) / self.ghz / max(int(cnt[b]), 1)
                                                                 for b in range(nb)))
                        err = bool(int(self.err.get()[0]))
                    rec = {"kind": "loop", "loop": "fence", "dst": "host", "stores_per_thread": 1, "fence": "sc",
                           "blocks": 1, "threads": 32, "iters": iters, "clock": "sm_clock64",
                           "ns_per_iter": statistics.median(vals), "ns_per_iter_min": min(vals),
                           "ns_per_iter_max": max(vals), "clock_ghz": self.ghz, "trials": TRIALS, "spin_timeout": err}
                    if nb:
                        rec.update({"neighbours": nb, "neighbour_op": "poll", "neighbour_place": "host",
                                    "neighbour_threads": pt, "neighbour_spacing_bytes": sp,
                                    "neighbour_poll_ns": statistics.median(periods)})
                    self.rec.emit(rec)
                self.rec.guard(f"fence_queue {nb} {pt} {sp}", meas)

    def fence_polls(self, kernel="pb_fence_polls", fence="sc", pplaces=("host", "local")):
        """A fence after one 16-B store per thread (one warp, fence.sc.sys, 200 iterations) to local or pinned host
        memory, beside 0-128 blocks each polling a word of its own (a chain of volatile loads, one in flight) in pinned
        host memory or in local memory: does a system fence wait for other blocks' loads still on their way?"""
        k = self.fn(kernel)
        iters = 200
        done = self.dev("fpdone", 4096)
        stop = [0]
        for pplace in pplaces:
            polls = self.ptr(pplace, "fppolls", 4 * MB)
            self.fill(pplace, "fppolls", 4 * MB, [0])
            for fdst in ("host", "local"):
                f = self.ptr(fdst, "fpf", 1 * MB)
                for nb in (0, 1, 2, 4, 8, 16, 32, 64, 128):
                    if pplace == "local" and nb not in (0, 8, 128):
                        continue

                    def meas(polls=polls, f=f, fdst=fdst, pplace=pplace, nb=nb):
                        cp = self.cp
                        vals = []
                        with cp.cuda.Device(0):
                            self.err[...] = 0
                            for t in range(TRIALS + 1):
                                stop[0] += 1
                                k((nb + 1,), (32,), (polls, np.int32(1024), f, np.int32(iters), done,
                                                     np.uint32(stop[0]), self.err, self.res), stream=self.s)
                                self.s.synchronize()
                                if t == 0:
                                    continue
                                cyc = self.res[:2 * (nb + 1)].get()[0::2]
                                vals.append(int(cyc[nb]) / self.ghz / iters)
                            err = bool(int(self.err.get()[0]))
                        rec = {"kind": "loop", "loop": "fence", "dst": fdst, "stores_per_thread": 1, "fence": fence,
                               "blocks": 1, "threads": 32, "iters": iters, "clock": "sm_clock64",
                               "ns_per_iter": statistics.median(vals), "ns_per_iter_min": min(vals),
                               "ns_per_iter_max": max(vals), "clock_ghz": self.ghz, "trials": TRIALS, "spin_timeout": err}
                        if nb:
                            rec.update({"neighbours": nb, "neighbour_op": "poll", "neighbour_place": pplace})
                        self.rec.emit(rec)
                    self.rec.guard(f"fence_polls {fence} {pplace} {fdst} {nb}", meas)

    def fence_reads(self):
        """fence_beside with the 8 neighbour blocks streaming loads from pinned host memory into local memory (8 loads
        of 16 B in flight per thread, 512 threads): does a system fence wait for every load of the GPU on its way, as
        it does for every store?"""
        self.fence_beside(src_place="host", places=("local",), op="read_stream")

    def pull_ring(self, env):
        """The pullers' cases ({env}_CASES, T:L pairs), their block counts ({env}_BLOCKS) and the 256 MiB ring of pinned
        host memory they load (its pointer and its 16-B word mask), for fence_pulls and fence_stream."""
        cases = [tuple(int(x) for x in c.split(":")) for c in
                 os.environ.get(f"{env}_CASES", "32:1,128:1,512:1,512:8").split(",") if c]
        blocks = [int(b) for b in os.environ.get(f"{env}_BLOCKS", "1,2,4,8,16,32,66,131").split(",") if b]
        ring = self.big
        self.fill("host", "fpsrc", ring, [0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10])
        return cases, blocks, self.ptr("host", "fpsrc", ring), np.int64(ring // 16 - 1)

    def fence_pulls(self):
        """A fence after one 16-B store per thread to local memory (one warp, fence.sc.sys, 200 iterations) beside 0-131
        blocks that pull pinned host memory (plain 16-B loads, L a thread in flight, summed, over a 256 MiB ring) until
        the fence is done; the fence starts once every puller has. Does a system fence wait for other blocks' data
        loads as for their polls, counted by blocks or by loads in flight? (FENCE_PULLS_CASES: T:L pairs, default
        32:1,128:1,512:1,512:8; FENCE_PULLS_BLOCKS: puller counts.) Records: neighbours = pulling blocks,
        neighbour_threads, neighbour_loads (in flight a thread), neighbour_gbps (what they pulled while the fence ran)."""
        cases, blocks, src, mask = self.pull_ring("FENCE_PULLS")
        # FENCE_PULLS_COPY=1: the pullers also store each loaded word to local memory (pb_fence_copies_L, as
        # fence_reads' neighbours do; records neighbour_op read_stream)
        copy = os.environ.get("FENCE_PULLS_COPY") == "1"
        bulk = self.dev("fpbulk", 132 * MB) if copy else None
        f = self.ptr("local", "fpf", 1 * MB)
        done = self.dev("fpdone2", 4096)
        started = self.dev("fpstarted", 4096)
        iters = 200
        stop = [1 << 25]

        def meas(nb, pt, lif):
            cp = self.cp
            k = self.fn(f"pb_fence_copies_{lif}" if copy else f"pb_fence_pulls_{lif}")
            vals, rates = [], []
            with cp.cuda.Device(0):
                self.err[...] = 0
                for t in range(TRIALS + 1):
                    stop[0] += 1
                    started[...] = 0
                    cp.cuda.Device(0).synchronize()  # the zero lands before the launch on self.s
                    args = (src, mask, f, np.int32(iters), done, np.uint32(stop[0]), started, self.err, self.res)
                    k((nb + 1,), (pt if nb else 32,), args + ((bulk,) if copy else ()), stream=self.s)
                    self.s.synchronize()
                    if t == 0:
                        continue
                    r = self.res[:2 * (nb + 1)].get()
                    vals.append(int(r[2 * nb]) / self.ghz / iters)
                    if nb:
                        ns = max(int(c) for c in r[0:2 * nb:2]) / self.ghz
                        loops = sum(int(c) for c in r[1:2 * nb:2])
                        rates.append(loops * lif * pt * 16 / ns)
                err = int(self.err.get()[0])
            rec = {"kind": "loop", "loop": "fence", "dst": "local", "stores_per_thread": 1, "fence": "sc",
                   "blocks": 1, "threads": 32, "iters": iters, "clock": "sm_clock64",
                   "ns_per_iter": statistics.median(vals), "ns_per_iter_min": min(vals),
                   "ns_per_iter_max": max(vals), "clock_ghz": self.ghz, "trials": TRIALS, "spin_timeout": err == 1}
            if nb:
                rec.update({"neighbours": nb, "neighbour_op": "read_stream" if copy else "pull", "neighbour_place": "host", "neighbour_threads": pt,
                            "neighbour_loads": lif, "neighbour_gbps": statistics.median(rates)})
            self.rec.emit(rec)

        self.rec.guard("fence_pulls alone", meas, 0, 32, 1)
        for pt, lif in cases:
            for nb in blocks:
                self.rec.guard(f"fence_pulls {nb}x{pt} L{lif}", meas, nb, pt, lif)
        self.rec.guard("fence_pulls alone (again)", meas, 0, 32, 1)

    def fence_stream(self):
        """fence_pulls without the pullers' poll (pb_fence_stream_L): each puller block loads its own stretch of pinned
        host memory a fixed number of times (sized to outlast the fence loop), polling nothing; the fence (one warp, a
        local store and fence.sc.sys, 50 times) starts once every puller has. Records as fence_pulls's (neighbour_op
        pull, neighbour_threads, neighbour_loads, neighbour_gbps) with code "no_poll", and the fence loop's and the
        slowest puller's ns in note. FENCE_STREAM_CASES (T:L) and FENCE_STREAM_BLOCKS as fence_pulls's."""
        cases, blocks, src, mask = self.pull_ring("FENCE_STREAM")
        f = self.ptr("local", "fsf", 1 * MB)
        started = self.dev("fsstarted", 4096)
        iters = 50
        # FENCE_STREAM_LAYOUT: ring (default: the pullers 1 MiB apart in the 256 MiB ring, the fence waiting until they
        # have started), apart (16 MiB apart, as fence_reads' neighbours), nowait (the fence starting at once, as
        # fence_reads'), apart_nowait (both); records carry it in note
        layout = os.environ.get("FENCE_STREAM_LAYOUT", "ring")
        bstride = np.int64(1 << 20 if "apart" in layout else 65536)
        wait = np.int32(0 if "nowait" in layout else 1)

        def meas(nb, pt, lif):
            cp = self.cp
            k = self.fn(f"pb_fence_stream_{lif}")
            # each puller's stretch lasts about 6 ms at what it can pull (its bytes in flight over a 1.2-us round
            # trip, the link's 51 GB/s shared)
            rate = min(pt * lif * 16 / 1.2e-6, 51e9 / max(nb, 1))
            nbi = max(1, int(rate * 6e-3 / (pt * lif * 16)))
            vals, rates, slow = [], [], []
            with cp.cuda.Device(0):
                for t in range(TRIALS + 1):
                    started[...] = 0
                    cp.cuda.Device(0).synchronize()
                    k((nb + 1,), (pt,), (src, mask, f, np.int32(iters), np.int32(nbi), started, self.res, bstride, wait),
                      stream=self.s)
                    self.s.synchronize()
                    if t == 0:
                        continue
                    r = self.res[:2 * (nb + 1)].get()
                    vals.append(int(r[2 * nb]) / self.ghz / iters)
                    ns = max(int(c) for c in r[0:2 * nb:2]) / self.ghz
                    slow.append(ns)
                    rates.append(nb * nbi * lif * pt * 16 / ns)
            med = statistics.median(vals)
            self.rec.emit({"kind": "loop", "loop": "fence", "dst": "local", "stores_per_thread": 1, "fence": "sc",
                           "blocks": 1, "threads": 32, "iters": iters, "clock": "sm_clock64", "ns_per_iter": med,
                           "ns_per_iter_min": min(vals), "ns_per_iter_max": max(vals), "clock_ghz": self.ghz,
                           "trials": TRIALS, "spin_timeout": False, "code": "no_poll",
                           "neighbours": nb, "neighbour_op": "pull", "neighbour_place": "host", "neighbour_threads": pt,
                           "neighbour_loads": lif, "neighbour_gbps": statistics.median(rates),
                           "note": f"pullers {nbi} iterations, slowest {statistics.median(slow):.0f} ns; the fence loop {med * iters:.0f} ns"
                                   + ("" if layout == "ring" else f"; layout {layout}")})

        for pt, lif in cases:
            for nb in blocks:
                self.rec.guard(f"fence_stream {nb}x{pt} L{lif}", meas, nb, pt, lif)

    def fence_after_pull(self):
        """Every block of B (1-132) loads an even share of the 256 MiB ring of pinned host memory (512 threads, L = 1 or
        8 plain 16-B loads a thread in flight, fence_stream's loop), meets, and then its first warp stores a 16-B word a
        thread to local memory and runs fence.sc.sys (fence sc), or does not (fence none); each block times its store
        and fence with clock64 and marks the meeting and the fence's end with the globaltimer (pb_fence_after_pull_L).
        As a host-staged allreduce's blocks fence before their flags while the other blocks end their shares: does a
        block's fence wait for the loads the others still have on their way, counted by their loads in flight, by
        their blocks, or not at all? Records: loop fence_after_pull, blocks, threads 512, loads_per_thread L, fence;
        ns_per_iter the median block's store and fence, ns_per_iter_slowest_block the slowest block's, and in note the
        spread of the blocks' meetings (their pulls' ends) and how long after the last meeting the last fence ended.
        FENCE_AFTER_PULL_BLOCKS: the block counts."""
        blocks = [int(b) for b in os.environ.get("FENCE_AFTER_PULL_BLOCKS", "1,2,4,8,16,32,66,132").split(",") if b]
        ring = self.big
        self.fill("host", "fpsrc", ring, [0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10])
        src, mask = self.ptr("host", "fpsrc", ring), np.int64(ring // 16 - 1)
        f = self.ptr("local", "fapf", 1 * MB)
        sink = self.dev("fapsink", 4096)
        pt = 512
        for lif in (1, 8):
            k = self.fn(f"pb_fence_after_pull_{lif}")
            for nb in blocks:
                for fence in (1, 0):

                    def meas(nb=nb, lif=lif, fence=fence, k=k):
                        cp = self.cp
                        # each block's share: about 200 us at what the blocks can pull together (their bytes in
                        # flight over a 1.2-us round trip, the link's 51 GB/s shared), whole iterations
                        rate = min(pt * lif * 16 / 1.2e-6, 51e9 / nb)
                        nbi = max(1, int(rate * 200e-6 / (pt * lif * 16)))
                        med, slowest, spread, tail = [], [], [], []
                        with cp.cuda.Device(0):
                            for t in range(TRIALS + 1):
                                k((nb,), (pt,), (src, mask, f, np.int32(nbi), np.int32(fence), self.res, sink), stream=self.s)
                                self.s.synchronize()
                                if t == 0:
                                    continue
                                r = self.res[:3 * nb].get()
                                meet, cyc, end = r[0::3], r[1::3], r[2::3]
                                ns = sorted(int(c) / self.ghz for c in cyc)
                                med.append(statistics.median(ns))
                                slowest.append(ns[-1])
                                spread.append(int(max(meet)) - int(min(meet)))
                                tail.append(int(max(end)) - int(max(meet)))
                        self.rec.emit({"kind": "loop", "loop": "fence_after_pull", "dst": "local", "stores_per_thread": 1,
                                       "fence": "sc" if fence else "none", "blocks": nb, "threads": pt,
                                       "loads_per_thread": lif, "load_src": "host", "iters": 1, "clock": "sm_clock64",
                                       "ns_per_iter": statistics.median(med), "ns_per_iter_min": min(med),
                                       "ns_per_iter_max": max(med), "ns_per_iter_slowest_block": statistics.median(slowest),
                                       "clock_ghz": self.ghz, "trials": TRIALS,
                                       "note": f"each block {nbi} iterations ({nbi * lif * pt * 16} B); the blocks' meetings "
                                               f"{statistics.median(spread):.0f} ns apart (globaltimer), the last fence's end "
                                               f"{statistics.median(tail):.0f} ns after the last meeting"})
                    self.rec.guard(f"fence_after_pull {nb} L{lif} fence{fence}", meas)

    def fence_burst(self):
        """One block's threads each store k 16-B words (plain stores) into their place of local or pinned host memory,
        meet, the first nf threads run fence.sc.sys, meet again; 200 iterations (pb_fence_burst). nf = 0 is the loop
        without a fence: the difference is what a fence costs after a block-wide burst, as a two-shot's mid barrier
        fences after its stage-1 stores. Records: loop fence_burst, threads, stores_per_thread = k, fencing_threads = nf,
        fence sc (none with nf = 0)."""
        k = self.fn("pb_fence_burst")
        iters = 200
        for dst in ("local", "host"):
            d = self.ptr(dst, "fbdst", 16 * MB)
            for t in (32, 128, 512, 1024):
                for kk in (0, 1, 2, 8):
                    for nf in (0, 1, 32):
                        if dst == "host" and (kk not in (0, 1) or t not in (32, 512)):
                            continue

                        def meas(d=d, dst=dst, t=t, kk=kk, nf=nf):
                            cp = self.cp
                            vals = []
                            with cp.cuda.Device(0):
                                for trial in range(TRIALS + 1):
                                    k((1,), (t,), (d, np.int32(kk), np.int32(nf), np.int32(iters), self.res), stream=self.s)
                                    self.s.synchronize()
                                    if trial:
                                        vals.append(int(self.res[0].get()) / self.ghz / iters)
                            self.rec.emit({"kind": "loop", "loop": "fence_burst", "dst": dst, "threads": t, "blocks": 1,
                                           "stores_per_thread": kk, "fencing_threads": nf, "fence": "sc" if nf else "none",
                                           "iters": iters, "clock": "sm_clock64", "ns_per_iter": statistics.median(vals),
                                           "ns_per_iter_min": min(vals), "ns_per_iter_max": max(vals),
                                           "clock_ghz": self.ghz, "trials": TRIALS})
                        self.rec.guard(f"fence_burst {dst} {t} k{kk} nf{nf}", meas)

    def fence_loads(self):
        """One block's threads each load k 16-B words of local or pinned host memory (plain loads, or ld.global.cg that
        skips the L1), store their sum to local memory, meet, the first nf threads run fence.sc.sys, meet again; 200
        iterations (pb_fence_loads). Against nf = 0, what a fence costs after the block's loads (fence_burst: after
        its stores only). Records: loop fence_burst with load_src (local or host), loads_per_thread = k, code cg when
        the loads skip the L1, stores_per_thread 1, fencing_threads = nf."""
        k = self.fn("pb_fence_loads")
        iters = 200
        dst = self.ptr("local", "flddst", 1 * MB)
        for src_place in ("local", "host"):
            self.fill(src_place, "fldsrc", 64 * MB, [0x01010101, 0x02020202, 0x03030303, 0x04040404])
            src = self.ptr(src_place, "fldsrc", 64 * MB)
            for t in (128, 512):
                for kk in (0, 1, 2, 8):
                    for cg in (0, 1):
                        for nf in (0, 1):
                            if kk == 0 and cg:
                                continue

                            def meas(src=src, src_place=src_place, t=t, kk=kk, cg=cg, nf=nf):
                                cp = self.cp
                                vals = []
                                with cp.cuda.Device(0):
                                    for trial in range(TRIALS + 1):
                                        k((1,), (t,), (src, dst, np.int32(kk), np.int32(cg), np.int32(nf), np.int32(iters),
                                                       self.res), stream=self.s)
                                        self.s.synchronize()
                                        if trial:
                                            vals.append(int(self.res[0].get()) / self.ghz / iters)
                                rec = {"kind": "loop", "loop": "fence_burst", "dst": "local", "threads": t, "blocks": 1,
                                       "stores_per_thread": 1, "load_src": src_place, "loads_per_thread": kk,
                                       "fencing_threads": nf, "fence": "sc" if nf else "none", "iters": iters,
                                       "clock": "sm_clock64", "ns_per_iter": statistics.median(vals),
                                       "ns_per_iter_min": min(vals), "ns_per_iter_max": max(vals), "clock_ghz": self.ghz,
                                       "trials": TRIALS}
                                if cg:
                                    rec["code"] = "cg"
                                self.rec.emit(rec)
                            self.rec.guard(f"fence_loads {src_place} {t} k{kk} cg{cg} nf{nf}", meas)

    def fence_beside(self, src_place="local", places=("none", "local", "host"), op="stream"):
        """A fence after one 16-B store per thread (one warp, fence.sc.sys, 200 iterations) in local or pinned host
        memory, alone or beside 8 blocks x 512 threads streaming stores (8 loads in flight, 64 KiB a block an
        iteration, 256 iterations) to pinned host memory or to local memory. Does a fence wait only for its own
        block's stores, or for every store of the GPU still on its way?"""
        # FENCE_BESIDE_CODE=lb512: the same kernel built for 512-thread blocks (pb_fence_beside_lb512), whose copy
        # loop need not spill; its records carry code lb512 and the neighbours' threads and loads a thread
        code = os.environ.get("FENCE_BESIDE_CODE", "")
        if code not in ("", "lb512"):
            raise ValueError(f"FENCE_BESIDE_CODE={code!r}: lb512 or nothing")
        k = self.fn("pb_fence_beside_lb512" if code else "pb_fence_beside")
        nb = self.big
        self.fill(src_place, "fbsrc", nb, [0x01010101])
        src = self.ptr(src_place, "fbsrc", nb)
        iters, iters_bulk, writers = 200, 256, 8
        # FENCE_BESIDE_BLOCKS: other counts of neighbour blocks (default 8); each then streams at most 256 iterations
        # and what fits its share of the buffer, the fence 50 times
        counts = [int(x) for x in os.environ.get("FENCE_BESIDE_BLOCKS", "").split(",") if x] or [writers]
        for fdst in ("local", "host"):
            f = self.ptr(fdst, "fbf", 1 * MB)
            for place, writers in [(p, w) for p in places for w in (counts if p != "none" else [writers])]:
                b = 1 if place == "none" else writers + 1
                bulk = self.ptr("host" if place == "none" else place, "fbbulk", nb)
                if counts != [8]:
                    iters, iters_bulk = 50, max(1, min(256, nb // (writers * 8 * 512 * 16)))

                def meas(f=f, fdst=fdst, place=place, b=b, bulk=bulk, writers=writers, iters=iters, iters_bulk=iters_bulk):
                    def launch():
                        k((b,), (512,), (src, bulk, f, np.int32(iters_bulk), np.int32(iters), self.res), stream=self.s)
                    cp = self.cp
                    vals, bulk_ns = [], []
                    with cp.cuda.Device(0):
                        launch(); self.s.synchronize()
                        for _ in range(TRIALS):
                            launch(); self.s.synchronize()
                            cyc = self.res[:2 * b].get()[0::2]
                            vals.append(int(cyc[b - 1]) / self.ghz / iters)
                            if b > 1:
                                bulk_ns.append(max(int(c) for c in cyc[:b - 1]) / self.ghz)
                    med = statistics.median(vals)
                    rec = {"kind": "loop", "loop": "fence", "dst": fdst, "stores_per_thread": 1, "fence": "sc",
                           "blocks": 1, "threads": 32, "iters": iters, "clock": "sm_clock64", "ns_per_iter": med,
                           "ns_per_iter_min": min(vals), "ns_per_iter_max": max(vals), "clock_ghz": self.ghz,
                           "trials": TRIALS, "spin_timeout": False}
                    if code:
                        rec["code"] = code
                    if b > 1 and code:
                        rec.update({"neighbour_threads": 512, "neighbour_loads": 8})
                    if b > 1:
                        rec.update({"neighbours": writers, "neighbour_op": op, "neighbour_place": src_place if op == "read_stream" else place,
                                    "note": f"neighbours' stream: {writers} blocks x 512 threads x 8 x 16 B x {iters_bulk} "
                                            f"iterations from {src_place} to {place} memory, slowest {statistics.median(bulk_ns):.0f} ns"
                                            + (f"; the fence loop {med * iters:.0f} ns" if counts != [8] else "")})
                    self.rec.emit(rec)
                self.rec.guard(f"fence_beside {op} {fdst} {place}", meas)

    def copies(self, pairs=None, block_pairs=None, single=True, blocks=None):
        run = self.copy_runner()

        pairs = pairs or [("local", "local"), ("host", "local"), ("local", "host")]
        for U in (1, 2, 4, 8) if single else ():
            for S in (1, 2):
                for src, dst in pairs:
                    for t in ([512] if self.quick else [128, 512]):
                        iters = max(8, 256 // U)
                        self.rec.guard(f"copy U{U} S{S} {src}->{dst} 1x{t}", run, U, S, src, dst, 1, t, iters)
        blocks = blocks or ([1, 8, 66] if self.quick else BLOCKS)
        for U in (1, 8):
            for src, dst in block_pairs or pairs:
                for b in blocks:
                    self.rec.guard(f"copy U{U} {src}->{dst} {b}x512", run, U, 1, src, dst, b, 512, max(4, 64 // U))

    def simple_steps(self):
        k = self.fn("pb_simple_step")
        nb = 64 * MB
        self.fill("local", "ssctr", 4096, [0x7fffffff])
        ctr = self.dev("ssctr", 4096)
        src = self.dev("sssrc", nb)
        steps = 200
        for dst in ("local", "host"):
            d = self.ptr(dst, "ssdst", nb)
            fl = self.ptr(dst, "ssflag", 4096)
            for slice_bytes in (0, 4096, 65536):
                for f_i, f in enumerate(FENCES):
                    for t in ([512] if self.quick else [128, 256, 512]):
                        def meas(dst=dst, d=d, fl=fl, slice_bytes=slice_bytes, f_i=f_i, f=f, t=t):
                            def launch():
                                k((1,), (t,), (ctr, src, d, fl, np.int32(steps), np.int32(slice_bytes // 16),
                                               np.int32(f_i), self.err, self.res), stream=self.s)
                            vals = self.trials(launch, 1, lambda c: c / self.ghz / steps)
                            self.emit({"kind": "loop", "loop": "simple_step", "dst": dst, "slice_bytes": slice_bytes,
                                       "fence": f, "blocks": 1, "threads": t, "steps": steps}, vals, "ns_per_iter")
                        self.rec.guard(f"simple_step {dst} {slice_bytes} {f} {t}", meas)

    def simple_blocks(self):
        """NCCL Simple's steps (pb_simple_step_blocks: NCCL's reduceCopy shape, 512 threads) from 1, 2, 4 and 8 blocks
        at once, each block a channel with its own destination region and flag line, storing to pinned host memory
        (the blocks share the GPU's one link) or to local memory, slices of 2-64 KiB, the source slice of each step in
        the L2: does a step's copy cost one iteration plus its bytes at the link's share (its first stores wait for
        its first loads), or its bytes alone once they outlast the iteration?"""
        k = self.fn("pb_simple_step_blocks")
        nb = 128 * MB
        steps = 200
        self.fill("local", "ssctr", 4096, [0x7fffffff])
        ctr = self.dev("ssctr", 4096)
        src = self.dev("sssrc", steps * 65536)
        for dst, fences in (("host", (1,)), ("local", (1,))):  # NCCL's postPeer: fence.acq_rel.sys after a step's data
            d = self.ptr(dst, "ssbdst", nb)
            fl = self.ptr(dst, "ssbflag", 4096)
            for slice_bytes in (2048, 8192, 16384, 32768, 65536):
                for f_i in fences:
                    for b in (1, 2, 4, 8):
                        t = 512
                        def meas(dst=dst, d=d, fl=fl, slice_bytes=slice_bytes, f_i=f_i, b=b, t=t):
                            def launch():
                                k((b,), (t,), (ctr, src, d, fl, np.int32(steps), np.int32(slice_bytes // 16),
                                               np.int32(f_i), self.err, self.res), stream=self.s)
                            vals = self.trials(launch, b, lambda c: c / self.ghz / steps)
                            self.emit({"kind": "loop", "loop": "simple_step", "dst": dst, "slice_bytes": slice_bytes,
                                       "fence": FENCES[f_i], "blocks": b, "threads": t, "steps": steps,
                                       "src_residency": "l2", "code": "nccl_hunks"},
                                      vals, "ns_per_iter")
                        self.rec.guard(f"simple_blocks {dst} {slice_bytes} {FENCES[f_i]} {b}", meas)

    def simple_tail(self):
        """NCCL Simple's steps in NCCL's reduceCopy shape with slices that leave packs over after the warps' whole
        hunks of 8 x 32 packs (4 KiB): the left-over packs go in a second pass of one pack a lane, the warps taking
        them in turn, from warp 0 (pb_simple_step_hunks, code nccl_hunks) or, as NCCL renumbers its warps first, from
        the warp that took fewest whole hunks (pb_simple_step_rot, code nccl_hunks_rot). One block, 64-256 threads,
        slices of 2-20 KiB, fence.acq_rel.sys after each step's data, the source in the L2, to local and to pinned
        host memory: does a slice whose left-over packs fall on a warp that already took a whole hunk cost a second
        pass (the round trip of one more load), where one whose left-over packs idle warps take does not?"""
        self.simple_hunk_steps("simple_tail",
                               ((64, (2048, 3072, 4096)), (128, (4096, 5120, 6144, 8192, 12288, 14336, 18432)),
                                (160, (4096, 7168, 8192)), (256, (8192, 10240, 16384, 20480))),
                               (("pb_simple_step_hunks", "nccl_hunks"), ("pb_simple_step_rot", "nccl_hunks_rot")))

    def simple_whole(self):
        """simple_tail's steps (pb_simple_step_hunks) with slices of whole hunks that do not divide evenly over the
        warps (5-7 hunks on 4 warps, 9-15 on 8, 17-31 on 16) and slices that do: does the warp with one whole hunk
        more than the others cost a whole pass more (the round trip of its Unroll loads), or only its share of the
        loop's rate?"""
        self.simple_hunk_steps("simple_whole",
                               ((128, (16384, 20480, 24576, 28672, 32768)), (256, (32768, 36864, 49152, 61440, 65536)),
                                (512, (65536, 69632, 98304, 126976, 131072))),
                               (("pb_simple_step_hunks", "nccl_hunks"),))

    def simple_hunk_steps(self, part, cases, kernels):
        """One block's Simple steps in NCCL's reduceCopy shape, fence.acq_rel.sys after each step's data, the source
        in the L2, to local and to pinned host memory: cases are (threads, slice bytes), kernels (kernel, code)."""
        nb = 64 * MB
        steps = 200
        self.fill("local", "ssctr", 4096, [0x7fffffff])
        ctr = self.dev("ssctr", 4096)
        most = max(b for _, sl in cases for b in sl)
        src = self.dev(f"sstsrc{most}", steps * most)
        for kname, code in kernels:
            k = self.fn(kname)
            for dst in ("local", "host"):
                d = self.ptr(dst, "sstdst", nb)
                fl = self.ptr(dst, "sstflag", 4096)
                for t, slices in cases:
                    for slice_bytes in slices:
                        def meas(k=k, code=code, dst=dst, d=d, fl=fl, slice_bytes=slice_bytes, t=t):
                            def launch():
                                k((1,), (t,), (ctr, src, d, fl, np.int32(steps), np.int32(slice_bytes // 16),
                                               np.int32(1), self.err, self.res), stream=self.s)
                            vals = self.trials(launch, 1, lambda c: c / self.ghz / steps)
                            self.emit({"kind": "loop", "loop": "simple_step", "dst": dst, "slice_bytes": slice_bytes,
                                       "fence": FENCES[1], "blocks": 1, "threads": t, "steps": steps,
                                       "src_residency": "l2", "code": code}, vals, "ns_per_iter")
                        self.rec.guard(f"{part} {code} {dst} {slice_bytes} {t}", meas)

    def simple_fresh(self):
        """pb_simple_step's slice copies (fence none) with the source in the L2 (src_residency l2: the same 200
        slices every launch, as simple_steps runs them) or streamed from HBM (fresh: each launch reads 200 slices of a
        1 GiB buffer that no launch before read)."""
        k = self.fn("pb_simple_step")
        nb = 64 * MB
        big = 1024 * MB
        steps = 200
        self.fill("local", "ssctr", 4096, [0x7fffffff])
        ctr = self.dev("ssctr", 4096)
        stream = self.dev("ssstream", big)
        base = np.uint64(stream.data.ptr)
        launches = [0]
        for dst in ("local", "host"):
            d = self.ptr(dst, "ssdst", nb)
            fl = self.ptr(dst, "ssflag", 4096)
            for slice_bytes in (4096, 65536):
                per_launch = steps * slice_bytes
                regions = big // per_launch
                for residency in ("l2", "fresh"):
                    for t in [128, 256, 512]:
                        def src_ptr(residency=residency, per_launch=per_launch, regions=regions):
                            if residency == "l2":
                                return base
                            launches[0] += 1
                            return np.uint64(int(base) + (1 + launches[0] % (regions - 1)) * per_launch)

                        def meas(dst=dst, d=d, fl=fl, slice_bytes=slice_bytes, t=t, residency=residency, src_ptr=src_ptr):
                            def launch():
                                k((1,), (t,), (ctr, src_ptr(), d, fl, np.int32(steps), np.int32(slice_bytes // 16),
                                               np.int32(0), self.err, self.res), stream=self.s)
                            vals = self.trials(launch, 1, lambda c: c / self.ghz / steps)
                            self.emit({"kind": "loop", "loop": "simple_step", "dst": dst, "slice_bytes": slice_bytes,
                                       "fence": "none", "blocks": 1, "threads": t, "steps": steps,
                                       "src_residency": residency}, vals, "ns_per_iter")
                        self.rec.guard(f"simple_fresh {dst} {slice_bytes} {residency} {t}", meas)

    def fences(self):
        k = self.fn("pb_fence")
        iters = 200
        for dst in ("local", "host"):
            d = self.ptr(dst, "fdst", 16 * MB)
            for nst in (0, 1, 16):
                for f_i, f in enumerate(FENCES):
                    for t in (1, 32, 512):
                        def meas(dst=dst, d=d, nst=nst, f_i=f_i, f=f, t=t):
                            def launch():
                                k((1,), (t,), (d, np.int32(nst), np.int32(f_i), np.int32(iters), self.res),
                                  stream=self.s)
                            vals = self.trials(launch, 1, lambda c: c / self.ghz / iters)
                            self.emit({"kind": "loop", "loop": "fence", "dst": dst, "stores_per_thread": nst,
                                       "fence": f, "blocks": 1, "threads": t, "iters": iters}, vals, "ns_per_iter")
                        self.rec.guard(f"fence {dst} {nst} {f} {t}", meas)

    def pulls(self):
        nb = 64 * MB
        self.fill("local", "pl0", nb, [1])
        for i in (1, 2, 3):
            self.fill("host", f"pl{i}", nb, [i + 1])
        p = [self.dev("pl0", nb)] + [self.ptr("host", f"pl{i}", nb) for i in (1, 2, 3)]
        out = self.dev("plout", nb)
        for variant in ("runtime", "unrolled"):
            for world in (2, 4):
                name = "pb_pull_runtime" if variant == "runtime" else f"pb_pull_unrolled{world}"
                k = self.fn(name)
                for t in (128, 512):
                    for b in (1, 8):
                        iters = 64

                        def meas(k=k, variant=variant, world=world, t=t, b=b):
                            def launch():
                                k((b,), (t,), (p[0], p[1], p[2], p[3], np.int32(world), out, np.int32(iters),
                                               self.res), stream=self.s)
                            vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                            self.emit({"kind": "loop", "loop": "pull", "loop_bound": variant, "world": world,
                                       "src": "local+host", "blocks": b, "threads": t, "iters": iters,
                                       "bytes_per_thread_iter": 16}, vals, "ns_per_iter")
                        self.rec.guard(f"pull {variant} {world} {b}x{t}", meas)

    def pull_iters(self):
        """The pulls' loop (own buffer local, the other in pinned host memory, world 2; loop bound at run time and
        unrolled) launched for 1, 2, 3, 4, 8, 16 and 64 iterations, 1 and 8 blocks of 128 and 512 threads: whether a
        launch of n iterations takes n iterations, or a round trip more (the first loads' wait counted apart)."""
        nb = 64 * MB
        self.fill("local", "pi0", nb, [1])
        self.fill("host", "pi1", nb, [2])
        p = [self.dev("pi0", nb), self.ptr("host", "pi1", nb)]
        out = self.dev("piout", nb)
        for variant in ("runtime", "unrolled"):
            k = self.fn("pb_pull_runtime" if variant == "runtime" else "pb_pull_unrolled2")
            for t in (128, 512):
                for b in (1, 8):
                    for iters in (1, 2, 3, 4, 8, 16, 64):
                        def meas(k=k, variant=variant, t=t, b=b, iters=iters):
                            def launch():
                                k((b,), (t,), (p[0], p[1], p[1], p[1], np.int32(2), out, np.int32(iters), self.res),
                                  stream=self.s)
                            vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                            self.emit({"kind": "loop", "loop": "pull", "loop_bound": variant, "world": 2,
                                       "src": "local+host", "blocks": b, "threads": t, "iters": iters,
                                       "bytes_per_thread_iter": 16}, vals, "ns_per_iter")
                        self.rec.guard(f"pull_iters {variant} {b}x{t} {iters}", meas)

    def copy_l2(self):
        """Copies from local to pinned host memory, one 16-B load per thread in flight, whose source is the same region
        every launch (in the L2 after the warm-up; src_residency l2) or fresh every launch (from HBM), 1, 2 and 8 blocks of 128
        and 512 threads, 4, 21 and 64 iterations: what the L2 saves a copy's iteration."""
        run = self.copy_runner()
        for resident in (False, True):
            for t in (128, 512):
                for b in (1, 2, 8):
                    for iters in (4, 21, 64):
                        self.rec.guard(f"copy_l2 {resident} {b}x{t} {iters}", run, 1, 1, "local", "host", b, t, iters,
                                       resident=resident)

    def copy_unroll_l2(self):
        """Copies of 2, 4 and 8 loads in flight a thread (one source, local to local; 8 also to host), one block of
        128, 256 and 512 threads, 32 iterations, whose source is the same region every launch (src_residency l2) or
        fresh every launch (from HBM): what HBM costs an iteration as loads in flight grow (copy_l2 measured one)."""
        run = self.copy_runner()
        for resident in (False, True):
            for U, dst in ((2, "local"), (4, "local"), (8, "local"), (8, "host")):
                for t in (128, 256, 512):
                    self.rec.guard(f"copy_unroll_l2 {resident} {U} {dst} {t}", run, U, 1, "local", dst, 1, t, 32,
                                   resident=resident)

    def nccl_copy(self):
        """NCCL Simple's loop shape (pb_nccl_copy_8_S: warp hunks, volatile loads, 640-thread build) beside the plain
        copy loop of the same loads (pb_copy_8_1; pb_copy_lb512_8_2 for two sources, which does not spill), one block
        of 128, 256 and 512 threads, 32 iterations, local to local and local to host, the sources in the L2 or fresh
        from HBM."""
        run = self.copy_runner()
        for resident in (False, True):
            for S in (1, 2):
                for dst in ("local", "host"):
                    for t in (128, 256, 512):
                        for nccl in (False, True):
                            bound = 512 if (S == 2 and not nccl) else 1024
                            self.rec.guard(f"nccl_copy {resident} {S} {dst} {t} {nccl}", run, 8, S, "local", dst, 1, t,
                                           32, bound=bound, resident=resident, nccl=nccl)

    def host_copies(self):
        """A block that loads pinned host memory and stores to it as well (NCCL Simple's receive over SHM sends on to
        host memory in the same loop) beside the same loads storing to GPU memory, and the stores alone: the plain copy
        (pb_copy_U_S) at U 1, 2, 4, 8 and S 1, 2, one block of 128 and 512 threads, host to host, host to local and
        local to host; NCCL's loop shape (pb_nccl_copy_8_S) host to host and host to local at 128, 256 and 512
        threads; and 2-32 blocks of 512 threads at U 1 and 8, host to host and host to local. Fresh data every
        launch."""
        pairs = (("host", "host"), ("host", "local"), ("local", "host"))
        self._host_copies("host_copies",
                          [(U, S, src, dst, t) for U in (1, 2, 4, 8) for S in (1, 2) for src, dst in pairs for t in (128, 512)],
                          [(S, dst, t) for S in (1, 2) for dst in ("host", "local") for t in (128, 256, 512)],
                          [(U, dst, b) for U in (1, 8) for dst in ("host", "local") for b in (2, 4, 8, 16, 32)])

    def host_copies_2(self):
        """host_copies at the configurations it left out: the plain copy host to host and host to local at one block of
        64, 256 and 1,024 threads (U 1, 2, 4, 8, one source), NCCL's loop shape at 640 threads (S 1 and 2), and 2-32
        blocks of 512 threads at U 2 and 4."""
        self._host_copies("host_copies_2",
                          [(U, 1, "host", dst, t) for U in (1, 2, 4, 8) for dst in ("host", "local") for t in (64, 256, 1024)],
                          [(S, dst, 640) for S in (1, 2) for dst in ("host", "local")],
                          [(U, dst, b) for U in (2, 4) for dst in ("host", "local") for b in (2, 4, 8, 16, 32)])

    def host_copies_3(self):
        """NCCL's loop shape (pb_nccl_copy_8_S) from pinned host memory at the thread counts NCCL's Simple runs with and
        host_copies did not (96, 160, 288, 384 and 544 threads: 1, 3, 7, 9 and 15 warps and the sync warp), S 1 and 2,
        to host and to local memory; and at 128 and 512 threads again, on this instance. One block, 32 iterations,
        fresh data every launch. host_copies found an iteration flat in the threads from 128 to 640 (1.70-1.82 us to
        local memory): does it hold at these counts?"""
        self._host_copies("host_copies_3", [], [(S, dst, t) for S in (1, 2) for dst in ("host", "local")
                                               for t in (96, 160, 288, 384, 544, 128, 512)], [])

    def host_copies_4(self):
        """host_copies_3 after one launch of 128 blocks has copied the whole 256 MiB host source buffer to the whole
        host destination buffer, so that the measured loops' pages of pinned host memory have been touched by the GPU
        before (host_copies_3 ran on pages no launch had touched; host_copies' NCCL loops ran after its plain loops had
        gone round the buffer). Records: src_pages touched."""
        run = self.copy_runner()
        cp, nb = self.cp, self.big
        k = self.fn("pb_nccl_copy_8_1")
        a, b, d = self.ptr("host", "cpa", nb), self.dev("cpb", nb), self.ptr("host", "cpd", nb)
        blocks, t, iters = 128, 512, nb // (128 * 8 * 512 * 16)
        with cp.cuda.Device(0):
            k((blocks,), (t,), (a, b, d, np.int64(0), np.int32(iters), np.int32(1), np.int32(0), self.res), stream=self.s)
            self.s.synchronize()
        for S in (1, 2):
            for dst in ("host", "local"):
                for t in (96, 160, 288, 384, 544, 128, 512):
                    self.rec.guard(f"host_copies_4 nccl S{S} host->{dst} 1x{t}", run, 8, S, "host", dst, 1, t, 32,
                                   nccl=True, pages="touched")

    def _host_copies(self, tag, plain, nccl, blocks):
        """Runs host_copies' loops: plain (U, S, src, dst, threads) copies of one block, NCCL's shape (S, dst,
        threads) from host memory, and (U, dst, blocks) one-source copies from host memory of 512-thread blocks."""
        run = self.copy_runner()
        for U, S, src, dst, t in plain:
            self.rec.guard(f"{tag} U{U} S{S} {src}->{dst} 1x{t}", run, U, S, src, dst, 1, t, max(8, 256 // U))
        for S, dst, t in nccl:
            self.rec.guard(f"{tag} nccl S{S} host->{dst} 1x{t}", run, 8, S, "host", dst, 1, t, 32, nccl=True)
        for U, dst, b in blocks:
            self.rec.guard(f"{tag} U{U} host->{dst} {b}x512", run, U, 1, "host", dst, b, 512, max(4, 64 // U))

    def loop_start(self):
        """A loop's start, predicted at configurations it was not fitted on: one-source copies of one load a thread,
        local to host and local to local, one block of 64, 256, 640 and 1024 threads, 1, 2, 4 and 64 iterations, the
        source in the L2; then pb_simple_step's slice copies (fence none, local, the source in the L2) of 1-128 KiB at
        128-1024 threads, in the plain loop's shape and in NCCL's (pb_simple_step_hunks, code nccl_hunks)."""
        run = self.copy_runner()
        for dst in ("host", "local"):
            for t in (64, 256, 640, 1024):
                for iters in (1, 2, 4, 64):
                    self.rec.guard(f"loop_start copy {dst} {t} {iters}", run, 1, 1, "local", dst, 1, t, iters,
                                   resident=True)
        nb = 64 * MB
        self.fill("local", "ssctr", 4096, [0x7fffffff])
        ctr = self.dev("ssctr", 4096)
        src = self.dev("sssrc", nb)
        d = self.ptr("local", "ssdst", nb)
        fl = self.ptr("local", "ssflag", 4096)
        for hunks in (False, True):
            k = self.fn("pb_simple_step_hunks" if hunks else "pb_simple_step")
            for slice_bytes in (1024, 2048, 4096, 8192, 16384, 32768, 131072):
                steps = min(200, 12 * MB // slice_bytes)  # source and destination stay in the L2 (50 MB)
                for t in (128, 256, 512, 640, 1024):
                    def meas(k=k, hunks=hunks, slice_bytes=slice_bytes, t=t, steps=steps):
                        def launch():
                            k((1,), (t,), (ctr, src, d, fl, np.int32(steps), np.int32(slice_bytes // 16),
                                           np.int32(0), self.err, self.res), stream=self.s)
                        vals = self.trials(launch, 1, lambda c: c / self.ghz / steps)
                        rec = {"kind": "loop", "loop": "simple_step", "dst": "local", "slice_bytes": slice_bytes,
                               "fence": "none", "blocks": 1, "threads": t, "steps": steps, "src_residency": "l2"}
                        if hunks:
                            rec["code"] = "nccl_hunks"
                        self.emit(rec, vals, "ns_per_iter")
                    self.rec.guard(f"loop_start step {slice_bytes} {t} {hunks}", meas)

    def fence_land(self):
        """Short copies to pinned host memory, plain and ending with a system-scope fence (pb_copy_fenced_1_1, _8_1),
        the source in the L2: one load a thread at 128 and 512 threads, eight at 512, 1-32 blocks, 1, 3 and 8
        iterations. host_shot's staging (a fenced one-load copy of 42 KiB per rank) ended about when its bytes could
        cross the link, where the model waits for them to land and then the fence: does a fence after a short burst of
        posted writes wait for them to land?"""
        run = self.copy_runner()
        for fenced in (False, True):
            for U, t in ((1, 128), (1, 512), (8, 512)):
                for b in (1, 4, 16, 32):
                    for iters in (1, 3, 8):
                        self.rec.guard(f"fence_land {fenced} U{U} {b}x{t} {iters}", run, U, 1, "local", "host", b, t,
                                       iters, fenced, resident=True)

    def nccl_dests(self):
        """NCCL Simple's loop shape (warp hunks, volatile loads, 640-thread build) storing each element to one local
        destination (pb_nccl_copy_8_S) or to two (pb_nccl_copy2_8_S: the output and the next rank's FIFO, as NCCL's
        recvCopySend and recvReduceCopySend do), one and two sources, one block of 128, 256, 512 and 640 threads, 32
        iterations, local memory, the sources in the L2 or fresh from HBM: what one block's reduce-copy-send costs."""
        nb = self.big
        self.fill("local", "cpa", nb, [0x01010101])
        self.fill("local", "cpb", nb, [0x02020202])
        a, bb = self.dev("cpa", nb), self.dev("cpb", nb)
        d, e = self.dev("cpd", nb), self.dev("cpe", nb)
        n16 = nb // 16
        iters = 32
        fresh = [n16 // 4]  # fresh data: from a quarter of the buffer on, each launch past the last (the L2 holds 50 MB)
        for resident in (True, False):
            for S in (1, 2):
                for D in (1, 2):
                    for t in (128, 256, 512, 640):
                        def meas(resident=resident, S=S, D=D, t=t):
                            k = self.fn(f"pb_nccl_copy2_8_{S}" if D == 2 else f"pb_nccl_copy_8_{S}")
                            span = iters * 8 * t

                            def launch():
                                at = 0  # the same region every launch: in the L2 after the warm-up
                                if not resident:
                                    if fresh[0] + span > n16:
                                        fresh[0] = n16 // 4
                                    at = fresh[0]
                                    fresh[0] += span
                                if D == 2:
                                    k((1,), (t,), (a, bb, d, e, np.int64(at), np.int32(iters), self.res), stream=self.s)
                                else:
                                    k((1,), (t,), (a, bb, d, np.int64(at), np.int32(iters), np.int32(0),
                                                   np.int32(0), self.res), stream=self.s)
                            vals = self.trials(launch, 1, lambda c: c / self.ghz / iters)
                            rec = {"kind": "loop", "loop": "copy", "unroll": 8, "sources": S, "src": "local",
                                   "dst": "local", "blocks": 1, "threads": t, "iters": iters, "bytes_per_thread_iter": 128,
                                   "src_residency": "l2" if resident else "fresh", "code": "nccl_hunks",
                                   "kernel": f"pb_nccl_copy2_8_{S}" if D == 2 else f"pb_nccl_copy_8_{S}"}
                            if D == 2:
                                rec["dests"] = 2
                            self.emit(rec, vals, "ns_per_iter")
                        self.rec.guard(f"nccl_dests {resident} S{S} D{D} {t}", meas)

    def reduce_sources(self):
        """NCCL's reduceCopy shape over 1, 2, 3, 4, 6 and 8 local sources to one destination and over 1, 2, 4 and 8 to
        two (pb_nccl_reduce_S_D: 8 packs of 16 B a source in flight a thread, 640-thread build), one block of 512
        and 640 threads, 32 iterations, the sources in the L2 (the same region every launch) and, at 640 threads, fresh
        from HBM: what one block's SM spends on each byte it loads and each byte it stores."""
        iters, U = 32, 8
        n16 = self.big // 16
        sstride = n16 // 8  # int4 between sources: 8 regions of a 256-MiB buffer
        self.fill("local", "rsa", self.big, [0x01010101])
        a = self.dev("rsa", self.big)
        d, e = self.dev("rsd", 64 * MB), self.dev("rse", 64 * MB)
        first = 2 * iters * U * 640  # fresh regions start past the resident one
        fresh = [first]
        plan = [(S, 1) for S in (1, 2, 3, 4, 6, 8)] + [(S, 2) for S in (1, 2, 4, 8)]
        for resident, threads in ((True, (512, 640)), (False, (640,))):
            for S, D in plan:
                for t in threads:
                    def meas(resident=resident, S=S, D=D, t=t):
                        k = self.fn(f"pb_nccl_reduce_{S}_{D}")
                        span = iters * U * t

                        def launch():
                            at = 0  # the same region every launch: in the L2 after the warm-up
                            if not resident:
                                if fresh[0] + span > sstride:
                                    fresh[0] = first
                                at = fresh[0]
                                fresh[0] += span
                            k((1,), (t,), (a, np.int64(sstride), d, e, np.int64(at), np.int32(iters), self.res),
                              stream=self.s)
                        vals = self.trials(launch, 1, lambda c: c / self.ghz / iters)
                        rec = {"kind": "loop", "loop": "copy", "unroll": U, "sources": S, "src": "local",
                               "dst": "local", "blocks": 1, "threads": t, "iters": iters, "bytes_per_thread_iter": 16 * U,
                               "src_residency": "l2" if resident else "fresh", "code": "nccl_hunks",
                               "kernel": f"pb_nccl_reduce_{S}_{D}"}
                        if D == 2:
                            rec["dests"] = 2
                        self.emit(rec, vals, "ns_per_iter")
                    self.rec.guard(f"reduce_sources {resident} S{S} D{D} {t}", meas)

    def reduce_buffers(self):
        """The reductions' sources: eight 512-MiB regions of one buffer (source s at s * sstride int4), allocated
        once, and a destination at the sources' offset."""
        region = 512 * MB
        if "rbsrc" not in self.d:
            with self.cp.cuda.Device(0):
                self.d["rbsrc"] = self.cp.ones(8 * region // 4, dtype=self.cp.uint32)
        return self.d["rbsrc"], self.dev("rbd", region + 160 * MB), region // 16

    def reduce_blocks(self):
        """reduce_sources' kernel (pb_nccl_reduce_S_1: NCCL's reduceCopy shape, 640-thread build) over 1, 2, 4 and 8
        local sources to one destination, 512 threads a block, 1-132 blocks, 16 iterations, every source fresh from
        HBM each launch (each in a 512-MiB region of its own): one block's SM issue (reduce_sources.jsonl) against the
        GPU's memory as blocks are added."""
        iters, U, t = 16, 8, 512
        a, d, sstride = self.reduce_buffers()
        at = [0]
        for S in (1, 2, 4, 8):
            for b in (1, 2, 4, 8, 16, 32, 66, 132):
                def meas(S=S, b=b):
                    k = self.fn(f"pb_nccl_reduce_{S}_1")
                    span = b * iters * U * t

                    def launch():
                        if at[0] + span > sstride:
                            at[0] = 0
                        k((b,), (t,), (a, np.int64(sstride), d, d, np.int64(at[0]), np.int32(iters), self.res),
                          stream=self.s)
                        at[0] += span  # fresh every launch
                    vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                    self.emit({"kind": "loop", "loop": "copy", "unroll": U, "sources": S, "src": "local", "dst": "local",
                               "blocks": b, "threads": t, "iters": iters, "bytes_per_thread_iter": 16 * U,
                               "src_residency": "fresh", "code": "nccl_hunks", "kernel": f"pb_nccl_reduce_{S}_1"},
                              vals, "ns_per_iter")
                self.rec.guard(f"reduce_blocks S{S} {b}x{t}", meas)

    def reduce_depth(self):
        """NCCL's reduceCopy shape over S = 1, 2, 4, 8 local sources to one destination with U = 1, 2, 4, 8 packs of 16 B
        a source in flight a thread (pb_nccl_reduce_uU_S, pb_nccl_reduce_S_1), one block of 128 and 512 threads, 32
        iterations, the sources fresh from HBM every launch, and at 128 threads from the L2 too: does each source's
        loads wait a trip to HBM of their own, or do all sources' loads wait one together?"""
        self.reduce_grid("reduce_depth", [(S, U) for S in (1, 2, 4, 8) for U in (1, 2, 4, 8)],
                         ((False, (128, 512)), (True, (128,))))

    def load_waits(self):
        """reduce_depth's grid over S = 3, 5, 6 sources (kernels no earlier part ran), U = 1, 2, 4, 8, one block of
        64, 128 and 256 threads from HBM and of 128 from the L2: each kernel waits as many round trips an iteration
        as its SASS says (capture.py sass), each a whole trip to HBM, and from the L2 less."""
        self.reduce_grid("load_waits", [(S, U) for S in (3, 5, 6) for U in (1, 2, 4, 8)],
                         ((False, (64, 128, 256)), (True, (128,))))

    def load_waits_lb(self):
        """The same loop compiled for at most 256 threads a block (up to 255 registers a thread) and for 1,024 (64),
        pb_nccl_reduce_lbB_uU_S, over (S, U) = (2, 8), (4, 4), (4, 8), (8, 2), (8, 4), (8, 8): the registers change
        how many round trips a thread waits for its loads (capture.py sass). One block of 128 and 256 threads (and
        512 for the 1,024 build), the sources fresh from HBM; 128 threads from the L2."""
        shapes = [(2, 8), (4, 4), (4, 8), (8, 2), (8, 4), (8, 8)]
        for B, threads in ((256, (128, 256)), (1024, (128, 256, 512))):
            self.reduce_grid(f"load_waits_lb{B}", shapes, ((False, threads), (True, (128,))),
                             name_of=lambda S, U, B=B: f"pb_nccl_reduce_lb{B}_u{U}_{S}", bound=B)

    def reduce_grid(self, part, shapes, plan, name_of=None, bound=None):
        """One block of pb_nccl_reduce_uU_S (U < 8) or pb_nccl_reduce_S_1 (U = 8), or name_of(S, U), for each
        (S, U) of shapes and each (resident, threads) of plan, 32 iterations, to one local destination, the sources
        fresh from HBM every launch or (resident) the same region every launch; bound: the kernels'
        __launch_bounds__ when not NCCL's 640 (trace field launch_bound)."""
        iters = 32
        a, d, sstride = self.reduce_buffers()
        at = [0]
        for resident, threads in plan:
            for S, U in shapes:
                for t in threads:
                    def meas(resident=resident, S=S, U=U, t=t):
                        if name_of:
                            name = name_of(S, U)
                        else:
                            name = f"pb_nccl_reduce_{S}_1" if U == 8 else f"pb_nccl_reduce_u{U}_{S}"
                        k = self.fn(name)
                        span = iters * U * t

                        def launch():
                            off = 0
                            if not resident:
                                if at[0] + span > sstride:
                                    at[0] = 0
                                off = at[0]
                                at[0] += span  # fresh every launch
                            k((1,), (t,), (a, np.int64(sstride), d, d, np.int64(off), np.int32(iters), self.res),
                              stream=self.s)
                        vals = self.trials(launch, 1, lambda c: c / self.ghz / iters)
                        rec = {"kind": "loop", "loop": "copy", "unroll": U, "sources": S, "src": "local",
                               "dst": "local", "blocks": 1, "threads": t, "iters": iters,
                               "bytes_per_thread_iter": 16 * U, "src_residency": "l2" if resident else "fresh",
                               "code": "nccl_hunks", "kernel": name}
                        if bound:
                            rec["launch_bound"] = bound
                        self.emit(rec, vals, "ns_per_iter")
                    self.rec.guard(f"{part} {resident} S{S} U{U} {t}", meas)

    def store_burst(self):
        """Plain copies from the L2 to pinned host memory of 512-thread blocks, 1, 2, 4 and 8 loads a thread, one
        iteration, 1-132 blocks, and 8 loads at 2 and 4 iterations at 16 and 66 blocks: how much of a launch's stores
        to host memory the blocks issue before they wait for the link (fence_land found one iteration of 16-32
        blocks, 1-2 MiB, ending in 1.7 us)."""
        run = self.copy_runner()
        for U in (1, 2, 4, 8):
            for b in (1, 4, 16, 32, 66, 132):
                self.rec.guard(f"store_burst U{U} {b}", run, U, 1, "local", "host", b, 512, 1, resident=True)
        for b in (16, 66):
            for iters in (2, 4):
                self.rec.guard(f"store_burst U8 {b} {iters}", run, 8, 1, "local", "host", b, 512, iters, resident=True)

    def pull_bf16(self):
        """pull_wide's reduction in vLLM's one-shot shape (pb_pull_bf16_W: bf16 packs upcast to fp32, built for 512
        threads with up to 128 registers a thread, plain loads), W = 2, 4, 8, 1-132 blocks of 512 threads: as many
        host round trips an iteration as its SASS waits (capture.py sass)."""
        self.pull_wide(threads=(512,), kernel="pb_pull_bf16_{world}", part="pull_bf16")

    def pull_short(self):
        """Short pulls over 8 buffers (the rank's own in local memory, 7 in pinned host memory), 1, 2 and 4 iterations,
        1-32 blocks of 512 threads, two kernels: pb_pull_unrolled8, whose SASS waits twice an iteration, and
        pb_pull_bf16_8, which keeps every load in flight: whether a second wait costs a round trip where the link
        sets the pace, or only where the loads' round trips do."""
        for kernel in (None, "pb_pull_bf16_{world}"):
            self.pull_wide(worlds=(8,), threads=(512,), blocks=(1, 2, 4, 8, 16, 32), kernel=kernel, part="pull_short",
                           iters_list=(1, 2, 4))

    def pull_threads(self):
        """One and two blocks' pulls over W = 2, 4, 8 buffers (the rank's own local, the others in pinned host memory),
        64 iterations, at 64-512 threads (pb_pull_bf16_W, built for 512) and 64-1,024 (pb_pull_unrolledW): whether
        what each further host buffer costs one block grows with its warps (the SM's issue) or not (the chain)."""
        self.pull_wide(threads=(64, 128, 256, 512), blocks=(1, 2), kernel="pb_pull_bf16_{world}", part="pull_threads")
        self.pull_wide(threads=(64, 256, 1024), blocks=(1,), part="pull_threads")

    def pull_w(self):
        """One block's pull in vLLM's shape (pb_pull_bf16_W) over W = 3, 5, 6 buffers, and 2, 4, 8 again, at 64, 128
        and 512 threads, 64 iterations: the buffer counts pull_threads did not run."""
        self.pull_wide(worlds=(3, 5, 6, 2, 4, 8), threads=(64, 128, 512), blocks=(1,), kernel="pb_pull_bf16_{world}",
                       part="pull_w")

    def pull_f32(self):
        """One block's pull over W = 2, 4, 8 buffers summing fp32 (pb_pull_f32_W: four adds a buffer) and, on the
        same instance, bf16 (pb_pull_bf16_W: the upcast and eight adds), 64, 128 and 512 threads, 64 iterations: the
        same loads with fewer instructions after them."""
        for kernel in ("pb_pull_f32_{world}", "pb_pull_bf16_{world}"):
            self.pull_wide(worlds=(2, 4, 8), threads=(64, 128, 512), blocks=(1,), kernel=kernel, part="pull_f32")

    def pull_wide(self, worlds=(2, 4, 8), threads=(128, 512), blocks=(1, 8, 32, 132), kernel=None, part="pull_wide",
                  iters_list=None):
        """A one-shot's reduction loop: the rank's own buffer in local memory and W - 1 others in pinned host memory
        (standing in for peers reached over PCIe), every load of an iteration in flight (pb_pull_unrolled2/4/8), W = 2,
        4, 8, 1-132 blocks of 128 or 512 threads: how a block's round trip and the link share out as the sources and
        blocks grow. kernel: another kernel of the same arguments (its name with {world}), named in the records;
        iters_list: launches of these iterations each (default: up to 64, as the buffers hold)."""
        nb = 80 * MB
        self.fill("local", "pw0", nb, [1])
        for i in range(1, 8):
            self.fill("host", f"pw{i}", nb, [i + 1])
        p = [self.dev("pw0", nb)] + [self.ptr("host", f"pw{i}", nb) for i in range(1, 8)]
        out = self.dev("pwout", nb)
        for world in worlds:
            name = kernel.format(world=world) if kernel else f"pb_pull_unrolled{world}"
            k = self.fn(name)
            for t in threads:
                for b, iters in ((b, i) for b in blocks for i in (iters_list or (int(min(64, nb // (b * t * 16))),))):

                    def meas(k=k, name=name, world=world, t=t, b=b, iters=iters):
                        def launch():
                            if world == 8 or kernel:
                                args = tuple(p) + (out, np.int32(iters), self.res)
                            else:
                                args = (p[0], p[1], p[2], p[3], np.int32(world), out, np.int32(iters), self.res)
                            k((b,), (t,), args, stream=self.s)
                        vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                        self.emit({"kind": "loop", "loop": "pull", "loop_bound": "unrolled", "world": world,
                                   "src": "local+host", "blocks": b, "threads": t, "iters": iters,
                                   "bytes_per_thread_iter": 16, "kernel": name}, vals, "ns_per_iter")
                    self.rec.guard(f"{part} {name} {b}x{t} {iters} iters", meas)

    def push_wide(self, dests=(1, 3, 7), fences=(0, 1), threads=(128, 512), blocks=(1, 8, 32, 132)):
        """A one-shot's push: each thread loads its 16-B element from local memory and stores it to D = 1, 3 or 7
        buffers in pinned host memory (standing in for the peers' scratch over PCIe), 1-132 blocks of 128 or 512
        threads, plain and ending with fence.sc.sys; fresh data and destinations every launch."""
        nb = 64 * MB
        self.fill("local", "psrc", nb, [0x01010101])
        dst = [self.ptr("host", f"pd{i}", nb) for i in range(7)]
        src = self.dev("psrc", nb)
        for D in dests:
            k = self.fn(f"pb_push_{D}")
            for fence in fences:
                for t in threads:
                    for b in blocks:
                        iters = int(min(32, nb // (b * t * 16 * 2)))
                        off = [0]

                        def meas(k=k, D=D, fence=fence, t=t, b=b, iters=iters, off=off):
                            span = b * t * iters * 16  # bytes per launch and buffer

                            def launch():
                                if off[0] + span > nb:
                                    off[0] = 0
                                o = np.uint64(off[0])
                                k((b,), (t,), (np.uint64(src.data.ptr) + o,) + tuple(p + o for p in dst) +
                                  (np.int32(iters), np.int32(fence), self.res), stream=self.s)
                                off[0] += span
                            vals = self.trials(launch, b, lambda c: c / self.ghz / iters)
                            rec = {"kind": "loop", "loop": "copy", "unroll": 1, "sources": 1, "dests": D, "kernel": f"pb_push_{D}",
                                   "src": "local", "dst": "host", "blocks": b, "threads": t, "iters": iters,
                                   "bytes_per_thread_iter": 16}
                            if fence:
                                rec["fence"] = "sc"
                            self.emit(rec, vals, "ns_per_iter")
                        self.rec.guard(f"push_wide {D} fence{fence} {b}x{t}", meas)

    def host_shot(self, blocks=(1, 2, 4, 8, 16, 36, 66), threads=(128, 512), sizes=(14336, 43008, 1 << 20), plan=None):
        """A two-rank one-shot through pinned host memory (FLAG_SRC's one_shot_host at world 2, kernel pb_host_shot)
        with both ranks on this GPU, B = 1-66 blocks each, 128 or 512 threads, 14 KiB, 42 KiB and 1 MiB, by phase:
        the two barriers alone (phases 2), staging and its fence alone (1), the pull alone (4), staging and the
        barriers (3), all of it (7): which of them grows with the blocks. plan: (phases, bytes) pairs instead, or
        (phases, bytes, "apart") for kernel pb_host_shot_apart, whose pull reads a region nothing stages to."""
        big = 2 * max(sizes)
        self.fill("local", "hsin", big, [0x3f803f80])
        self.fill("host", "hsst", 2 * big, [0x3f803f80])  # the second half: pb_host_shot_apart's pull
        self.fill("host", "hssig", 2 * 3 * 512 * 8 * 4, [0])
        kern = {"staged": self.fn("pb_host_shot"), "apart": self.fn("pb_host_shot_apart")}
        inp, out = self.dev("hsin", big), self.dev("hsout", big)
        stage, sig = self.ptr("host", "hsst", 2 * big), self.ptr("host", "hssig", 2 * 3 * 512 * 8 * 4)
        e0 = [0]
        plan = plan or [(2, 14336)] + [(ph, n) for ph in (1, 4, 3, 7) for n in sizes]
        for phases, nbytes, *src in plan:
            src = src[0] if src else "staged"
            k = kern[src]
            nb = 10 if nbytes > 64 * 1024 else 100
            for t in threads:
                for b in blocks:
                    if 2 * b > self.sms:
                        continue

                    def meas(phases=phases, nbytes=nbytes, nb=nb, t=t, b=b, k=k, src=src):
                        def launch():
                            k((2 * b,), (t,), (inp, out, stage, sig, np.int32(b), np.int32(2), np.int64(nbytes // 16),
                                               np.int32(phases), np.int32(nb), np.uint32(e0[0]), self.err, self.res),
                              stream=self.s)
                            e0[0] += nb
                        vals = self.trials(launch, 2 * b, lambda c: c / self.ghz / nb)
                        rec = {"kind": "loop", "loop": "host_shot", "world": 2, "phases": phases, "bytes": nbytes,
                               "blocks": 2 * b, "blocks_per_rank": b, "threads": t, "iters": nb}
                        if phases == 2:
                            rec.pop("bytes")
                        if src != "staged":
                            rec["pull_src"] = src
                        self.emit(rec, vals, "ns_per_iter")
                    self.rec.guard(f"host_shot phases {phases} {nbytes} B {b}x{t} {src}", meas)

    def host_shot_overlap(self):
        """host_shot's parts without the barriers between them: staging and the pull alone together (phases 5), the
        barriers and the pull (6), and all of it again (7), 42 KiB and 1 MiB, 8-66 blocks a rank, 512 threads:
        whether blocks left free overlap their staging (stores up the link) with their pull (loads down it)."""
        self.host_shot(blocks=(8, 16, 36, 66), threads=(512,), plan=[(ph, n) for ph in (5, 6, 7) for n in (43008, 1 << 20)])

    def host_shot_free(self):
        """host_shot's staging and pull left free (phases 5) beside each alone (phases 1 and 4), 14 KiB to 512 KiB,
        8-66 blocks a rank, 512 threads: where staging and pull stop delaying each other and start overlapping
        (host_shot_overlap.jsonl: left free, 42 KiB takes longer than the two parts alone one after the other, 1 MiB
        less). Readings and the model's values written down before the run (README)."""
        sizes = (14336, 43008, 86016, 131072, 262144, 524288)
        self.host_shot(blocks=(8, 16, 36, 66), threads=(512,), sizes=(max(sizes),),
                       plan=[(ph, n) for n in sizes for ph in (1, 4, 5)])

    def host_shot_apart(self):
        """host_shot_free's staging and pull left free (phases 5) with the pull reading a region nothing stages to
        (kernel pb_host_shot_apart), beside the pull so alone (4) and the parts as host_shot_free runs them (1, 4, 5),
        14 KiB to 512 KiB, 8-66 blocks a rank, 512 threads: whether the delay the two parts left free add to each other
        at 14-42 KiB comes from the pull's loads meeting lines the other rank is staging, or from the parts' traffic
        (fences waiting for loads in flight, loads behind stores). Readings and the model's values written down
        before the run (README)."""
        sizes = (14336, 43008, 86016, 131072, 524288)
        self.host_shot(blocks=(8, 16, 36, 66), threads=(512,), sizes=(max(sizes),),
                       plan=[p for n in sizes for p in ((1, n), (4, n), (5, n), (4, n, "apart"), (5, n, "apart"))])

    def host_shot_free_threads(self):
        """host_shot_free's phases 1, 4 and 5 at 256 and 1,024 threads and at sizes it did not run (28, 64, 192 and
        384 KiB, and 42 KiB), 8-66 blocks a rank: the held-out side of the twin's one block's chain on top of the
        drifted streams, which was chosen on 512-thread blocks at 14-512 KiB. Readings and the model's values written
        down before the run (README)."""
        sizes = (28672, 43008, 65536, 196608, 393216)
        self.host_shot(blocks=(8, 16, 36, 66), threads=(256, 1024), sizes=(max(sizes),),
                       plan=[(ph, n) for n in sizes for ph in (1, 4, 5)])

    def host_shot_small(self):
        """host_shot's phases 1, 4 and 5 at 7, 14 and 21 KiB, 128, 256 and 1,024 threads, 1, 2, 4 and 8 blocks a rank:
        staging and pull left free where neither part is bound by the link, the held-out side of the twin's fence
        waiting for the other blocks' pull loads there (chosen on host_shot_free*.jsonl's 14 KiB at 512 threads).
        Readings and the model's values written down before the run (README)."""
        sizes = (7168, 14336, 21504)
        self.host_shot(blocks=(1, 2, 4, 8), threads=(128, 256, 1024), sizes=(max(sizes),),
                       plan=[(ph, n) for n in sizes for ph in (1, 4, 5)])

    def host_shot_sizes(self):
        """host_shot at the sizes between the barrier-bound and the link-bound one-shot: staging alone (phases 1), the
        pull alone (4), each with the two barriers (3, 6), 128 KiB to 4 MiB, 2-66 blocks a rank, 512 threads, and the
        barriers alone (2): whether a block pair's barriers cost on top of the part's stream, or hide behind the other
        pairs' data while the link is busy."""
        sizes = (128 << 10, 256 << 10, 512 << 10, 2 << 20, 4 << 20)
        self.host_shot(blocks=(2, 4, 8, 16, 36, 66), threads=(512,), sizes=(max(sizes),),
                       plan=[(2, 14336)] + [(ph, n) for ph in (1, 4, 3, 6) for n in sizes])

    def host_shot_phases(self, phases_l=(5, 7), sizes=(43008, 1 << 20), blocks=(8, 16, 36, 66),
                         name="host_shot_phases.json"):
        """host_shot's phases timed block by block (kernel pb_host_shot_ts: each phase's end marked by the block's
        thread 0 reading %globaltimer after __syncthreads): staging and the pull left free (phases 5) and the whole
        one-shot (7), 42 KiB and 1 MiB, 8, 16, 36 and 66 blocks a rank, 512 threads; whether the blocks drift apart
        and overlap one block's staging with another's pull. Writes system/host_shot_phases.json (every block's
        timestamps of the third of three launches, ns from the launch's first block start); no records (the phase ends'
        __syncthreads make it another kernel than pb_host_shot's)."""
        cp = self.cp
        big = 2 * max(sizes)
        self.fill("local", "hsin", big, [0x3f803f80])
        self.fill("host", "hsst", big, [0x3f803f80])
        self.fill("host", "hssig", 2 * 3 * 512 * 8 * 4, [0])
        k = self.fn("pb_host_shot_ts")
        inp, out = self.dev("hsin", big), self.dev("hsout", big)
        stage, sig = self.ptr("host", "hsst", big), self.ptr("host", "hssig", 2 * 3 * 512 * 8 * 4)
        e0 = [1 << 20]
        dump = []
        with cp.cuda.Device(0):
            ts = cp.zeros(2 * 66 * (4 * 20 + 1), dtype=cp.uint64)
        for phases in phases_l:
            for nbytes in sizes:
                nb = 10 if nbytes > 64 * 1024 else 20
                for b in blocks:
                    if 2 * b > self.sms:
                        continue

                    def meas(phases=phases, nbytes=nbytes, nb=nb, b=b):
                        n = 4 * nb + 1
                        with cp.cuda.Device(0):
                            self.err[...] = 0
                            runs = []
                            for _ in range(3):
                                k((2 * b,), (512,), (inp, out, stage, sig, np.int32(b), np.int32(2), np.int64(nbytes // 16),
                                                     np.int32(phases), np.int32(nb), np.uint32(e0[0]), self.err, ts),
                                  stream=self.s)
                                e0[0] += nb
                                self.s.synchronize()
                                runs.append(ts[:2 * b * n].get().reshape(2 * b, n).astype(np.int64))
                            err = int(self.err.get()[0])
                        a = runs[-1]
                        a = a - a[:, 0].min()
                        per_block = [(int(r[-1]) - int(r[0])) / nb for r in a]
                        dump.append({"phases": phases, "bytes": nbytes, "blocks_per_rank": b, "world": 2, "threads": 512,
                                     "iters": nb, "spin_timeout": bool(err), "ts_ns": a.tolist()})
                        log("host_shot_phases", phases, nbytes, b, f"median block {statistics.median(per_block):.0f} ns/iter,",
                            f"slowest {max(per_block):.0f}")
                    self.rec.guard(f"host_shot_phases {phases} {nbytes} B {b}", meas)
        sysdir = os.path.join(os.path.dirname(self.rec.path), "system")
        os.makedirs(sysdir, exist_ok=True)
        with open(os.path.join(sysdir, name), "w") as f:
            json.dump(dump, f, separators=(",", ":"))

    def host_shot_phases_2(self):
        """host_shot_phases for host_shot_sizes.jsonl's middle sizes: the barriers alone (phases 2), staging alone (1),
        the pull alone (4), each with the two barriers (3, 6), 256 KiB, 512 KiB and 2 MiB, 4-66 blocks a rank: how far
        the block pairs drift apart where their barriers hide partly. Writes system/host_shot_phases_2.json."""
        self.host_shot_phases(phases_l=(2, 1, 4, 3, 6), sizes=(256 << 10, 512 << 10, 2 << 20), blocks=(4, 8, 16, 36, 66),
                              name="host_shot_phases_2.json")

    def free(self):
        for h in self.h.values():
            h.free()
        self.h.clear()
        self.d.clear()


def run(out_dir, quick):
    t_all = time.time()
    pb = PerBlock(out_dir, quick)
    pb.rec.guard("calibrate", pb.calibrate, "start")
    if pb.ghz is None:
        raise RuntimeError("perblock: SM clock calibration failed")
    parts = ("fences", "simple_steps", "pulls", "ll", "ll128", "ll128w", "group_barriers", "copies", "pingpong", "polls",
             "ll_live", "ll128_live", "ll_steps", "ll128_steps", "src_residency")
    if pb.cp.cuda.runtime.getDeviceCount() >= 2:
        parts += ("peer_loops",)  # stores to GPU 1's memory
    only = [p for p in os.environ.get("PERBLOCK_PARTS", "").split(",") if p]
    for name in (only or parts):
        if name not in parts + ("peer_loops", "heldout", "barrier_lines", "line_probe", "barrier_spacing", "barrier_layout", "ll_code",
                        "barrier_threads", "write_buffer", "fence_blocks", "fence_beside", "barrier_sleep", "heldout_2",
                        "copy_registers", "copy_threads", "spill_threads", "spill_reloads", "volatile_loads", "pingpong_heldout", "host_copy_mix", "push_threads", "pull_wide", "push_wide", "ll_ops", "heldout_3", "page_touch", "pingpong_sector", "host_shot", "host_shot_apart", "host_shot_free_threads", "host_shot_small", "host_load", "store_rate", "store_loop", "store_lines",
                        "store_width", "pull_iters", "copy_l2", "store_depth", "barrier_modes", "barrier_modes_w", "fence_polls", "fence_reads", "host_readback", "simple_fresh", "copy_unroll_l2", "nccl_copy", "loop_start", "fence_land", "nccl_dests", "store_burst", "reduce_sources", "reduce_blocks", "reduce_depth", "load_waits", "load_waits_lb", "pull_bf16", "pull_short", "pull_threads", "pull_w", "pull_f32", "fence_groups", "fence_pollers", "fence_kinds", "barrier_chunks", "fence_threads", "fence_queue", "barrier_chunks_2", "barrier_pairs", "barrier_groups_apart", "barrier_line_groups", "barrier_line_apart", "barrier_class", "barrier_mix", "barrier_sleep_host", "host_shot_overlap", "host_shot_free", "host_shot_phases", "host_shot_sizes", "pingpong_line", "pingpong_spacing", "host_shot_phases_2", "poll_pages", "flag_pages", "flag_sms", "sm_halves", "ll128_host_blocks", "ll128_live_pairs", "ll128_spin", "fence_pulls", "fence_burst", "fence_loads", "fence_stream", "fence_after_pull", "host_copies", "host_copies_2", "host_copies_3", "host_copies_4", "simple_blocks", "ll128_residency", "ll_residency", "ll128_src_blocks", "simple_tail", "simple_whole"):
            raise ValueError(f"perblock: unknown part {name!r} (parts: {', '.join(parts)})")
        t0 = time.time()
        pb.rec.guard(name, getattr(pb, name))
        log("perblock", name, f"{time.time() - t0:.1f}s,", pb.rec.n, "records so far")
    pb.rec.guard("calibrate", pb.calibrate, "end")
    pb.free()
    log("perblock done", f"{time.time() - t_all:.1f}s;", pb.rec.n, "records,", pb.rec.nerr, "errors")


def write_flag_halves(path, start, sms):
    """Splits the flag scan recorded in path from byte start on (halves.split_flags; by GPC where the micro part
    sm_groups ran first in this capture and wrote system/sm_groups.json, else by SM) and writes it to
    system/measurements.halves.json beside path, unless a halves file is there; returns the file's path or None."""
    import halves as split_halves
    with open(path) as f:
        f.seek(start)
        recs = [json.loads(line) for line in f if line.strip()]
    sysdir = os.path.join(os.path.dirname(path), "system")
    groups_file = os.path.join(sysdir, "sm_groups.json")
    groups = json.load(open(groups_file))["groups"] if os.path.exists(groups_file) else None
    out = split_halves.split_flags(recs, sms, groups)
    dest = os.path.join(sysdir, "measurements.halves.json")
    if os.path.exists(dest):
        log("sm_halves: a halves file is already there, kept:", dest)
        return None
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w") as f:
        json.dump(out, f, indent=1)
    log("sm_halves:", len(out["sm0_half"]), "SMs in SM 0's half; gap", out["flag_gap_ns"], "ns; wrote", dest)
    return dest
