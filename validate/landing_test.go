package validate

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
