package algos

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// a100NV12 is four A100 SXM GPUs joined pairwise by 12 NVLinks, as
// nvidia-smi topo -m prints them (a DGX-A100-like board, half of it).
const a100NV12 = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n" +
	"GPU0\t X \tNV12\tNV12\tNV12\t0-63\t0\n" +
	"GPU1\tNV12\t X \tNV12\tNV12\t0-63\t0\n" +
	"GPU2\tNV12\tNV12\t X \tNV12\t0-63\t0\n" +
	"GPU3\tNV12\tNV12\tNV12\t X \t0-63\t0\n"

func a100Top(t *testing.T) *topology.Topology {
	gpu, err := topology.LookupGPUClass("A100")
	require.NoError(t, err)
	top, err := topology.ImportSMI(strings.NewReader(a100NV12), "a100x4_nv12", topology.ImportOptions{GPU: &gpu})
	require.NoError(t, err)
	return top
}

// NCCL reads Simple's FIFO from the sender where NVLink joins two sm80
// GPUs (paths.cc ncclTopoCheckP2p) and where NCCL_P2P_READ_ENABLE=1 says
// so (p2p.cc p2pGetInfo); LL and LL128 keep writing into the receiver's
// buffer, and NCCL_P2P_READ_ENABLE=0 turns read off.
func TestNCCLP2PReadRule(t *testing.T) {
	a100 := a100Top(t)
	note := func(top *topology.Topology, ranks int, bytes int64, opts map[string]string) string {
		s := plan(t, "nccl", Request{Top: top, Ranks: ranks, Bytes: bytes, DType: BF16, Launch: hw.Graph, Opts: opts})
		require.NotEmpty(t, s.Notes)
		return s.Notes[0]
	}
	simple := map[string]string{"proto": "simple"}
	assert.Contains(t, note(a100, 4, 64<<20, nil), "ring/simple over p2p (P2P read on 4 of 4 ring links, NCCL's default (NVLink between sm80 GPUs)")
	assert.Contains(t, note(a100, 4, 64<<20, map[string]string{"p2p_read": "off"}), "ring/simple over p2p, ")
	assert.Contains(t, note(a100, 4, 4096, map[string]string{"proto": "ll"}), "not used by ll")

	h200 := req(t, "h200x2", 2, 64<<20, simple).Top
	assert.NotContains(t, note(h200, 2, 64<<20, simple), "P2P read", "sm90: NCCL writes")
	opts, err := TranslateNCCLEnv(map[string]string{"NCCL_P2P_READ_ENABLE": "1", "NCCL_PROTO": "Simple"})
	require.NoError(t, err)
	assert.Contains(t, note(h200, 2, 64<<20, opts), "P2P read on 2 of 2 ring links, p2p_read=on")

	// PCIe: read only where asked, and never over SHM links.
	pcie := req(t, "rtxpro6000x8-switches", 8, 64<<20, nil).Top
	assert.NotContains(t, note(pcie, 8, 64<<20, simple), "P2P read")
	assert.Contains(t, note(pcie, 8, 64<<20, map[string]string{"proto": "simple", "p2p_read": "on"}), "(P2P read on 6 of 8 ring links")
	shmOnly := req(t, "rtxpro6000x8-2numa", 8, 64<<20, nil).Top
	assert.Contains(t, note(shmOnly, 8, 64<<20, map[string]string{"proto": "simple", "p2p_read": "on"}), "no ring link is P2P: nothing to read")

	// ring and tree say where transport=p2p_read has nothing to read
	for _, algo := range []string{"ring", "tree"} {
		s := plan(t, algo, req(t, "h200x8-nvswitch", 8, 1<<20, map[string]string{"proto": "ll", "transport": "p2p_read"}))
		assert.Contains(t, strings.Join(s.Notes, "\n"), "transport=p2p_read reads Simple's FIFO only; ll writes", algo)
	}
}

// In read mode every ring step's data lands in the sender's own memory
// (its FIFO) and the receiver loads it from there, pulling the peer's
// FIFO and its own input in one loop; the schedule is a correct
// allreduce, on NVLink, on PCIe and across SHM links, ring and tree.
func TestP2PReadSchedules(t *testing.T) {
	for _, c := range []struct {
		preset string
		ranks  int
		opts   map[string]string
	}{
		{"h200x8-nvswitch", 8, map[string]string{"transport": "p2p_read"}},
		{"rtxpro6000x4-1numa", 4, map[string]string{"transport": "p2p_read"}},
		{"rtxpro6000x8-switches", 8, map[string]string{"p2p_read": "on"}},
	} {
		for _, algo := range []string{"ring", "tree", "nccl"} {
			if (algo == "nccl") != (c.opts["p2p_read"] != "") {
				continue
			}
			for _, size := range []int64{2, 43008, 1 << 20, 64 << 20} {
				opts := map[string]string{"proto": "simple"}
				for k, v := range c.opts {
					opts[k] = v
				}
				name := fmt.Sprintf("%s/%s/%d", c.preset, algo, size)
				s := plan(t, algo, req(t, c.preset, c.ranks, size, opts))
				require.NoError(t, Check(s), name)
				if algo != "ring" {
					continue
				}
				reads := 0
				for r, prog := range s.Programs {
					prev := hw.GPUMem((r - 1 + c.ranks) % c.ranks)
					for _, op := range prog {
						if op.Kind == Write && op.Src.Len > 0 {
							assert.Equal(t, hw.GPUMem(r), op.Dst.Buf.At, "%s rank %d %s: the FIFO is the sender's", name, r, op.Label)
						}
						if op.Kind == Read && op.Src.Buf.At == prev {
							reads++
							assert.Equal(t, hw.LoopSimple, op.Kernel.Loop, op.Label)
							assert.Equal(t, prev, op.Kernel.LoopAt, "%s: the loop waits on the peer's memory", op.Label)
							assert.Contains(t, []int{1, 2}, op.Kernel.Sources, op.Label)
						}
					}
				}
				assert.Positive(t, reads, "%s: the receivers load the peers' FIFOs", name)
			}
		}
	}
}

