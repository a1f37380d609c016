package ncclmodel

import "fmt"

// Algo is an NCCL collective algorithm. The values are NCCL's indices
// (NCCL_ALGO_TREE 0, NCCL_ALGO_RING 1 in src/include/plugin/nccl_tuner.h),
// which also fix the tie order of [Model.Choose].
type Algo int

// The modelled algorithms, in NCCL index order.
const (
	Tree Algo = 0 // NCCL_ALGO_TREE
	Ring Algo = 1 // NCCL_ALGO_RING
)

// NumAlgos is the number of modelled algorithms.
const NumAlgos = 2

// algoList lists the modelled algorithms in NCCL index order.
var algoList = [NumAlgos]Algo{Tree, Ring}

// String returns "tree" or "ring".
func (a Algo) String() string {
	switch a {
	case Tree:
		return "tree"
	case Ring:
		return "ring"
	}
	return fmt.Sprintf("Algo(%d)", int(a))
}

// ncclName is the spelling of ncclAlgoStr in NCCL's TUNING table.
func (a Algo) ncclName() string {
	switch a {
	case Tree:
		return "Tree"
	case Ring:
		return "Ring"
	}
	return a.String()
}

func (a Algo) valid() bool { return a == Tree || a == Ring }

// Proto is an NCCL protocol. The values are NCCL's indices (NCCL_PROTO_LL 0,
// NCCL_PROTO_LL128 1, NCCL_PROTO_SIMPLE 2).
type Proto int

// The protocols, in NCCL index order.
const (
	LL     Proto = 0 // NCCL_PROTO_LL: 8-byte lines, 4 data + 4 flag bytes.
	LL128  Proto = 1 // NCCL_PROTO_LL128: 128-byte lines, 120 data bytes.
	Simple Proto = 2 // NCCL_PROTO_SIMPLE: bulk copies with fences.
)

// NumProtos is the number of protocols.
const NumProtos = 3

var protoList = [NumProtos]Proto{LL, LL128, Simple}

// String returns "ll", "ll128" or "simple".
func (p Proto) String() string {
	switch p {
	case LL:
		return "ll"
	case LL128:
		return "ll128"
	case Simple:
		return "simple"
	}
	return fmt.Sprintf("Proto(%d)", int(p))
}

// ncclName is the spelling of ncclProtoStr in NCCL's TUNING table.
func (p Proto) ncclName() string {
	switch p {
	case LL:
		return "LL"
	case LL128:
		return "LL128"
	case Simple:
		return "Simple"
	}
	return p.String()
}

func (p Proto) valid() bool { return p >= LL && p <= Simple }

// HW is the hardware-latency row of NCCL's hwLatencies table
// (NCCL_HW_NVLINK 0, NCCL_HW_PCI 1, NCCL_HW_NET 2 in tuning.cc).
type HW int

// Hardware classes.
const (
	NVLink HW = 0 // graph typeIntra is NVL
	PCI    HW = 1 // any other typeIntra (NVB, C2C, PIX, PXB, PHB, SYS)
	Net    HW = 2 // inter-node steps
)

// String returns "nvlink", "pci" or "net".
func (h HW) String() string {
	switch h {
	case NVLink:
		return "nvlink"
	case PCI:
		return "pci"
	case Net:
		return "net"
	}
	return fmt.Sprintf("HW(%d)", int(h))
}

// CompCap is NCCL's compute-capability index into its per-architecture
// bandwidth caps (NCCL_VOLTA_COMPCAP_IDX … NCCL_BLACKWELL_COMPCAP_IDX).
type CompCap int

// Compute-capability classes.
const (
	Volta     CompCap = 0 // sm < 80
	Ampere    CompCap = 1 // sm 80..89
	Hopper    CompCap = 2 // sm 90..99
	Blackwell CompCap = 3 // sm ≥ 100, including sm120 (RTX 5090, RTX PRO 6000)
)

// CompCapOf maps a compute capability written as an integer (90 for sm_90,
// 120 for sm_120) to NCCL's index, as ncclTopoTuneModel of [Version] does:
// ≥100 Blackwell, ≥90 Hopper, ≥80 Ampere, else Volta ([Release.CompCap]
// for other releases).
func CompCapOf(sm int) CompCap { return defaultRelease.CompCap(sm) }

// String returns "volta", "ampere", "hopper" or "blackwell".
func (c CompCap) String() string {
	switch c {
	case Volta:
		return "volta"
	case Ampere:
		return "ampere"
	case Hopper:
		return "hopper"
	case Blackwell:
		return "blackwell"
	}
	return fmt.Sprintf("CompCap(%d)", int(c))
}

// CPUVendor is the host CPU vendor as NCCL's topology reports it. It only
// matters when NNodes > 1: it selects the llMaxBws row (AMD or mixed → row 1,
// anything else → row 0) and the ring's per-step network overhead
// (getNetOverhead: Intel 1.0 µs, AMD 2.0 µs, other 1.0 µs).
type CPUVendor int

// CPU vendors. The zero value is CPUOther, which NCCL treats like Intel.
const (
	CPUOther CPUVendor = iota // NCCL_TOPO_CPU_VENDOR_* other than Intel/AMD/mixed
	CPUIntel                  // NCCL_TOPO_CPU_VENDOR_INTEL
	CPUAMD                    // NCCL_TOPO_CPU_VENDOR_AMD (mixed vendors behave the same)
)

// String returns "other", "intel" or "amd".
func (v CPUVendor) String() string {
	switch v {
	case CPUOther:
		return "other"
	case CPUIntel:
		return "intel"
	case CPUAMD:
		return "amd"
	}
	return fmt.Sprintf("CPUVendor(%d)", int(v))
}

// TreePattern is the pattern of NCCL's tree graph (comm->maxTreePattern).
// NCCL's numbers are NCCL_TOPO_PATTERN_BALANCED_TREE 1, SPLIT_TREE 2, TREE 3
// (src/include/graph.h); the Go zero value is the balanced tree, NCCL's
// first choice. Only the pure TREE pattern changes the model (tree busBw ×
// 0.85); NCCL falls back to it on sm ≥ 90 when no balanced tree is found.
type TreePattern int

// Tree patterns.
const (
	BalancedTree TreePattern = iota // NCCL_TOPO_PATTERN_BALANCED_TREE (1)
	SplitTree                       // NCCL_TOPO_PATTERN_SPLIT_TREE (2)
	PureTree                        // NCCL_TOPO_PATTERN_TREE (3): tree busBw × 0.85
)

// String returns "balanced", "split" or "tree".
func (t TreePattern) String() string {
	switch t {
	case BalancedTree:
		return "balanced"
	case SplitTree:
		return "split"
	case PureTree:
		return "tree"
	}
	return fmt.Sprintf("TreePattern(%d)", int(t))
}
