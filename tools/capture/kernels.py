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

// sm_write16 with a pause of pause_cycles (clock64) after each of a thread's stores: writers that do not fill the
// host link (read_beside_write's paced variant)
extern "C" __global__ void sm_write16_paced(int4* dst, long long n16, long long pause_cycles) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long k = i; k < n16; k += stride) {
    dst[k] = make_int4((int)k, 7, (int)(k >> 7), 11);
    long long t0 = clock64();
    while (clock64() - t0 < pause_cycles) {
    }
  }
}

// sm_write16 with volatile stores (st.volatile, as the capture's one-shot stages its data), and with fence > 0 a
// __threadfence_system() after every `fence` of a thread's stores (read_beside_write's vol and fenced variants)
extern "C" __global__ void sm_write16_vol(int4* dst, long long n16, int fence) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  int n = 0;
  for (long long k = i; k < n16; k += stride) {
    int4 v = make_int4((int)k, 7, (int)(k >> 7), 11);
    asm volatile("st.volatile.global.v4.s32 [%0], {%1, %2, %3, %4};" ::"l"(dst + k), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
    if (fence > 0 && ++n == fence) {
      __threadfence_system();
      n = 0;
    }
  }
}

// U independent 16-B loads a thread in flight (place_rw's modes 2 and 3), n16 a multiple of U × blockDim.x
template <int U>
__device__ __forceinline__ int4 place_loads(const int4* __restrict__ p, long long n16) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (long long k = threadIdx.x; k < n16; k += U * blockDim.x) {
    int4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = p[k + u * blockDim.x];
#pragma unroll
    for (int u = 0; u < U; u++) { acc.x += v[u].x; acc.y ^= v[u].y; acc.z += v[u].z; acc.w ^= v[u].w; }
  }
  return acc;
}

// place_rw's readers as a kernel of their own (read_beside_write's "loops" variant): each block loads n16 × 16 B
// of src from its own part, mode 0 one load a thread in flight (the loop not unrolled), 2 and 3 four and eight
extern "C" __global__ void read_loop(const int4* __restrict__ src, int4* sink, long long n16, int mode) {
  const int4* p = src + (long long)blockIdx.x * n16;
  int4 acc = make_int4(0, 0, 0, 0);
  if (mode == 2) {
    acc = place_loads<4>(p, n16);
  } else if (mode == 3) {
    acc = place_loads<8>(p, n16);
  } else {
#pragma unroll 1
    for (long long k = threadIdx.x; k < n16; k += blockDim.x) {
      int4 v = p[k];
      acc.x += v.x; acc.y ^= v.y; acc.z += v.z; acc.w ^= v.w;
    }
  }
  if (acc.x == 0x12345678 && acc.y == 0x9abcdef0) sink[threadIdx.x & 255] = acc;
}

// One block per SM (the launch asks for more dynamic shared memory than two blocks fit), each taking the role
// roles[its SM] names: 1 stores 16 B a thread to its own 1 MiB of dst (host memory) until every reader is done;
// 2 waits until every writer runs and 20 us more, then loads rbytes16 × 16 B of src (its own part, by its rank
// among the readers) as sm_read16's threads do and records the loads' start and end (globaltimer, thread 0 after
// a block barrier); 0 leaves. A block on an SM another block already claimed leaves too (claim[], zeroed before
// each launch). state: [0] writers running, [1] readers done, [2] readers expected, [3] writers expected, [4] error
// (a wait past SPIN_LIMIT). out[4 × block]: SM, role, start ns, end ns. mode 1: a reader's thread 0 instead
// follows `steps` dependent loads through src (each 8-B word the index of the next, as chase's array), the other
// threads idle; modes 2 and 3: each thread keeps 4 or 8 independent loads in flight (place_loads), mode 0 the
// plain loop (one). wstat: the writers' 16-B stores, their first start and last end (ns). wide, span16: see the
// writers. slots: the blocks an SM whose roles count (1: one block per SM, its role roles[SM]; 2: two, roles[2 SM]
// and roles[2 SM + 1] by their arrival on the SM).
// mode 4: the plain loop on the block's first rthreads threads only (one load a thread in flight, rthreads × 16 B
// a block); mode 5: the chase of mode 1 by the first warp, each step every lane loading 8 B at 16-B steps from the
// step's word (512 B a step, as a streaming warp's load), the next index lane 0's.
extern "C" __global__ void place_rw(const int4* __restrict__ src, int4* dst, const signed char* roles, int* claim,
                                    long long rbytes16, int* state, long long* out, int4* sink, int mode, int steps,
                                    unsigned long long* wstat, int wide, int rthreads, long long span16, int slots) {
  extern __shared__ int4 pad[];
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  __shared__ int role, rank, wrank;
  if (threadIdx.x == 0) {
    // slots blocks an SM take roles (roles[smid × slots + the block's arrival on its SM]); any further block idles
    const int slot = atomicAdd(&claim[smid], 1);
    const unsigned at = smid * (unsigned)slots + (unsigned)slot;
    role = slot < slots ? roles[at] : 0;
    rank = 0;
    wrank = 0;
    for (unsigned s = 0; s < at && slot < slots; s++) {
      rank += roles[s] == 2;
      wrank += roles[s] == 1;
    }
    // state[5] 1: the striding writers take their places from the last SM (READ_DEPTH_WRANK=reverse)
    if (role == 1 && state[5] == 1) wrank = state[3] - 1 - wrank;
    out[4 * blockIdx.x] = smid;
    out[4 * blockIdx.x + 1] = role;
    if (role == 1) atomicAdd(&state[0], 1);
  }
  __syncthreads();
  if (role == 1) {
    // wide: the writers stride together over span16 × 16 B of dst (as a grid-stride loop over a large buffer),
    // each line stored once a pass; otherwise each writer stores its own span16 × 16 B (at smid × span16) again
    // and again; span16 a power of two (128 MiB and 1 MiB: the part's first forms)
    int4* mine = wide ? dst : dst + (long long)smid * span16;
    long long mask = span16 - 1, step = wide ? (long long)state[3] * blockDim.x : blockDim.x;
    unsigned it = 0;
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (long long k = (wide ? (long long)wrank * blockDim.x : 0) + threadIdx.x;; k += step) {
      mine[k & mask] = make_int4((int)k, 7, (int)(k >> 7), 11);
      if ((++it & 255) == 0) {
        if (*(volatile int*)&state[1] >= state[2]) break;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > 2000000000ull) { state[4] = 1; break; }
      }
    }
    atomicAdd(&wstat[0], (unsigned long long)it);
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      atomicMin(&wstat[1], t0);
      atomicMax(&wstat[2], t);
    }
  } else if (role == 2) {
    if (threadIdx.x == 0) {
      long long spins = 0;
      while (*(volatile int*)&state[0] < state[3] && ++spins < SPIN_LIMIT) {
      }
      if (spins >= SPIN_LIMIT) state[4] = 2;
      unsigned long long t0;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
      unsigned long long t = t0;
      while (t - t0 < 20000) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    }
    __syncthreads();
    unsigned long long ts, te;
    if (threadIdx.x == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ts));
    if (mode == 1) {
      if (threadIdx.x == 0) {
        const volatile long long* q = (const volatile long long*)src;
        long long j = 0;
        for (int i = 0; i < steps; i++) j = q[j];
        if (j == -12345) sink[0].x = (int)j;
      }
    } else if (mode == 5) {
      if (threadIdx.x < 32) {
        const volatile long long* q = (const volatile long long*)src;
        long long j = 0, acc = 0;
        for (int i = 0; i < steps; i++) {
          long long v = q[j + 2 * threadIdx.x];
          acc += v;
          j = __shfl_sync(0xffffffffu, v, 0);
        }
        if (acc == -12345) sink[threadIdx.x].x = (int)acc;
      }
    } else if (mode == 4) {
      if ((int)threadIdx.x < rthreads) {
        const int4* p = src + (long long)rank * rbytes16;
        int4 acc = make_int4(0, 0, 0, 0);
#pragma unroll 1
        for (long long k = threadIdx.x; k < rbytes16; k += rthreads) {
          int4 v = p[k];
          acc.x += v.x; acc.y ^= v.y; acc.z += v.z; acc.w ^= v.w;
        }
        if (acc.x == 0x12345678 && acc.y == 0x9abcdef0) sink[threadIdx.x & 255] = acc;
      }
    } else if (mode >= 2) {
      const int4* p = src + (long long)rank * rbytes16;
      int4 acc = mode == 2 ? place_loads<4>(p, rbytes16) : place_loads<8>(p, rbytes16);
      if (acc.x == 0x12345678 && acc.y == 0x9abcdef0) sink[threadIdx.x & 255] = acc;
    } else {
      const int4* p = src + (long long)rank * rbytes16;
      int4 acc = make_int4(0, 0, 0, 0);
      for (long long k = threadIdx.x; k < rbytes16; k += blockDim.x) {
        int4 v = p[k];
        acc.x += v.x; acc.y ^= v.y; acc.z += v.z; acc.w ^= v.w;
      }
      if (acc.x == 0x12345678 && acc.y == 0x9abcdef0) sink[threadIdx.x & 255] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(te));
      out[4 * blockIdx.x + 2] = ts;
      out[4 * blockIdx.x + 3] = te;
      __threadfence();
      atomicAdd(&state[1], 1);
    }
  }
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

// chase's timed walk, and the SM it ran on in res[2] (chase_at and chase_on)
__device__ __forceinline__ void chase_on_sm(const long long* p, int steps, long long* out, long long* res, unsigned smid) {
  long long j = 0;
  unsigned long long g0 = gtimer();
  long long t0 = clock64();
  for (int s = 0; s < steps; s++) j = *((volatile const long long*)(p + j));
  long long t1 = clock64();
  unsigned long long g1 = gtimer();
  out[0] = j; res[0] = t1 - t0; res[1] = (long long)(g1 - g0); res[2] = smid;
}

// chase, and the SM it ran on in res[2] (chase_grid: whether the chase shares its SM with a writer block)
extern "C" __global__ void chase_at(const long long* p, int steps, long long* out, long long* res) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  chase_on_sm(p, steps, out, res, smid);
}

// chase_at by the first block to land on SM target (claim[0] from 0), the rest waiting for the claim: a chase from a chosen
// SM beside a writer kernel (chase_grid's CHASE_GRID_SMS); res[2] the SM, as chase_at's
extern "C" __global__ void chase_on(const long long* p, int steps, long long* out, long long* res, int target, int* claim) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (smid != (unsigned)target || atomicCAS(claim, 0, 1) != 0) {
    // stay resident until a block has claimed (at most 2 ms), so that the launch's blocks spread over every SM
    // rather than reusing the first SMs' slots as they free
    unsigned long long t = gtimer();
    while (*((volatile int*)claim) == 0 && gtimer() - t < 2000000ull) {
    }
    return;
  }
  chase_on_sm(p, steps, out, res, smid);
}

// the SM each block lands on (out[blockIdx.x]): where a kernel of that shape's blocks run on an idle GPU (chase_grid
// probes its writer kernel's with it)
extern "C" __global__ void where_sm(int* out) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) out[blockIdx.x] = (int)smid;
}

// where_sm whose blocks then stay resident spin_ns ns (%globaltimer): a kernel launched meanwhile lands beside them
// (the landing part)
extern "C" __global__ void where_sm_spin(int* out, long long spin_ns) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) out[blockIdx.x] = (int)smid;
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while ((long long)(t - t0) < spin_ns);
}

// each block rewrites its own n16 16-B words of dst (block b from dst + b n16), loops times: a writer kernel whose
// blocks store as read_placement's one-launch writers do (chase_grid's CHASE_GRID_WRITER=own)
extern "C" __global__ void write_own(int4* dst, long long n16, int loops) {
  int4* mine = dst + (long long)blockIdx.x * n16;
  for (int l = 0; l < loops; l++)
    for (long long k = threadIdx.x; k < n16; k += blockDim.x) mine[k] = make_int4((int)k, 7, (int)(k >> 7), 11);
}

// ---- each line's round trip from one SM: the first block on SM target_sm (claim) chases each of nlines lines of
// local memory on its own, reps dependent volatile loads of the line's first word (0, so the next load is the same
// word), timed in clock64 cycles per line: whether a line's L2 round trip depends on where the line and the SM lie
extern "C" __global__ void line_lat(const long long* p, const long long* offs, int nlines, int reps, int target_sm,
                                    int* claim, long long* res) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x != 0 || smid != (unsigned)target_sm || atomicExch(claim, 1) != 0) return;
  for (int l = 0; l < nlines; l++) {
    const long long* q = p + offs[l];
    long long j = *((volatile const long long*)q);
    long long t0 = clock64();
    for (int s = 0; s < reps; s++) j = *((volatile const long long*)(q + j));
    long long t1 = clock64();
    res[2 * l] = t1 - t0;
    res[2 * l + 1] = j;
  }
}

// ---- line_lat with atomics: the claimed block on SM target_sm times reps dependent atomicAdd(0)s on each line's
// first word (the old value, 0, indexes the next), cycles per line
extern "C" __global__ void line_atomic_lat(long long* p, const long long* offs, int nlines, int reps, int target_sm,
                                           int* claim, long long* res) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x != 0 || smid != (unsigned)target_sm || atomicExch(claim, 1) != 0) return;
  for (int l = 0; l < nlines; l++) {
    unsigned long long* q = (unsigned long long*)(p + offs[l]);
    unsigned long long j = atomicAdd(q, 0ULL);
    long long t0 = clock64();
    for (int s = 0; s < reps; s++) j = atomicAdd(q + j, 0ULL);
    long long t1 = clock64();
    res[2 * l] = t1 - t0;
    res[2 * l + 1] = (long long)j;
  }
}

