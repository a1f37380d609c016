package validate

import (
	"fmt"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// The simulated twins of the micro-measurement kinds of trace format v1
// (memcpy, sm_access, pointer_chase, flag_pingpong, fence, empty_kernel,
// host_link_concurrency). Each builds a fresh machine, runs the
// measurement and returns the value the capture reports.

// CopyAPI is the host API that issues copies.
type CopyAPI uint8

// Copy APIs.
const (
	// TorchCopy is PyTorch's tensor.copy_ (the shared h200x2 capture).
	TorchCopy CopyAPI = iota
	// CUDAMemcpy is cudaMemcpyAsync called directly (tools/capture).
	CUDAMemcpy
)

// MemcpyIssueUs is the host's issue interval, in µs, of eager copies
// through api in direction dir: MemcpyEager's floor when the host, not the
// copy engine, paces them.
func MemcpyIssueUs(top *topology.Topology, dir hw.CopyDir, api CopyAPI) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	if api == TorchCopy {
		return m.Phys.TorchIssue[dir].Micros(), nil
	}
	return m.Phys.CUDAMemcpyIssue.Micros(), nil
}

// MemcpyEager returns the mean time per operation, in µs, of back-to-back
// eager copies of bytes on rank 0 (P2P: to rank 1): the host issues one
// call per issue interval of the API while the copy engine runs them in
// order, so the mean is the larger of the issue interval and the device
// time per copy. PyTorch's peer copies also add work the device waits for
// (torch.p2p_copy_overhead*).
func MemcpyEager(top *topology.Topology, dir hw.CopyDir, bytes sim.Bytes, api CopyAPI) (float64, error) {
	const n, warm = 12, 4
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	if dir == hw.P2P && m.NumRanks() < 2 {
		return 0, fmt.Errorf("validate: %s: p2p memcpy needs two GPUs", top.Name)
	}
	issue := m.Phys.CUDAMemcpyIssue
	var extra sim.Duration
	if api == TorchCopy {
		issue = m.Phys.TorchIssue[dir]
		if dir == hw.P2P {
			extra = m.Phys.TorchP2POverhead
			if bytes >= m.Phys.TorchP2PLargeFrom {
				extra = m.Phys.TorchP2PLarge
			}
		}
	}
	done := make([]sim.Time, n)
	var runErr error
	var run func(i int)
	deviceFree := sim.Time(0)
	run = func(i int) {
		if i == n {
			return
		}
		// Op i is issued at i × issue; it starts when issued and the engine is free.
		start := max(sim.Time(0).Add(issue*sim.Duration(i)), deviceFree).Add(extra)
		m.Eng.At(start, func() {
			err := m.Copy(0, dir, 1, bytes, fmt.Sprintf("memcpy%d", i), func() {
				done[i] = m.Eng.Now()
				deviceFree = m.Eng.Now()
				run(i + 1)
			})
			if err != nil && runErr == nil {
				runErr = err
			}
		})
	}
	run(0)
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	if runErr != nil {
		return 0, runErr
	}
	return done[n-1].Sub(done[warm-1]).Micros() / float64(n-warm), nil
}

// SMAccessGBps returns the rate, in GB/s, of one kernel of blocks × threads
// on rank 0 reading or writing bytes of target memory with 16-byte accesses
// ("host": NUMA-local pinned memory; "peer": rank 1's memory); volatile:
// a loop of volatile loads, one in flight per thread (hw.Kernel.Volatile).
func SMAccessGBps(top *topology.Topology, write, volatile bool, target string, blocks, threads int, bytes sim.Bytes) (float64, error) {
	m, at, err := machineAt(top, "sm_access", target, false)
	if err != nil {
		return 0, err
	}
	var end sim.Time
	k := hw.Kernel{Blocks: blocks, Threads: threads, Volatile: volatile}
	if write {
		err = m.Write(0, at, bytes, k, "sm_write", func() { end = m.Eng.Now() })
	} else {
		err = m.Read(0, at, bytes, k, "sm_read", func() { end = m.Eng.Now() })
	}
	if err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return float64(bytes) / sim.Duration(end).Seconds() / 1e9, nil
}

