"""CUDA C sources (compiled at run time by CuPy/NVRTC) for arsim's capture tool.

All spin loops have a bail-out counter: a kernel whose peer never arrives sets *err and
exits instead of hanging the GPU (a hung kernel would lose the whole run).
"""

MICRO_SRC = r'''
#define SPIN_LIMIT 200000000LL

// ---- SM bandwidth: 16-byte reads / writes, grid-stride -------------------------------
extern "C" __global__ void sm_read16(const int4* __restrict__ src, int4* sink, long long n16) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  int4 acc = make_int4(0, 0, 0, 0);
  for (long long k = i; k < n16; k += stride) {
    int4 v = src[k];
    acc.x += v.x; acc.y ^= v.y; acc.z += v.z; acc.w ^= v.w;
  }
  // never true for the data we use (0x5a pattern), keeps the loads alive
  if (acc.x == 0x12345678 && acc.y == 0x9abcdef0) sink[i & 255] = acc;
}

extern "C" __global__ void sm_write16(int4* dst, long long n16) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long k = i; k < n16; k += stride) dst[k] = make_int4((int)k, 7, (int)(k >> 7), 11);
}

extern "C" __global__ void empty_kernel() {}

// ---- dependent-load latency -----------------------------------------------------------
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
extern "C" __global__ void chase(const long long* p, int steps, long long* out, long long* res) {
  long long j = 0;
  // one warm-up pass over the first steps to settle TLB state the same way for every trial
  unsigned long long g0 = gtimer();
  long long t0 = clock64();
  for (int s = 0; s < steps; s++) j = *((volatile const long long*)(p + j));
  long long t1 = clock64();
  unsigned long long g1 = gtimer();
  out[0] = j; res[0] = t1 - t0; res[1] = (long long)(g1 - g0);
}

// ---- flag ping-pong: one thread per GPU, each polls its own flag, writes the other's ---
extern "C" __global__ void pingpong(volatile int* mine, volatile int* theirs, int n, int leader, int* err) {
  long long spins = 0;
  for (int i = 1; i <= n; i++) {
    if (leader) {
      *theirs = i; __threadfence_system();
      while (*mine != i) { if (++spins > SPIN_LIMIT) { *err = 1; return; } }
    } else {
      while (*mine != i) { if (++spins > SPIN_LIMIT) { *err = 1; return; } }
      *theirs = i; __threadfence_system();
    }
  }
}
'''

