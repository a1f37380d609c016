package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// The captures of loads beside one block streaming stores to host memory
// (testdata/h200x1-arsim/README.md: read_gpcs, read_count*,
// read_beside_write_16 to _20) show what the model does not do yet: these
// tests hold what the files show, so that the README's readings and the
// data stay together. No parameter is read from them.

// readerRow is one host_link_concurrency record of these captures: the
// readers' blocks, their GB/s and the storing blocks' (0: none).
type readerRow struct {
	set              string
	readers, threads int
	read, write      float64
	writing          bool
}

func readerRows(t *testing.T, files ...string) []readerRow {
	t.Helper()
	var out []readerRow
	for _, r := range readOneGPU(t, files...) {
		if r.Kind != trace.KindHostLinkConcurrency || r.What != "sm_read_beside_write" {
			continue
		}
		out = append(out, readerRow{set: extraString(r, "read_set"), readers: r.Blocks, threads: r.Threads,
			read: extraNumber(r, "gbps_read"), write: extraNumber(r, "gbps_write"), writing: r.WriteBlocks > 0})
	}
	require.NotEmpty(t, out, "%v", files)
	return out
}

// Where the readers sit does not matter: four readers beside the storing
// block move alike in every set of SMs on the first chip.
func TestReadersBesideOneStoringBlockAlikeWhereverTheySit(t *testing.T) {
	lo, hi := 1e9, 0.0
	for _, r := range readerRows(t, "read_gpcs.jsonl") {
		if r.writing && r.readers == 4 && r.set != "" {
			lo, hi = min(lo, r.read), max(hi, r.read)
		}
	}
	require.Positive(t, hi)
	assert.Less(t, hi/lo, 1.15, "four readers in every set: %.1f–%.1f GB/s", lo, hi)
}

// Up to 32 readers the storing block keeps its rate and the two fill the
// upstream link at the model's own TLP weights; from 64 it gives way.
func TestReadersAndStoresFillTheUpstreamLink(t *testing.T) {
	top, err := topology.Load("h200x1")
	require.NoError(t, err)
	p := top.Params
	eff := p.Get("pcie.link_efficiency")
	store := (p.Get("pcie.sm_write_payload") + p.Get("pcie.tlp_overhead")) / p.Get("pcie.sm_write_payload") / eff
	request := p.Get("pcie.read_request") / p.Get("pcie.read_completion_payload") / eff
	seen := 0
	for _, r := range readerRows(t, "read_count.jsonl") {
		if !r.writing {
			continue
		}
		switch {
		case r.readers >= 4 && r.readers <= 32:
			seen++
			wire := store*r.write + request*r.read
			assert.InDelta(t, 65.0, wire, 1.5, "%d readers: %.1f GB/s of wire", r.readers, wire)
			assert.Greater(t, r.write, 48.0, "%d readers: the storing block keeps its rate", r.readers)
		case r.readers >= 64:
			seen++
			assert.Less(t, r.write, 30.0, "%d readers in its launch: the storing block gives way", r.readers)
		}
	}
	assert.Equal(t, 9, seen, "4–32 and 64–131 readers")
}

// The stores give way to the loads in flight, not to the SMs they come
// from: 64 readers of 32 or 128 threads leave the storing block its rate.
func TestStoresGiveWayToLoadsInFlightNotToSMs(t *testing.T) {
	thin := 0
	for _, r := range readerRows(t, "read_count_2.jsonl") {
		if r.writing && r.readers == 64 && r.threads < 512 {
			thin++
			assert.Greater(t, r.write, 49.0, "64 readers of %d threads", r.threads)
		}
	}
	assert.Equal(t, 2, thin)
}

// Beside a writer paced to at most 36.2 GB/s, readers move what they do
// beside none, so loads and stores together pass pcie.sm_host_bandwidth.
// The writer's rate is over its whole run; it is its rate beside the
// readers because its run takes as long as beside one reader block, which
// outlives it.
func TestReadersBesideAPacedWriterPassTheSMHostBandwidth(t *testing.T) {
	top, err := topology.Load("h200x1")
	require.NoError(t, err)
	shared := top.Params.Get("pcie.sm_host_bandwidth")
	recs := readOneGPU(t, "read_beside_write_16.jsonl")
	whole := map[int]float64{} // the writer's time beside one reader block, by pause
	for _, r := range recs {
		if r.Kind == trace.KindHostLinkConcurrency && r.WriteBlocks == 1 && r.Blocks == 1 {
			require.Greater(t, r.Us, extraNumber(r, "write_us"), "line %d: one reader block outlives the writer", r.Line)
			whole[r.WritePauseNs] = extraNumber(r, "write_us")
		}
	}
	n := 0
	for _, r := range recs {
		read, write := extraNumber(r, "gbps_read"), extraNumber(r, "gbps_write")
		if r.Kind != trace.KindHostLinkConcurrency || r.WriteBlocks != 1 || r.Blocks != 16 || write > 36.5 {
			continue
		}
		n++
		require.Contains(t, whole, r.WritePauseNs)
		assert.InEpsilon(t, whole[r.WritePauseNs], extraNumber(r, "write_us"), 0.01, "line %d: the writer as beside one reader", r.Line)
		assert.Greater(t, read+write, shared+5, "16 readers beside %.1f GB/s of stores", write)
	}
	assert.Equal(t, 5, n, "the five slow paces")
}

