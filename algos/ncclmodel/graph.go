package ncclmodel

import "math"

// Per-channel search speeds in GB/s, src/graph/search.cc (NCCL 2.30.7), for
// single-node systems (system->inter == 0).
var (
	speedArrayIntra      = []float64{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0}
	sm90SpeedArrayIntra  = []float64{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0}
	sm100SpeedArrayIntra = []float64{90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0}
)

// Graph is a ring graph as arsim's approximation of NCCL's search returns
// it.
type Graph struct {
	// Channels is the graph's nChannels (after the search's own channel
	// duplication, before the runtime doubling): Config.RingChannels.
	Channels int
	// BwIntra is the graph's bwIntra in GB/s per channel:
	// Config.RingBwIntra.
	BwIntra float64
	// NVLink is the graph's typeIntra == NVL: Config.IntraNVLink. It is the
	// nvlink argument, except on the fallback, where typeIntra is SYS.
	NVLink bool
	// Fallback is true when no speed fitted and NCCL's "Could not find a
	// path for pattern %d, falling back to simple order" graph was returned
	// (bwIntra 0.1, typeIntra SYS, 1 channel).
	Fallback bool
}

// SearchRing is arsim's approximation of NCCL's ring search
// (ncclTopoCompute, src/graph/search.cc) on a single node whose GPUs all see
// the same per-direction bottleneck bandwidth pathBwGBs (GB/s) to their ring
// neighbours. It is not NCCL's search. It models:
//
//   - the speed array chosen by sm (speedArrayIntra below sm90,
//     sm90SpeedArrayIntra, sm100SpeedArrayIntra from sm100);
//   - pass 1: starting at the largest speed ≤ pathBwGBs, a channel count of
//     floor(pathBwGBs/speed) capped at the ring's maxChannels 32; a lower
//     speed is tried while speed/best > 0.49, keeping the strictly larger
//     nChannels·speed (ties keep the faster, fewer-hop graph); the search
//     stops once nChannels·speed ≥ pathBwGBs or 32 channels are found;
//   - ncclTopoDupChannels: when bwIntra ≥ 25 and not (sm > 80, bwIntra < 50
//     and nChannels > 4), channels double (up to 32) and bwIntra is divided
//     accordingly;
//   - the fallback when even the smallest speed does not fit: 1 channel at
//     0.1 GB/s with typeIntra SYS.
//
// It ignores: heterogeneous paths (the caller passes the bottleneck),
// PCI/NVLink link sharing between GPUs behind one switch or CPU (pass the
// per-GPU share), NCCL's INTEL_P2P_OVERHEAD (for PHB paths through an Intel
// CPU pass the PCI bandwidth divided by 1.2), the reverse-bandwidth
// accounting of old GPUs and Power CPUs, search timeouts, pass 2 (which
// never raises a ring's speed when links are uniform), multi-node inter
// speed arrays, and the tree search: NCCL searches the tree separately, with
// at most the ring's channel count, and it can find a higher per-channel
// bwIntra (on 2 GPUs, twice the ring's, since each tree channel uses one
// direction only; see the h200x2 log test).
func SearchRing(pathBwGBs float64, sm int, nvlink bool) Graph {
	return defaultRelease.SearchRing(pathBwGBs, sm, nvlink)
}

// SearchRing is [SearchRing] with r's speed arrays and MAXCHANNELS.
func (r Release) SearchRing(pathBwGBs float64, sm int, nvlink bool) Graph {
	maxRingChannels := r.MaxChannels() / 2 // init.cc: ringGraph->maxChannels
	speeds := r.speeds(sm)
	fallback := Graph{Channels: 1, BwIntra: 0.1, Fallback: true}
	if math.IsNaN(pathBwGBs) || pathBwGBs <= 0 {
		return fallback
	}
	start := 0
	for start < len(speeds) && speeds[start] > pathBwGBs {
		start++
	}
	bestN, bestSpeed := 0, 0.0
	for i := start; i < len(speeds); i++ {
		s := speeds[i]
		if bestN > 0 && s/bestSpeed <= .49 {
			break
		}
		// 1e-6 absorbs NCCL's SUB_ROUND to 1e-3 GB/s on exact fits.
		n := min(int(math.Floor((pathBwGBs+1e-6)/s)), maxRingChannels)
		if n > 0 && float64(n)*s > float64(bestN)*bestSpeed {
			bestN, bestSpeed = n, s
		}
		if bestN == maxRingChannels || float64(bestN)*bestSpeed >= pathBwGBs-1e-6 {
			break
		}
	}
	if bestN == 0 {
		return fallback
	}
	g := Graph{Channels: bestN, BwIntra: bestSpeed, NVLink: nvlink}
	// ncclTopoDupChannels (search.cc).
	if g.BwIntra >= 25.0 && !(sm > 80 && g.BwIntra < 50.0 && g.Channels > 4) {
		dup := min(2*g.Channels, maxRingChannels)
		g.BwIntra /= float64((dup + g.Channels - 1) / g.Channels)
		g.Channels = dup
	}
	return g
}

// GraphFor returns the ring graph inputs of [Config] (RingChannels,
// RingBwIntra) for a simple single-node system: [SearchRing] without the
// typeIntra and fallback flags. See SearchRing for what the approximation
// models and ignores; on the fallback it returns (1, 0.1) and the caller
// should set IntraNVLink false (typeIntra SYS).
func GraphFor(pathBwGBs float64, sm int, nvlink bool) (channels int, bwPerChannel float64) {
	g := SearchRing(pathBwGBs, sm, nvlink)
	return g.Channels, g.BwIntra
}
