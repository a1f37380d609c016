package validate

import (
	"fmt"
	"strconv"

	"github.com/arsim/arsim/hw"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// pointer_chase: one dependent load of local, peer or host memory, a read
// round trip. Page touches (tools/capture page_touch) of one page the
// launch before touched too are that; many pages at once (the block's
// loads queue) and pages no launch touched (misses of the L2 and of the
// translation caches) are not modelled.
func init() { Register(trace.KindPointerChase, pointerChaseTwin) }

func pointerChaseTwin(r trace.Record) (*Twin, error) {
	if r.Pages > 1 || r.Touch == "fresh" {
		why := fmt.Sprintf("a page touch of %d page(s), %s", max(r.Pages, 1), r.Touch)
		return nil, &SkipError{Why: ErrNotModelled, Reason: why + ": many loads of one block at once and pages no launch touched are not modelled",
			Cause: fmt.Errorf("%s: %w", why, ErrNotModelled)}
	}
	if r.ChaseLanes > 1 && r.ChaseLanes != 32 {
		why := fmt.Sprintf("a chase by %d lanes", r.ChaseLanes)
		return nil, &SkipError{Why: ErrNotModelled, Reason: why + ": only a lone thread's chase and a whole warp's (32 lanes) are modelled",
			Cause: fmt.Errorf("%s: %w", why, ErrNotModelled)}
	}
	t := &Twin{
		Group: "pointer_chase " + r.Target,
		Sim:   device(func(top *topology.Topology) (float64, error) { return PointerChaseNs(top, r.Target) }),
	}
	if r.WriteBlocks > 0 || r.ReadBlocks > 0 {
		// tools/capture's chase_beside_write, read_placement's and
		// chase_grid's: the chase beside blocks storing to host memory,
		// the stores queued ahead of its loads (hw.Machine.HostLoadWait),
		// and beside blocks loading it, their loads outstanding ahead of
		// its own (hw.Machine.HostReadQueueWait)
		writer := writerKernel(r)
		var reader hw.Kernel
		if r.ReadBlocks > 0 {
			reader = hw.Kernel{Blocks: r.ReadBlocks, Threads: 512}
			if r.ReadThreads > 0 {
				reader.Threads = r.ReadThreads
			}
			// chase_grid's read_loop readers: the loads a thread keeps in
			// flight as their machine code issues them
			reader.LoadsInFlight = readLoopInFlight(r.LoadsInFlight)
		}
		t.Sim = device(func(top *topology.Topology) (float64, error) {
			return PointerChaseBesideNs(top, r.Target, writer, reader, r.WriteTarget == "local", r.ChaseLanes == 32, r.ReaderSM == "with_storer", writerOnItsSM(r), storesHalf(r))
		})
		readers := strconv.Itoa(r.ReadBlocks) + " reader blocks"
		if r.ReadThreads > 0 {
			readers += " × " + strconv.Itoa(r.ReadThreads)
		}
		if r.LoadsInFlight > 0 {
			readers += ", " + strconv.Itoa(r.LoadsInFlight) + " loads in flight"
		}
		switch {
		case r.WriteBlocks == 0:
			t.Group += " beside " + readers
		case r.ReadBlocks > 0:
			t.Group += " beside " + writerDesc(r, false) + " and " + readers
		default:
			t.Group += " beside " + writerDesc(r, false)
		}
		if r.Placement == "by_sm" {
			t.Group += ", one launch by SM"
			t.Group += spanDesc(r)
			t.Group += sharesDesc(r)
		} else {
			// chase_grid's chase pinned to an SM beside a probed writer kernel
			t.Group += halvesDesc(r)
		}
	}
	if r.ChaseLanes == 32 {
		t.Group += ", a warp's chase"
	}
	return t, nil
}
