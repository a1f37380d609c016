package hw

import (
	"strings"

	"github.com/arsim/arsim/sim"
)

// The twins of the per-block line loops (tools/capture perblock: loop ll,
// ll128w): NCCL's LL and LL128 receive and send loops over lines in local
// or pinned host memory, each at its loop's rate (LoopRate), reading and
// writing as flows beside the producers that store the lines.

// footprint is what a loop record's launch touches of local memory: per
// thread and iteration, read bytes and, to a local destination, written
// bytes; the lines' memory counts only when local.
func footprint(rec PerBlock, read, written int64) int64 {
	if rec.Dst != "local" {
		written = 0
	}
	return int64(rec.Blocks) * int64(rec.Threads) * int64(max(rec.Iters, 1)) * (read + written)
}

// l2Bytes is the GPU's L2 (gpu.l2_size).
func (m *Machine) l2Bytes() int64 { return int64(m.Top.Params.Get("gpu.l2_size")) }

// fromDRAM says whether a line loop's loads come from device memory: its
// local lines were pushed out of the caches, or the launch touches more
// local memory (lines bytes per thread and iteration, src more of its
// user buffer, the destination's lines) than the L2 holds. Lines in host
// memory count as host memory's (hostmem.fresh_line_saving), not here.
func (m *Machine) fromDRAM(rec PerBlock, lines, src int64) bool {
	if rec.Recv == "host" {
		return false
	}
	if rec.Evicted {
		return true
	}
	read := src
	if rec.Recv == "local" {
		read += lines
	}
	return footprint(rec, read, lines) > m.l2Bytes()
}

// llTwin: B blocks of T threads each move iters lines per thread; the
// lines are polled (and so loaded) from the recv memory, stored to the
// destination, both at the LL loop's rate and sharing the links.
func (m *Machine) llTwin(rec PerBlock) (float64, error) {
	at := mem(rec.Recv)
	if rec.Recv == "none" {
		at = GPUMem(0) // a send loop waits on its source, in local memory
	}
	k := Kernel{Blocks: rec.Blocks, Threads: rec.Threads, Wire: 2, Loop: LoopLL, LoopAt: at, Fresh: rec.Fresh, NoPoll: rec.Recv == "none", RuntimeOp: rec.RuntimeOp,
		StepBytes: int64(rec.ItersPerStep) * int64(rec.Threads) * 8}
	// The loads an iteration waits on: the lines (local ones), the user
	// buffer a reduction or a send loads (8 B per thread).
	src := int64(0)
	if rec.Recv == "none" || strings.Contains(rec.LLOp, "reduce") {
		src = 8
	}
	k.FromDRAM = rec.Src == "local_streamed" || m.fromDRAM(rec, 16, src)
	k.LLWarpOps = llWarpOps(rec)
	return m.lineLoopTwin(rec, k, 8, "ll")
}

// blockIssue is how long one block of a local LL loop takes to issue
// what its iterations load and store (smIssueTime): per thread and
// iteration the line it polls (16 B) and, for a reduction, the user
// buffer's 8 B; the sent line (16 B, an op that sends) and the result (8
// B, an op that keeps it: recv and the copies), as tools/capture's pb_ll
// and NCCL's storeLL and output store do. Measured on one H200
// (testdata/h200x1-arsim/ll_ops.jsonl): at 1,024 threads recv_send,
// recv_reduce_send, recv_copy_send and recv_reduce_copy_send take 340,
// 377, 471 and 506 ns an iteration (this gives 334, 372, 463, 501). 0 for
// other loops.
func (m *Machine) blockIssue(rec PerBlock, name string) sim.Duration {
	if name != "ll" {
		return 0
	}
	load, store := 16, 0
	op := llOpOf(rec)
	if op.reduce {
		load += 8
	}
	if op.send {
		store += 16
	}
	if op.keep {
		store += 8
	}
	n := float64(rec.Threads) * float64(max(rec.Iters, 1))
	return m.smIssueTime(n*float64(load), n*float64(store))
}

// ll128Twin: an LL128 loop of warps polling 128-byte lines in the receive
// memory (local or host) and storing to the destination, 64 bytes per
// thread per iteration.
func (m *Machine) ll128Twin(rec PerBlock) (float64, error) {
	k := Kernel{Blocks: rec.Blocks, Threads: rec.Threads, Wire: 128.0 / 120, Loop: LoopLL128, LoopAt: mem(rec.Recv), Fresh: rec.Fresh,
		StepBytes: int64(rec.ItersPerStep) * int64(rec.Threads) * ll128DataPerThread, Sources: 2}
	if !strings.Contains(rec.LLOp, "reduce") {
		k.Sources = 1 // no user buffer to load and add beside the lines
	}
	k.FromDRAM = m.fromDRAM(rec, ll128LineBytesPerThread, int64(k.Sources-1)*ll128LineBytesPerThread)
	return m.lineLoopTwin(rec, k, ll128DataPerThread, "ll128")
}

