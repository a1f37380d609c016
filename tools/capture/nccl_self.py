"""nccl_self: NCCL's own kernel on one GPU, without a second GPU (capture.py nccl-self).

Why: NCCL's per-call cost outside its steps (kernel start, loading its communicator, channel and work, its end) was
so far one number fitted on two GPUs. One GPU can run NCCL's kernel alone: a communicator of one rank (ncclCommInitAll
over GPU 0) sending to and receiving from itself in one group runs NCCL's send/receive kernel, which copies the
buffer locally with no peer, no protocol steps and no flags of another GPU. Beside it, in the same CUDA graphs and
the same run: a one-rank ncclAllReduce (NCCL turns it into a copy), a cudaMemcpyAsync device-to-device copy of the
same bytes (torch's copy_) and an empty kernel node, so the NCCL kernel's own fixed cost is the difference.

A one-rank ncclAllReduce in place (NCCL has nothing to do) and the same through torch.distributed (one rank, NCCL
backend) show what PyTorch's wrapper adds per call.

Records: kind `nccl_kernel`, `nccl_op` = self_sendrecv | allreduce_one_rank | allreduce_one_rank_inplace |
torch_allreduce_one_rank | memcpy_d2d | empty_kernel, `bytes`,
`launch` = cudagraph (K ops captured in one graph per replay; us = replay time / K, so graph launch cancels) or eager
(K ops launched back to back between two events: the host's issue cost included), `us` (median of TRIALS),
`us_min`, `us_max`, `nccl_version`, `ops_per_graph` (K). NCCL is loaded through ctypes from the library PyTorch ships.

NCCL_SELF_GRAPH_SIZES (e.g. 20,61,122,244): instead of the run above, the graph-size sweep: empty_kernel,
self_sendrecv, allreduce_one_rank and memcpy_d2d at 8, 14,336 and 43,008 bytes in CUDA graphs of each size K (a
verify pass captures its 122 allreduces in one graph, the records above 20 a graph). NCCL_SELF_TAG names the run's
settings in field `run_tag`; the NCCL variables of NCCL_ENV_RECORDED that are set go into field `nccl_env`.
"""
import ctypes, glob, os, statistics

from common import Recorder, log, torch_graph_gaps

K = 20
TRIALS = 7
SIZES = [8, 1024, 4096, 65536, 1 << 20, 16 << 20]
SMALL = [8, 4096, 65536]  # torch / in-place references
NCCL_UINT8, NCCL_SUM = 1, 0
# NCCL variables that change what the kernel does, written into each record's nccl_env when set
NCCL_ENV_RECORDED = ("NCCL_GRAPH_MIXING_SUPPORT", "NCCL_GRAPH_REGISTER", "NCCL_PROTO", "NCCL_ALGO", "NCCL_NTHREADS")


def _load_nccl():
    cands = []
    try:
        import nvidia.nccl
        for d in nvidia.nccl.__path__:
            cands += glob.glob(os.path.join(d, "lib", "libnccl.so*"))
    except ImportError:
        pass
    import torch
    cands += glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libnccl.so*"))
    cands.append("libnccl.so.2")
    for c in cands:
        try:
            return ctypes.CDLL(c), c
        except OSError:
            continue
    raise RuntimeError("libnccl not found")