// PointerChaseNs returns the time of one dependent 8-byte load by rank 0 of
// target memory ("host", "peer", "local"), in ns: one read round trip.
func PointerChaseNs(top *topology.Topology, target string) (float64, error) {
	m, at, err := machineAt(top, "pointer_chase", target, true)
	if err != nil {
		return 0, err
	}
	d, err := m.RoundTrip(0, at)
	if err != nil {
		return 0, err
	}
	return float64(d) / float64(sim.Nanosecond), nil
}

// PointerChaseBesideNs is PointerChaseNs beside writer (its blocks on rank
// 0 storing to host memory, or to the GPU's own with toLocal, throughout
// the chase) and reader (its blocks loading host memory throughout): a
// dependent load's round trip and, for a chase of host memory, what it
// waits behind the stores (hw.Machine.HostLoadWait) or, where longer,
// behind the readers' loads outstanding (hw.Machine.HostReadQueueWait),
// both taken once the readers' loads run at their rate, and with ownSM
// (the chasing thread's SM also runs a storing block) its SM's queued
// stores too (hw.Machine.OwnSMStoreWait, the whole of it), and with half
// the storing SMs' half relative to the chasing SM's
// (hw.Machine.HostLoadWaitIn), and with writerOnSM (its SM also runs a
// block of the writer kernel) the share of the wait behind the stores
// that such a load waits (hw.Machine.WriterOnSMShare); a chase of the
// GPU's own memory waits for none of these.
func PointerChaseBesideNs(top *topology.Topology, target string, writer, reader hw.Kernel, toLocal, warp, ownSM, writerOnSM bool, half hw.StoreHalves) (float64, error) {
	m, at, err := machineAt(top, "pointer_chase", target, true)
	if err != nil {
		return 0, err
	}
	if writer.Blocks > 0 {
		dst := hw.HostMem(m.LocalSocket(0))
		if toLocal {
			dst = hw.GPUMem(0)
		}
		if err := m.Write(0, dst, 1<<40, writer, "sm_write", nil); err != nil {
			return 0, err
		}
	}
	if reader.Blocks > 0 {
		// the readers load host memory, whatever the chase walks (a chase
		// of the GPU's own memory beside them waits for nothing in the
		// model: chase_grid with CHASE_GRID_TARGET=local asks whether it does)
		if err := m.Read(0, hw.HostMem(m.LocalSocket(0)), 1<<40, reader, "sm_read", nil); err != nil {
			return 0, err
		}
		// past the reads' start (their first round trip): their rate set
		if err := m.Eng.RunUntil(sim.Time(100 * sim.Microsecond)); err != nil {
			return 0, err
		}
	}
	d, err := m.RoundTrip(0, at)
	if err != nil {
		return 0, err
	}
	if at.Host {
		wait := m.HostLoneLoadWaitIn(0, half)
		if warp {
			wait = m.HostLoadWaitIn(0, half)
		}
		if writerOnSM {
			wait = m.WriterOnSMShare(wait)
		}
		d += wait
		if ownSM {
			d += m.OwnSMStoreWait(0)
		}
		d += m.HostReadQueueWait(0, d)
	}
	return float64(d) / float64(sim.Nanosecond), nil
}

