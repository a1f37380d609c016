package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/arsim/arsim/trace"
)

// The held-out report: what each predicted record varies from its fitted
// side (dimensionsOf) and the error on each side of the fits, overall and
// by dimension (HeldOut).

// dimensionsOf names what a predicted per-block record varies from its
// fitted side: the family it belongs to and, where one applies, the
// blocks and the memory kind.
func dimensionsOf(r trace.Record) []string {
	d := familyDimensions(r)
	if chip, ok := HeldOutChips[r.System]; ok {
		d = append(d, "chip: "+chip+", every parameter an H200's")
	}
	return d
}

// graphGapDimension adds a graph-gap record's dimension to d: the gap in
// a process past its step (gpu.launch_graph_settled) or before it
// (gpu.launch_graph).
func graphGapDimension(d []string, r trace.Record) []string {
	switch {
	case settledGraphGap(r):
		return append(d, "graph gap in a settled process")
	case graphGapRecord(r):
		return append(d, "graph gap in a process before its step")
	}
	return d
}

// familyDimensions are dimensionsOf's but the chip.
func familyDimensions(r trace.Record) []string {
	var d []string
	switch r.Kind {
	case trace.KindPoll:
		what := "loads"
		if strings.HasPrefix(r.Request, "atomic") {
			what = "atomics"
		}
		d = append(d, fmt.Sprintf("poll %s, %s memory", what, r.Target))
		if r.SpacingBytes > 0 && r.SpacingBytes < 32 {
			d = append(d, "spacing: words in one sector")
		}
	case trace.KindBlockPingpong:
		d = append(d, fmt.Sprintf("block ping-pong %s, %s memory", r.Mode, r.Target))
	case trace.KindPointerChase:
		if r.WriteBlocks > 0 {
			d = append(d, "pointer chase beside SM stores of "+writerDesc(r, false))
		}
		if r.ReadBlocks > 0 && r.WriteBlocks == 0 {
			// gpu.host_loads_outstanding is fitted beside 132 reader
			// blocks of sm_read16 at 512 threads and no writer
			d = append(d, "pointer chase beside SM loads alone")
			if r.ReadThreads > 0 && r.ReadThreads != 512 {
				d = append(d, fmt.Sprintf("pointer chase beside SM loads alone: readers of %d threads a block", r.ReadThreads))
			}
			if r.LoadsInFlight > 0 {
				d = append(d, fmt.Sprintf("pointer chase beside SM loads alone: read_loop keeping %g loads a thread in flight", readLoopInFlight(r.LoadsInFlight)))
			}
		}
	case trace.KindAllreduce:
		d = append(d, fmt.Sprintf("%s %s/%s, %s", r.Impl, r.Algo, r.Proto, r.Launch))
		if r.MaxChannels > 0 {
			d = append(d, fmt.Sprintf("channels: at most %d", r.MaxChannels))
		}
		if r.Bytes > 256<<10 {
			d = append(d, "size: > 256 KiB")
		}
		if r.Dtype != "bf16" {
			d = append(d, "dtype: "+r.Dtype)
		}
		if flagKernel(r) {
			d = append(d, flagKernelDim(r))
		}
		return d
	case trace.KindAllreduceSequence:
		return append(d, fmt.Sprintf("%s %s/%s sequences, %s", r.Impl, r.Algo, r.Proto, r.Launch))
	case trace.KindNCCLKernel:
		return append(graphGapDimension(d, r), "nccl_kernel "+r.NCCLOp)
	case trace.KindEmptyKernel:
		return graphGapDimension(d, r)
	case trace.KindHostLinkConcurrency:
		if r.What == "sm_read_beside_write" {
			return append(d, "host link: SM loads beside SM stores of "+writerDesc(r, false))
		}
		return append(d, fmt.Sprintf("host link %s, blocks each way: fewer than 132", r.What))
	case trace.KindLoop:
		switch r.Loop {
		case "ll":
			if r.Recv == "none" {
				d = append(d, "loop ll, send only")
			} else {
				d = append(d, "loop ll, lines in "+r.Recv+" memory")
			}
		case "copy":
			if r.Dests > 1 {
				d = append(d, fmt.Sprintf("loop push %s→%s, several destinations", r.Src, r.Dst))
				break
			}
			d = append(d, "loop copy "+r.Src+"→"+r.Dst)
			if r.SrcLoads == "volatile" {
				d = append(d, "copy: sources read volatile (ld.volatile.global)")
			}
		case "group_barrier":
			d = append(d, fmt.Sprintf("loop group_barrier %s, %s memory", r.Layout, r.Target))
			if r.Mode != "" && r.Mode != "volatile" {
				d = append(d, "barrier flags: "+r.Mode)
			}
			if r.Groups > 1 {
				d = append(d, "groups: 4–16 at once")
			}
		default:
			d = append(d, "loop "+r.Loop)
		}
		if r.Dst == "peer" && r.Loop != "copy" {
			d = append(d, "stores to peer memory (NVLink)")
		}
	}
	d = append(d, memoryDim(r))
	if r.Blocks > 1 {
		d = append(d, "blocks: 2–132")
	} else {
		d = append(d, "blocks: 1")
	}
	return d
}