// ---- a ping-pong between the first block on SM sm_a and the first on SM sm_b through two words of local memory:
// side a stores flag_b and polls flag_a, side b the reverse; n round trips, side a's cycles in res[0]
extern "C" __global__ void pp_place(int* base, long long off_a, long long off_b, int sm_a, int sm_b, int n,
                                    unsigned e0, int* claim, int* err, long long* res) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x != 0) return;
  int side = -1;
  if (smid == (unsigned)sm_a && atomicExch(&claim[0], 1) == 0) side = 0;
  else if (smid == (unsigned)sm_b && atomicExch(&claim[1], 1) == 0) side = 1;
  if (side < 0) return;
  volatile int* fa = base + off_a / 4;
  volatile int* fb = base + off_b / 4;
  long long spins = 0;
  long long t0 = clock64();
  for (int i = 1; i <= n; i++) {
    const int e = (int)(e0 + (unsigned)i);
    if (side == 0) {
      *fb = e;
      while (*fa != e) { if (++spins > SPIN_LIMIT) { *err = 1; return; } }
    } else {
      while (*fb != e) { if (++spins > SPIN_LIMIT) { *err = 1; return; } }
      *fa = e;
    }
  }
  long long t1 = clock64();
  if (side == 0) res[0] = t1 - t0;
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
// the two-shot's mid barrier over GPU memory: 1 (the default) a __threadfence_system and a release store, acquire
// polls; 0 volatile stores and polls, no fence (compiled with -DTWO_SHOT_MID_MODE=0: flagar.py's FLAGAR_MID=volatile);
// 2 a release store and acquire polls, no __threadfence_system (vLLM's; FLAGAR_MID=release); 3 a
// __threadfence_system, then volatile stores and polls (FLAGAR_MID=fence_volatile)
#ifndef TWO_SHOT_MID_MODE
#define TWO_SHOT_MID_MODE 1
#endif

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

