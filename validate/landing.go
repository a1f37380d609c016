package validate

import (
	"strconv"
	"strings"

	"github.com/arsim/arsim/trace"
)

// h200LandingOrder is the order in which the blocks of kernels launched
// one after another take the SMs of an idle H200, read off tools/capture's
// landing part (testdata/h200x1-arsim/system/landing.json: a kernel of n
// blocks × 512 threads, then a one-block kernel on another stream, and the
// reverse, 8 launches each, n = 1–9, 12, 16, 24, 32, 66, 131, 132): the
// first eight blocks on SMs 124, 126, 128, 130, 125, 127, 129, 131 (in
// that order), then the even SMs from 0 (one SM of each TPC), then the odd
// ones. A kernel of n blocks holds the first n (as a set: past eight the
// order within a launch varies, the set did not in any of the 8 launches
// of any n), and a kernel launched beside it lands on the n + 1st; beside
// 132 blocks, anywhere.
func h200LandingOrder() []int {
	order := []int{124, 126, 128, 130, 125, 127, 129, 131}
	for sm := 0; sm < 124; sm += 2 {
		order = append(order, sm)
	}
	for sm := 1; sm < 124; sm += 2 {
		order = append(order, sm)
	}
	return order
}

// landedChase is, for a chase launched after a writer kernel and its
// readers that recorded none of their SMs (tools/capture's chase_grid and
// chase_beside_write on an H200, without write_sms: the writers, then the readers, then the
// chase, each on a stream of its own), the writer
// kernel's SMs (comma separated, as write_sms) and the chase's SM by
// h200LandingOrder: the readers' blocks land next after the writers', the
// chase after them, or on the SM it recorded (chase_sm). The order was captured with blocks of 512 threads;
// it is taken for the readers' and writers' 128 to 1,024 too (an
// estimate: a block of any of those sizes leaves room on its SM, and the
// blocks take one SM each first). False where the record says where they ran, is not
// such a record, or the writers and readers fill every SM.
func landedChase(r trace.Record) (writeSMs string, chaseSM int, ok bool) {
	if r.Kind != trace.KindPointerChase || r.Placement != "" || r.WriteSMs != "" || r.WriteBlocks <= 0 ||
		!strings.HasPrefix(r.System, "h200") {
		return "", 0, false
	}
	order := h200LandingOrder()
	if r.WriteBlocks+r.ReadBlocks >= len(order) {
		return "", 0, false
	}
	w := make([]string, r.WriteBlocks)
	for i := range w {
		w[i] = strconv.Itoa(order[i])
	}
	chaseSM = order[r.WriteBlocks+r.ReadBlocks]
	if r.ChaseSM != 0 {
		// the SM the chase recorded (0 is SM 0 or not recorded alike)
		chaseSM = r.ChaseSM
	}
	return strings.Join(w, ","), chaseSM, true
}

// landedReaders is, for the loads of a read_beside_write record that
// recorded none of its kernels' SMs (tools/capture's read_beside_write,
// chase_beside_write and chase_grid on an H200: the writer kernel, then
// the readers', each on a stream of its own), the writer kernel's SMs
// (comma separated, as write_sms) and the readers' blocks' SMs by
// h200LandingOrder: the readers' blocks land next after the writers'.
// The order was captured with blocks of 512 threads and is taken for 128
// to 1,024 too (an estimate, as in landedChase). False where the record
// says where they ran, is not such a record, or the two kernels' blocks
// outnumber the SMs (then some share an SM with a writer block).
func landedReaders(r trace.Record) (writeSMs string, readSMs []int, ok bool) {
	if r.Kind != trace.KindHostLinkConcurrency || r.What != "sm_read_beside_write" || r.Placement != "" ||
		r.WriteSMs != "" || r.WriteBlocks <= 0 || r.Blocks <= 0 || r.GPUs != 1 || !strings.HasPrefix(r.System, "h200") {
		return "", nil, false
	}
	order := h200LandingOrder()
	if r.WriteBlocks+r.Blocks > len(order) {
		return "", nil, false
	}
	w := make([]string, r.WriteBlocks)
	for i := range w {
		w[i] = strconv.Itoa(order[i])
	}
	return strings.Join(w, ","), order[r.WriteBlocks : r.WriteBlocks+r.Blocks], true
}

// writerOnItsSM reports whether the loading blocks of a record whose
// writer is a kernel of its own (tools/capture's read_beside_write,
// chase_beside_write, chase_grid; not read_placement's one launch) share
// their SMs with the writer kernel's blocks streaming stores to host
// memory, all of them or some (writerSharedBlocks).
func writerOnItsSM(r trace.Record) bool {
	n, _ := writerSharedBlocks(r)
	return n > 0
}

// writerSharedBlocks is how many of a record's loading blocks (its
// readers, or its one chase) share an SM with a block of a writer kernel
// of its own streaming stores to host memory, and whether that is all of
// them, on an H200: a writer kernel of at least one block an SM holds
// every SM (h200LandingOrder: its first 132 blocks take one SM each); past
// the SMs the writers leave free, the kernels launched after it land on
// SMs again in the same order (an estimate: the order was captured for
// kernels that fit), so the readers past them, or the chase, share a
// writer's SM; a chase that recorded its SM among the writers' does too
// (chase_sm in write_sms). Writers to local memory (write_target local;
// absent: host, the format's default) queue nothing towards the host.
func writerSharedBlocks(r trace.Record) (n int, all bool) {
	if r.Placement == "by_sm" || r.WriteTarget == "local" || r.WritePauseNs > 0 || r.ReaderSM != "" || r.WriteBlocks <= 0 ||
		!strings.HasPrefix(r.System, "h200") {
		return 0, false
	}
	switch r.Kind {
	case trace.KindHostLinkConcurrency:
		if r.What != "sm_read_beside_write" || r.Blocks <= 0 {
			return 0, false
		}
		if r.WriteBlocks >= h200SMs {
			return r.Blocks, true
		}
		if past := r.WriteBlocks + r.Blocks - h200SMs; past > 0 {
			return past, false
		}
		return 0, false
	case trace.KindPointerChase:
		if r.WriteBlocks >= h200SMs {
			return 1, true
		}
		if r.WriteSMs != "" {
			for _, f := range strings.Split(r.WriteSMs, ",") {
				if sm, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && sm == r.ChaseSM {
					return 1, true
				}
			}
			return 0, false
		}
		if at := r.WriteBlocks + r.ReadBlocks; at >= h200SMs && at-h200SMs < r.WriteBlocks {
			return 1, true
		}
	}
	return 0, false
}