// The stores give way to many readers whether the readers run in the
// storing block's launch (read_count_3: one and two blocks an SM) or in a
// kernel of their own beside a writer kernel of 1, 2 or 8 blocks
// (read_beside_write_20: the writer's rate while the readers ran, from its
// time alone beside each record); beside 132 writer blocks, whose queued
// stores hold the readers to a few GB/s, they do not.
func TestStoresGiveWayToManyReaders(t *testing.T) {
	launch := 0
	for _, r := range readerRows(t, "read_count_3.jsonl") {
		if r.writing && r.readers >= 64 {
			launch++
			assert.Less(t, r.write, 37.0, "%d readers in the storing block's launch", r.readers)
		}
	}
	assert.Equal(t, 4, launch, "one and two blocks an SM, 64 and 131 readers")
	kernels := 0
	for _, r := range readOneGPU(t, "read_beside_write_20.jsonl") {
		if r.WriteBlocks == 0 {
			continue
		}
		alone := extraNumber(r, "write_alone_us")
		require.Positive(t, alone, "line %d: write_alone_us", r.Line)
		wa := extraNumber(r, "write_bytes") / alone / 1e3
		during := wa * (r.Us - (extraNumber(r, "write_us") - alone)) / r.Us
		switch {
		case r.WriteBlocks == 132:
			kernels++
			assert.Greater(t, during, 49.0, "line %d: %d readers beside 132 writer blocks", r.Line, r.Blocks)
		case r.Blocks <= 16:
			kernels++
			assert.Greater(t, during, 47.0, "line %d: %d readers beside %d writer blocks", r.Line, r.Blocks, r.WriteBlocks)
		case r.Blocks >= 66:
			kernels++
			assert.Less(t, during, 32.0, "line %d: %d readers beside %d writer blocks", r.Line, r.Blocks, r.WriteBlocks)
		}
	}
	assert.Equal(t, 22, kernels, "W = 1, 2, 8 at R = 4, 16, 66, 96, 132, and W = 132 at every R")
}

// The model's readers beside one storing block (hw/hostshare.go: what the
// stores leave of pcie.sm_host_bandwidth) lie within 20 % of the plateau
// that 4 to 12 readers measure on the first chip, in one launch
// (read_count.jsonl, read_gpcs.jsonl) and beside the writer's kernel
// (read_beside_write_20.jsonl); nothing in the share is fitted to them.
func TestModelReadersBesideOneStoringBlock(t *testing.T) {
	top, err := topology.Load("h200x1")
	require.NoError(t, err)
	n := 0
	for _, r := range readOneGPU(t, "read_count.jsonl", "read_gpcs.jsonl", "read_beside_write_20.jsonl") {
		if r.Kind != trace.KindHostLinkConcurrency || r.WriteBlocks != 1 || r.Blocks < 4 || r.Blocks > 12 || r.Threads != 512 {
			continue
		}
		n++
		got := hostLinkSim(t, top, r)
		assert.InEpsilon(t, r.GbpsTotal, got, 0.20, "line %d: %d readers beside one storing block", r.Line, r.Blocks)
	}
	assert.Equal(t, 26, n, "read_count 4, 8, 12; read_gpcs 4–8 in every set; read_beside_write_20 4")
}

// Readers alone, one 16-B load a thread in flight (read_count.jsonl,
// read_gpcs.jsonl, nothing fitted on them): their blocks queue for host
// memory together (hw.Machine.queueHostReads), so 4–8 readers move less
// than their blocks' sum alone. Within 10 % at every count of
// read_count's round-robin readers and within 21 % for every set of
// read_gpcs; without the queue 8 readers were +24 % and read_gpcs's sets
// of 7 +33…+52 %.
func TestModelReadersAloneQueueForHostMemory(t *testing.T) {
	top, err := topology.Load("h200x1")
	require.NoError(t, err)
	n := 0
	for _, c := range []struct {
		file string
		tol  float64
	}{{"read_count.jsonl", 0.10}, {"read_gpcs.jsonl", 0.21}} {
		file, tol := c.file, c.tol
		for _, r := range readOneGPU(t, file) {
			if r.Kind != trace.KindHostLinkConcurrency || r.WriteBlocks != 0 || r.Threads != 512 {
				continue
			}
			n++
			assert.InEpsilon(t, r.GbpsTotal, hostLinkSim(t, top, r), tol, "%s line %d: %d readers alone", file, r.Line, r.Blocks)
		}
	}
	assert.Equal(t, 52, n, "read_count 1–131, read_gpcs 1–16 in every set")
}