// barrier over all ranks for this block. mode 0: volatile (start / final end), 1: fence, then release/acquire;
// 2: release/acquire; 3: fence, then volatile (the mode is a constant at every call: the others compile away)
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
    } else if (mode == 3) {
      __threadfence_system();
      st_volatile_u32(peer_slot, flag);
      while (ld_volatile_u32(my_slot) != flag) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
    } else {
      if (mode == 1) __threadfence_system();
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
  block_barrier(a, SIG_MID, rank, world, flag, TWO_SHOT_MID_MODE, err);  // 1: release/acquire, system scope
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

# Per-block loop rates, polls and atomics (capture.py perblock; one GPU). Every kernel times itself per block with
# clock64 (thread 0, between __syncthreads where the whole block takes part) into res[2*block] (cycles) and
# res[2*block+1] (a value that keeps the loop alive). Spin loops have a bail-out counter that sets *err.
PERBLOCK_SRC = r'''
#define SPIN_LIMIT 20000000LL

__device__ __forceinline__ unsigned long long pb_gtimer() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ unsigned ld_vol(const unsigned* p) {
  unsigned v; asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ unsigned ld_acq(const unsigned* p) {
  unsigned v; asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ unsigned ld_rlx(const unsigned* p) {
  unsigned v; asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ void st_vol(unsigned* p, unsigned v) {
  asm volatile("st.volatile.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_rel(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_vol4(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_vol4(uint4* p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
__device__ __forceinline__ void fence_sc_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }

extern "C" __global__ void pb_clk_cal(long long cycles, long long* res) {
  unsigned long long g0 = pb_gtimer();
  long long c0 = clock64(), c1 = c0;
  while (c1 - c0 < cycles) c1 = clock64();
  unsigned long long g1 = pb_gtimer();
  res[0] = c1 - c0; res[1] = (long long)(g1 - g0);
}

// ---- polls and atomics: thread 0 of every block issues `iters` dependent requests to its word ---------------
// word of block b: base + b * spacing_words (0: every block the same word). op: 0 ld.volatile, 1 ld.acquire.sys,
// 2 ld.relaxed.sys, 3 atomicAdd_system(+1), 4 atomicCAS_system that never matches (reads, writes nothing).
// The next address depends on the value returned (the words never have the top bit set), as in a spin loop.
extern "C" __global__ void pb_poll(unsigned* base, int spacing_words, int op, int iters, long long* res) {
  if (threadIdx.x != 0) return;
  unsigned* p = base + (size_t)blockIdx.x * spacing_words;
  unsigned v = 0, acc = 0;
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    unsigned* q = p + ((v >> 31) & 1u);
    if (op == 0) v = ld_vol(q);
    else if (op == 1) v = ld_acq(q);
    else if (op == 2) v = ld_rlx(q);
    else if (op == 3) v = atomicAdd_system(q, 1u) & 0x7fffffffu;
    else v = atomicCAS_system(q, 0xffffffffu, 0u);
    acc += v;
  }
  long long c1 = clock64();
  res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc;
}

// ---- page touches: thread t < npages of one block loads one word of page t (repeat) or of page
// launch * npages + t (fresh: pages no launch has touched), stride_words apart; the block's slowest load's
// latency (clock64 from before the load to after its value is used) goes to res[launch].
extern "C" __global__ void pb_page_touch(const unsigned* base, long long stride_words, int npages, int launch,
                                         int fresh, unsigned long long* res) {
  __shared__ unsigned long long mx;
  __shared__ unsigned sink[1024];
  const int t = threadIdx.x;
  if (t == 0) mx = 0;
  __syncthreads();
  if (t < npages) {
    const long long page = fresh ? (long long)launch * npages + t : t;
    const unsigned* p = base + page * stride_words;
    long long c0 = clock64();
    unsigned v = ld_vol(p);
    sink[t] = v;  // the store waits for the value: the clock below reads after it arrived
    long long c1 = clock64();
    atomicMax(&mx, (unsigned long long)(c1 - c0));
  }
  __syncthreads();
  if (t == 0) res[launch] = mx + (sink[0] == 0xdeadbeefu ? 1ull : 0ull);
}

// ---- ping-pong between pairs of blocks of one GPU through flags (host or local memory) ------------------------
// Blocks 0..pairs-1 lead, blocks pairs..2*pairs-1 follow; pair k's flags at words (2k)*sp and (2k+1)*sp.
// mode 0: st.volatile + ld.volatile poll (vLLM's start barrier); 1: st.release.sys + ld.acquire.sys;
// 2: st.volatile + __threadfence_system() + ld.volatile.
extern "C" __global__ void pb_pingpong(unsigned* flags, int pairs, int sp, int n, unsigned e0, int mode, int* err,
                                       long long* res) {
  if (threadIdx.x != 0) return;
  const int b = blockIdx.x, k = b % pairs, lead = b < pairs;
  unsigned* mine = flags + (size_t)(2 * k + (lead ? 0 : 1)) * sp;
  unsigned* theirs = flags + (size_t)(2 * k + (lead ? 1 : 0)) * sp;
  long long spins = 0;
  long long c0 = clock64();
  for (int i = 1; i <= n; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (lead) {
      if (mode == 1) st_rel(theirs, e); else { st_vol(theirs, e); if (mode == 2) __threadfence_system(); }
    }
    if (mode == 1) { while (ld_acq(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto done; } } }
    else { while (ld_vol(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto done; } } }
    if (!lead) {
      if (mode == 1) st_rel(theirs, e); else { st_vol(theirs, e); if (mode == 2) __threadfence_system(); }
    }
  }
done:
  res[2 * b] = clock64() - c0; res[2 * b + 1] = spins;
}

// ---- where a launch's blocks land: every block's thread 0 writes its SM id to sms[block] and stays until every block
// of the launch has arrived (a counter in arrived), so that the launch holds its SMs as a kernel of the same shape
// would while its blocks run side by side.
extern "C" __global__ void pb_smid(int* sms, unsigned* arrived) {
  if (threadIdx.x != 0) return;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  sms[blockIdx.x] = (int)smid;
  atomicAdd(arrived, 1u);
  long long spins = 0;
  while (atomicAdd(arrived, 0u) < gridDim.x && ++spins < 1000000) {}
}

// ---- pb_pingpong's volatile pair between two chosen blocks a and b of a launch of one block an SM, the others
// returning at once: every block writes its SM id to sms[block]; a's flag and b's 128 B apart. res[0] and res[2]:
// a's and b's cycles, res[1], res[3] their spins. Kept apart from pb_pingpong so that kernel's code is unchanged.
extern "C" __global__ void pb_pingpong_sm(unsigned* flags, int a, int b, int n, unsigned e0, int* err, long long* res,
                                          int* sms) {
  if (threadIdx.x != 0) return;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  sms[blockIdx.x] = (int)smid;
  const int blk = blockIdx.x;
  if (blk != a && blk != b) return;
  const int lead = blk == a;
  unsigned* mine = flags + (lead ? 0 : 32);
  unsigned* theirs = flags + (lead ? 32 : 0);
  long long spins = 0;
  long long c0 = clock64();
  for (int i = 1; i <= n; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (lead) st_vol(theirs, e);
    while (ld_vol(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto done; } }
    if (!lead) st_vol(theirs, e);
  }
done:
  res[lead ? 0 : 2] = clock64() - c0; res[lead ? 1 : 3] = spins;
}

// ---- pb_line_probe's pair with release stores and acquire polls (pb_pingpong mode 1: st.release.sys waits as a
// system fence does) beside K neighbour blocks, each polling a word of its own with volatile loads (pb_line_probe
// op 0): whether the pair's fences wait for the neighbours' loads of host memory. Kept apart from pb_line_probe so
// that kernel's code is unchanged.
extern "C" __global__ void pb_line_probe_rel(unsigned* flags, int lb, int off, int stride, int n, unsigned e0,
                                             unsigned* done, int* err, long long* res) {
  if (threadIdx.x != 0) return;
  const int b = blockIdx.x;
  const unsigned stop = e0 + (unsigned)n;
  long long spins = 0;
  if (b < 2) {
    const int lead = b == 0;
    unsigned* mine = flags + (lead ? 0 : lb);
    unsigned* theirs = flags + (lead ? lb : 0);
    long long c0 = clock64();
    for (int i = 1; i <= n; i++) {
      const unsigned e = e0 + (unsigned)i;
      if (lead) st_rel(theirs, e);
      while (ld_acq(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto out; } }
      if (!lead) st_rel(theirs, e);
    }
  out:
    res[2 * b] = clock64() - c0; res[2 * b + 1] = spins;
    if (lead) { __threadfence(); st_vol(done, stop); }
    return;
  }
  unsigned* w = flags + ((b - 2) % 2 ? lb : 0) + off + ((b - 2) / 2) * stride;
  unsigned acc = 0;
  for (unsigned k = 0; ; k++) {
    acc += ld_vol(w);
    if ((k & 7) == 7 && ld_vol(done) == stop) break;
    if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
  }
  res[2 * b] = 0; res[2 * b + 1] = acc;
}

// ---- one ping-pong pair beside K neighbour blocks acting on the pair's two host lines ----------------------------
// The pair: block 0 (lead) polls word 0 (line A), block 1 word lb (line B); each stores the other's word (volatile,
// as pb_pingpong mode 0). Neighbour j (block 2 + j) works on line A's side (j even) or line B's (j odd), at word
// off + (j / 2) * stride (off 1: the pair's sector; 8: another sector of the same 64-B half; 16: the line's other
// half; 32: the next line; further: 1 KiB or 64 KiB on; stride 1 puts a side's neighbours in one sector, 32 each
// on a line of its own). op 0: it polls its word with volatile loads; 1: it stores to its word, then sleeps gap_ns; 2: it
// ping-pongs with neighbour j ^ 1 as the pair does (j even leads). Block 0 tells the neighbours to stop through
// *done (device memory), which they read every 8th request.
extern "C" __global__ void pb_line_probe(unsigned* flags, int lb, int op, int off, int stride, int gap_ns, int n,
                                         unsigned e0, unsigned* done, int* err, long long* res) {
  if (threadIdx.x != 0) return;
  const int b = blockIdx.x;
  const unsigned stop = e0 + (unsigned)n;
  long long spins = 0;
  if (b < 2) {
    const int lead = b == 0;
    unsigned* mine = flags + (lead ? 0 : lb);
    unsigned* theirs = flags + (lead ? lb : 0);
    long long c0 = clock64();
    for (int i = 1; i <= n; i++) {
      const unsigned e = e0 + (unsigned)i;
      if (lead) st_vol(theirs, e);
      while (ld_vol(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto out; } }
      if (!lead) st_vol(theirs, e);
    }
  out:
    res[2 * b] = clock64() - c0; res[2 * b + 1] = spins;
    if (lead) { __threadfence(); st_vol(done, stop); }
    return;
  }
  const int j = b - 2;
  unsigned* w = flags + (j % 2 ? lb : 0) + off + (j / 2) * stride;
  unsigned acc = 0;
  if (op == 0) {
    for (unsigned k = 0; ; k++) {
      acc += ld_vol(w);
      if ((k & 7) == 7 && ld_vol(done) == stop) break;
      if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
  } else if (op == 1) {
    for (unsigned k = 1; ; k++) {
      st_vol(w, k);
      if (gap_ns > 0) __nanosleep(gap_ns);
      if ((k & 7) == 7 && ld_vol(done) == stop) break;
      if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
  } else {
    // j even leads: it stores a new value to j + 1's word and waits for it back in its own; j + 1 echoes each
    // new value it finds. The lead starts above both words, whatever an earlier launch left in them.
    const int lead = (j % 2) == 0;
    unsigned* theirs = flags + (lead ? lb : 0) + off + (j / 2) * stride;
    unsigned v = lead ? max(ld_vol(w), ld_vol(theirs)) : ld_vol(w);
    bool quit = false;
    for (unsigned k = 1; !quit; k++) {
      if ((k & 7) == 0 && ld_vol(done) == stop) break;
      if (lead) st_vol(theirs, ++v);
      unsigned x;
      for (unsigned q = 0; lead ? (x = ld_vol(w)) != v : (x = ld_vol(w)) == v; q++) {
        if ((q & 7) == 7 && ld_vol(done) == stop) { quit = true; break; }
        if (++spins > SPIN_LIMIT) { atomicExch(err, 1); quit = true; break; }
      }
      if (!quit && !lead) { v = x; st_vol(theirs, v); }
      acc += x;
    }
  }
  res[2 * b] = 0; res[2 * b + 1] = acc;
}

// ---- NCCL LL-style loops: one 16-B line (8 B data + two 4-B flags) per thread per iteration ------------------
// op bits: 1 RECV (spin with a volatile 16-B load on the own recv line until both flags match, as readLL),
// 2 SRC (8-B load of the user buffer, issued before the recv poll as NCCL's DataLoader does), 4 SEND (volatile
// 16-B store of data + flags, as storeLL), 8 OUT (8-B store of the result to the local output).
// Thread t of block b handles line (b * iters + i) * blockDim.x + t in iteration i (coalesced per iteration).
extern "C" __global__ void __launch_bounds__(1024) pb_ll(const uint4* recv, const uint2* src, uint4* dst, uint2* out,
                                                         int iters, int op, unsigned flag, int* err, long long* res) {
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const size_t k = ((size_t)blockIdx.x * iters + i) * blockDim.x + threadIdx.x;
    uint2 s = make_uint2(0u, 0u), d;
    if (op & 2) s = src[k];
    if (op & 1) {
      uint4 v;
      do { v = ld_vol4(recv + k); } while ((v.y != flag || v.w != flag) && ++spins < SPIN_LIMIT);
      d = make_uint2(v.x + s.x, v.z + s.y);
    } else {
      d = s;
    }
    if (op & 4) st_vol4(dst + k, make_uint4(d.x, flag, d.y, flag));
    if (op & 8) out[k] = d;
    acc += d.x;
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- pb_ll with its op fixed at compile time (NCCL's primitives are templates): the same loop, the same line
// indexing, the op's branches resolved by the compiler instead of tested each iteration.
template <int OP>
__device__ __forceinline__ void pb_ll_fixed(const uint4* recv, const uint2* src, uint4* dst, uint2* out, int iters,
                                            unsigned flag, int* err, long long* res) {
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const size_t k = ((size_t)blockIdx.x * iters + i) * blockDim.x + threadIdx.x;
    uint2 s = make_uint2(0u, 0u), d;
    if (OP & 2) s = src[k];
    if (OP & 1) {
      uint4 v;
      do { v = ld_vol4(recv + k); } while ((v.y != flag || v.w != flag) && ++spins < SPIN_LIMIT);
      d = make_uint2(v.x + s.x, v.z + s.y);
    } else {
      d = s;
    }
    if (OP & 4) st_vol4(dst + k, make_uint4(d.x, flag, d.y, flag));
    if (OP & 8) out[k] = d;
    acc += d.x;
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}
extern "C" __global__ void __launch_bounds__(1024) pb_ll_fixed_recv(const uint4* recv, const uint2* src, uint4* dst,
    uint2* out, int iters, int op, unsigned flag, int* err, long long* res) {
  pb_ll_fixed<1 | 8>(recv, src, dst, out, iters, flag, err, res);
}
extern "C" __global__ void __launch_bounds__(1024) pb_ll_fixed_rrs(const uint4* recv, const uint2* src, uint4* dst,
    uint2* out, int iters, int op, unsigned flag, int* err, long long* res) {
  pb_ll_fixed<1 | 2 | 4>(recv, src, dst, out, iters, flag, err, res);
}
// The rest of NCCL's LL operations, each compiled for its op: send (src, send), recv_send, recv_copy_send,
// recv_reduce_copy (the tree's root going up) and recv_reduce_copy_send (the ring's step from reduce to gather).
#define LL_FIXED_K(NAME, OP) \
extern "C" __global__ void __launch_bounds__(1024) pb_ll_fixed_##NAME(const uint4* recv, const uint2* src, uint4* dst, \
    uint2* out, int iters, int op, unsigned flag, int* err, long long* res) { \
  pb_ll_fixed<OP>(recv, src, dst, out, iters, flag, err, res); \
}
LL_FIXED_K(send, 2 | 4) LL_FIXED_K(rs, 1 | 4) LL_FIXED_K(rcs, 1 | 4 | 8) LL_FIXED_K(rrc, 1 | 2 | 8) LL_FIXED_K(rrcs, 1 | 2 | 4 | 8)

// ---- pb_ll's recv_reduce_send (op 7) in NCCL's steps: every per_step iterations make a step, and with book set
// each step pays what NCCL's LL primitive does around its loop (prims_ll.h): a barrier of the block's threads when
// the step starts (waitSend), and at its end another barrier and the last thread's volatile store of the step count
// to head (postRecv). Without book the same loop runs without them.
extern "C" __global__ void __launch_bounds__(1024) pb_ll_steps(const uint4* recv, const uint2* src, uint4* dst,
                                                               int iters, int per_step, int book, unsigned flag,
                                                               unsigned* head, int* err, long long* res) {
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  // Steps as nested loops, as NCCL's primitive calls are (no division per iteration).
  for (int i0 = 0; i0 < iters; i0 += per_step) {
    if (book) asm volatile("bar.sync 1, %0;" ::"r"(blockDim.x) : "memory");
    for (int i = i0; i < i0 + per_step; i++) {
      const size_t k = (size_t)i * blockDim.x + threadIdx.x;
      uint2 s = src[k];
      uint4 v;
      do { v = ld_vol4(recv + k); } while ((v.y != flag || v.w != flag) && ++spins < SPIN_LIMIT);
      const uint2 d = make_uint2(v.x + s.x, v.z + s.y);
      st_vol4(dst + k, make_uint4(d.x, flag, d.y, flag));
      acc += d.x;
    }
    if (book) {
      asm volatile("bar.sync 1, %0;" ::"r"(blockDim.x) : "memory");
      if (threadIdx.x == blockDim.x - 1) *(volatile unsigned*)head = (unsigned)(i0 / per_step + 1);
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- pb_ll128w's recv_reduce_send in NCCL's steps: per_step iterations a step; with book set each step pays what
// NCCL's LL128 primitive does around its loop (prims_ll128.h GenericOp: a barrier of the block's threads before the
// loop, after it another barrier and the last thread's volatile store of the step count to head).
extern "C" __global__ void __launch_bounds__(1024) pb_ll128_steps(const uint4* recv, const uint4* src, uint4* dst,
                                                                  int iters, int per_step, int book, unsigned flag,
                                                                  unsigned* head, int* err, long long* res) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i0 = 0; i0 < iters; i0 += per_step) {
    if (book) asm volatile("bar.sync 1, %0;" ::"r"(blockDim.x) : "memory");
    for (int i = i0; i < i0 + per_step; i++) {
      const size_t chunk = ((size_t)i * nw + warp) * 128;
      uint4 s[4], v[4];
      #pragma unroll
      for (int u = 0; u < 4; u++) s[u] = src[chunk + u * 32 + lane];
      int need;
      do {
        #pragma unroll
        for (int u = 0; u < 4; u++) v[u] = ld_vol4(recv + chunk + u * 32 + lane);
        need = ((lane & 7) == 7) && (v[3].w != flag);
      } while (__any_sync(0xffffffffu, need) && ++spins < SPIN_LIMIT);
      #pragma unroll
      for (int u = 0; u < 4; u++) {
        uint4 d = make_uint4(v[u].x + s[u].x, v[u].y + s[u].y, v[u].z + s[u].z, v[u].w + s[u].w);
        st_vol4(dst + chunk + u * 32 + lane, d);
        acc += d.x;
      }
    }
    if (book) {
      asm volatile("bar.sync 1, %0;" ::"r"(blockDim.x) : "memory");
      if (threadIdx.x == blockDim.x - 1) *(volatile unsigned*)head = (unsigned)(i0 / per_step + 1);
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- A live LL stream through memory, as NCCL's LL send and receive run it between two GPUs: role 0, block 0
// produces each thread's 16-B line of iteration i (data, flag, data, flag) with one volatile store, pausing
// delay_cycles after each iteration, while block 1 polls its line of iteration i until both flags match (pb_ll's
// recv: the data also go to out); role 1, block 0 only produces; role 2, block 0 only consumes (lines written
// by an earlier launch). Block 1's cycles (role 2: block 0's) go to res.
extern "C" __global__ void __launch_bounds__(1024) pb_ll_live(uint4* lines, uint2* out, int iters, int role,
                                                              unsigned flag, long long delay_cycles, int* err,
                                                              long long* res) {
  long long spins = 0;
  unsigned acc = 0;
  const bool produce = (role == 0 && blockIdx.x == 0) || role == 1;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const size_t k = (size_t)i * blockDim.x + threadIdx.x;
    if (produce) {
      st_vol4(lines + k, make_uint4(i, flag, i + 1, flag));
      if (delay_cycles > 0) { long long t = clock64(); while (clock64() - t < delay_cycles) {} }
    } else {
      uint4 v;
      do { v = ld_vol4(lines + k); } while ((v.y != flag || v.w != flag) && ++spins < SPIN_LIMIT);
      uint2 d = make_uint2(v.x, v.z);
      out[k] = d;
      acc += d.x;
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- A live LL128 stream, as pb_ll_live is for LL, in NCCL's LL128 layout (pb_ll128w): warp w of the block moves
// the 2-KiB chunk (i*nw + w)*128 vectors in iteration i, thread `lane` the vectors u*32 + lane (u < 4), and the
// eighth vector of every 128-B line (lane % 8 == 7) carries the flag in its last word. The producer stores its 4
// vectors (volatile 16-B stores, flag words set); the consumer loads its 4 vectors and reloads them until every flag
// of the warp matches (__any_sync), then stores the data to out. role 0: block 0 produces while block 1 consumes;
// role 1: block 0 only produces; role 2: block 0 only consumes (lines written by an earlier launch). The consumer's
// cycles go to res.
extern "C" __global__ void __launch_bounds__(1024) pb_ll128_live(uint4* lines, uint4* out, int iters, int role,
                                                                 unsigned flag, int* err, long long* res) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const bool produce = (role == 0 && blockIdx.x == 0) || role == 1;
  const bool flagLane = (lane & 7) == 7;
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const size_t chunk = ((size_t)i * nw + warp) * 128;
    if (produce) {
      #pragma unroll
      for (int u = 0; u < 4; u++) {
        const unsigned d = (unsigned)(i * 4 + u);
        st_vol4(lines + chunk + u * 32 + lane, make_uint4(d, d + 1, d + 2, flagLane ? flag : d + 3));
      }
    } else {
      uint4 v[4];
      int need;
      do {
        #pragma unroll
        for (int u = 0; u < 4; u++) v[u] = ld_vol4(lines + chunk + u * 32 + lane);
        need = flagLane && (v[0].w != flag || v[1].w != flag || v[2].w != flag || v[3].w != flag);
      } while (__any_sync(0xffffffffu, need) && ++spins < SPIN_LIMIT);
      #pragma unroll
      for (int u = 0; u < 4; u++) {
        out[chunk + u * 32 + lane] = v[u];
        acc += v[u].x;
      }
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- pb_ll128_live's live role for many pairs at once: block 2p stores pair p's lines (volatile, the flag in every
// 8th thread's last word), block 2p + 1 polls and receives them into out; each pair its own region of lines, so P
// pairs put P blocks' stores and P blocks' polls of host (or local) memory on the GPU at once, as NCCL's channels
// over SHM do on each GPU. res[2b] is block b's cycles.
extern "C" __global__ void __launch_bounds__(1024) pb_ll128_live_pairs(uint4* lines, uint4* out, int iters,
                                                                       unsigned flag, int* err, long long* res) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const bool produce = (blockIdx.x & 1) == 0;
  const bool flagLane = (lane & 7) == 7;
  const size_t base = (size_t)(blockIdx.x >> 1) * iters * nw * 128;
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const size_t chunk = base + ((size_t)i * nw + warp) * 128;
    if (produce) {
      #pragma unroll
      for (int u = 0; u < 4; u++) {
        const unsigned d = (unsigned)(i * 4 + u);
        st_vol4(lines + chunk + u * 32 + lane, make_uint4(d, d + 1, d + 2, flagLane ? flag : d + 3));
      }
    } else {
      uint4 v[4];
      int need;
      do {
        #pragma unroll
        for (int u = 0; u < 4; u++) v[u] = ld_vol4(lines + chunk + u * 32 + lane);
        need = flagLane && (v[0].w != flag || v[1].w != flag || v[2].w != flag || v[3].w != flag);
      } while (__any_sync(0xffffffffu, need) && ++spins < SPIN_LIMIT);
      #pragma unroll
      for (int u = 0; u < 4; u++) {
        out[chunk + u * 32 + lane] = v[u];
        acc += v[u].x;
      }
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- NCCL LL128-style loop: each thread moves 8 u64 per iteration (4 16-B volatile loads in flight), the last u64
// of every 8-thread group's 128-B line... simplified per thread: the 4th vector's .w word carries the flag; the thread
// spins until its last vector holds the flag, then stores its 4 vectors (data + flag) to dst. op bit 2 adds an 8-u64
// load of the user buffer (reduce), issued first.
extern "C" __global__ void __launch_bounds__(1024) pb_ll128(const uint4* recv, const uint4* src, uint4* dst,
                                                            int iters, int op, unsigned flag, int* err, long long* res) {
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const size_t k = (((size_t)blockIdx.x * iters + i) * blockDim.x + threadIdx.x) * 4;
    uint4 s[4], v[4];
    if (op & 2) {
      #pragma unroll
      for (int u = 0; u < 4; u++) s[u] = src[k + u];
    } else {
      #pragma unroll
      for (int u = 0; u < 4; u++) s[u] = make_uint4(0u, 0u, 0u, 0u);
    }
    do {
      #pragma unroll
      for (int u = 0; u < 4; u++) v[u] = ld_vol4(recv + k + u);
    } while (v[3].w != flag && ++spins < SPIN_LIMIT);
    #pragma unroll
    for (int u = 0; u < 4; u++) {
      uint4 d = make_uint4(v[u].x + s[u].x, v[u].y + s[u].y, v[u].z + s[u].z, u == 3 ? flag : v[u].w + s[u].w);
      st_vol4(dst + k + u, d);
      acc += d.x;
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- a W-rank barrier among the blocks of one GPU, as vLLM's barrier is laid out: each "rank" is a block; rank r's
// slots for its peers sit together (slot p of rank r at word (g*W + r)*stride_r + p*stride_p), thread p < W of rank r
// stores the epoch into rank p's slot r and polls its own slot p. G groups of W blocks run their barriers at once
// (the blocks of a W-rank kernel). nb barriers per launch; block 0 times them.
extern "C" __global__ void pb_group_barrier(unsigned* flags, int W, int stride_r, int stride_p, int nb, unsigned e0,
                                            int* err, long long* res) {
  const int g = blockIdx.x / W, r = blockIdx.x % W, p = threadIdx.x;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (p < W && p != r) {
      st_vol(flags + (size_t)(g * W + p) * stride_r + r * stride_p, e);
      while (ld_vol(flags + (size_t)(g * W + r) * stride_r + p * stride_p) < e) {
        if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
      }
    }
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = spins; }
}

// ---- pb_group_barrier with a pause of sleep_ns (__nanosleep) after every poll that does not yet see its flag: the
// poll loop's period grows by about the pause, the stores and the meeting do not.
extern "C" __global__ void pb_group_barrier_sleep(unsigned* flags, int W, int stride_r, int stride_p, int nb, unsigned e0,
                                                  unsigned sleep_ns, int* err, long long* res) {
  const int g = blockIdx.x / W, r = blockIdx.x % W, p = threadIdx.x;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (p < W && p != r) {
      st_vol(flags + (size_t)(g * W + p) * stride_r + r * stride_p, e);
      while (ld_vol(flags + (size_t)(g * W + r) * stride_r + p * stride_p) < e) {
        if (sleep_ns) __nanosleep(sleep_ns);
        if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
      }
    }
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = spins; }
}

// ---- the flag kernels' per-block barrier (flagar.py's block_barrier) among the blocks of one GPU: every thread p < W,
// its own rank's included, stores the epoch into slot r of rank p's sector and polls slot p of its own; slot p of
// rank r of group g at word (g*W + r)*stride_r + p*stride_p. mode 0: volatile store and poll (the start and end
// barriers); 1: __threadfence_system, st.release.sys, ld.acquire.sys polls (the two-shot's mid barrier, vLLM's);
// 2: st.release.sys and ld.acquire.sys without the fence; 3: __threadfence_system, volatile store and poll.
extern "C" __global__ void pb_group_barrier_mode(unsigned* flags, int W, int stride_r, int stride_p, int nb, unsigned e0,
                                                 int mode, int* err, long long* res) {
  const int g = blockIdx.x / W, r = blockIdx.x % W, p = threadIdx.x;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    __syncthreads();
    if (p < W) {
      unsigned* theirs = flags + (size_t)(g * W + p) * stride_r + r * stride_p;
      const unsigned* mine = flags + (size_t)(g * W + r) * stride_r + p * stride_p;
      if (mode == 1 || mode == 3) __threadfence_system();
      if (mode == 1 || mode == 2) {
        st_rel(theirs, e);
        while (ld_acq(mine) < e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
      } else {
        st_vol(theirs, e);
        while (ld_vol(mine) < e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
      }
    }
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = spins; }
}

// ---- W-rank barriers laid out rank-major, as vLLM's Signal and tools/capture's flag kernels keep their flags:
// rank p's array starts stride_rank words after rank p-1's, group g's sector at g * stride_g words into it, the slot
// for writer r at word r. Block (g, r) stores epoch e into slot r of group g's sector of every peer's array and
// polls the W-1 slots of its own array's sector (one thread per slot), then meets at __syncthreads.
extern "C" __global__ void pb_group_barrier_rm(unsigned* flags, int W, int stride_rank, int stride_g, int nb,
                                               unsigned e0, int* err, long long* res) {
  const int g = blockIdx.x / W, r = blockIdx.x % W, p = threadIdx.x;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (p < W && p != r) {
      st_vol(flags + (size_t)p * stride_rank + (size_t)g * stride_g + r, e);
      while (ld_vol(flags + (size_t)r * stride_rank + (size_t)g * stride_g + p) < e) {
        if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
      }
    }
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = spins; }
}

// ---- pb_group_barrier_rm with the groups in chunks: group g's slots at (g / per_chunk) * stride_chunk +
// (g % per_chunk) * stride_g words into each rank's array, so that chunks of groups sharing a line can be put next to
// each other or apart. Kept apart from pb_group_barrier_rm so that kernel's code is unchanged.
extern "C" __global__ void pb_group_barrier_rmc(unsigned* flags, int W, int stride_rank, int stride_g, int per_chunk,
                                                int stride_chunk, int nb, unsigned e0, int* err, long long* res) {
  const int g = blockIdx.x / W, r = blockIdx.x % W, p = threadIdx.x;
  const size_t go = (size_t)(g / per_chunk) * stride_chunk + (size_t)(g % per_chunk) * stride_g;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (p < W && p != r) {
      st_vol(flags + (size_t)p * stride_rank + go + r, e);
      while (ld_vol(flags + (size_t)r * stride_rank + go + p) < e) {
        if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
      }
    }
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = spins; }
}

// ---- pb_group_barrier_rmc's barrier, one group, with each rank's sector at a byte offset of its own (offs[r], in
// words), so that chosen ranks' lines collide and the others lie in pages of their own. Kept apart from
// pb_group_barrier_rmc so that kernel's code is unchanged.
extern "C" __global__ void pb_group_barrier_tab(unsigned* flags, int W, const int* offs, int nb, unsigned e0, int* err,
                                                long long* res) {
  const int r = blockIdx.x, p = threadIdx.x;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (p < W && p != r) {
      st_vol(flags + offs[p] + r, e);
      while (ld_vol(flags + offs[r] + p) < e) {
        if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
      }
    }
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = spins; }
}

// ---- NCCL LL128-style loop with NCCL's layout: a warp moves one 2-KiB chunk per iteration (16 lines of 128 B);
// thread `lane` loads the 16-B vectors u*32 + lane (u < 4) of the chunk, and the eighth vector of every 128-B line
// (lane % 8 == 7) carries the flag in its last word; the warp reloads until every flag matches (__any_sync), as
// NCCL's LL128 recv does. op bit 2: an 8-B-per-element load of the user buffer first (reduce). Then the 4 vectors are
// stored to dst (flags included).
extern "C" __global__ void __launch_bounds__(1024) pb_ll128w(const uint4* recv, const uint4* src, uint4* dst,
                                                             int iters, int op, unsigned flag, int* err, long long* res) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  long long spins = 0;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const size_t chunk = (((size_t)blockIdx.x * iters + i) * nw + warp) * 128;  // 128 vectors = 2 KiB per warp
    uint4 s[4], v[4];
    #pragma unroll
    for (int u = 0; u < 4; u++) s[u] = (op & 2) ? src[chunk + u * 32 + lane] : make_uint4(0u, 0u, 0u, 0u);
    int need;
    do {
      #pragma unroll
      for (int u = 0; u < 4; u++) v[u] = ld_vol4(recv + chunk + u * 32 + lane);
      need = ((lane & 7) == 7) && (v[3].w != flag);
    } while (__any_sync(0xffffffffu, need) && ++spins < SPIN_LIMIT);
    #pragma unroll
    for (int u = 0; u < 4; u++) {
      uint4 d = make_uint4(v[u].x + s[u].x, v[u].y + s[u].y, v[u].z + s[u].z, v[u].w + s[u].w);
      st_vol4(dst + chunk + u * 32 + lane, d);
      acc += d.x;
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (spins >= SPIN_LIMIT) atomicExch(err, 1);
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}

// ---- Simple-style copy: U independent 16-B loads per source in flight per thread, then U stores ---------------
// S sources (a; b too when S == 2), host sources read with ld.volatile (vol_a / vol_b), destination d.
// Each block copies its own range of iters * U * blockDim.x int4 (coalesced per u), starting at elements off.
// FENCE: the block's threads end with fence.sc.sys before the clock is read, so its time runs until its stores
// have landed where every thread of the system sees them, not until they were issued.
template <int U, int S, bool FENCE = false>
__device__ __forceinline__ void copy_loop(const uint4* a, const uint4* b, uint4* d, int iters, int vol_a, int vol_b,
                                          long long* res) {
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  const size_t base = (size_t)blockIdx.x * iters * U * blockDim.x;
  for (int i = 0; i < iters; i++) {
    uint4 v[U];
    const size_t k0 = base + (size_t)i * U * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int u = 0; u < U; u++) v[u] = vol_a ? ld_vol4(a + k0 + u * blockDim.x) : a[k0 + u * blockDim.x];
    if (S == 2) {
      uint4 w[U];
      #pragma unroll
      for (int u = 0; u < U; u++) w[u] = vol_b ? ld_vol4(b + k0 + u * blockDim.x) : b[k0 + u * blockDim.x];
      #pragma unroll
      for (int u = 0; u < U; u++) { v[u].x += w[u].x; v[u].y += w[u].y; v[u].z += w[u].z; v[u].w += w[u].w; }
    }
    #pragma unroll
    for (int u = 0; u < U; u++) { d[k0 + u * blockDim.x] = v[u]; acc += v[u].x; }
  }
  if (FENCE) fence_sc_sys();
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}
#define COPY_K(U, S) \
extern "C" __global__ void __launch_bounds__(1024) pb_copy_##U##_##S(const uint4* a, const uint4* b, uint4* d, \
    long long off, int iters, int vol_a, int vol_b, long long* res) { \
  copy_loop<U, S>(a + off, b + off, d + off, iters, vol_a, vol_b, res); \
}
COPY_K(1, 1) COPY_K(2, 1) COPY_K(4, 1) COPY_K(8, 1)
COPY_K(1, 2) COPY_K(2, 2) COPY_K(4, 2) COPY_K(8, 2)
// The two-source copies compiled for blocks of at most 512 threads (up to 128 registers a thread, where
// __launch_bounds__(1024) allows 64): the same loop with room to keep every load in flight.
#define COPY_K512(U, S) \
extern "C" __global__ void __launch_bounds__(512) pb_copy_lb512_##U##_##S(const uint4* a, const uint4* b, uint4* d, \
    long long off, int iters, int vol_a, int vol_b, long long* res) { \
  copy_loop<U, S>(a + off, b + off, d + off, iters, vol_a, vol_b, res); \
}
COPY_K512(4, 2) COPY_K512(8, 2)
// ---- NCCL Simple's reduceCopyPacks shape (src/device/common_kernel.h): a warp takes a hunk of U * 32 contiguous
// 16-B packs an iteration (pack u of lane l at hunk + (u * 32 + l) * 16), the warps' hunks one after another, every
// source read with ld.volatile.global (NCCL's ld_volatile_global: no memory clobber), plain stores; compiled for
// NCCL's 640-thread blocks (__launch_bounds__(640): up to 102 registers a thread). The block covers the same range as
// copy_loop, so copy_runner's offsets apply.
__device__ __forceinline__ uint4 ld_vol4_nccl(const uint4* p) {
  unsigned long long lo, hi;
  asm volatile("ld.volatile.global.v2.b64 {%0,%1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(p));
  return make_uint4((unsigned)lo, (unsigned)(lo >> 32), (unsigned)hi, (unsigned)(hi >> 32));
}
template <int U, int S, int D = 1>
__device__ __forceinline__ void nccl_copy_loop(const uint4* a, const uint4* b, uint4* d, uint4* e, int iters,
                                               long long* res) {
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  const size_t base = (size_t)blockIdx.x * iters * U * blockDim.x;
  for (int i = 0; i < iters; i++) {
    const size_t h = base + ((size_t)i * nw + warp) * U * 32 + lane;
    uint4 v[U];
    #pragma unroll
    for (int u = 0; u < U; u++) v[u] = ld_vol4_nccl(a + h + u * 32);
    if (S == 2) {
      uint4 w[U];
      #pragma unroll
      for (int u = 0; u < U; u++) w[u] = ld_vol4_nccl(b + h + u * 32);
      #pragma unroll
      for (int u = 0; u < U; u++) { v[u].x += w[u].x; v[u].y += w[u].y; v[u].z += w[u].z; v[u].w += w[u].w; }
    }
    #pragma unroll
    for (int u = 0; u < U; u++) { d[h + u * 32] = v[u]; acc += v[u].x; }
    if (D == 2) {
      #pragma unroll
      for (int u = 0; u < U; u++) e[h + u * 32] = v[u];
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}
#define NCCL_COPY_K(U, S) \
extern "C" __global__ void __launch_bounds__(640) pb_nccl_copy_##U##_##S(const uint4* a, const uint4* b, uint4* d, \
    long long off, int iters, int vol_a, int vol_b, long long* res) { \
  nccl_copy_loop<U, S>(a + off, b + off, d + off, d + off, iters, res); \
}
NCCL_COPY_K(8, 1) NCCL_COPY_K(8, 2)
// The same loop storing every element to a second destination too (NCCL's recvCopySend and recvReduceCopySend: the
// output and the next rank's FIFO), both in local memory here.
#define NCCL_COPY2_K(U, S) \
extern "C" __global__ void __launch_bounds__(640) pb_nccl_copy2_##U##_##S(const uint4* a, const uint4* b, uint4* d, \
    uint4* e, long long off, int iters, long long* res) { \
  nccl_copy_loop<U, S, 2>(a + off, b + off, d + off, e + off, iters, res); \
}
NCCL_COPY2_K(8, 1) NCCL_COPY2_K(8, 2)
// ---- NCCL's reduceCopy shape over S sources, each in its own region of one buffer (source s at a + s * sstride
// int4), the sum stored to one destination (D == 1) or to two (D == 2: the output and the next rank's FIFO, as
// recvReduceCopySend): the first source's packs are loaded, then each further source's and added, as
// reduceCopyPacks does. Compiled for NCCL's 640-thread blocks. Offsets as copy_runner's.
template <int U, int S, int D>
__device__ __forceinline__ void nccl_reduce_loop(const uint4* a, long long sstride, uint4* d, uint4* e, int iters,
                                                 long long* res) {
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  const size_t base = (size_t)blockIdx.x * iters * U * blockDim.x;
  for (int i = 0; i < iters; i++) {
    const size_t h = base + ((size_t)i * nw + warp) * U * 32 + lane;
    uint4 v[U];
    #pragma unroll
    for (int u = 0; u < U; u++) v[u] = ld_vol4_nccl(a + h + u * 32);
    #pragma unroll
    for (int s = 1; s < S; s++) {
      uint4 w[U];
      #pragma unroll
      for (int u = 0; u < U; u++) w[u] = ld_vol4_nccl(a + (size_t)s * sstride + h + u * 32);
      #pragma unroll
      for (int u = 0; u < U; u++) { v[u].x += w[u].x; v[u].y += w[u].y; v[u].z += w[u].z; v[u].w += w[u].w; }
    }
    #pragma unroll
    for (int u = 0; u < U; u++) { d[h + u * 32] = v[u]; acc += v[u].x; }
    if (D == 2) {
      #pragma unroll
      for (int u = 0; u < U; u++) e[h + u * 32] = v[u];
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}
#define NCCL_REDUCE_K(S, D) \
extern "C" __global__ void __launch_bounds__(640) pb_nccl_reduce_##S##_##D(const uint4* a, long long sstride, \
    uint4* d, uint4* e, long long off, int iters, long long* res) { \
  nccl_reduce_loop<8, S, D>(a + off, sstride, d + off, e + off, iters, res); \
}
NCCL_REDUCE_K(1, 1) NCCL_REDUCE_K(2, 1) NCCL_REDUCE_K(3, 1) NCCL_REDUCE_K(4, 1) NCCL_REDUCE_K(6, 1) NCCL_REDUCE_K(8, 1)
NCCL_REDUCE_K(5, 1)
NCCL_REDUCE_K(1, 2) NCCL_REDUCE_K(2, 2) NCCL_REDUCE_K(4, 2) NCCL_REDUCE_K(8, 2)
// The same loop with U = 1, 2, 4 packs a source in flight a thread (one destination).
#define NCCL_REDUCE_UK(U, S) \
extern "C" __global__ void __launch_bounds__(640) pb_nccl_reduce_u##U##_##S(const uint4* a, long long sstride, \
    uint4* d, uint4* e, long long off, int iters, long long* res) { \
  nccl_reduce_loop<U, S, 1>(a + off, sstride, d + off, e + off, iters, res); \
}
NCCL_REDUCE_UK(1, 1) NCCL_REDUCE_UK(1, 2) NCCL_REDUCE_UK(1, 4) NCCL_REDUCE_UK(1, 8)
NCCL_REDUCE_UK(2, 1) NCCL_REDUCE_UK(2, 2) NCCL_REDUCE_UK(2, 4) NCCL_REDUCE_UK(2, 8)
NCCL_REDUCE_UK(4, 1) NCCL_REDUCE_UK(4, 2) NCCL_REDUCE_UK(4, 4) NCCL_REDUCE_UK(4, 8)
// The same loop compiled for at most 256 threads a block (255 registers a thread) and for 1,024 (64 registers).
#define NCCL_REDUCE_LBK(B, U, S) \
extern "C" __global__ void __launch_bounds__(B) pb_nccl_reduce_lb##B##_u##U##_##S(const uint4* a, long long sstride, \
    uint4* d, uint4* e, long long off, int iters, long long* res) { \
  nccl_reduce_loop<U, S, 1>(a + off, sstride, d + off, e + off, iters, res); \
}
NCCL_REDUCE_LBK(256, 8, 2) NCCL_REDUCE_LBK(256, 4, 4) NCCL_REDUCE_LBK(256, 8, 4) NCCL_REDUCE_LBK(256, 2, 8)
NCCL_REDUCE_LBK(256, 4, 8) NCCL_REDUCE_LBK(256, 8, 8)
NCCL_REDUCE_LBK(1024, 8, 2) NCCL_REDUCE_LBK(1024, 4, 4) NCCL_REDUCE_LBK(1024, 8, 4) NCCL_REDUCE_LBK(1024, 2, 8)
NCCL_REDUCE_LBK(1024, 4, 8) NCCL_REDUCE_LBK(1024, 8, 8)
// And over 3, 5 and 6 sources (the part load_waits).
NCCL_REDUCE_UK(1, 3) NCCL_REDUCE_UK(1, 5) NCCL_REDUCE_UK(1, 6) NCCL_REDUCE_UK(2, 3) NCCL_REDUCE_UK(2, 5)
NCCL_REDUCE_UK(2, 6) NCCL_REDUCE_UK(4, 3) NCCL_REDUCE_UK(4, 5) NCCL_REDUCE_UK(4, 6)
extern "C" __global__ void __launch_bounds__(1024) pb_copy_fenced_8_1(const uint4* a, const uint4* b, uint4* d,
    long long off, int iters, int vol_a, int vol_b, long long* res) {
  copy_loop<8, 1, true>(a + off, b + off, d + off, iters, vol_a, vol_b, res);
}
extern "C" __global__ void __launch_bounds__(1024) pb_copy_fenced_1_1(const uint4* a, const uint4* b, uint4* d,
    long long off, int iters, int vol_a, int vol_b, long long* res) {
  copy_loop<1, 1, true>(a + off, b + off, d + off, iters, vol_a, vol_b, res);
}

// ---- a fence beside other blocks' streams of stores: blocks 0 .. gridDim.x-2 copy from src to bulk (8 loads of 16 B in
// flight per thread, iters_bulk iterations, each block its own range; no fence); the last block's first warp stores one
// 16-B word per thread to fdst and runs fence.sc.sys, iters times, timing itself. With gridDim.x == 1, the fence alone.
extern "C" __global__ void __launch_bounds__(1024) pb_fence_beside(const uint4* src, uint4* bulk, uint4* fdst,
                                                                   int iters_bulk, int iters, long long* res) {
  const int last = gridDim.x - 1;
  if ((int)blockIdx.x < last) {
    unsigned acc = 0;
    const size_t base = (size_t)blockIdx.x * iters_bulk * 8 * blockDim.x;
    long long c0 = clock64();
    for (int i = 0; i < iters_bulk; i++) {
      uint4 v[8];
      const size_t k0 = base + (size_t)i * 8 * blockDim.x + threadIdx.x;
      #pragma unroll
      for (int u = 0; u < 8; u++) v[u] = src[k0 + u * blockDim.x];
      #pragma unroll
      for (int u = 0; u < 8; u++) { bulk[k0 + u * blockDim.x] = v[u]; acc += v[u].x; }
    }
    long long c1 = clock64();
    if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
    return;
  }
  if (threadIdx.x >= 32) return;
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    st_vol4(fdst + threadIdx.x, make_uint4(i, 0u, threadIdx.x, 1u));
    fence_sc_sys();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}

// ---- reading back pinned host memory: each thread of one block reads its iters 16-B words of buf with volatile loads,
// each load's address depending on the one before (one in flight), timed. write_first: the block first stores those
// words with volatile stores and runs fence.sc.sys (the GPU wrote the lines just before); else the host filled them.
// Are lines the GPU itself wrote served from its L2?
extern "C" __global__ void pb_host_readback(uint4* buf, int iters, int write_first, long long* res) {
  const int t = threadIdx.x;
  if (write_first) {
    for (int i = 0; i < iters; i++) st_vol4(buf + (size_t)i * blockDim.x + t, make_uint4((unsigned)i, 1u, 2u, 3u));
    fence_sc_sys();
  }
  __syncthreads();
  unsigned acc = 0;
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const uint4 v = ld_vol4(buf + (size_t)i * blockDim.x + t + (acc >> 31));
    acc += v.x + v.y;
  }
  __syncthreads();
  long long c1 = clock64();
  if (t == 0) { res[0] = c1 - c0; res[1] = acc; }
}

// ---- a fence beside polling blocks: the last block's warp stores a 16-B word per thread to fdst and runs
// fence.sc.sys, iters times (timed), then raises done; every other block's thread 0 polls a word of its own (polls +
// b * stride words: a chain of volatile loads, one in flight) until done. Does a system fence wait for other blocks'
// loads still on their way?
extern "C" __global__ void pb_fence_polls(unsigned* polls, int stride, uint4* fdst, int iters, unsigned* done,
                                          unsigned stop, int* err, long long* res) {
  const int last = gridDim.x - 1;
  if ((int)blockIdx.x < last) {
    if (threadIdx.x != 0) return;
    const unsigned* w = polls + (size_t)blockIdx.x * stride;
    unsigned acc = 0;
    long long spins = 0, c0 = clock64();
    for (unsigned k = 1; ; k++) {
      acc += ld_vol(w + (acc & 1u));
      if ((k & 7) == 7 && ld_vol(done) == stop) break;
      if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
    res[2 * blockIdx.x] = clock64() - c0; res[2 * blockIdx.x + 1] = acc;
    return;
  }
  if (threadIdx.x >= 32) return;
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    st_vol4(fdst + threadIdx.x, make_uint4(i, 0u, threadIdx.x, 1u));
    fence_sc_sys();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; __threadfence(); st_vol(done, stop); }
}

// ---- pb_fence_polls with fence.acq_rel.sys (what a st.release.sys store's release orders) in place of fence.sc.sys:
// whether the weaker fence waits for the other blocks' loads of host memory as the SC one does. Kept apart from
// pb_fence_polls so that kernel's code is unchanged.
extern "C" __global__ void pb_fence_polls_ar(unsigned* polls, int stride, uint4* fdst, int iters, unsigned* done,
                                             unsigned stop, int* err, long long* res) {
  const int last = gridDim.x - 1;
  if ((int)blockIdx.x < last) {
    if (threadIdx.x != 0) return;
    const unsigned* w = polls + (size_t)blockIdx.x * stride;
    unsigned acc = 0;
    long long spins = 0, c0 = clock64();
    for (unsigned k = 1; ; k++) {
      acc += ld_vol(w + (acc & 1u));
      if ((k & 7) == 7 && ld_vol(done) == stop) break;
      if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
    res[2 * blockIdx.x] = clock64() - c0; res[2 * blockIdx.x + 1] = acc;
    return;
  }
  if (threadIdx.x >= 32) return;
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    st_vol4(fdst + threadIdx.x, make_uint4(i, 0u, threadIdx.x, 1u));
    fence_acq_rel_sys();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; __threadfence(); st_vol(done, stop); }
}

// ---- pb_fence_polls with every thread of the first pt threads of each poller block polling a word of its own, each
// in a 32-B sector of its own (thread t at word 8 t of its block's range, stride words after the previous block's):
// whether a system fence waits for each load in flight or for each polling block. Kept apart from pb_fence_polls so
// that kernel's code is unchanged.
extern "C" __global__ void pb_fence_polls_t(unsigned* polls, int stride, int pt, uint4* fdst, int iters,
                                            unsigned* done, unsigned stop, int* err, long long* res) {
  const int last = gridDim.x - 1;
  if ((int)blockIdx.x < last) {
    if ((int)threadIdx.x >= pt) return;
    const unsigned* w = polls + (size_t)blockIdx.x * stride + 8 * threadIdx.x;
    unsigned acc = 0;
    long long spins = 0, c0 = clock64();
    for (unsigned k = 1; ; k++) {
      acc += ld_vol(w + (acc & 1u));
      if ((k & 7) == 7 && ld_vol(done) == stop) break;
      if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
    if (threadIdx.x == 0) { res[2 * blockIdx.x] = clock64() - c0; res[2 * blockIdx.x + 1] = acc; }
    return;
  }
  if (threadIdx.x >= 32) return;
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    st_vol4(fdst + threadIdx.x, make_uint4(i, 0u, threadIdx.x, 1u));
    fence_sc_sys();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; __threadfence(); st_vol(done, stop); }
}

// ---- pb_fence_polls_t with the pollers spaced and counted: every block but the last has pt threads polling a word of
// their own, spacing words apart (8: a 32-B sector each, 32: a 128-B line each), blocks stride words apart; thread 0
// of each polling block writes its time and its polls (its own loop count) to res. The last block as pb_fence_polls_t.
extern "C" __global__ void pb_fence_polls_q(unsigned* polls, int stride, int pt, int spacing, uint4* fdst, int iters,
                                            unsigned* done, unsigned stop, int* err, long long* res) {
  const int last = gridDim.x - 1;
  if ((int)blockIdx.x < last) {
    if ((int)threadIdx.x >= pt) return;
    const unsigned* w = polls + (size_t)blockIdx.x * stride + (size_t)spacing * threadIdx.x;
    unsigned acc = 0;
    long long spins = 0, c0 = clock64();
    unsigned k = 1;
    for (; ; k++) {
      acc += ld_vol(w + (acc & 1u));
      if ((k & 7) == 7 && ld_vol(done) == stop) break;
      if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
    if (threadIdx.x == 0) { res[2 * blockIdx.x] = clock64() - c0; res[2 * blockIdx.x + 1] = (long long)k + (acc & 1u); }
    return;
  }
  if (threadIdx.x >= 32) return;
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    st_vol4(fdst + threadIdx.x, make_uint4(i, 0u, threadIdx.x, 1u));
    fence_sc_sys();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; __threadfence(); st_vol(done, stop); }
}

// ---- a fence beside blocks pulling pinned host memory: every block but the last loads 16-B words of src (a ring of
// mask + 1 words, each block from its own place in it) with L plain loads a thread in flight, summed, until done; the
// last block waits until every other block has started (started), then its warp stores a 16-B word per thread to
// fdst and runs fence.sc.sys, iters times (timed), and raises done. The pullers' thread 0 writes its time and its
// loop count. Does a system fence wait for other blocks' data loads of host memory as for their polls, and counted
// by what: blocks, or loads in flight?
// the fencing warp of pb_fence_pulls_L, pb_fence_copies_L and pb_fence_stream_L: wait until need puller blocks have
// started (a spin that gives up sets *err to 1 where err is given), then store a 16-B word per thread to fdst and run
// fence.sc.sys iters times, timed into the block's res slots
__device__ __forceinline__ void fences_once_started(uint4* fdst, int iters, unsigned* started, int need, int* err,
                                                    long long* res) {
  long long spins = 0;
  while (ld_vol(started) < (unsigned)need) { if (++spins > SPIN_LIMIT) { if (err) atomicExch(err, 1); break; } }
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    st_vol4(fdst + threadIdx.x, make_uint4(i, 0u, threadIdx.x, 1u));
    fence_sc_sys();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}
template <int L, bool COPY>
__device__ __forceinline__ void fence_pulls_body(const uint4* src, long long mask, uint4* fdst, int iters,
                                                 unsigned* done, unsigned stop, unsigned* started, int* err, long long* res,
                                                 uint4* bulk) {
  const int last = gridDim.x - 1;
  if ((int)blockIdx.x < last) {
    const long long T = blockDim.x;
    long long idx = (long long)blockIdx.x * 65536;
    unsigned acc = 0;
    long long spins = 0, loops = 0;
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(started, 1u);
    long long c0 = clock64();
    for (;;) {
      uint4 v[L];
      #pragma unroll
      for (int u = 0; u < L; u++) v[u] = src[(idx + u * T + threadIdx.x) & mask];
      if (COPY) {  // as fence_reads' neighbours: each loaded word stored to the block's own 1 MiB of local memory
        #pragma unroll
        for (int u = 0; u < L; u++) bulk[(size_t)blockIdx.x * 65536 + ((loops * L + u) * T + threadIdx.x) % 65536] = v[u];
      }
      #pragma unroll
      for (int u = 0; u < L; u++) acc += v[u].x ^ v[u].w;
      idx += L * T;
      loops++;
      if (ld_vol(done) == stop) break;
      if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
    long long c1 = clock64();
    if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = loops; }
    if (acc == 0x9e3779b9u) atomicExch(err, 2);  // keeps the loads; the ring holds no such sum
    return;
  }
  if (threadIdx.x >= 32) return;
  fences_once_started(fdst, iters, started, last, err, res);
  if (threadIdx.x == 0) { __threadfence(); st_vol(done, stop); }
}
#define FENCE_PULLS_K(L) \
extern "C" __global__ void __launch_bounds__(1024) pb_fence_pulls_##L(const uint4* src, long long mask, uint4* fdst, \
    int iters, unsigned* done, unsigned stop, unsigned* started, int* err, long long* res) { \
  fence_pulls_body<L, false>(src, mask, fdst, iters, done, stop, started, err, res, nullptr); \
} \
extern "C" __global__ void __launch_bounds__(1024) pb_fence_copies_##L(const uint4* src, long long mask, uint4* fdst, \
    int iters, unsigned* done, unsigned stop, unsigned* started, int* err, long long* res, uint4* bulk) { \
  fence_pulls_body<L, true>(src, mask, fdst, iters, done, stop, started, err, res, bulk); \
}
FENCE_PULLS_K(1) FENCE_PULLS_K(8)

// ---- pb_fence_pulls without the pullers' poll: every block but the last loads its own stretch of src (L plain 16-B
// loads a thread in flight, summed) a fixed nb_iters times, polling nothing; the last block's warp waits until every
// puller has started (started), then stores a 16-B word per thread to fdst and runs fence.sc.sys iters times,
// timed. Against pb_fence_pulls: is it the pullers' per-iteration poll of a word of GPU memory that makes a fence
// wait for every load they queued (fence_pulls_2.jsonl, fence_beside_2.jsonl)?
template <int L>
__device__ __forceinline__ void fence_stream_body(const uint4* src, long long mask, uint4* fdst, int iters, int nb_iters,
                                                  unsigned* started, long long* res, long long bstride, int wait) {
  const int last = gridDim.x - 1;
  if ((int)blockIdx.x < last) {
    const long long T = blockDim.x;
    long long idx = (long long)blockIdx.x * bstride;
    unsigned acc = 0;
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(started, 1u);
    long long c0 = clock64();
    for (int i = 0; i < nb_iters; i++) {
      uint4 v[L];
      #pragma unroll
      for (int u = 0; u < L; u++) v[u] = src[(idx + u * T + threadIdx.x) & mask];
      #pragma unroll
      for (int u = 0; u < L; u++) acc += v[u].x ^ v[u].w;
      idx += L * T;
    }
    long long c1 = clock64();
    if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = nb_iters; }
    if (acc == 0x9e3779b9u) res[2 * blockIdx.x + 1] = -1;  // keeps the loads; the ring holds no such sum
    return;
  }
  if (threadIdx.x >= 32) return;
  fences_once_started(fdst, iters, started, wait ? last : 0, nullptr, res);
}
// bstride: 16-B words from one puller's first load to the next's (65,536: 1 MiB, the ring's stretches overlapping
// after 16 iterations; 1,048,576: 16 MiB apart, fence_reads' layout); wait 0: the fence starts at once, without
// waiting for the pullers (as fence_reads' kernel)
#define FENCE_STREAM_K(L) \
extern "C" __global__ void __launch_bounds__(1024) pb_fence_stream_##L(const uint4* src, long long mask, uint4* fdst, \
    int iters, int nb_iters, unsigned* started, long long* res, long long bstride, int wait) { \
  fence_stream_body<L>(src, mask, fdst, iters, nb_iters, started, res, bstride, wait); \
}
FENCE_STREAM_K(1) FENCE_STREAM_K(8)

// ---- a fence after the block's even share of a pull of pinned host memory, as a host-staged allreduce's blocks fence
// before their flags while the other blocks finish their shares: every block loads its own stretch of src (nb_iters
// iterations of L plain 16-B loads a thread in flight, summed, fence_stream's loop), meets (its loads are back), then
// its first warp stores a 16-B word a thread to its own place of fdst and, with fence != 0, runs fence.sc.sys; thread
// 0 writes the globaltimer at the meeting, the clock64 cycles of the store and fence, and the globaltimer after them
// (res[3b], res[3b + 1], res[3b + 2]). Does a block's fence wait for
// the other blocks' loads still on their way, and how many of them are, when all blocks end their shares together?
template <int L>
__device__ __forceinline__ void fence_after_pull_body(const uint4* src, long long mask, uint4* fdst, int nb_iters,
                                                      int fence, long long* res, unsigned* sink) {
  const long long T = blockDim.x;
  long long idx = (long long)blockIdx.x * 65536;
  unsigned acc = 0;
  __syncthreads();
  for (int i = 0; i < nb_iters; i++) {
    uint4 v[L];
    #pragma unroll
    for (int u = 0; u < L; u++) v[u] = src[(idx + u * T + threadIdx.x) & mask];
    #pragma unroll
    for (int u = 0; u < L; u++) acc += v[u].x ^ v[u].w;
    idx += L * T;
  }
  if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;  // keeps the loads; the ring holds no such sum
  __syncthreads();
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  long long c0 = clock64();
  if (threadIdx.x < 32) {
    st_vol4(fdst + (size_t)blockIdx.x * 32 + threadIdx.x, make_uint4(acc, 0u, threadIdx.x, 1u));
    if (fence) fence_sc_sys();
  }
  long long c1 = clock64();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  if (threadIdx.x == 0) {
    res[3 * blockIdx.x] = (long long)t0; res[3 * blockIdx.x + 1] = c1 - c0; res[3 * blockIdx.x + 2] = (long long)t1;
  }
}
#define FENCE_AFTER_PULL_K(L) \
extern "C" __global__ void __launch_bounds__(1024) pb_fence_after_pull_##L(const uint4* src, long long mask, \
    uint4* fdst, int nb_iters, int fence, long long* res, unsigned* sink) { \
  fence_after_pull_body<L>(src, mask, fdst, nb_iters, fence, res, sink); \
}
FENCE_AFTER_PULL_K(1) FENCE_AFTER_PULL_K(8)

// ---- a fence after the block's own burst of stores: each thread of the block stores k 16-B words (plain stores) into
// its own place of dst, the block meets (__syncthreads), the first nf threads run fence.sc.sys (none with nf = 0), the
// block meets again; iters times, timed by thread 0. The difference between nf > 0 and nf = 0 is what a fence costs
// after a block-wide burst of k x threads x 16 B, as a two-shot's mid barrier fences after its stage-1 stores.
extern "C" __global__ void __launch_bounds__(1024) pb_fence_burst(uint4* dst, int k, int nf, int iters, long long* res) {
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    for (int j = 0; j < k; j++) dst[(size_t)j * blockDim.x + threadIdx.x] = make_uint4(i, j, threadIdx.x, 1u);
    __syncthreads();
    if ((int)threadIdx.x < nf) fence_sc_sys();
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[0] = c1 - c0; res[1] = 0; }
}

// ---- a fence after the block's own loads: each thread loads k 16-B words of src (plain loads, or ld.global.cg
// that skips the L1 with cg = 1; a new 16 KiB-a-thread stretch each of 64 iterations, then again), sums them into
// one 16-B store to dst, the block meets, its first nf threads run fence.sc.sys (none with nf = 0), it meets again;
// iters times, timed by thread 0. Against pb_fence_burst (stores only): does a fence cost more after the block's
// loads, as the two-shot's first mid-barrier fence does on one GPU (flag_mid.jsonl)?
extern "C" __global__ void __launch_bounds__(1024) pb_fence_loads(const uint4* src, uint4* dst, int k, int cg, int nf,
                                                                  int iters, long long* res) {
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    const uint4* p = src + (size_t)(i & 63) * k * blockDim.x;
    for (int j = 0; j < k; j++) {
      const uint4 v = cg ? __ldcg(p + (size_t)j * blockDim.x + threadIdx.x) : p[(size_t)j * blockDim.x + threadIdx.x];
      acc += v.x ^ v.z;
    }
    dst[threadIdx.x] = make_uint4(acc, (unsigned)i, threadIdx.x, 1u);
    __syncthreads();
    if ((int)threadIdx.x < nf) fence_sc_sys();
    __syncthreads();
  }
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[0] = c1 - c0; res[1] = acc; }
}

// ---- fences from many blocks at once: each block's threads store nst 16-B words into the block's own range
// (stride16 int4 past the previous block's) and fence (1 acq_rel, 2 sc), iters times.
extern "C" __global__ void __launch_bounds__(1024) pb_fence_blocks(uint4* dst, int nst, int fence, int iters,
                                                                   long long stride16, long long* res) {
  uint4* base = dst + (size_t)blockIdx.x * stride16;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    for (int k = 0; k < nst; k++) st_vol4(base + (size_t)k * blockDim.x + threadIdx.x, make_uint4(i, k, threadIdx.x, 1u));
    if (fence == 1) fence_acq_rel_sys(); else if (fence == 2) fence_sc_sys();
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}

// ---- Simple's per-slice bookkeeping: thread 0 waits on a counter (already satisfied), block barrier, the block
// copies slice16 int4 from src to dst, block barrier, thread 0 fences (0 none, 1 fence.acq_rel.sys, 2 fence.sc.sys)
// and stores the step into flag (same memory as dst). One slice per step, `steps` steps. The slice's copy:
// - plain (pb_simple_step): unroll 8, coalesced, element c + u * blockDim.x + t, every thread running the unrolled
//   body (predicated where it has no data);
// - NCCL Simple's shape (pb_simple_step_hunks; src/device/common_kernel.h, reduceCopy): a pass of reduceCopyPacks
//   over whole warp hunks of 8 x 32 packs, pack u of lane l at hunk + u * 32 + l, then one over the packs left in
//   hunks of 32, the warps taking hunks in turn; sources read with ld.volatile.global.
__device__ __forceinline__ void step_copy_plain(const uint4* a, uint4* d, int slice16, unsigned& acc) {
  for (int c = 0; c < slice16; c += 8 * blockDim.x) {
    uint4 v[8];
    #pragma unroll
    for (int u = 0; u < 8; u++) {
      const int j = c + u * blockDim.x + threadIdx.x;
      v[u] = j < slice16 ? a[j] : make_uint4(0u, 0u, 0u, 0u);
    }
    #pragma unroll
    for (int u = 0; u < 8; u++) {
      const int j = c + u * blockDim.x + threadIdx.x;
      if (j < slice16) { d[j] = v[u]; acc += v[u].x; }
    }
  }
}
// ROT: before the pass over the packs left after the whole hunks, warp w takes place (w - whole) mod nw, so the warps
// that took fewest whole hunks take the first left-over hunks (NCCL's reduceCopyPacks: "Rotate warps so the warp
// which got the least work here will be warp 0").
template <bool ROT = false>
__device__ __forceinline__ void step_copy_hunks(const uint4* a, uint4* d, int slice16, unsigned& acc) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  const int whole = slice16 / 256;
  for (int h = warp; h < whole; h += nw) {
    const int at = h * 256 + lane;
    uint4 v[8];
    #pragma unroll
    for (int u = 0; u < 8; u++) v[u] = ld_vol4_nccl(a + at + u * 32);
    #pragma unroll
    for (int u = 0; u < 8; u++) { d[at + u * 32] = v[u]; acc += v[u].x; }
  }
  const int place = ROT ? ((warp - whole) % nw + nw) % nw : warp;
  for (int j = whole * 256 + place * 32 + lane; j < slice16; j += nw * 32) {
    const uint4 v = ld_vol4_nccl(a + j);
    d[j] = v;
    acc += v.x;
  }
}
template <bool HUNKS, bool PER_BLOCK = false, bool ROT = false>
__device__ __forceinline__ void simple_step_loop(const unsigned* ctr, const uint4* src, uint4* dst, unsigned* flag,
                                                 int steps, int slice16, int fence, int* err, long long* res) {
  if (PER_BLOCK) {
    // each block its own destination region and flag line (a channel of its own); the source slice of step s is
    // shared (it stays in the L2)
    dst += (size_t)blockIdx.x * steps * slice16;
    flag += blockIdx.x * 32;
  }
  unsigned acc = 0;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int s = 0; s < steps; s++) {
    if (threadIdx.x == 0) {
      while (ld_vol(ctr) < (unsigned)s) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
    }
    __syncthreads();
    const size_t base = (size_t)s * slice16;
    if (HUNKS) step_copy_hunks<ROT>(src + base, dst + base, slice16, acc); else step_copy_plain(src + base, dst + base, slice16, acc);
    __syncthreads();
    if (threadIdx.x == 0) {
      if (fence == 1) fence_acq_rel_sys(); else if (fence == 2) fence_sc_sys();
      st_vol(flag, (unsigned)s + 1u);
    }
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}
extern "C" __global__ void __launch_bounds__(1024) pb_simple_step(const unsigned* ctr, const uint4* src, uint4* dst,
    unsigned* flag, int steps, int slice16, int fence, int* err, long long* res) {
  simple_step_loop<false>(ctr, src, dst, flag, steps, slice16, fence, err, res);
}
extern "C" __global__ void __launch_bounds__(1024) pb_simple_step_hunks(const unsigned* ctr, const uint4* src,
    uint4* dst, unsigned* flag, int steps, int slice16, int fence, int* err, long long* res) {
  simple_step_loop<true>(ctr, src, dst, flag, steps, slice16, fence, err, res);
}
// pb_simple_step_hunks with NCCL's rotation of the warps before the left-over packs (step_copy_hunks<true>).
extern "C" __global__ void __launch_bounds__(1024) pb_simple_step_rot(const unsigned* ctr, const uint4* src,
    uint4* dst, unsigned* flag, int steps, int slice16, int fence, int* err, long long* res) {
  simple_step_loop<true, false, true>(ctr, src, dst, flag, steps, slice16, fence, err, res);
}
// pb_simple_step_hunks with blocks > 1, each block a channel: its own destination region and flag line, all storing
// at once (to host memory: over the GPU's one link).
extern "C" __global__ void __launch_bounds__(1024) pb_simple_step_blocks(const unsigned* ctr, const uint4* src,
    uint4* dst, unsigned* flag, int steps, int slice16, int fence, int* err, long long* res) {
  simple_step_loop<true, true>(ctr, src, dst, flag, steps, slice16, fence, err, res);
}

// ---- fences after stores: thread t stores nst 16-B vectors to dst (coalesced), then fence (1 acq_rel.sys,
// 2 sc.sys, 0 none), iters times. Timed per block.
extern "C" __global__ void __launch_bounds__(1024) pb_fence(uint4* dst, int nst, int fence, int iters, long long* res) {
  __syncthreads();
  long long c0 = clock64();
  for (int i = 0; i < iters; i++) {
    for (int k = 0; k < nst; k++) st_vol4(dst + (size_t)k * blockDim.x + threadIdx.x, make_uint4(i, k, threadIdx.x, 1u));
    if (fence == 1) fence_acq_rel_sys(); else if (fence == 2) fence_sc_sys();
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}

// ---- pull-and-reduce over ranks, as a one-shot kernel's loop: ptrs[r] for r < world (rank 0 local HBM, the others
// pinned host memory read with ld.volatile). runtime: for (r < world) acc += load(ptrs[r][i]) with world known only
// at run time (arsim's flag kernels); unrolled: all loads issued before the adds (vLLM's packed_reduce<ngpus>).
__device__ __forceinline__ uint4 ldr(const uint4* p, int vol) { return vol ? ld_vol4(p) : *p; }
__device__ __forceinline__ void add4(uint4& a, uint4 b) { a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w; }
extern "C" __global__ void __launch_bounds__(1024) pb_pull_runtime(const uint4* p0, const uint4* p1, const uint4* p2,
    const uint4* p3, int world, uint4* out, int iters, long long* res) {
  const uint4* ptrs[4] = {p0, p1, p2, p3};
  __syncthreads();
  long long c0 = clock64();
  const size_t base = (size_t)blockIdx.x * iters * blockDim.x;
  for (int i = 0; i < iters; i++) {
    const size_t k = base + (size_t)i * blockDim.x + threadIdx.x;
    uint4 acc = make_uint4(0u, 0u, 0u, 0u);
    for (int r = 0; r < world; r++) add4(acc, ldr(ptrs[r] + k, r > 0));
    out[k] = acc;
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}
template <int W>
__device__ __forceinline__ void pull_unrolled(const uint4* const* ptrs, uint4* out, int iters, long long* res) {
  __syncthreads();
  long long c0 = clock64();
  const size_t base = (size_t)blockIdx.x * iters * blockDim.x;
  for (int i = 0; i < iters; i++) {
    const size_t k = base + (size_t)i * blockDim.x + threadIdx.x;
    uint4 v[W];
    #pragma unroll
    for (int r = 0; r < W; r++) v[r] = ldr(ptrs[r] + k, r > 0);
    uint4 acc = v[0];
    #pragma unroll
    for (int r = 1; r < W; r++) add4(acc, v[r]);
    out[k] = acc;
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}
extern "C" __global__ void __launch_bounds__(1024) pb_pull_unrolled2(const uint4* p0, const uint4* p1, const uint4* p2,
    const uint4* p3, int world, uint4* out, int iters, long long* res) {
  const uint4* ptrs[4] = {p0, p1, p2, p3}; pull_unrolled<2>(ptrs, out, iters, res);
}
extern "C" __global__ void __launch_bounds__(1024) pb_pull_unrolled4(const uint4* p0, const uint4* p1, const uint4* p2,
    const uint4* p3, int world, uint4* out, int iters, long long* res) {
  const uint4* ptrs[4] = {p0, p1, p2, p3}; pull_unrolled<4>(ptrs, out, iters, res);
}
// A one-shot's push: each thread loads its 16-B element from local memory and stores it to D destination buffers
// (the peers' scratch), iters times; fence 1 ends with fence.sc.sys (a one-shot fences before raising its flags).
template <int D>
__device__ __forceinline__ void push_loop(const uint4* a, uint4* const* d, int iters, int fence, long long* res) {
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  const size_t base = (size_t)blockIdx.x * iters * blockDim.x;
  for (int i = 0; i < iters; i++) {
    const size_t k = base + (size_t)i * blockDim.x + threadIdx.x;
    const uint4 v = a[k];
    #pragma unroll
    for (int r = 0; r < D; r++) d[r][k] = v;
    acc += v.x;
  }
  if (fence) fence_sc_sys();
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = acc; }
}
#define PUSH_K(D) \
extern "C" __global__ void __launch_bounds__(1024) pb_push_##D(const uint4* a, uint4* d0, uint4* d1, uint4* d2, \
    uint4* d3, uint4* d4, uint4* d5, uint4* d6, int iters, int fence, long long* res) { \
  uint4* const d[7] = {d0, d1, d2, d3, d4, d5, d6}; push_loop<D>(a, d, iters, fence, res); \
}
PUSH_K(1) PUSH_K(3) PUSH_K(7)
// A one-shot's reduction over 8 ranks: the rank's own buffer and seven others, every load in flight.
extern "C" __global__ void __launch_bounds__(1024) pb_pull_unrolled8(const uint4* p0, const uint4* p1, const uint4* p2,
    const uint4* p3, const uint4* p4, const uint4* p5, const uint4* p6, const uint4* p7, uint4* out, int iters,
    long long* res) {
  const uint4* ptrs[8] = {p0, p1, p2, p3, p4, p5, p6, p7}; pull_unrolled<8>(ptrs, out, iters, res);
}
// A one-shot's reduction in vLLM's cross_device_reduce_1stage shape (facts: the pack loaded from every rank's buffer
// in rank order, the loop over ranks compiled for W, bf16 upcast to fp32, summed, stored once as bf16), compiled as
// vLLM compiles it for 512 threads a block (__launch_bounds__(512, 1): up to 128 registers a thread); ptrs[0] local,
// the others pinned host memory (standing in for the peers over PCIe) read with ld.volatile as pull_unrolled's, so
// that no launch finds them in the L2. Whether all W loads are in flight at once is the compiler's (capture.py sass).
__device__ __forceinline__ float bf_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ unsigned bf_pack(float lo, float hi) {
  return (__float_as_uint(lo) >> 16) | (__float_as_uint(hi) & 0xffff0000u);
}
template <int W>
__device__ __forceinline__ void pull_bf16(const uint4* const* ptrs, uint4* out, int iters, long long* res) {
  __syncthreads();
  long long c0 = clock64();
  const size_t base = (size_t)blockIdx.x * iters * blockDim.x;
  for (int i = 0; i < iters; i++) {
    const size_t k = base + (size_t)i * blockDim.x + threadIdx.x;
    float acc[8];
    #pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = 0.f;
    #pragma unroll
    for (int r = 0; r < W; r++) {
      const uint4 v = ldr(ptrs[r] + k, r > 0);
      acc[0] += bf_lo(v.x); acc[1] += bf_hi(v.x); acc[2] += bf_lo(v.y); acc[3] += bf_hi(v.y);
      acc[4] += bf_lo(v.z); acc[5] += bf_hi(v.z); acc[6] += bf_lo(v.w); acc[7] += bf_hi(v.w);
    }
    out[k] = make_uint4(bf_pack(acc[0], acc[1]), bf_pack(acc[2], acc[3]), bf_pack(acc[4], acc[5]), bf_pack(acc[6], acc[7]));
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}
#define PULL_BF16_K(W) \
extern "C" __global__ void __launch_bounds__(512, 1) pb_pull_bf16_##W(const uint4* p0, const uint4* p1, \
    const uint4* p2, const uint4* p3, const uint4* p4, const uint4* p5, const uint4* p6, const uint4* p7, uint4* out, \
    int iters, long long* res) { \
  const uint4* ptrs[8] = {p0, p1, p2, p3, p4, p5, p6, p7}; pull_bf16<W>(ptrs, out, iters, res); \
}
PULL_BF16_K(2) PULL_BF16_K(4) PULL_BF16_K(8)
PULL_BF16_K(3) PULL_BF16_K(5) PULL_BF16_K(6)
// ---- the same pull summing fp32 elements (four adds a buffer, no upcast), built alike: the loads and the buffers of
// pb_pull_bf16_W with fewer instructions after them.
template <int W>
__device__ __forceinline__ void pull_f32(const uint4* const* ptrs, uint4* out, int iters, long long* res) {
  __syncthreads();
  long long c0 = clock64();
  const size_t base = (size_t)blockIdx.x * iters * blockDim.x;
  for (int i = 0; i < iters; i++) {
    const size_t k = base + (size_t)i * blockDim.x + threadIdx.x;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    #pragma unroll
    for (int r = 0; r < W; r++) {
      const uint4 v = ldr(ptrs[r] + k, r > 0);
      a0 += __uint_as_float(v.x); a1 += __uint_as_float(v.y); a2 += __uint_as_float(v.z); a3 += __uint_as_float(v.w);
    }
    out[k] = make_uint4(__float_as_uint(a0), __float_as_uint(a1), __float_as_uint(a2), __float_as_uint(a3));
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = 0; }
}
#define PULL_F32_K(W) \
extern "C" __global__ void __launch_bounds__(512, 1) pb_pull_f32_##W(const uint4* p0, const uint4* p1, \
    const uint4* p2, const uint4* p3, const uint4* p4, const uint4* p5, const uint4* p6, const uint4* p7, uint4* out, \
    int iters, long long* res) { \
  const uint4* ptrs[8] = {p0, p1, p2, p3, p4, p5, p6, p7}; pull_f32<W>(ptrs, out, iters, res); \
}
PULL_F32_K(2) PULL_F32_K(4) PULL_F32_K(8)
// ---- a two-rank one-shot through pinned host memory (FLAG_SRC's one_shot_host at world 2) with both ranks on this
// GPU: blocks [0, B) are rank 0, [B, 2B) rank 1, each rank's block b meeting the other's block b. Per iteration, by
// the bits of `phases`: 1 stage my input in my host staging copy (16-B volatile stores), then __threadfence_system;
// 2 the start barrier (FLAG_SRC's block_barrier, mode 0: vLLM's layout, slot sig[rank] + off + b * 8 + writer, the
// ranks' arrays hs_sig_words apart, volatile stores and polls, every rank storing and polling its own slot too);
// 4 pull: for r < world (a run-time bound, as FLAG_SRC), add my input or the peer's host copy (16-B volatile loads),
// bf16 in fp32, store to my output; 2 the end barrier (its slots 16 KiB after the start barrier's).
#define HS_SIG_WORDS (3 * 512 * 8)
__device__ __forceinline__ void hs_barrier(unsigned* sig, int off, int rank, int world, int b, unsigned e,
                                           long long& spins, int* err) {
  __syncthreads();
  int t = threadIdx.x;
  if (t < world) {
    unsigned* peer_slot = sig + (size_t)t * HS_SIG_WORDS + off + b * 8 + rank;
    const unsigned* my_slot = sig + (size_t)rank * HS_SIG_WORDS + off + b * 8 + t;
    st_vol(peer_slot, e);
    while (ld_vol(my_slot) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; } }
  }
  __syncthreads();
}
__device__ __forceinline__ float hs_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hs_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ unsigned hs_f2bf(float f) {
  unsigned u = __float_as_uint(f); u += 0x7fffu + ((u >> 16) & 1u); return u >> 16;
}
// APART (pb_host_shot_apart): the pull reads the peer's copy from a second region, stage + (world + r) * npacks,
// which nothing stages to, so the pull's loads never meet lines the staging is writing; the traffic is the same.
template <bool APART>
__device__ __forceinline__ void host_shot_body(const uint4* in, uint4* out, uint4* stage, unsigned* sig, int B,
                                               int world, long long npacks, int phases, int nb, unsigned e0, int* err,
                                               long long* res) {
  const int rank = blockIdx.x / B, b = blockIdx.x % B;
  const uint4* my_in = in + (size_t)rank * npacks;
  uint4* my_out = out + (size_t)rank * npacks;
  const long long tid = (long long)b * blockDim.x + threadIdx.x, stride = (long long)B * blockDim.x;
  long long spins = 0;
  __syncthreads();
  long long c0 = clock64();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    if (phases & 1) {
      for (long long k = tid; k < npacks; k += stride) st_vol4(stage + (size_t)rank * npacks + k, my_in[k]);
      __threadfence_system();
    }
    if (phases & 2) hs_barrier(sig, 0, rank, world, b, e, spins, err);
    if (phases & 4) {
      for (long long k = tid; k < npacks; k += stride) {
        float acc[8];
        #pragma unroll
        for (int j = 0; j < 8; j++) acc[j] = 0.f;
        for (int r = 0; r < world; r++) {
          uint4 v = r == rank ? my_in[k] : ld_vol4(stage + (size_t)(APART ? world + r : r) * npacks + k);
          unsigned w[4] = {v.x, v.y, v.z, v.w};
          #pragma unroll
          for (int j = 0; j < 4; j++) { acc[2 * j] += hs_lo(w[j]); acc[2 * j + 1] += hs_hi(w[j]); }
        }
        unsigned o[4];
        #pragma unroll
        for (int j = 0; j < 4; j++) o[j] = hs_f2bf(acc[2 * j]) | (hs_f2bf(acc[2 * j + 1]) << 16);
        my_out[k] = make_uint4(o[0], o[1], o[2], o[3]);
      }
    }
    if (phases & 2) hs_barrier(sig, 512 * 8, rank, world, b, e, spins, err);
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) { res[2 * blockIdx.x] = c1 - c0; res[2 * blockIdx.x + 1] = spins; }
}
#define HOST_SHOT_K(NAME, APART) \
extern "C" __global__ void __launch_bounds__(1024) NAME(const uint4* in, uint4* out, uint4* stage, unsigned* sig, \
    int B, int world, long long npacks, int phases, int nb, unsigned e0, int* err, long long* res) { \
  host_shot_body<APART>(in, out, stage, sig, B, world, npacks, phases, nb, e0, err, res); \
}
HOST_SHOT_K(pb_host_shot, false) HOST_SHOT_K(pb_host_shot_apart, true)
// ---- pb_host_shot with each block's phase ends timed: pb_host_shot's loop, each phase ended by __syncthreads and
// thread 0 reading %globaltimer (ns, one clock for every SM), so a block's phases and the blocks' order can be read:
// ts[blockIdx.x * (4 * nb + 1)] the block's start, then per iteration i the ends of staging (with its fence), the
// first barrier, the pull and the second barrier (a phase not run ends where the one before it did).
extern "C" __global__ void __launch_bounds__(1024) pb_host_shot_ts(const uint4* in, uint4* out, uint4* stage, unsigned* sig,
                                                                  int B, int world, long long npacks, int phases, int nb,
                                                                  unsigned e0, int* err, unsigned long long* ts) {
  const int rank = blockIdx.x / B, b = blockIdx.x % B;
  const uint4* my_in = in + (size_t)rank * npacks;
  uint4* my_out = out + (size_t)rank * npacks;
  const long long tid = (long long)b * blockDim.x + threadIdx.x, stride = (long long)B * blockDim.x;
  unsigned long long* my_ts = ts + (size_t)blockIdx.x * (4 * nb + 1);
  long long spins = 0;
  __syncthreads();
  if (threadIdx.x == 0) my_ts[0] = pb_gtimer();
  for (int i = 1; i <= nb; i++) {
    const unsigned e = e0 + (unsigned)i;
    unsigned long long* t = my_ts + 1 + 4 * (i - 1);
    if (phases & 1) {
      for (long long k = tid; k < npacks; k += stride) st_vol4(stage + (size_t)rank * npacks + k, my_in[k]);
      __threadfence_system();
    }
    __syncthreads();
    if (threadIdx.x == 0) t[0] = pb_gtimer();
    if (phases & 2) hs_barrier(sig, 0, rank, world, b, e, spins, err);
    if (threadIdx.x == 0) t[1] = pb_gtimer();
    if (phases & 4) {
      for (long long k = tid; k < npacks; k += stride) {
        float acc[8];
        #pragma unroll
        for (int j = 0; j < 8; j++) acc[j] = 0.f;
        for (int r = 0; r < world; r++) {
          uint4 v = r == rank ? my_in[k] : ld_vol4(stage + (size_t)r * npacks + k);
          unsigned w[4] = {v.x, v.y, v.z, v.w};
          #pragma unroll
          for (int j = 0; j < 4; j++) { acc[2 * j] += hs_lo(w[j]); acc[2 * j + 1] += hs_hi(w[j]); }
        }
        unsigned o[4];
        #pragma unroll
        for (int j = 0; j < 4; j++) o[j] = hs_f2bf(acc[2 * j]) | (hs_f2bf(acc[2 * j + 1]) << 16);
        my_out[k] = make_uint4(o[0], o[1], o[2], o[3]);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) t[2] = pb_gtimer();
    if (phases & 2) hs_barrier(sig, 512 * 8, rank, world, b, e, spins, err);
    if (threadIdx.x == 0) t[3] = pb_gtimer();
  }
}
// ---- pb_line_probe's pair beside neighbours that store to words of their own, each timing itself: neighbour j
// stores to flags + off + j * stride (pausing gap_ns after each store if gap_ns > 0) until the pair is done, and
// reports its cycles and stores in res[2b], res[2b+1]; the pair reports as in pb_line_probe.
extern "C" __global__ void pb_store_stream(unsigned* flags, int lb, int off, int stride, int gap_ns, int n,
                                           unsigned e0, unsigned* done, int* err, long long* res) {
  if (threadIdx.x != 0) return;
  const int b = blockIdx.x;
  const unsigned stop = e0 + (unsigned)n;
  long long spins = 0;
  if (b < 2) {
    const int lead = b == 0;
    unsigned* mine = flags + (lead ? 0 : lb);
    unsigned* theirs = flags + (lead ? lb : 0);
    long long c0 = clock64();
    for (int i = 1; i <= n; i++) {
      const unsigned e = e0 + (unsigned)i;
      if (lead) st_vol(theirs, e);
      while (ld_vol(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto out; } }
      if (!lead) st_vol(theirs, e);
    }
  out:
    res[2 * b] = clock64() - c0; res[2 * b + 1] = spins;
    if (lead) { __threadfence(); st_vol(done, stop); }
    return;
  }
  unsigned* w = flags + off + (b - 2) * stride;
  long long c0 = clock64();
  unsigned k = 1;
  for (; ; k++) {
    st_vol(w, k);
    if (gap_ns > 0) __nanosleep(gap_ns);
    if ((k & 7) == 7 && ld_vol(done) == stop) break;
    if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
  }
  res[2 * b] = clock64() - c0; res[2 * b + 1] = k;
}
// ---- pb_store_stream with each neighbour a warp whose first `lanes` threads store `vec` bytes each (4 or 16) at
// once: one contiguous store of lanes x vec bytes per iteration to a region of its own (neighbour j's at off + j *
// stride words, 512-B aligned). Lane 0 tests the pair's done flag every 8 stores; lane 0 times the neighbour as in
// pb_store_stream.
extern "C" __global__ void pb_store_stream_wide(unsigned* flags, int lb, int off, int stride, int lanes, int vec,
                                                int gap_ns, int n, unsigned e0, unsigned* done, int* err,
                                                long long* res) {
  const int b = blockIdx.x;
  const unsigned stop = e0 + (unsigned)n;
  long long spins = 0;
  if (b < 2) {
    if (threadIdx.x != 0) return;
    const int lead = b == 0;
    unsigned* mine = flags + (lead ? 0 : lb);
    unsigned* theirs = flags + (lead ? lb : 0);
    long long c0 = clock64();
    for (int i = 1; i <= n; i++) {
      const unsigned e = e0 + (unsigned)i;
      if (lead) st_vol(theirs, e);
      while (ld_vol(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto out; } }
      if (!lead) st_vol(theirs, e);
    }
  out:
    res[2 * b] = clock64() - c0; res[2 * b + 1] = spins;
    if (lead) { __threadfence(); st_vol(done, stop); }
    return;
  }
  const int lane = threadIdx.x;
  unsigned* w = flags + off + (size_t)(b - 2) * stride;
  long long c0 = clock64();
  unsigned k = 1;
  for (; ; k++) {
    if (lane < lanes) {
      if (vec == 16) st_vol4(((uint4*)w) + lane, make_uint4(k, k, k, k));
      else st_vol(w + lane, k);
    }
    if (gap_ns > 0) __nanosleep(gap_ns);
    if ((k & 7) == 7) {
      int stopped = 0;
      if (lane == 0) stopped = ld_vol(done) == stop;
      if (__shfl_sync(0xffffffffu, stopped, 0)) break;
    }
    if (++spins > SPIN_LIMIT) { if (lane == 0) atomicExch(err, 1); break; }
  }
  if (lane == 0) { res[2 * b] = clock64() - c0; res[2 * b + 1] = k; }
}
// ---- pb_store_stream with each neighbour cycling its stores over `lines` lines of its own (128 B apart; neighbour
// j's lines start at off + j * stride words): store k goes to line k mod lines, so no two stores in a row go to one
// word. Neighbours time themselves as in pb_store_stream.
extern "C" __global__ void pb_store_stream_lines(unsigned* flags, int lb, int off, int stride, int lines, int gap_ns,
                                                 int n, unsigned e0, unsigned* done, int* err, long long* res) {
  if (threadIdx.x != 0) return;
  const int b = blockIdx.x;
  const unsigned stop = e0 + (unsigned)n;
  long long spins = 0;
  if (b < 2) {
    const int lead = b == 0;
    unsigned* mine = flags + (lead ? 0 : lb);
    unsigned* theirs = flags + (lead ? lb : 0);
    long long c0 = clock64();
    for (int i = 1; i <= n; i++) {
      const unsigned e = e0 + (unsigned)i;
      if (lead) st_vol(theirs, e);
      while (ld_vol(mine) != e) { if (++spins > SPIN_LIMIT) { atomicExch(err, 1); goto out; } }
      if (!lead) st_vol(theirs, e);
    }
  out:
    res[2 * b] = clock64() - c0; res[2 * b + 1] = spins;
    if (lead) { __threadfence(); st_vol(done, stop); }
    return;
  }
  unsigned* w = flags + off + (b - 2) * stride;
  long long c0 = clock64();
  unsigned k = 1;
  int line = 0;
  for (; ; k++) {
    st_vol(w + line * 32, k);
    if (++line == lines) line = 0;
    if (gap_ns > 0) __nanosleep(gap_ns);
    if ((k & 7) == 7 && ld_vol(done) == stop) break;
    if (++spins > SPIN_LIMIT) { atomicExch(err, 1); break; }
  }
  res[2 * b] = clock64() - c0; res[2 * b + 1] = k;
}

// ---- what a waiting LL128 receive's reloads of its lines cost the data (perblock ll128_spin): blocks 0 .. P-1 spin
// as NCCL's LL128 receive does while its lines are not yet written (prims_ll128.h: every lane of a warp loads its
// four 16-B words of the warp's lines again until the flag lanes see the flag), on lines in pinned host memory whose
// flag never comes; blocks P .. P+R-1 read their share of rbuf (pinned host memory), one 16-B load a thread in
// flight (the next address waits on the loaded value), and time themselves. The pollers stop when every reader has
// finished (stop counts them), or after max_rounds rounds where there are no readers. res[2b]: block b's cycles;
// res[2b + 1]: a poller's rounds (its warp 0's), a reader's bytes.
extern "C" __global__ void __launch_bounds__(1024) pb_ll128_spin(const uint4* lines, const uint4* rbuf,
                                                                 long long words_per_reader, int pollers, int readers,
                                                                 long long max_rounds, unsigned flag, unsigned* stop,
                                                                 int* err, long long* res) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5, b = blockIdx.x;
  const bool flagLane = (lane & 7) == 7;
  unsigned acc = 0;
  __syncthreads();
  long long c0 = clock64();
  if (b < pollers) {
    const uint4* chunk = lines + ((size_t)b * nw + warp) * 128;
    long long rounds = 0;
    for (;;) {
      uint4 v[4];
      #pragma unroll
      for (int u = 0; u < 4; u++) v[u] = ld_vol4(chunk + u * 32 + lane);
      const int need = flagLane && (v[0].w != flag || v[1].w != flag || v[2].w != flag || v[3].w != flag);
      acc += v[0].x;
      rounds++;
      if (!__any_sync(0xffffffffu, need)) break;  // never: the lines hold flag - 1
      if ((rounds & 15) == 0 && (readers > 0 ? ld_vol(stop) >= (unsigned)readers : rounds >= max_rounds)) break;
      if (rounds > SPIN_LIMIT) { atomicExch(err, 1); break; }
    }
    __syncthreads();
    long long c1 = clock64();
    if (threadIdx.x == 0) { res[2 * b] = c1 - c0; res[2 * b + 1] = rounds; }
    if (acc == 0xffffffffu) res[2 * b] = -1;  // keeps the loads
    return;
  }
  const uint4* mine = rbuf + (size_t)(b - pollers) * words_per_reader;
  long long i = threadIdx.x;
  while (i < words_per_reader) {
    const uint4 v = ld_vol4(mine + i);
    acc += v.x;
    i += blockDim.x + (v.y == 0xfeedbeefu);  // the next load waits on this one: one in flight a thread
  }
  __syncthreads();
  long long c1 = clock64();
  if (threadIdx.x == 0) {
    res[2 * b] = c1 - c0;
    res[2 * b + 1] = words_per_reader * 16;
    __threadfence();
    atomicAdd(stop, 1u);
  }
  if (acc == 0xffffffffu) res[2 * b] = -1;
}
'''


def _fence_beside_lb512(src):
    """pb_fence_beside's text under __launch_bounds__(512) as pb_fence_beside_lb512: with 128 registers a thread to
    spend, the compiler need not spill the copy loop's eight loaded words (pb_fence_beside, built for 1,024-thread
    blocks, spills each pair's first and so keeps at most two loads a thread in flight). Made from the original's
    text, which stays as it was, so that the two differ in the launch bound alone."""
    head = 'extern "C" __global__ void __launch_bounds__(1024) pb_fence_beside('
    start = src.index(head)
    end = src.index("\n}\n", start) + 3
    return src[start:end].replace(head, 'extern "C" __global__ void __launch_bounds__(512) pb_fence_beside_lb512(')


PERBLOCK_SRC += _fence_beside_lb512(PERBLOCK_SRC)


# ---- which SMs share a GPC (micro.py sm_groups): the blocks of one thread-block cluster are co-scheduled on one GPC
# (CUDA C++ Programming Guide, "Thread Block Clusters"), so SMs whose blocks meet in a cluster lie in one GPC. Built
# alone (its own module), so that a toolchain without clusters fails this part only. 1,024 threads and 40 KiB of
# shared memory a block: at most two blocks an SM, so a cluster of 8 spans at least four SMs. Each block's thread 0
# writes its SM, its cluster's index and size and its rank in it; then the block stays resident spin_ns.
CLUSTER_SRC = r"""
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(1024) cluster_sm(int* out, unsigned long long spin_ns) {
  __shared__ int pad[10240];
  unsigned smid, cid, csize, crank;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(csize));
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(crank));
  pad[threadIdx.x] = (int)smid;
  __syncthreads();
  if (threadIdx.x == 0) {
    out[4 * blockIdx.x] = pad[0]; out[4 * blockIdx.x + 1] = (int)cid;
    out[4 * blockIdx.x + 2] = (int)csize; out[4 * blockIdx.x + 3] = (int)crank;
  }
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < spin_ns);
}
"""
