package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// host_link_concurrency: several GPUs moving data to or from host memory at
// once, the total rate.
func init() { Register(trace.KindHostLinkConcurrency, hostLinkTwin) }

func hostLinkTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: "host_link_concurrency " + r.What}
	per := r.BytesPerGPU
	if per == 0 {
		per = 256 << 20
		t.Note = "bytes_per_gpu absent: 256 MiB assumed (FORMAT.md)"
	}
	if r.What == "sm_ll128_spin" || r.What == "sm_read_beside_ll128_spin" {
		return ll128SpinTwin(t, r)
	}
	if r.What == "sm_read_beside_write" {
		// the loads' rate beside the stores: the capture's writer stores
		// write_bytes (384 MiB when not given), which a slow reader
		// outlives (its tail runs alone, in the capture as here);
		// read_placement's writers store until every reader is done
		if r.GPUs != 1 || r.Blocks <= 0 {
			return nil, notModelled("sm_read_beside_write on %d GPUs with %d reader blocks: the capture runs one GPU and names its reader's blocks", r.GPUs, r.Blocks)
		}
		beside := &hw.StoresBeside{}
		reader := hw.Kernel{Blocks: r.Blocks, Threads: 512, Beside: beside}
		if r.Threads > 0 {
			reader.Threads = r.Threads
		}
		if r.Placement == "by_sm" {
			if set := extraString(r, "write_set"); !slices.ContainsFunc([]string{"first", "stride", "from", "list"}, func(p string) bool { return strings.HasPrefix(set, p) }) {
				return nil, notModelled("read_placement's sweeps over SMs: a record per SM of one configuration; read_depth*.jsonl hold the configurations once")
			}
			// place_rw's plain loop keeps one load a thread in flight
			// (system/sass_micro_read_sm_90.txt.gz); its modes 2 and 3
			// as their machine code issues them (placeRWInFlight)
			reader.LoadsInFlight = placeRWInFlight(r.LoadsInFlight)
			// read_cores: each reading block beside a storing block on its SM
			beside.StoresOnItsSMs = r.ReaderSM == "with_storer"
			// where the storing SMs lie: the reader's half or the other
			beside.StoresHalf = storesHalf(r)
		} else if r.LoadsInFlight > 0 {
			// read_beside_write's loops variant (read_loop)
			reader.LoadsInFlight = readLoopInFlight(r.LoadsInFlight)
		}
		// a writer kernel with a block on every SM: each reading block
		// beside one of its blocks
		if n, all := writerSharedBlocks(r); n > 0 {
			beside.WriterOnItsSMs = true
			if !all {
				beside.WriterOnSMBlocks = n
			}
		}
		wbytes := sim.Bytes(384 << 20)
		if v := extraNumber(r, "write_bytes"); v > 0 {
			wbytes = sim.Bytes(v)
		}
		if r.Placement == "by_sm" {
			wbytes = 1 << 40
		}
		writer := writerKernel(r)
		toLocal := r.WriteTarget == "local"
		t.Group += " beside " + writerDesc(r, true)
		if r.Placement == "" && r.LoadsInFlight > 0 {
			t.Group += fmt.Sprintf(", %d loads in flight", r.LoadsInFlight)
		}
		if r.Placement == "by_sm" {
			t.Group += fmt.Sprintf(", one launch by SM, %d loads in flight", int(reader.LoadsInFlight))
			t.Group += spanDesc(r)
			t.Group += sharesDesc(r)
			t.Note = "the model's loads do not wait behind the stores of other SMs"
		}
		if h := landedReaderHalves(r); len(h) > 0 && len(h) <= 1+len(beside.StoresHalfSlowest) {
			beside.StoresHalf = h[0]
			copy(beside.StoresHalfSlowest[:], h[1:])
		}
		t.Sim = device(func(top *topology.Topology) (float64, error) {
			return ReadBesideWriteGBps(top, reader, writer, toLocal, sim.Bytes(per), wbytes)
		})
		return t, nil
	}
	t.Sim = device(func(top *topology.Topology) (float64, error) {
		return HostLinkGBpsBlocks(top, r.What, r.GPUs, sim.Bytes(per), r.Blocks)
	})
	return t, nil
}

