// native_issue: what the host pays to issue a kernel or an NCCL call from native code (no Python), one GPU.
//
//   native_issue LIBNCCL_PATH OUT.jsonl SYSTEM_ID
//
// nccl-tests issues its calls from C, one thread for all its GPUs; the other captures issue through CuPy, ctypes
// and PyTorch, whose Python layers cost more per call than the call itself. For each op this measures, TRIALS
// times:
//   queued: a spin kernel holds the GPU for SPIN_US while the host issues N ops; the host clock around the N
//           issues / N is the host's issue cost alone (the ops queue behind the spin, nothing waits on the GPU);
//   back-to-back: N ops with no spin, CUDA events around them / N, as nccl-tests times its eager calls (the
//           slower of host issue and device time).
// Each op's records carry host_clock_ghz, the issuing core's clock measured just before its trials (a chain of
// dependent integer adds, one cycle each on x86 cores, timed by the wall clock), and busy_threads, the number of
// other host threads kept spinning meanwhile (env NATIVE_ISSUE_BUSY_THREADS, default 0), which may lower the clock
// a core can turbo to: whether the issue cost follows the core's clock.
// Ops: an empty kernel (<<<1, 32>>>), a one-rank NCCL send to and receive from itself of 8 B in one group, and a
// one-rank ncclAllReduce of 8 B (float sum). Then, as nccl-tests -g G issues one call per GPU between
// ncclGroupStart and ncclGroupEnd from one thread: G one-rank communicators of this GPU, each on a stream of its
// own, and G allreduces of 8 B in one group (G = 1, 2, 4, 8; queued only: the host clock around the groups / the
// calls, nccl_op allreduce_group, field group_calls G). NCCL is loaded with dlopen (the library PyTorch ships); its
// API is declared here from nccl.h's public signatures. Records: JSON Lines v1 (docs/TRACE_FORMAT.md), kinds
// empty_kernel and nccl_kernel, launch eager, issuer native, mode queued or back_to_back.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

typedef struct ncclComm* ncclComm_t;
typedef int (*InitAllFn)(ncclComm_t*, int, const int*);
typedef int (*SendFn)(const void*, size_t, int, int, ncclComm_t, cudaStream_t);
typedef int (*RecvFn)(void*, size_t, int, int, ncclComm_t, cudaStream_t);
typedef int (*AllReduceFn)(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t);
typedef int (*GroupFn)();
typedef int (*VersionFn)(int*);

static const int kUint8 = 1, kFloat32 = 7, kSum = 0;  // ncclUint8, ncclFloat32, ncclSum
static const int N = 200, TRIALS = 9;
static const double SPIN_US = 5000;

__global__ void empty_kernel() {}