// lineLoopTwin runs a line loop (LL or LL128) of kernel k, perThread data
// bytes per thread per iteration: a read of the lines from host memory,
// a write to host memory, each at the loop's rate, or, all local, the
// loop's time.
func (m *Machine) lineLoopTwin(rec PerBlock, k Kernel, perThread int64, name string) (float64, error) {
	at := k.LoopAt
	data := sim.Bytes(int64(rec.Blocks) * int64(rec.Threads) * perThread * int64(rec.Iters))
	if rec.Recv == "none" && rec.Dst == "host" {
		// A send loop's stores to host memory: it ends by its clocks
		// before they land (storeLoopEnd).
		return m.storeLoopTwin(rec.Iters, data, k, "", name+" send")
	}
	return m.perIter(rec.Iters, func(done func()) error {
		n := 0
		if rec.Recv == "host" {
			k := k
			k.Polled = true
			if err := m.Read(0, at, data, k, name+" recv", done); err != nil {
				return err
			}
			n++
			if rec.Live {
				// The producers' stores of the same lines, a plain store
				// loop each: they share the way to host memory with the
				// receivers' loads (pcie.sm_host_bandwidth), but the loads,
				// each of a line already stored, are not taken to queue
				// behind them as loads of other host memory queue behind
				// streaming stores (hostqueue.go; that queue here puts
				// ll128_pairs.jsonl's receivers at +27…+468 %, measured
				// on that file: a choice made after seeing it).
				p := Kernel{Blocks: rec.Blocks, Threads: rec.Threads, Wire: k.Wire, PacedStores: true}
				if err := m.Write(0, at, data, p, name+" producer", func() {}); err != nil {
					return err
				}
			}
		}
		if rec.Dst == "host" || rec.Dst == "peer" {
			if err := m.Write(0, mem(rec.Dst), data, k, name+" send", done); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			k.MemLoads = localLoads(rec, k)
			// All local: the loop's time, its lines, user buffer and
			// stores through the GPU's memory, or each block's loads and
			// stores as its SM issues them, whichever is longest.
			d, err := m.LocalTime(0, 0, data, k)
			if err != nil {
				return err
			}
			busy := sim.Duration(0)
			if k.FromDRAM {
				busy = m.MemTime(sim.Bytes(float64(data) * localTraffic(rec, k)))
			}
			m.twinMemBusy += busy
			m.Eng.After(max(d, busy, m.blockIssue(rec, name)), done)
		}
		return nil
	})
}

// localTraffic is what an all-local line loop moves through the GPU's
// memory per byte of data: its lines read (wire bytes, when it receives),
// and stored by a live producer's blocks while it reads them (Live: as
// many blocks as the loop's, each storing the lines it reads), the user
// buffer a reduction or a send loads, its lines stored, and what a receive
// keeps (llOp.keep: tools/capture's receives store what they receive to
// a local buffer, LL its data, LL128 its whole lines).
func localTraffic(rec PerBlock, k Kernel) float64 {
	wire := max(k.Wire, 1)
	t := localLoads(rec, k)
	if rec.Recv == "local" && rec.Live {
		t += wire
	}
	switch {
	case rec.Dst == "local":
		t += wire
	case rec.Recv != "none" && llOpOf(rec).keep && k.Loop == LoopLL128:
		t += wire
	case rec.Recv != "none" && llOpOf(rec).keep:
		t++
	}
	return t
}

// llOp is what an LL loop's operation does each iteration beside polling
// its line: load and add the user buffer (reduce), store the line to the
// next rank (send), store the result (keep: recv and the copies).
type llOp struct{ reduce, send, keep bool }

// llOpOf is the parts of a per-block LL record's operation (LLOp).
func llOpOf(rec PerBlock) llOp {
	return llOp{
		reduce: strings.Contains(rec.LLOp, "reduce"),
		send:   strings.Contains(rec.LLOp, "send"),
		keep:   rec.LLOp == "recv" || strings.Contains(rec.LLOp, "copy"),
	}
}

// llWarpOps is the memory instructions a warp of an LL receive loop
// issues each iteration (Kernel.LLWarpOps), as tools/capture's pb_ll and
// its fixed-op builds issue them: the polled line and one for each part
// of its operation (llOpOf): recv and recv_send two, recv_reduce_send
// three, recv_reduce_copy_send four. A send loop (no lines to poll) keeps
// the fitted cost (0): its warps cost more than its two instructions give
// (pb_ll's sends at 1,024 threads 342 ns an iteration, 263 by the count;
// not modelled).
func llWarpOps(rec PerBlock) int {
	if rec.Recv == "none" {
		return 0
	}
	n := 1 // the polled line
	op := llOpOf(rec)
	for _, part := range [...]bool{op.reduce, op.send, op.keep} {
		if part {
			n++
		}
	}
	return n
}

// localLoads is what an all-local line loop loads from the GPU's memory
// per byte of data: its lines (wire bytes) and the user buffer a
// reduction or a send loads.
func localLoads(rec PerBlock, k Kernel) float64 {
	t := 0.0
	if rec.Recv == "local" {
		t += max(k.Wire, 1)
	}
	if rec.Recv == "none" || strings.Contains(rec.LLOp, "reduce") {
		t++
	}
	return t
}