// writerKernel is the writer a record's loads ran beside (tools/capture's
// read_beside_write, chase_beside_write, chase_grid): write_blocks of
// write_threads (512 when not given), a system fence after every four of
// a thread's stores with write_mode volatile_fence4, each thread's 16-B
// store then its write_pause_ns where given; no blocks: none.
func writerKernel(r trace.Record) hw.Kernel {
	if r.WriteBlocks <= 0 {
		return hw.Kernel{}
	}
	w := hw.Kernel{Blocks: r.WriteBlocks, Threads: 512, StoreSpan: writerSpan(r)}
	if r.WriteMode == "volatile_fence4" {
		w.StoresPerFence = 4
	}
	if r.WriteThreads > 0 {
		w.Threads = r.WriteThreads
	}
	if r.WritePauseNs > 0 {
		w.RateCap = sim.Rate(float64(w.Blocks*w.Threads*16) / (float64(r.WritePauseNs) * 1e-9))
	}
	return w
}

// writerSpan is the bytes a record's writers sweep again and again
// (hw.Kernel.StoreSpan), by tools/capture's code: read_placement's
// writers (placement by_sm) each their own MiB (write_span own_mib), each
// their own write_span_bytes ("own") or together write_span_bytes, 128 MiB
// when not given ("wide"); the writer kernels of read_beside_write,
// chase_beside_write and chase_grid (sm_write16) a grid-stride loop over
// 192 MiB, 24 MiB when paced (write_pause_ns), chase_grid's write_own
// (write_span own_mib) each block its own MiB.
func writerSpan(r trace.Record) sim.Bytes {
	n := sim.Bytes(r.WriteBlocks)
	switch {
	case r.Placement != "by_sm" && r.WritePauseNs > 0:
		return 24 << 20
	case r.Placement != "by_sm" && r.WriteSpan != "own_mib":
		return 192 << 20
	case r.WriteSpan == "own":
		return n * sim.Bytes(r.WriteSpanBytes)
	case r.WriteSpan == "wide" && r.WriteSpanBytes > 0:
		return sim.Bytes(r.WriteSpanBytes)
	case r.WriteSpan == "wide":
		return 128 << 20
	}
	return n << 20
}

// spanDesc names, for a read_placement record, where its writers store
// when not each its own MiB.
func spanDesc(r trace.Record) string {
	switch {
	case r.WriteSpan == "own":
		return ", each writer rewriting its own " + sim.Bytes(r.WriteSpanBytes).String()
	case r.WriteSpan == "wide" && r.WriteSpanBytes > 0:
		return ", stores across " + sim.Bytes(r.WriteSpanBytes).String()
	case r.WriteSpan == "wide":
		return ", stores across 128 MiB"
	}
	return ""
}

// sharesDesc names, for a read_cores record (two blocks an SM), whether
// its readers share their SMs with storing blocks (trace.Record.ReaderSM).
func sharesDesc(r trace.Record) string {
	var d string
	switch r.ReaderSM {
	case "with_storer":
		d = ", reading beside a storing block on each SM"
	case "without_storer":
		d = ", reading on SMs that store nothing"
	}
	return d + halvesDesc(r)
}

// halvesDesc names where a record's storing SMs lie among the SMs' halves
// relative to its loading SM (storesHalf), "" where that is not known.
func halvesDesc(r trace.Record) string {
	switch h := storesHalf(r); {
	case h.AllOwn():
		return ", storing SMs in the reader's half"
	case h.AllOther():
		return ", storing SMs in the other half"
	case h.Both():
		return ", storing SMs in both halves"
	}
	return ""
}

