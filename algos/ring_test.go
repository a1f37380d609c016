package algos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// ncclSizes are the message sizes the ring and tree must be correct for:
// one bf16 element, an odd element count (chunks and slices of unequal
// length, empty ones), and powers of two through the pipelined range.
var ncclSizes = []int64{2, 2 * 1001, 1 << 10, 43008, 1 << 20}

// checkNCCLSweep checks an NCCL-style algorithm over world sizes 2–8,
// every protocol and transport, and the ncclSizes.
func checkNCCLSweep(t *testing.T, algo string) {
	for _, n := range []int{2, 3, 4, 5, 8} {
		for _, p := range []string{"ll", "ll128", "simple"} {
			for _, tr := range []string{"p2p", "shm"} {
				for _, size := range ncclSizes {
					name := fmt.Sprintf("n%d/%s/%s/%dB", n, p, tr, size)
					t.Run(name, func(t *testing.T) {
						s := plan(t, algo, req(t, "rtxpro6000x8-2numa", n, size, map[string]string{"proto": p, "transport": tr}))
						require.NoError(t, Check(s))
					})
				}
			}
		}
	}
}

// Every world size, protocol and transport must give every rank the sum of
// all inputs, with no race between the FIFO slots' reuse, two back to back
// allreduces included (the checker runs two). 16 ranks are skipped: the
// presets have at most 8 GPUs.
func TestRingChecks(t *testing.T) {
	checkNCCLSweep(t, "ring")
	// NVLink machine, and 64 MiB (the op-count cap's worst case) with
	// each protocol.
	for _, p := range []string{"ll", "ll128", "simple"} {
		t.Run("h200x8/64MiB/"+p, func(t *testing.T) {
			s := plan(t, "ring", req(t, "h200x8-nvswitch", 8, 64<<20, map[string]string{"proto": p}))
			require.NoError(t, Check(s))
		})
	}
	t.Run("shm/64MiB/3ch", func(t *testing.T) {
		s := plan(t, "ring", req(t, "rtxpro6000x8-2numa", 5, 64<<20+6, map[string]string{"transport": "shm", "channels": "3"}))
		require.NoError(t, Check(s))
	})
}

func opCount(s *Schedule) int {
	n := 0
	for _, p := range s.Programs {
		n += len(p)
	}
	return n
}

// The checker's ancestor sets are O(ops²): the slice cap keeps the
// largest schedules near 10k ops.
func TestRingOpCounts(t *testing.T) {
	for _, c := range []struct {
		n     int
		bytes int64
		proto string
	}{{8, 43008, "ll"}, {8, 1 << 20, "simple"}, {8, 64 << 20, "ll"}, {8, 64 << 20, "ll128"}, {8, 64 << 20, "simple"}, {8, 256 << 20, "simple"}} {
		s := plan(t, "ring", req(t, "rtxpro6000x8-switches", c.n, c.bytes, map[string]string{"proto": c.proto}))
		t.Logf("ring n=%d %d B %s: %d ops", c.n, c.bytes, c.proto, opCount(s))
		assert.Less(t, opCount(s), 20000, "op count must stay within the checker's budget")
	}
}

// Planted bug: rank 2 skips the reduction of one reduce-scatter step (its
// own input never joins chunk 0); the op stays as a no-op so the program
// is still well formed. Every rank's output for chunk 0 then misses rank
// 2's input, and the checker must say which rank and which bytes.
func TestCheckerCatchesMissingRingStep(t *testing.T) {
	s := plan(t, "ring", req(t, "rtxpro6000x8-2numa", 4, 4096, map[string]string{"channels": "1"}))
	found := false
	for i, op := range s.Programs[2] {
		if op.Label == "rs step 1 ch0 loop 0 slice 0 reduce" {
			s.Programs[2][i] = Op{Kind: Compute, After: op.After, Label: "dropped"}
			found = true
		}
	}
	require.True(t, found)
	err := Check(s)
	require.Error(t, err)
	// Rank 2 receives chunk (2−1−1) mod 4 = 0 at step 1: bytes [0, 1024).
	assert.Regexp(t, `rank \d output bytes \[0, 1024\) hold ranks \{0,1,3\} of allreduce 1 \(3 of 4 inputs\)`, err.Error())
}

