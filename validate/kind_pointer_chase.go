package validate

import (
	"fmt"
	"strconv"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"

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
	if r.ReadBlocks > 0 && r.WriteBlocks == 0 {
		// tools/capture's chase_grid: the readers alone fill the link
		// from 16 blocks and the chase waits behind their loads (1.2 µs
		// alone, 17 µs beside 132 reader blocks); a load's wait behind
		// other loads of a full link is not simulated
		why := fmt.Sprintf("a pointer chase beside %d reader blocks and no writer", r.ReadBlocks)
		return nil, &SkipError{Why: ErrNotModelled, Reason: why + ": its wait behind their loads on the link is not modelled",
			Cause: fmt.Errorf("%s: %w", why, ErrNotModelled)}
	}
	if r.Pages > 1 || r.Touch == "fresh" {
		why := fmt.Sprintf("a page touch of %d page(s), %s", max(r.Pages, 1), r.Touch)
		return nil, &SkipError{Why: ErrNotModelled, Reason: why + ": many loads of one block at once and pages no launch touched are not modelled",
			Cause: fmt.Errorf("%s: %w", why, ErrNotModelled)}
	}
	t := &Twin{
		Group: "pointer_chase " + r.Target,
		Sim:   device(func(top *topology.Topology) (float64, error) { return PointerChaseNs(top, r.Target) }),
	}
	if r.WriteBlocks > 0 {
		// tools/capture's chase_beside_write and read_placement's: the
		// chase beside blocks storing to host memory, the stores queued
		// ahead of its loads (hw.Machine.HostLoadWait)
		writer := hw.Kernel{Blocks: r.WriteBlocks, Threads: max(r.WriteThreads, 512)}
		if r.WriteThreads > 0 {
			writer.Threads = r.WriteThreads
		}
		if r.WritePauseNs > 0 {
			writer.RateCap = sim.Rate(float64(writer.Blocks*writer.Threads*16) / (float64(r.WritePauseNs) * 1e-9))
		}
		t.Sim = device(func(top *topology.Topology) (float64, error) {
			return PointerChaseBesideNs(top, r.Target, writer, r.WriteTarget == "local")
		})
		t.Group += " beside " + writerDesc(r, false)
		if r.ReadBlocks > 0 {
			t.Group += " and " + strconv.Itoa(r.ReadBlocks) + " reader blocks"
		}
		if r.Placement == "by_sm" {
			t.Group += ", one launch by SM"
			if r.WriteSpan == "wide" {
				t.Group += ", stores across 128 MiB"
			}
		}
		if r.ReadBlocks > 0 {
			t.Note = "the readers' loads beside the chase are not simulated"
		}
	}
	return t, nil
}