// writerDesc names the writer a record's loads ran beside (tools/capture's
// read_beside_write and chase_beside_write): its blocks, with threads
// their threads a block, then where and how it stored when not plainly to
// host memory.
func writerDesc(r trace.Record, threads bool) string {
	w := strconv.Itoa(r.WriteBlocks) + " writer blocks"
	if r.WriteBlocks == 0 {
		return w
	}
	if threads {
		th := r.WriteThreads
		if th == 0 {
			th = 512
		}
		w += " × " + strconv.Itoa(th)
	}
	if r.WriteTarget == "local" {
		w += " to local memory"
	}
	if r.WritePauseNs > 0 {
		w += ", paced"
	}
	if r.WriteMode != "" {
		w += ", " + r.WriteMode
	}
	if r.Placement != "by_sm" && r.WriteSpan == "own_mib" {
		w += " each rewriting its own MiB"
	}
	return w
}

// extraString is a string field this package carries undecoded (the
// record's Extra), "" when absent or not a string.
func extraString(r trace.Record, name string) string {
	var v string
	if raw, ok := r.Extra[name]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	return ""
}

// extraNumber is a number field this package carries undecoded, 0 when
// absent or not a number.
func extraNumber(r trace.Record, name string) float64 {
	var v float64
	if raw, ok := r.Extra[name]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	return 0
}

// placeRWInFlight is the 16-B loads a reading thread of tools/capture's
// place_rw keeps in flight for a record's loads_in_flight, as its machine
// code issues them (testdata/h200x1-arsim/system/sass_micro_place_rw_sm_90.txt.gz,
// the build the capture's read_depth*.jsonl and chase_forms.jsonl ran;
// TestPlaceRWInFlightIsTheSASS reads it off): the four-load batch (mode 2)
// compiles to a loop of 16 loads that waits four times, four in flight;
// the eight-load batch (mode 3) to one of 16 loads that waits five times,
// the compiler interleaving each pair's adds with the next pair's loads:
// 3.2 in flight, not eight.
func placeRWInFlight(n int) float64 {
	if n == 8 {
		return 16.0 / 5
	}
	return float64(max(n, 1))
}

// readLoopInFlight is the 16-B loads a thread of tools/capture's read_loop
// keeps in flight for a record's loads_in_flight (the loads of one batch
// in its source), as its machine code issues them
// (testdata/h200x1-arsim/system/sass_micro_read_loop_sm_90.txt.gz, nvcc's
// build of the kernel NVRTC compiles in the capture, 56 registers): the
// compiler unrolls the four-load loop and keeps six loads in flight, and
// splits the eight-load batch into two of four. The two- and sixteen-load
// batches ran once, in a build of the kernel with all five batches
// (read_beside_write_14.jsonl; sass_micro_read_loop_14_sm_90.txt.gz, 66
// registers), which kept 8 and 12; that build kept 8 for the four-load
// batch too, where this gives 6.
func readLoopInFlight(n int) float64 {
	switch n {
	case 2:
		return 8
	case 4:
		return 6
	case 8:
		return 4
	case 16:
		return 12
	}
	return float64(n)
}

// landedReaderHalves is, for the reader kernel of a read_beside_write
// record that recorded none of its SMs, where its blocks lie beside the
// writer kernel's by where they land (landedReaders): each distinct
// placement of the storing SMs relative to a loading block
// (storesHalfAt), in the order the blocks land. None where the record is
// not such a record or a block's place is not known.
func landedReaderHalves(r trace.Record) []hw.StoreHalves {
	list, sms, ok := landedReaders(r)
	if !ok {
		return nil
	}
	halfOf := chipHalves(r)
	var hs []hw.StoreHalves
	for _, sm := range sms {
		h := storesHalfAt(r, list, sm, halfOf)
		if !h.Known {
			return nil
		}
		if !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	return hs
}