// FlagPingPongUs returns the one-way time, in µs, of GPUs gpu[0] and
// gpu[1] passing a counter back and forth rounds times. via "host": both flags in pinned host
// memory; via "peer": each GPU polls a flag in its own memory that the other
// writes remotely.
func FlagPingPongUs(top *topology.Topology, via string, gpu [2]int, rounds int) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	if m.NumRanks() < 2 {
		return 0, fmt.Errorf("validate: %s: flag ping-pong needs two GPUs", top.Name)
	}
	for _, g := range gpu {
		if g < 0 || g >= m.NumRanks() {
			return 0, fmt.Errorf("validate: flag ping-pong between GPUs %d and %d: %s has GPUs 0–%d", gpu[0], gpu[1], top.Name, m.NumRanks()-1)
		}
	}
	if gpu[0] == gpu[1] {
		return 0, fmt.Errorf("validate: flag ping-pong of GPU %d with itself", gpu[0])
	}
	if rounds <= 0 {
		return 0, fmt.Errorf("validate: flag ping-pong needs rounds > 0, got %d", rounds)
	}
	var where [2]hw.Mem
	switch via {
	case "host":
		where = [2]hw.Mem{hw.HostMem(m.LocalSocket(gpu[0])), hw.HostMem(m.LocalSocket(gpu[0]))}
	case "peer":
		where = [2]hw.Mem{hw.GPUMem(gpu[0]), hw.GPUMem(gpu[1])}
	default:
		return 0, fmt.Errorf("validate: flag ping-pong via %q is not one of host, peer", via)
	}
	flags := [2]*sim.FlagVar{sim.NewFlag(m.Eng, "flag0"), sim.NewFlag(m.Eng, "flag1")}
	var runErr error
	keep := func(err error) {
		if err != nil && runErr == nil {
			runErr = err
		}
	}
	var end sim.Time
	// hop k: the GPU (k%2) writes value k+1 into the other's flag; the other
	// waits for it and answers.
	var hop func(k int)
	hop = func(k int) {
		if k == 2*rounds {
			end = m.Eng.Now()
			return
		}
		from, to := k%2, 1-k%2
		keep(m.SignalFlag(gpu[from], where[to], flags[to], int64(k+1), 1))
		keep(m.WaitFlag(gpu[to], where[to], flags[to], int64(k+1), sim.Name(fmt.Sprintf("gpu%d", gpu[to])), 0, hw.Poll{}, func() { hop(k + 1) }))
	}
	hop(0)
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	if runErr != nil {
		return 0, runErr
	}
	return sim.Duration(end).Micros() / float64(2*rounds), nil
}

// EmptyKernelUs returns the time of one eager launch of an empty kernel, in µs.
func EmptyKernelUs(top *topology.Topology) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	return m.IssueInterval().Micros(), nil
}

// HostLinkGBps runs what ("ce_h2d", "ce_d2h", "ce_bidir", "sm_read",
// "sm_write") on GPUs 0…gpus−1 at once, bytesPerGPU each (ce_bidir: half
// each way on two streams; SM kernels: 264 blocks × 512 threads), and
// returns the total rate in GB/s: gpus × bytes / time of the slowest.
func HostLinkGBps(top *topology.Topology, what string, gpus int, bytesPerGPU sim.Bytes) (float64, error) {
	return HostLinkGBpsBlocks(top, what, gpus, bytesPerGPU, 0)
}

// HostLinkGBpsBlocks is HostLinkGBps with sm_bidir's blocks each way (0:
// the capture's default, 132).
func HostLinkGBpsBlocks(top *topology.Topology, what string, gpus int, bytesPerGPU sim.Bytes, bidirBlocks int) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	if gpus <= 0 || gpus > m.NumRanks() {
		return 0, fmt.Errorf("validate: %s: host_link_concurrency with %d GPUs, machine has %d", top.Name, gpus, m.NumRanks())
	}
	var end sim.Time
	fin := func() { end = max(end, m.Eng.Now()) }
	k := hw.Kernel{Blocks: 264, Threads: 512}
	for r := 0; r < gpus; r++ {
		host := hw.HostMem(m.LocalSocket(r))
		switch what {
		case "ce_h2d":
			err = m.Copy(r, hw.H2D, 0, bytesPerGPU, "h2d", fin)
		case "ce_d2h":
			err = m.Copy(r, hw.D2H, 0, bytesPerGPU, "d2h", fin)
		case "ce_bidir":
			err = m.Copy(r, hw.H2D, 0, bytesPerGPU/2, "h2d", fin)
			if err == nil {
				err = m.Copy(r, hw.D2H, 0, bytesPerGPU/2, "d2h", fin)
			}
		case "sm_read":
			err = m.Read(r, host, bytesPerGPU, k, "sm_read", fin)
		case "sm_write":
			err = m.Write(r, host, bytesPerGPU, k, "sm_write", fin)
		case "sm_bidir":
			half := hw.Kernel{Blocks: 132, Threads: 512}
			if bidirBlocks > 0 {
				half.Blocks = bidirBlocks
			}
			err = m.Read(r, host, bytesPerGPU/2, half, "sm_read", fin)
			if err == nil {
				err = m.Write(r, host, bytesPerGPU/2, half, "sm_write", fin)
			}
		default:
			return 0, fmt.Errorf("validate: host_link_concurrency %q is not one of ce_h2d, ce_d2h, ce_bidir, sm_read, sm_write, sm_bidir", what)
		}
		if err != nil {
			return 0, err
		}
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return float64(gpus) * float64(bytesPerGPU) / sim.Duration(end).Seconds() / 1e9, nil
}

