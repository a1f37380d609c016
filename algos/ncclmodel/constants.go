package ncclmodel

// Constants of NCCL 2.30.7. Sources are cited per block; the numbers are
// facts carried over from NCCL, the layout is arsim's. Where an earlier
// release (2.18–2.29) differs, [Release]'s methods say how.

// Version is the NCCL release whose tuning constants and rules the model
// follows by default (Config.Release zero).
const Version = "2.30.7"

// baseLat is baseLatencies[algo][proto] in µs, ncclTunerConstantsDefaults,
// src/graph/tuning.cc (Tree, Ring rows).
var baseLat = [NumAlgos][NumProtos]float64{
	Tree: {6.8, 14.0, 8.4},
	Ring: {6.6, 14.0, 8.4},
}

// hwLat is hwLatencies[hw][algo][proto] in µs, ncclTunerConstantsDefaults,
// src/graph/tuning.cc (Tree, Ring columns of the NVLINK, PCI and NET rows).
var hwLat = [3][NumAlgos][NumProtos]float64{
	NVLink: {Tree: {0.6, 1.25, 4.0}, Ring: {0.6, 1.9, 3.4}},
	PCI:    {Tree: {1.0, 1.9, 4.0}, Ring: {1.0, 2.5, 5.7}},
	Net:    {Tree: {5.0, 8.5, 14}, Ring: {2.7, 4.0, 14.0}},
}

// llMaxBws[index1][index2] in GB/s (tuning.cc). index1 is the CompCap on one
// node and the CPU row (0 Intel/other, 1 AMD/mixed) on several; index2 is
// N1/N2/N4 (nNodes 1, 2, >2).
var llMaxBws = [4][3]float64{
	{39.0, 39.0, 20.4},
	{87.7, 22.5, 19.0},
	{141.0, 45.0, 35.0},
	{2 * 141.0, 2 * 45.0, 2 * 35.0},
}

// perChMaxRingLL128Bws[compcap][index2] in GB/s per channel (tuning.cc).
var perChMaxRingLL128Bws = [4][3]float64{
	{20.0, 20.0, 20.0},
	{20.0, 20.0, 20.0},
	{36.7, 36.7, 36.7},
	{40.0, 40.0, 40.0},
}

// perChMaxTreeLL128Bws[compcap][index2] in GB/s per channel (tuning.cc).
var perChMaxTreeLL128Bws = [4][3]float64{
	{20.0, 20.0, 20.0},
	{20.0, 20.0, 20.0},
	{36.7, 36.7, 29.0},
	{55.6, 31.67, 20.0},
}

// perChMaxTreeBws[compcap][index2] in GB/s per channel (tuning.cc).
var perChMaxTreeBws = [4][3]float64{
	{26.5, 18.5, 10.0},
	{24.0, 23.6, 17.8},
	{38.7, 41.4, 36.0},
	{70.0, 42.8, 24.0},
}

// treeCorrectionFactor[proto][log2(bytes>>6)] (tuning.cc): powers of two
// from 64 B to 256 MiB. ncclTopoGetAlgoTime only reads indices 0..22 for
// Tree AllReduce.
var treeCorrectionFactor = [NumProtos][24]float64{
	LL:     {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
	LL128:  {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
	Simple: {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
}

// treeCorrectionMaxLog is the exclusive bound on log2(bytes>>6) for which
// ncclTopoGetAlgoTime applies treeCorrectionFactor to Tree AllReduce
// ("logSize >= 0 && logSize < 23"), i.e. sizes below 2^23·64 B = 512 MiB.
const treeCorrectionMaxLog = 23

// Thread and channel constants: NCCL_*_NTHREADS and MAXCHANNELS from
// src/include/device.h, NCCL_*_THREAD_THRESHOLD from src/include/comm.h,
// PCI_BW (GB/s, PCIe Gen3 x16) from src/graph/topo.h, WARP_SIZE 32.
const (
	warpSize              = 32
	maxNThreads           = 640 // NCCL_MAX_NTHREADS: Tree always runs this many
	simpleMaxNThreads     = 512 // NCCL_SIMPLE_MAX_NTHREADS
	llMaxNThreads         = 512 // NCCL_LL_MAX_NTHREADS
	ll128MaxNThreads      = 640 // NCCL_LL128_MAX_NTHREADS
	llThreadThreshold     = 8   // NCCL_LL_THREAD_THRESHOLD (Ring: × nRanks)
	ll128ThreadThreshold  = 8   // NCCL_LL128_THREAD_THRESHOLD
	simpleThreadThreshold = 64  // NCCL_SIMPLE_THREAD_THRESHOLD
	maxChannels           = 64  // MAXCHANNELS
	pciBw                 = 12.0
)
