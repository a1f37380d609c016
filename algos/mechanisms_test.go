package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

func mechanismsFor(t *testing.T, preset, algo string, bytes int64, opts map[string]string) []Mechanism {
	t.Helper()
	top, err := topology.Load(preset)
	require.NoError(t, err)
	s, err := Plan(algo, Request{Top: top, Ranks: top.NumGPUs(), Bytes: bytes, DType: BF16, Launch: hw.Graph, Opts: opts})
	require.NoError(t, err)
	return MechanismsOf(s, top)
}

// What each kind of schedule rests on: where its flags and lines live,
// which way it moves data to and from host memory, and the link between
// its GPUs.
func TestMechanismsOfSchedules(t *testing.T) {
	// Staged through host memory: stores, then a barrier, then loads; the
	// loads wait for the barrier, so none runs beside the stores.
	assert.Equal(t, []Mechanism{HostFlagsIn("packed_128"), MechHostLoads, MechHostStores, Whole("host_one_shot", RouteHost)},
		mechanismsFor(t, "rtxpro6000x8-2numa", "host_one_shot", 43008, nil))
	// Its flags in the layouts a user picks: vLLM's, or the ranks' sectors
	// a page apart.
	assert.Contains(t, mechanismsFor(t, "rtxpro6000x8-2numa", "host_one_shot", 43008, map[string]string{"flag_layout": "vllm"}), HostFlagsIn("vllm"))
	assert.Contains(t, mechanismsFor(t, "rtxpro6000x8-2numa", "host_two_shot", 43008, map[string]string{"flag_apart": "4096"}), HostFlagsIn("packed_4k"))
	assert.Equal(t, MechHostFlags, HostFlagsIn("vllm").Family())
	assert.Equal(t, MechHostLoads, MechHostLoads.Family())
	// The same ring over NVLink and over PCIe.
	assert.Equal(t, []Mechanism{MechGPUFlags, MechPeerNVLink, Whole("ring", RouteNVLink)}, mechanismsFor(t, "h200x2", "ring", 1<<20, nil))
	assert.Equal(t, []Mechanism{MechGPUFlags, MechPeerPCIe, Whole("ring", RoutePCIe)}, mechanismsFor(t, "rtxpro6000x8-2numa", "ring", 1<<20, nil))
	assert.Equal(t, MechWhole, Whole("ring", RoutePCIe).Family())
	// Data-carried polls: the sentinel one-shot polls its own GPU's
	// memory, written by peers over PCIe.
	m := mechanismsFor(t, "rtxpro6000x8-2numa", "pcie_ipc_one_shot", 43008, nil)
	assert.Contains(t, m, MechGPULines)
	assert.Contains(t, m, MechPeerPCIe)
	assert.NotContains(t, m, MechHostFlags)
	// NCCL over SHM across the sockets: each rank loads its neighbour's
	// staged data while storing its own for the next, pipelined.
	m = mechanismsFor(t, "rtxpro6000x8-2numa", "nccl", 4<<20, map[string]string{"p2p_level": "loc"})
	assert.Contains(t, m, HostFlagsIn("line_per_slot"), "NCCL's flags each on a line of their own")
	// Simple's sends stream to host memory (hw.Kernel.Streams), its
	// receives load from there meanwhile.
	assert.Contains(t, m, MechLoadsBesideStores, "Simple's stores stream")
	assert.NotContains(t, m, MechPeerPCIe)
	m = mechanismsFor(t, "rtxpro6000x8-2numa", "nccl", 1024, map[string]string{"p2p_level": "loc", "proto": "ll"})
	assert.Contains(t, m, MechLoopsBesideStores, "LL's stores are its loop's")
	assert.NotContains(t, m, MechLoadsBesideStores)
	// A barrier by compare-and-swap (PyTorch's symmetric memory).
	assert.Contains(t, mechanismsFor(t, "h200x2", "two_stage", 43008, map[string]string{"barrier": "atomic"}), MechFlagAtomics)
	assert.NotContains(t, mechanismsFor(t, "h200x2", "two_stage", 43008, nil), MechFlagAtomics)
	// custom_ar falling back to NCCL shares NCCL's measurements whole.
	assert.Contains(t, mechanismsFor(t, "rtxpro6000x8-2numa", "custom_ar", 43008, nil), Whole("nccl", RouteHost))
	assert.Contains(t, mechanismsFor(t, "h200x2", "custom_ar", 43008, nil), Whole("one_stage", RouteNVLink))
	// With P2P allowed across the sockets it is GPU to GPU.
	m = mechanismsFor(t, "rtxpro6000x8-2numa", "nccl", 4<<20, map[string]string{"p2p_level": "sys"})
	assert.Contains(t, m, MechPeerPCIe)
	assert.NotContains(t, m, MechHostStores)
}