// ReadBesideWriteGBps is the rate, in GB/s, at which reader (its blocks ×
// threads on rank 0) loads readBytes of NUMA-local pinned host memory while
// writer (0 blocks: none) stores writeBytes at once to that memory, or to
// the GPU's own with toLocal: readBytes over the time the loads take.
func ReadBesideWriteGBps(top *topology.Topology, reader, writer hw.Kernel, toLocal bool, readBytes, writeBytes sim.Bytes) (float64, error) {
	if reader.Blocks <= 0 {
		return 0, fmt.Errorf("validate: sm_read_beside_write needs the reader's blocks")
	}
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	host := hw.HostMem(m.LocalSocket(0))
	var end sim.Time
	// the writer first: the capture launches it first, and the loads
	// wait behind what it queues (hw.Machine.HostLoadWait)
	if writer.Blocks > 0 {
		dst := host
		if toLocal {
			dst = hw.GPUMem(0)
		}
		if err := m.Write(0, dst, writeBytes, writer, "sm_write", func() {}); err != nil {
			return 0, err
		}
	}
	if err := m.Read(0, host, readBytes, reader, "sm_read", func() { end = m.Eng.Now() }); err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return float64(readBytes) / sim.Duration(end).Seconds() / 1e9, nil
}

// WriterBesideReaderGBps is the writer's rate, in GB/s, while reader
// (ReadBesideWriteGBps's) loads readBytes of host memory beside it, as
// tools/capture's read_beside_write derives it from the writer's time
// beside the reader and alone: Wa × (t_r − (T_w − T_wa)) / t_r, Wa the
// writer's rate alone over writeBytes, t_r the reader's time, T_w and
// T_wa the writer's beside it and alone; both start at once.
func WriterBesideReaderGBps(top *topology.Topology, reader, writer hw.Kernel, readBytes, writeBytes sim.Bytes) (float64, error) {
	if reader.Blocks <= 0 || writer.Blocks <= 0 {
		return 0, fmt.Errorf("validate: a writer beside a reader needs both kernels' blocks")
	}
	run := func(withReader bool) (tr, tw sim.Duration, err error) {
		m, err := hw.New(top)
		if err != nil {
			return 0, 0, err
		}
		host := hw.HostMem(m.LocalSocket(0))
		var rEnd, wEnd sim.Time
		if err := m.Write(0, host, writeBytes, writer, "sm_write", func() { wEnd = m.Eng.Now() }); err != nil {
			return 0, 0, err
		}
		if withReader {
			if err := m.Read(0, host, readBytes, reader, "sm_read", func() { rEnd = m.Eng.Now() }); err != nil {
				return 0, 0, err
			}
		}
		if err := m.Eng.Run(); err != nil {
			return 0, 0, err
		}
		return sim.Duration(rEnd), sim.Duration(wEnd), nil
	}
	tr, tw, err := run(true)
	if err != nil {
		return 0, err
	}
	_, twa, err := run(false)
	if err != nil {
		return 0, err
	}
	if tr <= 0 || tw <= tr {
		return 0, fmt.Errorf("validate: the writer (%v) must outlast the reader (%v)", tw, tr)
	}
	wa := float64(writeBytes) / twa.Seconds()
	return wa * (tr - (tw - twa)).Seconds() / tr.Seconds() / 1e9, nil
}

// targetMem names the memory a micro measurement on rank 0 touches: "host"
// (NUMA-local pinned memory), "peer" (rank 1) or, where allowed, "local".
// machineAt builds top's machine and the memory target names on it
// (targetMem).
func machineAt(top *topology.Topology, kind, target string, local bool) (*hw.Machine, hw.Mem, error) {
	m, err := hw.New(top)
	if err != nil {
		return nil, hw.Mem{}, err
	}
	at, err := targetMem(m, kind, target, local)
	return m, at, err
}