// flagKernelDim is a flag kernel's row by route and block count
// (gpu.kernel_prologue is fitted at one block over NVLink).
func flagKernelDim(r trace.Record) string {
	blocks := "1 block"
	switch {
	case r.Blocks > 8:
		blocks = "9–132 blocks"
	case r.Blocks > 1:
		blocks = "2–8 blocks"
	}
	route := "host"
	if r.Transport == trace.TransportP2P {
		route = "NVLink"
	}
	return fmt.Sprintf("%s %s, %s", r.Impl, route, blocks)
}

// memoryDim is the memory-kind row of a predicted per-block or micro
// record: whether any of what it times (its flags, polls, loads, stores,
// lines, neighbours or the stores beside it) lies in pinned host memory,
// or all of it in GPU memory. The two sides differ in what the model
// knows: GPU memory's costs follow the loop and the blocks, host memory's
// also where lines land and what the GPU queues towards the host.
func memoryDim(r trace.Record) string {
	host := r.Target == "host" || r.NeighbourPlace == "host" || r.Loop == "host_shot" ||
		r.Kind == trace.KindHostLinkConcurrency || (r.WriteBlocks > 0 && r.WriteTarget != "local")
	for _, m := range []string{r.Src, r.Dst, r.Recv} {
		host = host || strings.Contains(m, "host")
	}
	if host {
		return "memory: pinned host memory"
	}
	return "memory: GPU memory only"
}

// HeldOut is the error of the records on each side of the fits, and of
// the predicted ones by dimension.
type HeldOut struct {
	Fitted    ErrorStats `json:"fitted"`
	Predicted ErrorStats `json:"predicted"`
	// PredictedBeyond is how many predicted records lie beyond
	// BeyondPct.
	PredictedBeyond int `json:"predicted_beyond_20pct"`
	// Spread is the predicted side's error had every configuration
	// measured more than once been predicted at its measured median, and
	// every other record exactly: what the runs' own spread leaves to any
	// model that gives one value per configuration (no model of one
	// machine tells the runs apart). SpreadBeyond counts its records
	// beyond BeyondPct.
	Spread       ErrorStats `json:"spread_floor"`
	SpreadBeyond int        `json:"spread_floor_beyond_20pct"`
	// Typical is the model's error on the predicted side with the runs'
	// spread left out: each record's configuration's median predicted
	// value against its median measured one (a configuration measured
	// once is its own median), counted once per record as Predicted is.
	// It asks whether the model gives the typical run of a configuration
	// (on several instances of one machine type, the typical chip), where
	// Predicted asks it of every run. TypicalBeyond counts its records
	// beyond BeyondPct, Configurations the configurations.
	Typical        ErrorStats     `json:"against_configuration_medians"`
	TypicalBeyond  int            `json:"against_configuration_medians_beyond_20pct"`
	Configurations int            `json:"predicted_configurations"`
	Dims           []DimensionRow `json:"by_dimension"`
}

// BeyondPct is the |error| beyond which HeldOut counts records: the
// per-block issue's p95 target.
const BeyondPct = 20.0