func busBw(n int, bytes int64, us float64) float64 {
	return 2 * float64(n-1) / float64(n) * float64(bytes) / (us * 1e3) // GB/s
}

// A 256 MiB ring on PCIe switches streams at the bottleneck link's payload
// rate: each GPU's Gen5 x16 link carries 2(n−1)/n of the message each way,
// SM stores in 128-B TLPs. Pipelining must hide the per-hop latencies (≥ 70
// % of the payload rate) and nothing may beat the link (≤ 100 %).
func TestRingBusBandwidthAtLinkRate(t *testing.T) {
	r := req(t, "rtxpro6000x8-switches", 8, 256<<20, map[string]string{"proto": "simple"})
	us := runUs(t, "ring", r, 1)
	ps := r.Top.Params
	raw := 32 * 128.0 / 130 / 8 * 16 // Gen5 x16, GB/s
	payload := raw * ps.Get("pcie.link_efficiency") * ps.Get("pcie.sm_write_payload") / (ps.Get("pcie.sm_write_payload") + ps.Get("pcie.tlp_overhead"))
	bw := busBw(8, 256<<20, us)
	t.Logf("ring simple 256 MiB: %.0f µs, bus bandwidth %.1f GB/s of %.1f GB/s payload rate (%.0f %%)", us, bw, payload, 100*bw/payload)
	assert.GreaterOrEqual(t, bw, 0.7*payload)
	assert.LessOrEqual(t, bw, payload)
}

// LL moves 8 B of data per 16-B line, so where the link is the limit it
// gets at most about half of Simple's bandwidth.
func TestRingLLHalfOfSimple(t *testing.T) {
	ll := runUs(t, "ring", req(t, "rtxpro6000x8-switches", 8, 64<<20, map[string]string{"proto": "ll"}), 1)
	simple := runUs(t, "ring", req(t, "rtxpro6000x8-switches", 8, 64<<20, map[string]string{"proto": "simple"}), 1)
	t.Logf("64 MiB: ll %.0f µs, simple %.0f µs, ratio of bandwidths %.2f", ll, simple, simple/ll)
	assert.LessOrEqual(t, simple/ll, 0.55)
}

// SHM pays a posted write to host memory, a host-memory poll and a read
// round trip per hop, P2P only the write and a local poll: at small sizes
// SHM is slower.
func TestRingSHMSlowerThanP2PSmall(t *testing.T) {
	for _, size := range []int64{1 << 10, 43008} {
		p := runUs(t, "ring", req(t, "rtxpro6000x8-2numa", 8, size, map[string]string{"proto": "ll", "transport": "p2p"}), 3)
		s := runUs(t, "ring", req(t, "rtxpro6000x8-2numa", 8, size, map[string]string{"proto": "ll", "transport": "shm"}), 3)
		t.Logf("%d B: ring/ll p2p %.1f µs, shm %.1f µs", size, p, s)
		assert.Greater(t, s, p)
	}
}

// A small ring pays 2(n−1) hop latencies: it grows with the world size.
func TestRingLatencyGrowsWithRanks(t *testing.T) {
	prev := 0.0
	for _, n := range []int{2, 4, 8} {
		us := runUs(t, "ring", req(t, "rtxpro6000x8-2numa", n, 1024, map[string]string{"proto": "ll"}), 3)
		assert.Greater(t, us, prev)
		prev = us
	}
}