// A host load and a host store are beside each other unless one waits
// for the other, directly or through other ops.
func TestUnorderedLoadsAndStores(t *testing.T) {
	k := hw.Kernel{Blocks: 4, Threads: 512}
	prog := []Op{{Kind: Launch}, {Kind: Read, After: []int{0}}, {Kind: Compute, After: []int{1}}, {Kind: Write, After: []int{2}, Kernel: k}}
	streaming, loops := unordered(prog, []int{1}, []int{3})
	assert.False(t, streaming || loops, "the store waits for the load through op 2")
	prog = append(prog, Op{Kind: Write, After: []int{0}, Kernel: k})
	streaming, loops = unordered(prog, []int{1}, []int{3, 4})
	assert.True(t, streaming, "op 4 waits only for the launch")
	assert.False(t, loops)
	prog[4].Kernel.Loop = hw.LoopLL128
	streaming, loops = unordered(prog, []int{1}, []int{3, 4})
	assert.True(t, loops, "op 4 is a protocol loop's")
	assert.False(t, streaming)
	assert.Equal(t, []Mechanism{MechHostFlags, HostFlagsIn("packed"), HostFlagsIn("vllm"), MechPeerPCIe},
		UnionMechanisms([]Mechanism{MechPeerPCIe, HostFlagsIn("vllm")}, nil, []Mechanism{MechHostFlags, HostFlagsIn("packed"), MechPeerPCIe}))
}

// Whether a schedule's host loads ran beside its streaming stores is the
// run's to say: NCCL over SHM leaves them unordered at every size, but its
// loads run while its stores stream only once its steps are large (from
// 24 MiB on the default machine). Where they do not, the model of loads
// beside streaming stores has nothing to act on: its parameters change
// nothing. (pcie.posted_wait_one stays: a receive loop that sends on over
// SHM waits it behind its own block's stores at every size,
// hw.Kernel.StoresHost.)
func TestRanMechanismsFollowTheRun(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	timed := func(bytes int64, model bool) (float64, []Mechanism) {
		s, err := Plan("nccl", Request{Top: top, Ranks: top.NumGPUs(), Bytes: bytes, DType: BF16, Launch: hw.Graph})
		require.NoError(t, err)
		require.Contains(t, MechanismsOf(s, top), MechLoadsBesideStores, "unordered in the program")
		m, err := hw.New(top)
		require.NoError(t, err)
		if !model {
			m.Phys.PostedWaitPerDoubling, m.Phys.HostLoadsBesideStores = 0, 0
		}
		res, err := Run(m, s, RunOptions{Iterations: 3, Launch: hw.Graph})
		require.NoError(t, err)
		return res.SteadyUs(), RanMechanisms(s, top, res)
	}
	for _, b := range []int64{43008, 4 << 20, 16 << 20} {
		us, ms := timed(b, true)
		without, _ := timed(b, false)
		assert.NotContains(t, ms, MechLoadsBesideStores, "%d B", b)
		assert.Contains(t, ms, MechHostLoads, "%d B", b)
		assert.Equal(t, us, without, "%d B: the model of loads beside stores changes nothing", b)
	}
	_, ms := timed(32<<20, true)
	assert.Contains(t, ms, MechLoadsBesideStores)
	// A schedule with no host loads is as MechanismsOf says.
	s, err := Plan("ring", Request{Top: top, Ranks: top.NumGPUs(), Bytes: 1 << 20, DType: BF16, Launch: hw.Graph})
	require.NoError(t, err)
	assert.Equal(t, MechanismsOf(s, top), RanMechanisms(s, top, nil))
}