func targetMem(m *hw.Machine, kind, name string, local bool) (hw.Mem, error) {
	switch {
	case name == "host":
		return hw.HostMem(m.LocalSocket(0)), nil
	case name == "peer":
		if m.NumRanks() < 2 {
			return hw.Mem{}, fmt.Errorf("validate: %s: %s of a peer needs two GPUs", m.Top.Name, kind)
		}
		return hw.GPUMem(1), nil
	case name == "local" && local:
		return hw.GPUMem(0), nil
	}
	if local {
		return hw.Mem{}, fmt.Errorf("validate: %s target %q is not one of host, peer, local", kind, name)
	}
	return hw.Mem{}, fmt.Errorf("validate: %s target %q is not simulated (host, peer)", kind, name)
}

// ReduceLoopGBps returns the rate, in GB/s, of one kernel of blocks ×
// threads on rank 0 streaming bytes of target memory ("host" or "peer")
// through a loop whose every iteration loads one 16-byte pack remotely
// (and one locally), adds and stores: one remote load in flight per thread,
// turned over once per round trip plus gpu.reduce_loop_overhead.
func ReduceLoopGBps(top *topology.Topology, target string, blocks, threads int, bytes sim.Bytes) (float64, error) {
	m, at, err := machineAt(top, "sm_access read_reduce", target, false)
	if err != nil {
		return 0, err
	}
	var end sim.Time
	k := hw.Kernel{Blocks: blocks, Threads: threads, LoadsInFlight: 1, ReduceLoop: true}
	if err := m.Read(0, at, bytes, k, "read_reduce", func() { end = m.Eng.Now() }); err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return float64(bytes) / sim.Duration(end).Seconds() / 1e9, nil
}

// GraphKernelGapUs returns the time per kernel of a replayed CUDA graph
// of empty kernels, in µs (gpu.launch_graph).
func GraphKernelGapUs(top *topology.Topology) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	return m.Phys.LaunchGraph.Micros(), nil
}

// SettledGraphKernelGapUs returns the time per kernel of a replayed CUDA
// graph of empty kernels in a process whose gap has stepped up, in µs
// (gpu.launch_graph_settled).
func SettledGraphKernelGapUs(top *topology.Topology) (float64, error) {
	return top.Params.Get("gpu.launch_graph_settled"), nil
}

// FenceNs returns the cost, in ns, of a system-scope fence on rank 0 after
// stores to target memory ("local", "peer", "host").
func FenceNs(top *topology.Topology, target string) (float64, error) {
	m, at, err := machineAt(top, "fence", target, true)
	if err != nil {
		return 0, err
	}
	d, err := m.FenceCost(0, at)
	if err != nil {
		return 0, err
	}
	return float64(d) / float64(sim.Nanosecond), nil
}

// StoreBurstNs is the time one block of threads threads takes to issue
// stores 16-byte stores per thread to target memory, in ns
// (hw.Machine.StoreBurst).
func StoreBurstNs(top *topology.Topology, target string, stores, threads int) (float64, error) {
	m, at, err := machineAt(top, "fence", target, true)
	if err != nil {
		return 0, err
	}
	return float64(m.StoreBurst(0, at, stores, threads)) / float64(sim.Nanosecond), nil
}

// RawLaunchIntervalUs returns the host time per eager kernel launch issued
// back to back through the CUDA driver API (host.cuda_launch_issue, at
// the host's core clock), in µs.
func RawLaunchIntervalUs(top *topology.Topology) (float64, error) {
	return top.Params.HostIssue("host.cuda_launch_issue"), nil
}

// GroupedNCCLCallUs returns the host time per ncclAllReduce issued between
// ncclGroupStart and ncclGroupEnd from C (host.nccl_group_call_issue, at
// the host's core clock), in µs.
func GroupedNCCLCallUs(top *topology.Topology) (float64, error) {
	return top.Params.HostIssue("host.nccl_group_call_issue"), nil
}