# vLLM-style custom allreduce, written from the protocol description (not copied):
# per-block start barrier with incrementing epoch flags written by threads tid < world into
# peer[tid]->start[block][rank] (volatile stores), each such thread spinning on its own slot;
# 16-byte loads; fp32 accumulation in fixed rank order; end barrier; the two-shot variant has a
# release/acquire (system scope) barrier between reduce-scatter and all-gather.
# Signal layout (uint32), per rank: start[MAXB][8] | end[MAXB][8] | mid[MAXB][8]
FLAG_SRC = r'''
#define MAXB 512
#define MAXW 8
#define SPIN_LIMIT 100000000LL
#define SIG_START 0
#define SIG_END (MAXB * MAXW)
#define SIG_MID (2 * MAXB * MAXW)

struct Args {
  const int4* in[MAXW];     // p2p: every rank's input buffer (peer pointers)
  int4* tmp[MAXW];          // two-shot p2p: every rank's scratch (reduced part)
  unsigned int* sig[MAXW];  // every rank's signal block (device memory for p2p, host for host_memory)
  int4* hstage[MAXW];       // host_memory: every rank's staging copy in pinned host memory
  int4* htmp[MAXW];         // host_memory two-shot: every rank's reduced part in host memory
};

__device__ __forceinline__ void st_volatile_u32(unsigned int* p, unsigned int v) {
  asm volatile("st.volatile.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned int ld_volatile_u32(const unsigned int* p) {
  unsigned int v; asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ void st_release_u32(unsigned int* p, unsigned int v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned int ld_acquire_u32(const unsigned int* p) {
  unsigned int v; asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ int4 ld_volatile_v4(const int4* p) {
  int4 v;
  asm volatile("ld.volatile.global.v4.s32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_volatile_v4(int4* p, int4 v) {
  asm volatile("st.volatile.global.v4.s32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// barrier over all ranks for this block. mode 0: volatile (start / final end), 1: release/acquire
__device__ __forceinline__ void block_barrier(const Args& a, int off, int rank, int world,
                                              unsigned int flag, int mode, int* err) {
  __syncthreads();
  int t = threadIdx.x;
  if (t < world) {
    unsigned int* peer_slot = a.sig[t] + off + blockIdx.x * MAXW + rank;
    const unsigned int* my_slot = a.sig[rank] + off + blockIdx.x * MAXW + t;
    long long spins = 0;
    if (mode == 0) {
      st_volatile_u32(peer_slot, flag);
      while (ld_volatile_u32(my_slot) != flag) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
    } else {
      __threadfence_system();
      st_release_u32(peer_slot, flag);
      while (ld_acquire_u32(my_slot) != flag) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
    }
  }
  __syncthreads();
}

// bf16 <-> fp32 by bit manipulation (round to nearest even), no headers needed under NVRTC
__device__ __forceinline__ float bf_lo(unsigned int w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(unsigned int w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ unsigned int f2bf(float f) {
  unsigned int u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
struct Acc { float v[8]; };
__device__ __forceinline__ void acc_zero(Acc& a) {
  #pragma unroll
  for (int i = 0; i < 8; i++) a.v[i] = 0.f;
}
__device__ __forceinline__ void acc_add(Acc& a, int4 p) {
  unsigned int w[4] = {(unsigned)p.x, (unsigned)p.y, (unsigned)p.z, (unsigned)p.w};
  #pragma unroll
  for (int i = 0; i < 4; i++) { a.v[2 * i] += bf_lo(w[i]); a.v[2 * i + 1] += bf_hi(w[i]); }
}
__device__ __forceinline__ int4 acc_pack(const Acc& a) {
  unsigned int w[4];
  #pragma unroll
  for (int i = 0; i < 4; i++) w[i] = f2bf(a.v[2 * i]) | (f2bf(a.v[2 * i + 1]) << 16);
  return make_int4((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
}

// epoch counters live in device memory (per rank, per block) so CUDA-graph replays advance them
__device__ __forceinline__ unsigned int next_flag(unsigned int* epoch) {
  return epoch[blockIdx.x] + 1;
}
__device__ __forceinline__ void store_flag(unsigned int* epoch, unsigned int flag) {
  if (threadIdx.x == 0) epoch[blockIdx.x] = flag;
}

// ---------------- one-shot over NVLink P2P: pull every peer's full buffer -----------------
extern "C" __global__ void __launch_bounds__(1024) one_shot_p2p(const Args* __restrict__ ap, int4* out, long long npacks,
                                                               int rank, int world, unsigned int* epoch, int* err) {
  const Args& a = *ap;
  unsigned int flag = next_flag(epoch);
  block_barrier(a, SIG_START, rank, world, flag, 0, err);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < npacks; i += (long long)gridDim.x * blockDim.x) {
    Acc acc; acc_zero(acc);
    for (int r = 0; r < world; r++) acc_add(acc, a.in[r][i]);   // fixed rank order: identical on all ranks
    out[i] = acc_pack(acc);
  }
  block_barrier(a, SIG_END, rank, world, flag, 0, err);          // nobody still reads my input
  store_flag(epoch, flag);
}

// ---------------- two-shot over NVLink P2P (reduce-scatter by pulls, all-gather by pulls) -
extern "C" __global__ void __launch_bounds__(1024) two_shot_p2p(const Args* __restrict__ ap, int4* out, long long npacks,
                                                               int rank, int world, unsigned int* epoch, int* err) {
  const Args& a = *ap;
  unsigned int flag = next_flag(epoch);
  long long part = npacks / world;
  long long start = rank * part;
  long long mypart = (rank == world - 1) ? npacks - start : part;
  long long maxpart = npacks - (world - 1) * part;
  long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  block_barrier(a, SIG_START, rank, world, flag, 0, err);
  for (long long j = tid; j < mypart; j += stride) {
    Acc acc; acc_zero(acc);
    for (int r = 0; r < world; r++) acc_add(acc, a.in[r][start + j]);
    a.tmp[rank][j] = acc_pack(acc);
  }
  block_barrier(a, SIG_MID, rank, world, flag, 1, err);          // release/acquire, system scope
  for (long long j = tid; j < maxpart; j += stride) {
    for (int r = 0; r < world; r++) {
      long long pr = (r == world - 1) ? npacks - r * part : part;
      if (j < pr) out[r * part + j] = a.tmp[r][j];
    }
  }
  block_barrier(a, SIG_END, rank, world, flag, 0, err);          // nobody still reads my tmp/input
  store_flag(epoch, flag);
}

// ---------------- one-shot through pinned host memory --------------------------------------
// write my buffer to my host staging copy (16-byte stores), per-block flag barrier in host
// memory, pull every peer's host copy with 16-byte volatile loads, add, final barrier.
extern "C" __global__ void __launch_bounds__(1024) one_shot_host(const Args* __restrict__ ap, const int4* in, int4* out, long long npacks,
                                                                int rank, int world, unsigned int* epoch, int* err) {
  const Args& a = *ap;
  unsigned int flag = next_flag(epoch);
  long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  for (long long i = tid; i < npacks; i += stride) st_volatile_v4(a.hstage[rank] + i, in[i]);
  __threadfence_system();
  block_barrier(a, SIG_START, rank, world, flag, 0, err);
  for (long long i = tid; i < npacks; i += stride) {
    Acc acc; acc_zero(acc);
    for (int r = 0; r < world; r++) acc_add(acc, r == rank ? in[i] : ld_volatile_v4(a.hstage[r] + i));
    out[i] = acc_pack(acc);
  }
  block_barrier(a, SIG_END, rank, world, flag, 0, err);
  store_flag(epoch, flag);
}

// ---------------- two-shot through pinned host memory --------------------------------------
// write the parts owned by the other ranks to my host staging copy, barrier, reduce my part
// from all host copies (mine from HBM), publish it to host memory, release/acquire barrier,
// pull the other ranks' reduced parts from host memory, final barrier.
extern "C" __global__ void __launch_bounds__(1024) two_shot_host(const Args* __restrict__ ap, const int4* in, int4* out, long long npacks,
                                                                int rank, int world, unsigned int* epoch, int* err) {
  const Args& a = *ap;
  unsigned int flag = next_flag(epoch);
  long long part = npacks / world;
  long long start = rank * part;
  long long mypart = (rank == world - 1) ? npacks - start : part;
  long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
  long long maxpart = npacks - (world - 1) * part;
  for (long long j = tid; j < maxpart; j += stride) {
    for (int r = 0; r < world; r++) {
      if (r == rank) continue;
      long long pr = (r == world - 1) ? npacks - r * part : part;
      if (j < pr) st_volatile_v4(a.hstage[rank] + r * part + j, in[r * part + j]);
    }
  }
  __threadfence_system();
  block_barrier(a, SIG_START, rank, world, flag, 0, err);
  for (long long j = tid; j < mypart; j += stride) {
    Acc acc; acc_zero(acc);
    for (int r = 0; r < world; r++) acc_add(acc, r == rank ? in[start + j] : ld_volatile_v4(a.hstage[r] + start + j));
    int4 v = acc_pack(acc);
    out[start + j] = v;
    st_volatile_v4(a.htmp[rank] + j, v);
  }
  block_barrier(a, SIG_MID, rank, world, flag, 1, err);
  for (long long j = tid; j < maxpart; j += stride) {
    for (int r = 0; r < world; r++) {
      if (r == rank) continue;
      long long pr = (r == world - 1) ? npacks - r * part : part;
      if (j < pr) out[r * part + j] = ld_volatile_v4(a.htmp[r] + j);
    }
  }
  block_barrier(a, SIG_END, rank, world, flag, 0, err);
  store_flag(epoch, flag);
}
'''

