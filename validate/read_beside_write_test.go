package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/trace"
)

// What testdata/h200x1-arsim/read_beside_write*.jsonl show, held against
// the files: SM loads of pinned host memory beside SM stores to it are
// slower than alone at every reader size; beside 132 writer blocks they
// move under a third of their rate alone up to 16 reader blocks, and
// 132 writer blocks cost them at least twice what one block does from 2
// to 16 reader blocks, whatever the writer's threads, though one block
// stores about as fast; stores to the GPU's own memory cost them nothing.
// On a sixth (read_beside_write_6.jsonl) the round trip beside 132
// storing blocks is the same with 4 or 16 blocks loading at once and
// longer with 132, not shorter.
// On a fifth (read_beside_write_5.jsonl) volatile stores cost the loads
// what plain ones do, and a system fence after every four of a thread's
// stores leaves the loads half their rate or more beside 8 writer blocks
// from 4 reader blocks, not beside 132.
// On a fourth (read_beside_write_4.jsonl) a dependent load's round trip
// to host memory grows more than eightfold beside two or more storing
// blocks, and by less than half beside one or beside paced stores.
// On a third instance (read_beside_write_3.jsonl) one loading block
// outlives its writer (it ends after the writer's 384 MiB) beside 2 to 66
// storing blocks, so its rate there is its tail alone's as much as the
// stores' doing, and writers paced to about 10 GB/s leave the loads most
// of their rate alone: what costs the loads is a link full of stores.
// Slow readers outlived their writers in every file of the part (39
// records): their rates are upper bounds of the loads beside the stores,
// which is all this test draws from them; read_beside_write_8.jsonl,
// whose writer outlasts every reader, has one block beside 132 writer
// blocks at a tenth of its rate alone or less. The model's loads wait
// behind the storing blocks (hw/hostqueue.go), and its readers speed up
// when the writer's stores land, as these did (docs/VALIDATION.md).
func TestReadsOfHostMemoryBesideStores(t *testing.T) {
	type key struct {
		r, w, threads int
		local         bool
	}
	rate := map[key]float64{}
	third := map[[3]int]float64{} // reader blocks, writer blocks, writer pause (ns)
	outlived := map[[3]int]bool{}
	for _, r := range readOneGPU(t, "read_beside_write_3.jsonl") {
		third[[3]int{r.Blocks, r.WriteBlocks, r.WritePauseNs}] = r.GbpsTotal
		outlived[[3]int{r.Blocks, r.WriteBlocks, r.WritePauseNs}] = r.WriteBlocks > 0 && r.Us > extraNumber(r, "write_us")
	}
	for _, r := range readOneGPU(t, "read_beside_write.jsonl", "read_beside_write_2.jsonl") {
		if r.Kind != trace.KindHostLinkConcurrency || r.What != "sm_read_beside_write" {
			continue
		}
		th := r.WriteThreads
		switch {
		case r.WriteBlocks == 0:
			th = 0
		case th == 0:
			th = 512 // the first run's writer, before the field
		}
		rate[key{r.Blocks, r.WriteBlocks, th, r.WriteTarget == "local"}] = r.GbpsTotal
	}
	require.Len(t, rate, 8*4+8*3*2)
	require.Len(t, third, 4*5+4*2)
	for _, r := range []int{1, 4} {
		for _, w := range []int{2, 4, 16, 32, 66} {
			assert.Less(t, third[[3]int{r, w, 0}], rate[key{r, 0, 0, false}]/3, "%d reader blocks beside %d writers", r, w)
			if r == 1 {
				assert.True(t, outlived[[3]int{r, w, 0}], "one reader block outlives %d writers", w)
			}
		}
	}
	paced := 0
	for k, v := range third {
		if k[2] > 0 {
			paced++
			assert.Greater(t, v, 0.8*rate[key{k[0], 0, 0, false}], "%d reader blocks beside %d paced writers", k[0], k[1])
		}
	}
	assert.Equal(t, 8, paced)

	type modeKey struct {
		mode string
		r, w int
	}
	fifth := map[modeKey]float64{}
	for _, r := range readOneGPU(t, "read_beside_write_5.jsonl") {
		fifth[modeKey{r.WriteMode, r.Blocks, r.WriteBlocks}] = r.GbpsTotal
	}
	for _, r := range []int{1, 4, 16, 132} {
		for _, w := range []int{8, 132} {
			if r >= 16 { // the smaller readers outlived their writers
				assert.InEpsilon(t, fifth[modeKey{"", r, w}], fifth[modeKey{"volatile", r, w}], 0.25, "%d readers beside %d volatile writers", r, w)
			}
		}
		if r >= 4 {
			alone := fifth[modeKey{"", r, 0}]
			assert.Greater(t, fifth[modeKey{"volatile_fence4", r, 8}], alone/2, "%d readers beside 8 fenced writers", r)
			if r <= 16 {
				assert.Less(t, fifth[modeKey{"volatile_fence4", r, 132}], alone/4, "%d readers beside 132 fenced writers", r)
			}
		}
	}

	chase := map[[2]int]float64{} // writer blocks, writer pause (ns)
	for _, r := range readOneGPU(t, "read_beside_write_4.jsonl") {
		if r.Kind == trace.KindPointerChase {
			chase[[2]int{r.WriteBlocks, r.WritePauseNs}] = r.NsPerStep
		}
	}
	require.Len(t, chase, 6)

	// read_beside_write_6.jsonl: beside 132 writers, the round trip with
	// R reader blocks loading at once
	withReaders := map[int]float64{}
	for _, r := range readOneGPU(t, "read_beside_write_6.jsonl") {
		withReaders[r.ReadBlocks] = r.NsPerStep
	}
	require.Len(t, withReaders, 4)
	assert.InEpsilon(t, withReaders[0], withReaders[4], 0.10, "the round trip with 4 loading blocks")
	assert.InEpsilon(t, withReaders[0], withReaders[16], 0.10, "the round trip with 16 loading blocks")
	assert.Greater(t, withReaders[132], withReaders[0], "the round trip with 132 loading blocks")
	alone := chase[[2]int{0, 0}]
	require.Positive(t, alone)
	for k, v := range chase {
		switch {
		case k[0] >= 2 && k[1] == 0:
			assert.Greater(t, v, 8*alone, "a round trip beside %d storing blocks", k[0])
		case k[0] > 0:
			assert.Less(t, v, 1.5*alone, "a round trip beside %d storing blocks (pause %d ns)", k[0], k[1])
		}
	}
	for _, r := range []int{1, 2, 4, 8, 16, 32, 66, 132} {
		alone := rate[key{r, 0, 0, false}]
		require.Positive(t, alone, r)
		for _, w := range []int{1, 8, 132} {
			assert.Less(t, rate[key{r, w, 512, false}], 0.95*alone, "%d reader blocks beside %d writers", r, w)
			if w == 1 { // 8 and 132 writer blocks end their local stores in under 1 ms
				assert.InEpsilon(t, alone, rate[key{r, w, 512, true}], 0.10, "%d reader blocks beside %d writers to local memory", r, w)
			}
		}
		if r <= 16 {
			assert.Less(t, rate[key{r, 132, 512, false}], alone/3, "%d reader blocks beside 132 writers", r)
		}
		if r >= 2 && r <= 16 {
			for _, th := range []int{512, 32} {
				assert.Greater(t, rate[key{r, 1, th, false}], 2*rate[key{r, 132, th, false}], "%d reader blocks: one writer of %d threads against 132", r, th)
			}
		}
	}
}