// DimensionRow is the error of the predicted records along one dimension.
type DimensionRow struct {
	Dimension string `json:"dimension"`
	ErrorStats
	// Beyond counts the row's records beyond BeyondPct; MedianPct is the
	// median of their signed errors (below 0: the model is fast), which
	// tells a bias of the model along the dimension from a scatter.
	Beyond    int     `json:"beyond_20pct"`
	MedianPct float64 `json:"median_error_pct"`
	// Repeats, of the row's records whose configuration was measured more
	// than once in the files given: how far they lie from their
	// configuration's median (about the best a model that cannot tell the
	// runs apart does), and Model the model's error on those same records;
	// nil when none was.
	Repeats *ErrorStats `json:"repeats,omitempty"`
	Model   *ErrorStats `json:"model_on_repeats,omitempty"`
}

// heldOut builds the report from the compared records; nil when no record
// is covered by a fit.
func heldOut(recs []Compared) *HeldOut {
	var fitted, predicted, spread []float64
	type dimErrs struct{ abs, signed, rep, repModel []float64 }
	dims := map[string]*dimErrs{}
	devs, _ := repeatDeviations(recs)
	for i, r := range recs {
		switch {
		case r.HostPaced: // its value is a host parameter, not the fitted ones
		case r.FittedFor != "":
			fitted = append(fitted, math.Abs(r.ErrorPct))
		case r.Dimensions != nil:
			a := math.Abs(r.ErrorPct)
			predicted = append(predicted, a)
			spread = append(spread, max(devs[i], 0))
			for _, d := range r.Dimensions {
				de := dims[d]
				if de == nil {
					de = &dimErrs{}
					dims[d] = de
				}
				de.abs = append(de.abs, a)
				de.signed = append(de.signed, r.ErrorPct)
				if devs[i] >= 0 {
					de.rep = append(de.rep, devs[i])
					de.repModel = append(de.repModel, a)
				}
			}
		}
	}
	if len(fitted)+len(predicted) == 0 {
		return nil
	}
	typical, configs := configurationErrors(recs)
	h := &HeldOut{Fitted: statsOf(fitted), Predicted: statsOf(predicted), PredictedBeyond: beyond(predicted, BeyondPct),
		Spread: statsOf(spread), SpreadBeyond: beyond(spread, BeyondPct), Typical: statsOf(typical), TypicalBeyond: beyond(typical, BeyondPct),
		Configurations: configs}
	for _, d := range slices.Sorted(func(yield func(string) bool) {
		for k := range dims {
			if !yield(k) {
				return
			}
		}
	}) {
		de := dims[d]
		row := DimensionRow{Dimension: d, ErrorStats: statsOf(de.abs), Beyond: beyond(de.abs, BeyondPct), MedianPct: median(de.signed)}
		if len(de.rep) > 0 {
			rep, model := statsOf(de.rep), statsOf(de.repModel)
			row.Repeats, row.Model = &rep, &model
		}
		h.Dims = append(h.Dims, row)
	}
	return h
}

// configurationErrors is the |error| of the model against each predicted
// record's configuration's median (HeldOut.Typical), one per record in the
// order the configurations first appear, and the number of
// configurations.
func configurationErrors(recs []Compared) ([]float64, int) {
	groups := configGroups(recs, func(i int, r Compared) (string, bool) {
		if r.HostPaced || r.FittedFor != "" || r.Dimensions == nil {
			return "", false
		}
		if r.config == "" {
			return fmt.Sprintf("\x00record %d", i), true // nothing to group by: its own configuration
		}
		return r.config, true
	})
	var errs []float64
	for _, idx := range groups {
		var meas, pred []float64
		for _, i := range idx {
			meas = append(meas, recs[i].Measured)
			pred = append(pred, recs[i].Predicted)
		}
		if m := median(meas); m > 0 {
			e := math.Abs(median(pred)/m-1) * 100
			for range meas {
				errs = append(errs, e)
			}
		}
	}
	return errs, len(groups)
}

// beyond counts the values of abs above limit.
func beyond(abs []float64, limit float64) int {
	n := 0
	for _, a := range abs {
		if a > limit {
			n++
		}
	}
	return n
}

func statsOf(abs []float64) ErrorStats {
	return ErrorStats{Count: len(abs), MedianAbsPct: median(abs), P95AbsPct: nearestRank(abs, 95)}
}
