package validate

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// h200LandingOrder is landing.json's: for every count captured, in all 8
// launches a kernel of n blocks held the first n SMs of the order (as a
// set) and the one block launched beside it landed on the n + 1st
// (wide_first); launched first, the one block landed on the first and the
// n blocks on the next n (one_first). Beside 132 blocks it lands
// anywhere.
func TestH200LandingOrderIsTheCapture(t *testing.T) {
	type run struct {
		Blocks []int `json:"blocks"`
		One    int   `json:"one"`
	}
	var f struct {
		Threads int              `json:"threads"`
		Runs    map[string][]run `json:"runs"`
	}
	data, err := os.ReadFile("../testdata/h200x1-arsim/system/landing.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &f))
	require.Equal(t, 512, f.Threads)
	order := h200LandingOrder()
	require.Len(t, order, h200SMs)
	require.Equal(t, sortedCopy(order), func() []int {
		all := make([]int, h200SMs)
		for i := range all {
			all[i] = i
		}
		return all
	}(), "every SM once")
	require.GreaterOrEqual(t, len(f.Runs), 30)
	for key, runs := range f.Runs {
		var n int
		var first string
		_, err := fmtSscan(key, &n, &first)
		require.NoError(t, err, key)
		require.Len(t, runs, 8, key)
		for i, r := range runs {
			switch {
			case first == "wide_first" && n < h200SMs:
				assert.Equal(t, sortedCopy(order[:n]), sortedCopy(r.Blocks), "%s launch %d", key, i)
				assert.Equal(t, order[n], r.One, "%s launch %d", key, i)
			case first == "wide_first":
				assert.Equal(t, sortedCopy(order), sortedCopy(r.Blocks), "%s launch %d", key, i)
			default:
				require.Equal(t, "one_first", first, key)
				assert.Equal(t, order[0], r.One, "%s launch %d", key, i)
				if n < h200SMs {
					assert.Equal(t, sortedCopy(order[1:n+1]), sortedCopy(r.Blocks), "%s launch %d", key, i)
				}
			}
		}
	}
}

func fmtSscan(key string, n *int, order *string) (int, error) {
	for i := range key {
		if key[i] == ':' {
			v, err := strconv.Atoi(key[:i])
			*n, *order = v, key[i+1:]
			return 2, err
		}
	}
	return 0, strconv.ErrSyntax
}

func sortedCopy(s []int) []int { return slices.Sorted(slices.Values(s)) }

// A chase launched after a writer kernel and its readers runs where the
// next block lands: beside 8 writer blocks (SMs 124–131) on SM 0, beside
// 8 and one reader block on SM 2; records that say where they ran, other
// shapes and kernels that take every SM are left alone.
func TestLandedChase(t *testing.T) {
	chase := func(w, r int) trace.Record {
		return trace.Record{System: "h200x1-vm", Kind: trace.KindPointerChase, WriteBlocks: w, ReadBlocks: r}
	}
	for _, c := range []struct {
		rec      trace.Record
		writers  string
		chaseSM  int
		placed   bool
		describe string
	}{
		{chase(1, 0), "124", 126, true, "one writer"},
		{chase(2, 0), "124,126", 128, true, "two writers"},
		{chase(4, 0), "124,126,128,130", 125, true, "four writers"},
		{chase(8, 0), "124,126,128,130,125,127,129,131", 0, true, "eight writers"},
		{chase(8, 1), "124,126,128,130,125,127,129,131", 2, true, "eight writers and a reader"},
		{chase(8, 16), "124,126,128,130,125,127,129,131", 32, true, "eight writers and 16 readers"},
		{chase(132, 0), "", 0, false, "132 writers: anywhere"},
		{chase(2, 66), "124,126", 120, true, "two writers and 66 readers"},
		{chase(1, 131), "", 0, false, "every SM taken"},
		{func() trace.Record { r := chase(2, 0); r.WriteSMs = "0,2"; return r }(), "", 0, false, "probed"},
		{func() trace.Record { r := chase(2, 0); r.ChaseSM = 40; return r }(), "124,126", 40, true, "the chase's SM recorded"},
		{func() trace.Record { r := chase(2, 0); r.Placement = "by_sm"; return r }(), "", 0, false, "one launch"},
		{func() trace.Record { r := chase(2, 0); r.System = "rtx"; return r }(), "", 0, false, "not an H200"},
	} {
		w, sm, ok := landedChase(c.rec)
		assert.Equal(t, c.placed, ok, c.describe)
		assert.Equal(t, c.writers, w, c.describe)
		assert.Equal(t, c.chaseSM, sm, c.describe)
	}
}

// Beside 8 writer blocks of a kernel of their own (SMs 124–131) the chase
// from SM 0 waits at the stride rule's uneven level: the rule speaks for
// SMs 124–131 from SM 0, and calls them uneven.
func TestEightLandedWritersAreUneven(t *testing.T) {
	h := storesHalf(trace.Record{System: "h200x1-vm", Kind: trace.KindPointerChase, WriteBlocks: 8})
	assert.True(t, h.AllOwn())
	assert.True(t, h.StrideLevels)
	assert.True(t, h.Uneven)
	assert.Equal(t, 4, h.StrideTPCs)
	// the same SMs behind SM 124's own part (a load from SM 131) the rule
	// leaves to the count
	speaks, _ := strideRuleBeside([]int{124, 125, 126, 127, 128, 129}, 131)
	assert.False(t, speaks)
	// and behind group 0's SMs from SM 131 it speaks
	speaks, _ = strideRuleBeside([]int{0, 1, 16, 17}, 131)
	assert.True(t, speaks)
}

func TestLandedReaders(t *testing.T) {
	readers := func(w, r int) trace.Record {
		return trace.Record{System: "h200x1-vm", Kind: trace.KindHostLinkConcurrency, What: "sm_read_beside_write", GPUs: 1, WriteBlocks: w, Blocks: r}
	}
	for _, c := range []struct {
		rec      trace.Record
		writers  string
		readers  []int
		describe string
	}{
		{readers(2, 1), "124,126", []int{128}, "two writers, one reader"},
		{readers(8, 4), "124,126,128,130,125,127,129,131", []int{0, 2, 4, 6}, "eight writers, four readers"},
		{readers(4, 6), "124,126,128,130", []int{125, 127, 129, 131, 0, 2}, "readers over both parts"},
		{readers(8, 124), "124,126,128,130,125,127,129,131", h200LandingOrder()[8:], "every SM taken, none twice"},
		{readers(8, 132), "", nil, "some readers beside a writer block on its SM"},
		{readers(132, 4), "", nil, "132 writers"},
		{func() trace.Record { r := readers(2, 1); r.WriteSMs = "0,2"; return r }(), "", nil, "probed"},
		{func() trace.Record { r := readers(2, 1); r.Placement = "by_sm"; return r }(), "", nil, "one launch"},
		{func() trace.Record { r := readers(2, 1); r.GPUs = 2; return r }(), "", nil, "two GPUs"},
		{func() trace.Record { r := readers(2, 1); r.System = "rtx"; return r }(), "", nil, "not an H200"},
		{func() trace.Record { r := readers(2, 1); r.Kind = trace.KindPointerChase; return r }(), "", nil, "a chase (landedChase)"},
	} {
		w, sms, ok := landedReaders(c.rec)
		assert.Equal(t, c.readers != nil, ok, c.describe)
		assert.Equal(t, c.writers, w, c.describe)
		assert.Equal(t, c.readers, sms, c.describe)
	}
}

// Beside eight landed writer blocks (SMs 124–131) four readers land on
// SMs 0, 2, 4 and 6: SM 0 in the writers' half and GPC (the stride rule's
// uneven level), SMs 2, 4 and 6 in the other half; the kernel's loads
// wait the longer of the two (its slowest block), in the order the blocks
// land.
func TestLandedReaderHalves(t *testing.T) {
	r := trace.Record{System: "h200x1-vm", Kind: trace.KindHostLinkConcurrency, What: "sm_read_beside_write", GPUs: 1, WriteBlocks: 8, Blocks: 4}
	hs := landedReaderHalves(r)
	require.Len(t, hs, 2)
	assert.True(t, hs[0].AllOwn() && hs[0].StrideLevels && hs[0].Uneven, "SM 0: %+v", hs[0])
	assert.True(t, hs[1].AllOther(), "SMs 2, 4, 6: %+v", hs[1])
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	top, err := p.Build()
	require.NoError(t, err)
	got := twinSim(t, top, r, hostLinkTwin)
	alone := func(h hw.StoreHalves) float64 {
		v, err := ReadBesideWriteGBps(top, hw.Kernel{Blocks: 4, Threads: 512, Beside: &hw.StoresBeside{StoresHalf: h}}, writerKernel(r), false, 256<<20, 384<<20)
		require.NoError(t, err)
		return v
	}
	a, b := alone(hs[0]), alone(hs[1])
	assert.NotEqual(t, a, b, "the two places wait differently")
	assert.Equal(t, min(a, b), got, "the kernel loads at its slowest block's pace")
	assert.Nil(t, landedReaderHalves(trace.Record{System: "h200x1-vm", Kind: trace.KindHostLinkConcurrency, What: "sm_read_beside_write", GPUs: 1, WriteBlocks: 132, Blocks: 4}))
}

func TestWriterSharedBlocks(t *testing.T) {
	readers := func(w, r int) trace.Record {
		return trace.Record{System: "h200x1-vm", Kind: trace.KindHostLinkConcurrency, What: "sm_read_beside_write", GPUs: 1,
			WriteBlocks: w, Blocks: r, WriteTarget: "host"}
	}
	chase := func(w, r int) trace.Record {
		return trace.Record{System: "h200x1-vm", Kind: trace.KindPointerChase, Target: "host", WriteBlocks: w, ReadBlocks: r, WriteTarget: "host"}
	}
	for _, c := range []struct {
		rec      trace.Record
		n        int
		all      bool
		describe string
	}{
		{readers(132, 4), 4, true, "132 writers: every reader"},
		{readers(8, 124), 0, false, "every SM taken once"},
		{readers(8, 132), 8, false, "eight readers past the free SMs"},
		{readers(131, 100), 99, false, "one free SM"},
		{chase(132, 0), 1, true, "the chase beside 132"},
		{chase(131, 0), 0, false, "the chase on the free SM"},
		{chase(131, 2), 1, true, "the chase past the free SM, on a writer's"},
		{chase(8, 132), 0, false, "the chase past the free SMs, on a reader's"},
		{func() trace.Record { r := chase(8, 0); r.WriteSMs = "0,2"; r.ChaseSM = 2; return r }(), 1, true, "the chase on a probed writer's SM"},
		{func() trace.Record { r := readers(132, 4); r.WritePauseNs = 100; return r }(), 0, false, "paced writers"},
		{func() trace.Record { r := readers(132, 4); r.WriteTarget = "local"; return r }(), 0, false, "writers to local memory"},
		{func() trace.Record { r := readers(132, 4); r.WriteTarget = ""; return r }(), 4, true, "write_target absent: host, the format's default"},
		{func() trace.Record { r := readers(132, 4); r.Placement = "by_sm"; return r }(), 0, false, "one launch"},
		{func() trace.Record { r := readers(132, 4); r.System = "rtx"; return r }(), 0, false, "not an H200"},
	} {
		n, all := writerSharedBlocks(c.rec)
		assert.Equal(t, c.n, n, c.describe)
		assert.Equal(t, c.all, all, c.describe)
		assert.Equal(t, c.n > 0, writerOnItsSM(c.rec), c.describe)
	}
}