class NcclSelf:
    def __init__(self, out_dir, quick=False):
        import torch
        self.torch, self.quick = torch, quick
        self.rec = Recorder(out_dir, "nccl_self")
        self.lib, self.path = _load_nccl()
        v = ctypes.c_int()
        self.check(self.lib.ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
        self.version = v.value
        torch.cuda.set_device(0)
        self.comm = ctypes.c_void_p()
        devs = (ctypes.c_int * 1)(0)
        self.check(self.lib.ncclCommInitAll(ctypes.byref(self.comm), 1, devs), "ncclCommInitAll")
        log("NCCL", self.version, "from", self.path)

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: ncclResult {rc}")

    def issue(self, op, src, dst, n):
        torch, lib = self.torch, self.lib
        s = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        a, b = ctypes.c_void_p(src.data_ptr()), ctypes.c_void_p(dst.data_ptr())
        if op == "self_sendrecv":
            self.check(lib.ncclGroupStart(), "ncclGroupStart")
            self.check(lib.ncclSend(a, ctypes.c_size_t(n), NCCL_UINT8, 0, self.comm, s), "ncclSend")
            self.check(lib.ncclRecv(b, ctypes.c_size_t(n), NCCL_UINT8, 0, self.comm, s), "ncclRecv")
            self.check(lib.ncclGroupEnd(), "ncclGroupEnd")
        elif op == "allreduce_one_rank":
            self.check(lib.ncclAllReduce(a, b, ctypes.c_size_t(n), NCCL_UINT8, NCCL_SUM, self.comm, s), "ncclAllReduce")
        elif op == "allreduce_one_rank_inplace":
            self.check(lib.ncclAllReduce(b, b, ctypes.c_size_t(n), NCCL_UINT8, NCCL_SUM, self.comm, s), "ncclAllReduce")
        elif op == "torch_allreduce_one_rank":
            self.dist.all_reduce(dst[:n])
        elif op == "memcpy_d2d":
            dst[:n].copy_(src[:n], non_blocking=True)
        elif op == "empty_kernel":
            torch.cuda._sleep(0)
        else:
            raise ValueError(op)

    def init_dist(self):
        """torch.distributed with one rank over NCCL: what PyTorch's wrapper adds to an allreduce call."""
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=self.torch.device("cuda:0"))
        self.dist = dist

    def measure(self, op, n, launch, k=K):
        torch = self.torch
        src = torch.ones(max(n, 16), dtype=torch.uint8, device="cuda")
        dst = torch.zeros_like(src)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(3):
                self.issue(op, src, dst, n)
        s.synchronize()
        g = None
        if launch == "cudagraph":
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):
                for _ in range(k):
                    self.issue(op, src, dst, n)
            g.replay()
            torch.cuda.synchronize()
        reps = max(5 if self.quick else 50, 1000 // k) if g is not None else (5 if self.quick else 50)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        per_op = []
        for _ in range(TRIALS):
            with torch.cuda.stream(s):
                e0.record(s)
                for _ in range(reps):
                    if g is not None:
                        g.replay()
                    else:
                        for _ in range(k):
                            self.issue(op, src, dst, n)
                e1.record(s)
            e1.synchronize()
            per_op.append(e0.elapsed_time(e1) * 1000 / (reps * k))
        if op == "self_sendrecv":
            ok = bool(torch.equal(dst[:n], src[:n]))
            if not ok:
                raise RuntimeError(f"self_sendrecv {n} B: destination differs from source")
        rec = {"kind": "nccl_kernel", "clock": "device_events", "nccl_op": op, "launch": launch,
               "us": statistics.median(per_op), "us_min": min(per_op), "us_max": max(per_op),
               "ops_per_trial": reps * k, "nccl_version": self.version, "gpus": 1}
        if os.environ.get("NCCL_SELF_TAG"):
            rec["run_tag"] = os.environ["NCCL_SELF_TAG"]
        env = {k: v for k, v in os.environ.items() if k in NCCL_ENV_RECORDED}
        if env:
            rec["nccl_env"] = env
        if op != "empty_kernel":
            rec["bytes"] = n
        if g is not None:
            rec["ops_per_graph"] = k
        self.rec.emit(rec)
        log(op, n, launch, k, f"{statistics.median(per_op):.3f} us")

    def run(self):
        graphs = [int(v) for v in os.environ.get("NCCL_SELF_GRAPH_SIZES", "").split(",") if v]
        if graphs:
            for k in graphs:
                for op in ("empty_kernel", "self_sendrecv", "allreduce_one_rank", "memcpy_d2d"):
                    for n in ([0] if op == "empty_kernel" else [8, 14336, 43008]):
                        self.rec.guard(f"{op} {n} graph of {k}", self.measure, op, n, "cudagraph", k)
            return
        self.rec.guard("torch.distributed init", self.init_dist)
        ops = ["empty_kernel", "self_sendrecv", "allreduce_one_rank", "allreduce_one_rank_inplace", "memcpy_d2d"]
        if getattr(self, "dist", None) is not None:
            ops.append("torch_allreduce_one_rank")
        for launch in ("cudagraph", "eager"):
            for op in ops:
                sizes = SIZES if op in ("self_sendrecv", "allreduce_one_rank", "memcpy_d2d") else SMALL
                for n in sizes if op != "empty_kernel" else [0]:
                    self.rec.guard(f"{op} {n} {launch}", self.measure, op, n, launch)


def gap_stages(out_dir):
    """NCCL_SELF_GAP_STAGES=1: the graph gap per empty kernel node (graphs of NCCL_SELF_GAP_NODES, default 100, as
    micro2's launch_state) at each
    step of setting up a process that runs NCCL: CUDA through PyTorch alone; NCCL's library loaded; a one-rank
    communicator made (ncclCommInitAll); one NCCL call run eagerly; torch.distributed set up over NCCL (one rank);
    three 10-ms kernels on the current stream. Records: kind nccl_kernel, nccl_op empty_kernel, field state."""
    import torch
    rec = Recorder(out_dir, "nccl_self")
    torch.cuda.set_device(0)

    def measure(state, k=int(os.environ.get("NCCL_SELF_GAP_NODES", "100"))):
        reps = 40
        per = torch_graph_gaps(k, reps, TRIALS)
        smi = ""
        if os.environ.get("NCCL_SELF_GAP_SMI"):
            import subprocess
            smi = subprocess.run("nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.gr,pstate,power.draw --format=csv,noheader",
                                 shell=True, capture_output=True, text=True).stdout.strip()
        r = {"kind": "nccl_kernel", "clock": "device_events", "nccl_op": "empty_kernel", "launch": "cudagraph",
             "us": statistics.median(per), "us_min": min(per), "us_max": max(per), "ops_per_trial": reps * k,
             "gpus": 1, "ops_per_graph": k, "state": state}
        if smi:
            r["nvidia_smi"] = smi
        rec.emit(r)
        log("gap", state, f"{statistics.median(per):.3f} us", smi)

    rec.guard("gap cuda", measure, "CUDA through PyTorch")
    # NCCL_SELF_GAP_PROBES: kernels to run first, in order, each followed by a measurement: none (nothing: the
    # measurement again), idle2s (the host sleeps 2 s), sleep3 (three 10-ms
    # kernels on the current stream), stream2 (one on a new stream), matmul (a bf16 1024 x 1024 x 1024 matmul:
    # cuBLAS's kernel, large shared memory), smem (a Triton-free kernel with 96 KiB of dynamic shared memory: a
    # cupy RawKernel)
    for probe in [p for p in os.environ.get("NCCL_SELF_GAP_PROBES", "").split(",") if p]:
        if probe == "none":
            pass
        elif probe == "idle2s":
            import time
            time.sleep(2.0)
        elif probe == "sleep3":
            for _ in range(3):
                torch.cuda._sleep(20_000_000)
        elif probe == "stream2":
            s2 = torch.cuda.Stream()
            with torch.cuda.stream(s2):
                torch.cuda._sleep(20_000_000)
        elif probe == "matmul":
            a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
            (a @ a).sum().item()
        elif probe == "smem":
            import cupy as cp
            k = cp.RawKernel(r"""
extern "C" __global__ void smem_touch(float* out) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = buf[7];
}""", "smem_touch")
            k.max_dynamic_shared_size_bytes = 96 << 10
            o = cp.zeros(1, dtype=cp.float32)
            k((1,), (128,), (o,), shared_mem=96 << 10)
            cp.cuda.Device(0).synchronize()
        else:
            raise ValueError(f"NCCL_SELF_GAP_PROBES: unknown probe {probe!r}")
        torch.cuda.synchronize()
        rec.guard(f"gap {probe}", measure, "after probe " + probe)
    lib, path = _load_nccl()
    rec.guard("gap lib", measure, "NCCL's library loaded")
    comm = ctypes.c_void_p()
    devs = (ctypes.c_int * 1)(0)
    rc = lib.ncclCommInitAll(ctypes.byref(comm), 1, devs)
    if rc != 0:
        raise RuntimeError(f"ncclCommInitAll: ncclResult {rc}")
    rec.guard("gap comm", measure, "one-rank communicator made")
    src = torch.ones(64, dtype=torch.uint8, device="cuda")
    dst = torch.zeros_like(src)
    st = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    lib.ncclGroupStart()
    lib.ncclSend(ctypes.c_void_p(src.data_ptr()), ctypes.c_size_t(64), NCCL_UINT8, 0, comm, st)
    lib.ncclRecv(ctypes.c_void_p(dst.data_ptr()), ctypes.c_size_t(64), NCCL_UINT8, 0, comm, st)
    lib.ncclGroupEnd()
    torch.cuda.synchronize()
    rec.guard("gap call", measure, "one NCCL call run")
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29532")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    t = torch.ones(16, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    rec.guard("gap dist", measure, "torch.distributed over NCCL set up")
    for _ in range(3):
        torch.cuda._sleep(20_000_000)
    torch.cuda.synchronize()
    rec.guard("gap long", measure, "three long kernels run")
    dist.destroy_process_group()


def run(out_dir, quick=False):
    if os.environ.get("NCCL_SELF_GAP_STAGES"):
        gap_stages(out_dir)
        return
    NcclSelf(out_dir, quick).run()