// Over PCIe a block's loads of its peer wait their round trip, at most
// its loads in flight at once, where its stores to the peer are posted:
// with one channel NCCL's ring/Simple in read mode moves less than in
// write mode, and small calls pay the round trips of their steps. With
// four channels both fill more of the link and the gap narrows.
func TestP2PReadOverPCIePaysTheRoundTrip(t *testing.T) {
	us := func(bytes int64, channels int, transport string) float64 {
		return runUs(t, "ring", req(t, "rtxpro6000x4-1numa", 4, bytes, map[string]string{"proto": "simple", "transport": transport, "channels": fmt.Sprint(channels)}), 1)
	}
	for _, ch := range []int{1, 4} {
		for _, size := range []int64{64 << 10, 64 << 20} {
			w, r := us(size, ch, "p2p"), us(size, ch, "p2p_read")
			t.Logf("ring/simple 4 × RTX PRO 6000, %d channel(s), %d B: write %.1f µs, read %.1f µs (×%.2f)", ch, size, w, r, r/w)
			assert.Greater(t, r, w, "%d channels, %d B", ch, size)
		}
	}
	gap := func(ch int) float64 { return us(64<<20, ch, "p2p_read") / us(64<<20, ch, "p2p") }
	assert.Greater(t, gap(1), gap(4), "more blocks keep more loads in flight")
}

// NCCL in read mode is measured apart from NCCL in write mode: its whole
// allreduces are its own mechanism, so that write mode's measurements do
// not stand for it (a report drops a whole variant nothing measured).
func TestP2PReadIsMeasuredApart(t *testing.T) {
	r := req(t, "h200x2", 2, 64<<20, map[string]string{"proto": "simple", "p2p_read": "on"})
	ms := MechanismsOf(plan(t, "nccl", r), r.Top)
	assert.Contains(t, ms, Whole("nccl (P2P read)", RouteNVLink))
	assert.NotContains(t, ms, Whole("nccl", RouteNVLink))
	r.Opts = map[string]string{"proto": "simple"}
	assert.Contains(t, MechanismsOf(plan(t, "nccl", r), r.Top), Whole("nccl", RouteNVLink))
	r.Opts = map[string]string{"proto": "ll", "p2p_read": "on"}
	assert.Contains(t, MechanismsOf(plan(t, "nccl", r), r.Top), Whole("nccl", RouteNVLink), "LL writes in either mode")
}

// A receive loop that loads its FIFO from memory not its own (SHM's host
// memory, P2P read's sender) loads the rank's own input in the same loop
// where the primitive reduces (recvReduceSend, recvReduceCopySend: two
// sources), and the received data alone where it copies (recvCopySend,
// recv: one), as NCCL's primitives do.
func TestReceiveLoopsCountTheRanksInput(t *testing.T) {
	for _, opts := range []map[string]string{
		{"proto": "simple", "transport": "shm"},
		{"proto": "simple", "transport": "p2p_read"},
		{"proto": "ll128", "transport": "shm"},
	} {
		s := plan(t, "ring", req(t, "h200x8-nvswitch", 4, 1<<20, opts))
		bySources := map[string]map[int]int{} // step phase → sources → count
		for _, op := range s.Programs[0] {
			if op.Kind != Read || op.Src.Buf.At == hw.GPUMem(0) || !strings.HasSuffix(op.Label, " load") {
				continue
			}
			phase := op.Label[:2] // "rs" (reduce-scatter) or "ag" (all-gather)
			if bySources[phase] == nil {
				bySources[phase] = map[int]int{}
			}
			bySources[phase][op.Kernel.Sources]++
		}
		require.NotEmpty(t, bySources["rs"], "%v", opts)
		require.NotEmpty(t, bySources["ag"], "%v", opts)
		for n := range bySources["rs"] {
			assert.Equal(t, 2, n, "%v: a reduce-scatter receive reduces", opts)
		}
		// the all-gather's receives copy (the last reduce-scatter step's
		// receive, recvReduceCopySend, is labelled rs)
		for n := range bySources["ag"] {
			assert.Equal(t, 1, n, "%v: an all-gather receive copies", opts)
		}
	}
}