# micro2: direct measurements of three arsim device parameters (gpu.launch_graph, gpu.fence_sys,
# gpu.reduce_loop_overhead). Every loop is bounded (no spin waits on other agents).
MICRO2_SRC = r'''
__device__ __forceinline__ unsigned long long gtimer2() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ void st_vol_u32(int* p, int v) {
  asm volatile("st.volatile.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_rel_sys_u32(int* p, int v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_vol_v4(int4* p, int4 v) {
  asm volatile("st.volatile.global.v4.s32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ int4 ld_vol_v4(const int4* p) {
  int4 v;
  asm volatile("ld.volatile.global.v4.s32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}

extern "C" __global__ void empty_kernel2() {}

// device-side delay: lets the host fill the queue before the timing event (bounded by ns)
extern "C" __global__ void spin_ns(long long ns) {
  unsigned long long t0 = gtimer2();
  while ((long long)(gtimer2() - t0) < ns) { }
}

// SM clock calibration: cycles vs globaltimer over `cycles` cycles
extern "C" __global__ void clk_cal(long long cycles, long long* res) {
  unsigned long long g0 = gtimer2();
  long long c0 = clock64();
  long long c1 = c0;
  while (c1 - c0 < cycles) c1 = clock64();
  unsigned long long g1 = gtimer2();
  res[0] = c1 - c0; res[1] = (long long)(g1 - g0);
}

// fence cost. variant: 0 store, 1 store+__threadfence_system, 2 16x16B stores+__threadfence_system,
// 3 store+__threadfence (gpu scope), 4 st.release.sys, 5 16x16B stores (no fence).
// Thread t writes flag[t] (4 B apart) and big[k*nt + t] (coalesced per k). Timed by thread 0
// between two __syncthreads (one block).
extern "C" __global__ void fence_loop(int* flag, int4* big, int n, int variant, long long* res) {
  int t = threadIdx.x, nt = blockDim.x;
  int* f = flag + t;
  __syncthreads();
  unsigned long long g0 = gtimer2();
  long long c0 = clock64();
  if (variant == 0) {
    for (int i = 0; i < n; i++) st_vol_u32(f, i);
  } else if (variant == 1) {
    for (int i = 0; i < n; i++) { st_vol_u32(f, i); __threadfence_system(); }
  } else if (variant == 2) {
    for (int i = 0; i < n; i++) {
      #pragma unroll
      for (int k = 0; k < 16; k++) st_vol_v4(big + k * nt + t, make_int4(i, k, t, 1));
      __threadfence_system();
    }
  } else if (variant == 3) {
    for (int i = 0; i < n; i++) { st_vol_u32(f, i); __threadfence(); }
  } else if (variant == 4) {
    for (int i = 0; i < n; i++) st_rel_sys_u32(f, i);
  } else {
    for (int i = 0; i < n; i++) {
      #pragma unroll
      for (int k = 0; k < 16; k++) st_vol_v4(big + k * nt + t, make_int4(i, k, t, 1));
    }
  }
  __syncthreads();
  long long c1 = clock64();
  unsigned long long g1 = gtimer2();
  if (t == 0) { res[0] = c1 - c0; res[1] = (long long)(g1 - g0); }
}

// pull-reduce loop as in one_shot_p2p / one_shot_host (world 2) without barriers:
// out[i] = bf16(fp32(rem[i]) + fp32(loc[i])), 8 bf16 per int4, grid-stride. Block 0's thread 0 times
// its block between two __syncthreads.
__device__ __forceinline__ float rr_lo(unsigned int w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float rr_hi(unsigned int w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ unsigned int rr_f2bf(float f) {
  unsigned int u = __float_as_uint(f); u += 0x7fffu + ((u >> 16) & 1u); return u >> 16;
}
__device__ __forceinline__ int4 rr_add(int4 a, int4 b) {
  unsigned int x[4] = {(unsigned)a.x, (unsigned)a.y, (unsigned)a.z, (unsigned)a.w};
  unsigned int y[4] = {(unsigned)b.x, (unsigned)b.y, (unsigned)b.z, (unsigned)b.w};
  unsigned int w[4];
  #pragma unroll
  for (int i = 0; i < 4; i++) {
    float lo = 0.f, hi = 0.f;
    lo += rr_lo(x[i]); hi += rr_hi(x[i]);
    lo += rr_lo(y[i]); hi += rr_hi(y[i]);
    w[i] = rr_f2bf(lo) | (rr_f2bf(hi) << 16);
  }
  return make_int4((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
}

#define RR_TIMER_START \
  __syncthreads(); unsigned long long g0 = gtimer2(); long long c0 = clock64();
#define RR_TIMER_END \
  __syncthreads(); long long c1 = clock64(); unsigned long long g1 = gtimer2(); \
  if (blockIdx.x == 0 && threadIdx.x == 0) { res[0] = c1 - c0; res[1] = (long long)(g1 - g0); }

#define READ_REDUCE(NAME, LOAD) \
extern "C" __global__ void __launch_bounds__(1024) NAME(const int4* __restrict__ rem, const int4* __restrict__ loc, \
                                                        int4* __restrict__ out, long long n16, long long* res) { \
  RR_TIMER_START \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x) { \
    int4 a = LOAD(rem + i); int4 b = loc[i]; out[i] = rr_add(a, b); \
  } \
  RR_TIMER_END \
}
#define READ_ONLY(NAME, LOAD) \
extern "C" __global__ void __launch_bounds__(1024) NAME(const int4* __restrict__ rem, int4* sink, long long n16, long long* res) { \
  RR_TIMER_START \
  int4 acc = make_int4(0, 0, 0, 0); \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x) { \
    int4 v = LOAD(rem + i); acc.x += v.x; acc.y ^= v.y; acc.z += v.z; acc.w ^= v.w; \
  } \
  if (acc.x == 0x12345678 && acc.y == 0x9abcdef0) sink[threadIdx.x & 255] = acc; \
  RR_TIMER_END \
}
#define LD_PLAIN(p) (*(p))
#define LD_VOL(p) ld_vol_v4(p)
READ_REDUCE(read_reduce_plain, LD_PLAIN)
READ_REDUCE(read_reduce_vol, LD_VOL)
READ_ONLY(read_only_plain, LD_PLAIN)
READ_ONLY(read_only_vol, LD_VOL)
'''