__global__ void spin_kernel(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      fprintf(stderr, "native_issue: %s: %s (line %d)\n", #x, cudaGetErrorString(e), __LINE__); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static void nck(int r, const char* what) {
  if (r != 0) {
    fprintf(stderr, "native_issue: %s returned %d\n", what, r);
    exit(1);
  }
}

// The calling core's clock, GHz: the median of 5 runs of 2^25 iterations of 8 dependent register-to-register adds
// (a one-cycle latency each), over the steady clock's time for them. Adds of an immediate would not do: Golden
// Cove and later Intel cores fold chains of them at rename, several a cycle.
static double hostClockGHz() {
  std::vector<double> g;
  volatile unsigned long long one = 1;
  for (int r = 0; r < 5; r++) {
    unsigned long long x = 0, y = one;
    const long n = 1L << 25;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i++) {
      asm volatile(
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
          : "+r"(x)
          : "r"(y));
    }
    auto t1 = std::chrono::steady_clock::now();
    g.push_back(8.0 * n / std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  std::sort(g.begin(), g.end());
  return g[g.size() / 2];
}

struct Stats {
  double median, lo, hi;
};

static Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: native_issue LIBNCCL OUT.jsonl SYSTEM_ID\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "native_issue: dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto sym = [&](const char* name) {
    void* p = dlsym(lib, name);
    if (!p) {
      fprintf(stderr, "native_issue: %s not in %s\n", name, argv[1]);
      exit(1);
    }
    return p;
  };
  auto initAll = (InitAllFn)sym("ncclCommInitAll");
  auto send = (SendFn)sym("ncclSend");
  auto recv = (RecvFn)sym("ncclRecv");
  auto allReduce = (AllReduceFn)sym("ncclAllReduce");
  auto groupStart = (GroupFn)sym("ncclGroupStart");
  auto groupEnd = (GroupFn)sym("ncclGroupEnd");
  int version = 0;
  nck(((VersionFn)sym("ncclGetVersion"))(&version), "ncclGetVersion");

  int busy = getenv("NATIVE_ISSUE_BUSY_THREADS") ? atoi(getenv("NATIVE_ISSUE_BUSY_THREADS")) : 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < busy; i++)
    spinners.emplace_back([&stop] {
      volatile unsigned long long x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  CK(cudaSetDevice(0));
  int clockKHz = 0;
  CK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, 0));
  ncclComm_t comm;
  int dev = 0;
  nck(initAll(&comm, 1, &dev), "ncclCommInitAll");
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *a, *b;
  CK(cudaMalloc(&a, 4096));
  CK(cudaMalloc(&b, 4096));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  struct Op {
    const char* kind;
    const char* name;
    std::function<void()> run;
  };
  std::vector<Op> ops = {
      {"empty_kernel", "empty_kernel", [&] { empty_kernel<<<1, 32, 0, s>>>(); }},
      {"nccl_kernel", "self_sendrecv",
       [&] {
         nck(groupStart(), "ncclGroupStart");
         nck(send(a, 8, kUint8, 0, comm, s), "ncclSend");
         nck(recv(b, 8, kUint8, 0, comm, s), "ncclRecv");
         nck(groupEnd(), "ncclGroupEnd");
       }},
      {"nccl_kernel", "allreduce_one_rank", [&] { nck(allReduce(a, b, 2, kFloat32, kSum, comm, s), "ncclAllReduce"); }},
  };
  FILE* out = fopen(argv[2], "a");
  if (!out) {
    fprintf(stderr, "native_issue: cannot write %s\n", argv[2]);
    return 1;
  }
  long long spinCycles = (long long)(SPIN_US * clockKHz / 1000.0);
  for (auto& op : ops) {
    for (int w = 0; w < 3 * N; w++) op.run();  // warm up: NCCL's first calls set up its plans and buffers
    CK(cudaStreamSynchronize(s));
    double ghz = hostClockGHz();
    std::vector<double> queued, b2b;
    for (int t = 0; t < TRIALS; t++) {
      spin_kernel<<<1, 1, 0, s>>>(spinCycles);
      auto h0 = std::chrono::steady_clock::now();
      for (int i = 0; i < N; i++) op.run();
      auto h1 = std::chrono::steady_clock::now();
      CK(cudaStreamSynchronize(s));
      queued.push_back(std::chrono::duration<double, std::micro>(h1 - h0).count() / N);

      CK(cudaEventRecord(e0, s));
      for (int i = 0; i < N; i++) op.run();
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      b2b.push_back(ms * 1000.0 / N);
    }
    Stats q = stats(queued), d = stats(b2b);
    std::string bytes = std::string(op.kind) == "nccl_kernel" ? ", \"bytes\": 8" : "";
    std::string opField = std::string(op.kind) == "nccl_kernel"
                              ? std::string(", \"nccl_op\": \"") + op.name + "\", \"nccl_version\": " + std::to_string(version)
                              : ", \"blocks\": 1, \"threads\": 32";
    fprintf(out,
            "{\"system\": \"%s\", \"kind\": \"%s\", \"clock\": \"host\", \"launch\": \"eager\", \"issuer\": \"native\", "
            "\"mode\": \"queued\"%s%s, \"iters\": %d, \"trials\": %d, \"prefill_us\": %.0f, \"us\": %.4f, \"us_min\": "
            "%.4f, \"us_max\": %.4f, \"host_clock_ghz\": %.3f, \"busy_threads\": %d}\n",
            argv[3], op.kind, opField.c_str(), bytes.c_str(), N, TRIALS, SPIN_US, q.median, q.lo, q.hi, ghz, busy);
    fprintf(out,
            "{\"system\": \"%s\", \"kind\": \"%s\", \"clock\": \"device_events\", \"launch\": \"eager\", \"issuer\": "
            "\"native\", \"mode\": \"back_to_back\"%s%s, \"iters\": %d, \"trials\": %d, \"prefill_us\": 0, \"us\": %.4f, "
            "\"us_min\": %.4f, \"us_max\": %.4f, \"host_clock_ghz\": %.3f, \"busy_threads\": %d}\n",
            argv[3], op.kind, opField.c_str(), bytes.c_str(), N, TRIALS, d.median, d.lo, d.hi, ghz, busy);
    fflush(out);
    fprintf(stderr,
            "native_issue %s: queued host issue %.3f us (%.3f-%.3f), back-to-back %.3f us (%.3f-%.3f); core %.3f GHz, "
            "%d busy threads\n",
            op.name, q.median, q.lo, q.hi, d.median, d.lo, d.hi, ghz, busy);
  }
  // Grouped calls: G one-rank communicators of this GPU, a stream each, one allreduce on each between
  // ncclGroupStart and ncclGroupEnd, as nccl-tests -g G issues an iteration from one thread.
  const int maxG = 8;
  std::vector<ncclComm_t> comms(maxG);
  std::vector<cudaStream_t> streams(maxG);
  std::vector<void*> bufs(2 * maxG);
  for (int i = 0; i < maxG; i++) {
    nck(initAll(&comms[i], 1, &dev), "ncclCommInitAll (group)");
    CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    CK(cudaMalloc(&bufs[2 * i], 4096));
    CK(cudaMalloc(&bufs[2 * i + 1], 4096));
  }
  cudaEvent_t spun;
  CK(cudaEventCreateWithFlags(&spun, cudaEventDisableTiming));
  for (int G : {1, 2, 4, 8}) {
    auto group = [&] {
      nck(groupStart(), "ncclGroupStart");
      for (int i = 0; i < G; i++)
        nck(allReduce(bufs[2 * i], bufs[2 * i + 1], 2, kFloat32, kSum, comms[i], streams[i]), "ncclAllReduce");
      nck(groupEnd(), "ncclGroupEnd");
    };
    const int groups = N / G;  // N calls a trial, as above
    for (int w = 0; w < 3 * groups; w++) group();
    CK(cudaDeviceSynchronize());
    double ghz = hostClockGHz();
    std::vector<double> queued;
    for (int t = 0; t < TRIALS; t++) {
      spin_kernel<<<1, 1, 0, s>>>(spinCycles);
      CK(cudaEventRecord(spun, s));
      for (int i = 0; i < G; i++) CK(cudaStreamWaitEvent(streams[i], spun, 0));
      auto h0 = std::chrono::steady_clock::now();
      for (int g = 0; g < groups; g++) group();
      auto h1 = std::chrono::steady_clock::now();
      CK(cudaDeviceSynchronize());
      queued.push_back(std::chrono::duration<double, std::micro>(h1 - h0).count() / (groups * G));
    }
    Stats q = stats(queued);
    fprintf(out,
            "{\"system\": \"%s\", \"kind\": \"nccl_kernel\", \"clock\": \"host\", \"launch\": \"eager\", \"issuer\": "
            "\"native\", \"mode\": \"queued\", \"nccl_op\": \"allreduce_group\", \"group_calls\": %d, \"nccl_version\": %d, "
            "\"bytes\": 8, \"iters\": %d, \"trials\": %d, \"prefill_us\": %.0f, \"us\": %.4f, \"us_min\": %.4f, "
            "\"us_max\": %.4f, \"host_clock_ghz\": %.3f, \"busy_threads\": %d}\n",
            argv[3], G, version, groups * G, TRIALS, SPIN_US, q.median, q.lo, q.hi, ghz, busy);
    fflush(out);
    fprintf(stderr, "native_issue allreduce_group G=%d: queued host issue %.3f us a call (%.3f-%.3f); core %.3f GHz\n", G,
            q.median, q.lo, q.hi, ghz);
  }
  fclose(out);
  stop = true;
  for (auto& t : spinners) t.join();
  return 0;
}