// read_beside_write_8.jsonl: readers whose loop keeps 1, 4 or 8 loads a
// thread in flight, each a kernel of its own beside a writer kernel that
// outlasts it: beside 132 writer blocks every one loads a tenth of its
// rate alone or less, beside 2 and 8 a sixth or less.
func TestReadsBesideAWriterThatOutlastsThem(t *testing.T) {
	rate := map[[2]int]float64{} // loads in flight, writer blocks
	for _, r := range readOneGPU(t, "read_beside_write_8.jsonl") {
		rate[[2]int{r.LoadsInFlight, r.WriteBlocks}] = r.GbpsTotal
		if r.WriteBlocks > 0 {
			assert.Less(t, r.Us, extraNumber(r, "write_us"), "the reader ends before its writer")
		}
	}
	require.Len(t, rate, 12)
	for _, l := range []int{1, 4, 8} {
		alone := rate[[2]int{l, 0}]
		assert.Less(t, rate[[2]int{l, 132}], alone/10, "%d loads in flight beside 132 writer blocks", l)
		for _, w := range []int{2, 8} {
			assert.Less(t, rate[[2]int{l, w}], alone/6, "%d loads in flight beside %d writer blocks", l, w)
		}
	}
}

// What testdata/h200x1-arsim/read_beside_write_9.jsonl shows: a chase's
// round trip and the readers' rate measured at once over W storing and R
// loading blocks (separate launches, every reader ending before its
// writer). Readers alone lengthen the chase tenfold once they fill the
// link; beside storing blocks the round trip is the writers' (from half to
// 1.6 times its value with no reader, however many blocks load, where
// readers alone make it 14 times longer) and is shorter beside 8 than
// beside 2 or 4, as on every earlier instance; and the readers' bytes in flight
// (rate × that round trip) grow from 4 to 132 loading blocks by more than
// a GPU-wide limit and by less than each block's own would (33×). Another
// instance repeats the grid.
func TestLoadsBesideStoresGrid(t *testing.T) {
	type key struct{ w, r int }
	rt, rate := map[key]float64{}, map[key]float64{}
	for _, r := range readOneGPU(t, "read_beside_write_9.jsonl") {
		k := key{r.WriteBlocks, r.ReadBlocks}
		switch r.Kind {
		case trace.KindPointerChase:
			rt[k] = r.NsPerStep / 1000
		case trace.KindHostLinkConcurrency:
			k.r = r.Blocks
			rate[k] = r.GbpsTotal
			if r.WriteBlocks > 0 {
				assert.Less(t, r.Us, extraNumber(r, "write_us"), "W=%d R=%d: the readers end before the writer", r.WriteBlocks, r.Blocks)
			}
		}
	}
	require.Len(t, rt, 42)
	require.Len(t, rate, 35)
	assert.Greater(t, rt[key{0, 132}], 10*rt[key{0, 0}], "132 reader blocks alone lengthen the chase tenfold")
	for _, w := range []int{2, 4, 8, 32, 132} {
		for _, r := range []int{1, 4, 16, 66, 132} {
			q := rt[key{w, r}] / rt[key{w, 0}]
			assert.True(t, q > 0.5 && q < 1.6, "W=%d R=%d: the round trip is the writers' (%.2f× its value with no reader)", w, r, q)
		}
		grow := rate[key{w, 132}] * rt[key{w, 132}] / (rate[key{w, 4}] * rt[key{w, 4}])
		assert.True(t, grow > 4 && grow < 16, "W=%d: bytes in flight grow %.1f× from R = 4 to 132", w, grow)
	}
	assert.Less(t, rt[key{8, 0}], rt[key{2, 0}])
	assert.Less(t, rt[key{8, 0}], rt[key{4, 0}])
	// read_beside_write_10.jsonl, the part again on another instance,
	// repeats the readers within 0.8–1.1× and the round trips within
	// 0.8–1.3×
	n := 0
	for _, r := range readOneGPU(t, "read_beside_write_10.jsonl") {
		k := key{r.WriteBlocks, r.ReadBlocks}
		switch r.Kind {
		case trace.KindPointerChase:
			assert.InDelta(t, 1.05, r.NsPerStep/1000/rt[k], 0.25, "W=%d R=%d round trip", k.w, k.r)
		case trace.KindHostLinkConcurrency:
			k.r = r.Blocks
			assert.InDelta(t, 0.95, r.GbpsTotal/rate[k], 0.15, "W=%d R=%d readers", k.w, k.r)
		}
		n++
	}
	assert.Equal(t, 77, n)
}