// Where the platform forbids P2P, transport=p2p is refused with a hint.
func TestRingRefusesForbiddenP2P(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 4096, nil)
	require.NoError(t, r.Top.Params.Set("p2p.across_sockets", 0, "test"))
	top, err := rebuild(r)
	require.NoError(t, err)
	r.Top = top
	_, err = Plan("ring", r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use transport=shm")
	r.Opts = map[string]string{"transport": "shm"}
	s, err := Plan("ring", r)
	require.NoError(t, err)
	require.NoError(t, Check(s))
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	_, err = Run(m, s, RunOptions{})
	require.NoError(t, err)
}

// rebuild builds r's preset again with r.Top's (modified) parameters.
func rebuild(r Request) (*topology.Topology, error) {
	p, err := topology.Lookup(r.Top.Name)
	if err != nil {
		return nil, err
	}
	return p.BuildWith(r.Top.Params)
}

// The ring reserves exactly the ops it adds (ringOps), for every
// protocol, transport, channel count and world size tried.
func TestRingReservesItsOps(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	for _, o := range []map[string]string{nil, {"proto": "ll"}, {"proto": "ll128"}, {"transport": "shm"}, {"proto": "ll", "transport": "shm"}, {"channels": "7"}} {
		for _, b := range []int64{1024, 43008, 1 << 20, 3 << 20, 64 << 20} {
			for _, n := range []int{2, 3, 8} {
				req := Request{Top: top, Ranks: n, Bytes: b, DType: BF16, Launch: hw.Graph, Opts: o}
				s, err := Plan("ring", req)
				require.NoError(t, err)
				spec, err := commonSpec(req, "ring")
				require.NoError(t, err)
				_, chLen := Split(b, BF16.Size(), spec.channels)
				for r, p := range s.Programs {
					// The planner's launch and call-setup ops come first.
					assert.Equal(t, len(p)-2, ringOps(spec, chLen, n, r), "%v %d B %d ranks: rank %d", o, b, n, r)
				}
			}
		}
	}
}

// An LL step moves in pieces of at least 4 KiB, each with its flag, at
// most as many as asked, and the FIFO holds as many pieces as its steps
// hold bytes; other protocols, and steps of one piece, keep their slices
// and slots.
func TestLLPiecesSplitAStepIntoLines(t *testing.T) {
	for _, c := range []struct {
		p                   ncclProto
		step                int64
		k, most             int
		slot                int64
		ll128               bool
		wantPieces, wantFIF int
	}{
		{protoLL, 32 << 10, 1, 8, 32 << 10, false, 8, 64},  // a full step: 8 pieces of 4 KiB, 8 × 32 KiB of FIFO
		{protoLL, 10 << 10, 1, 8, 32 << 10, false, 3, 76},  // 3 pieces of 3414 B
		{protoLL, 32 << 10, 1, 2, 32 << 10, false, 2, 16},  // capped by the loops
		{protoLL, 2 << 10, 1, 8, 32 << 10, false, 1, 8},    // one piece: the step as it was
		{protoSimple, 1 << 20, 2, 8, 1 << 20, true, 2, 4},  // Simple keeps its slices and slots
		{protoLL128, 1 << 20, 1, 8, 576000, false, 1, 8},   // the ring's LL128 steps move whole
		{protoLL128, 1 << 20, 1, 16, 576000, true, 16, 70}, // the tree's stream: 16 pieces of 64 KiB, 8 × 576,000 B of FIFO
		{protoLL128, 1 << 20, 1, 16, 30720, true, 16, 8},   // a halved chunk of 30,720 B: 8 chunks, fewer bytes than 8 pieces
		{protoLL128, 10 << 10, 1, 16, 30720, true, 3, 71},  // 3 pieces of 3414 B, 8 × 30,720 B of FIFO
	} {
		p, s := llPieces(c.p, c.step, c.k, c.most, c.slot, c.ll128)
		assert.Equal(t, c.wantPieces, p, "%v %d B", c.p, c.step)
		assert.Equal(t, c.wantFIF, s, "%v %d B", c.p, c.step)
	}
}
