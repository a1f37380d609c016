// Package ncclmodel is NCCL's own analytic allreduce cost model (NCCL 2.30
// src/graph/tuning.cc), as a predictor to print beside arsim's simulation.
//
// The package reimplements, in Go and for AllReduce only, the three pieces of
// NCCL 2.30.7 that decide how an allreduce runs:
//
//   - ncclTopoTuneModel (src/graph/tuning.cc): a latency (µs) and an
//     algorithm bandwidth (GB/s) per (algorithm, protocol), computed from the
//     ring and tree graphs that NCCL's topology search found. See [Tune].
//   - ncclTopoGetAlgoTime (src/graph/tuning.cc): the time estimate
//     lat·latCount + bytes/(1000·bw) with the tree correction factor and the
//     multi-node ring plateau. See [Model.Time].
//   - topoGetAlgoInfo (src/enqueue.cc): the argmin over the cost table, then
//     channel trimming and thread halving for small messages. See
//     [Model.Choose].
//
// Only the Tree and Ring algorithms are modelled: CollNet needs a collnet
// plugin, NVLS needs NVSwitch multicast, NVLS Tree is disabled on one node,
// and PAT is skipped for AllReduce by NCCL itself. Those are the candidates
// on the PCIe and NVLink single-node systems arsim simulates.
//
// NCCL's topology search (src/graph/search.cc) is not reimplemented. The
// caller supplies the graph results NCCL prints at NCCL_DEBUG_SUBSYS=GRAPH
// ("Pattern 4, crossNic 0, nChannels 12, bw 30.000000/30.000000, type
// NVL/PIX, ..."), or uses [GraphFor], arsim's simplified approximation of
// that search for uniform single-node systems.
//
// Releases 2.18 to 2.29 differ in some constants and rules (the Tree/Simple
// latency, Ring/LL's share, the Blackwell caps, LL128's default, MAXCHANNELS,
// the search's speeds, Tree's threads): [Config.Release] selects one, and
// [Release]'s methods cite the tags each difference comes from.
//
// All numeric constants are NCCL's and cite their source file; the code is
// written from those facts, not copied.
package ncclmodel