# Barrier cost versus thread blocks (capture.py barrier). Every block of every rank meets every other rank once
# per barrier through its own signal slot. sig_tab[p] is rank p's signal array (uint32); the slot rank p reads
# for the signal of rank src in block b is index (b * MAXW + src) * stride, so stride 1 packs 32 slots (4 blocks ×
# 8 source ranks) into each 128-byte line and stride 32 gives each (block, src) its own line.
#   kind 0, "cas": PyTorch symmetric memory's token barrier: atomicCAS_system(peer slot, 0 -> 1) until it succeeds,
#           then atomicCAS_system(own slot, 1 -> 0) until it succeeds (each signal is a token the waiter consumes).
#   kind 1, "flag": vLLM's epoch barrier: a volatile store of the epoch into the peer's slot, then a volatile poll
#           of the own slot until it reaches the epoch.
# nb barriers run back to back inside one launch, each between two __syncthreads.
BARRIER_SRC = r'''
#define MAXW 8
#define SPIN_LIMIT 2000000LL

extern "C" __global__ void barrier_k(const unsigned long long* __restrict__ sig_tab, int rank, int world, int nb,
                                     int stride, int kind, unsigned int* epoch, int* err) {
  const int b = blockIdx.x;
  const unsigned int e0 = epoch[b];
  for (int i = 0; i < nb; i++) {
    __syncthreads();
    const int p = threadIdx.x;
    if (p < world && p != rank) {
      unsigned int* remote = (unsigned int*)sig_tab[p] + ((size_t)b * MAXW + rank) * stride;
      unsigned int* local = (unsigned int*)sig_tab[rank] + ((size_t)b * MAXW + p) * stride;
      long long spins = 0;
      if (kind == 0) {
        while (atomicCAS_system(remote, 0u, 1u) != 0u) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
        spins = 0;
        while (atomicCAS_system(local, 1u, 0u) != 1u) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
      } else {
        const unsigned int e = e0 + (unsigned int)i + 1u;
        *(volatile unsigned int*)remote = e;
        while ((int)(*(volatile unsigned int*)local - e) < 0) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) epoch[b] = e0 + (unsigned int)nb;
}
'''
