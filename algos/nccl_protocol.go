package algos

import (
	"fmt"
	"slices"

	"github.com/arsim/arsim/algos/ncclmodel"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// This file holds what NCCL's ring and tree kernels share: the three
// protocols (LL, LL128, Simple), the transports (P2P into the peer's GPU
// memory, SHM through host memory, P2P read of Simple's FIFO from the
// sender's GPU memory) and a connection: a FIFO of
// NCCL_STEPS buffer slots with a tail counter (data posted, set by the
// sender) and a head counter (slot consumed, set by the receiver).

// ncclProto is an NCCL protocol.
type ncclProto int

const (
	protoLL ncclProto = iota
	protoLL128
	protoSimple
)

var protoNames = [...]string{"ll", "ll128", "simple"}

func (p ncclProto) String() string { return protoNames[p] }

func parseProto(s string) (ncclProto, error) {
	for i, n := range protoNames {
		if n == s {
			return ncclProto(i), nil
		}
	}
	return 0, fmt.Errorf("protocol %q is not one of ll, ll128, simple", s)
}

// NCCL constants (src/include/device.h, collectives.h, init.cc; NCCL 2.30.7).
const (
	ncclSteps            = 8       // NCCL_STEPS: slots per connection FIFO
	llLinesPerThread     = 8       // NCCL_LL_LINES_PER_THREAD
	llMaxNThreads        = 512     // NCCL_LL_MAX_NTHREADS
	ll128MaxNThreads     = 640     // NCCL_LL128_MAX_NTHREADS
	ll128ElemsPerThread  = 120     // NCCL_LL128_ELEMS_PER_THREAD (uint64 words)
	simpleMaxNThreads    = 512     // NCCL_SIMPLE_MAX_NTHREADS
	simpleBuffSize       = 1 << 22 // DEFAULT_BUFFSIZE
	allreduceSliceSteps  = 2       // ALLREDUCE_SLICESTEPS = NCCL_STEPS/4
	maxSlicesPerRingStep = 8       // arsim cap: a 64 MiB schedule stays at about 10k ops for the checker
	maxTreeSlices        = 16      // arsim cap, the same reason
)

// defaultThreads is NCCL's maximum block size for the protocol.
func (p ncclProto) defaultThreads() int {
	switch p {
	case protoLL:
		return llMaxNThreads
	case protoLL128:
		return ll128MaxNThreads
	}
	return simpleMaxNThreads
}

// wire is the wire bytes per payload byte: LL lines are 16 B carrying 8 B
// of data and 8 B of flags; LL128 lines are 128 B carrying 120 B.
func (p ncclProto) wire() float64 {
	switch p {
	case protoLL:
		return 2
	case protoLL128:
		return 128.0 / 120.0
	}
	return 1
}

// inline: LL and LL128 lines carry their own flags, so the receiver sees
// the data as soon as it has landed; Simple fences and then writes a
// separate tail counter.
func (p ncclProto) inline() bool { return p != protoSimple }

// sliceBytes is the payload of one flag-carrying transfer, one step of the
// connection FIFO (NCCL's buffer sizes):
//
//	LL:     8 lines × 512 threads × 16 B per step, half of it data = 32 KiB
//	LL128:  120 × 640 × 8 B per step, 120/128 of it data = 576,000 B
//	Simple: 4 MiB / NCCL_STEPS × ALLREDUCE_SLICESTEPS = 1 MiB per slice
//
// The buffers are sized by the protocols' maximum thread counts whatever
// the launch's block size (NCCL allocates them once per connection).
func (p ncclProto) sliceBytes() int64 {
	switch p {
	case protoLL:
		return llLinesPerThread * llMaxNThreads * 16 / 2
	case protoLL128:
		return ll128ElemsPerThread * ll128MaxNThreads * 8 * 120 / 128
	}
	return simpleBuffSize / ncclSteps * allreduceSliceSteps
}

// treeChunk is the bytes of one step of NCCL's tree: the protocol's step.
// Simple's tree steps are a buffer step each (4 MiB / NCCL_STEPS), not the
// ring's two-step slices, whatever the call's size: NCCL 2.20 dropped the
// halving of the Simple tree's chunk for calls with few chunks per channel
// (calcCollChunking in src/enqueue.cc keeps such loops for CollNet, NVLS
// and the LL128 tree only); in 2.18–2.19 (r) it halves for TreeUpDown
// with Simple too: down to 128 KiB while the call has fewer chunks per
// channel than 8·depth, to 64 KiB below 4·depth, to 32 KiB below depth.
//
// LL128's tree steps are halved (the same function, for TreeUpDown
// with LL128): from a step's line bytes (614,400), while the call has
// fewer chunks per channel than nsteps·64/ppn down to 128 KiB, then
// fewer than nsteps·16/ppn down to 32 KiB, where nsteps = 1 + log2(nodes)
// + 0.1·ppn and ppn is the ranks per node (one node here); a step then
// carries 15/16 of its line bytes. LL's tree steps are not halved.
func (p ncclProto) treeChunk(bytes int64, channels, depth int, r ncclmodel.Release) int64 {
	switch p {
	case protoLL128:
		return ll128TreeChunk(bytes, channels, depth+1)
	case protoSimple:
		chunk := int64(simpleBuffSize / ncclSteps)
		if r.TreeSimpleHalves() {
			// NCCL 2.18–2.19 halve it for mid sizes (enqueue.cc,
			// pattern TreeUpDown; ncclmodel.Release.TreeSimpleHalves)
			per := func() int64 { return bytes / (int64(channels) * chunk) }
			for per() < int64(depth)*8 && chunk > 131072 {
				chunk /= 2
			}
			for per() < int64(depth)*4 && chunk > 65536 {
				chunk /= 2
			}
			for per() < int64(depth) && chunk > 32768 {
				chunk /= 2
			}
		}
		return chunk
	}
	return p.sliceBytes()
}

// ll128TreeChunk is NCCL's LL128 tree step on one node of ranks ranks:
// the payload bytes of a step (treeChunk).
func ll128TreeChunk(bytes int64, channels, ranks int) int64 {
	chunk := int64(ll128ElemsPerThread * ll128MaxNThreads * 8) // line bytes of a step
	ppn := float64(ranks)
	nsteps := 1 + 0.1*ppn // 1 + log2i(nNodes) with one node
	per := func() float64 { return float64(bytes / (int64(channels) * chunk)) }
	for per() < nsteps*64/ppn && chunk > 131072 {
		chunk /= 2
	}
	for per() < nsteps*16/ppn && chunk > 32768 {
		chunk /= 2
	}
	return chunk * 120 / 128
}

// slots is how many slices a connection's FIFO holds at once.
func (p ncclProto) slots() int {
	if p == protoSimple {
		return ncclSteps / allreduceSliceSteps
	}
	return ncclSteps
}

// transport is how one connection moves data.
type transport uint8

const (
	// p2p: the sender stores straight into the receiver's GPU buffer.
	p2p transport = iota
	// shm: the sender stores into a staging buffer in host memory (on the
	// receiver's socket, NCCL_SHM_LOCALITY's default); the receiver loads it
	// back over PCIe.
	shm
	// p2pRead: NCCL's P2P read (NCCL_P2P_READ, src/transport/p2p.cc):
	// Simple's FIFO lives in the sender's GPU memory ("the SIMPLE buffer
	// is tagged on the end of the ncclSendMem structure"), the sender
	// stores into it locally and the receiver's loop loads it from the
	// peer (prims_simple.h: the receive connection's Simple buffer is the
	// sender's); the flags stay where P2P write keeps them. LL and LL128
	// keep their buffers at the receiver: a connection of theirs is p2p.
	p2pRead
)

func (t transport) String() string { return [...]string{"p2p", "shm", "p2p_read"}[t] }

// movesP2PRead is Schedule.Moves of a schedule with a P2P-read connection.
const movesP2PRead = "P2P read"

// loads reports whether the receiver's loop loads the connection's FIFO
// from memory other than its own (SHM's host memory, P2P read's sender):
// that loop then bounds the step, and what it loaded is a local copy.
func (c *conn) loads() bool { return c.tr != p2p }

// ncclSpec is what the ring and tree planners need to know.
type ncclSpec struct {
	algo     string // schedule name
	proto    ncclProto
	threads  int
	channels int
	// transport of the connection from rank a to rank b.
	transport func(a, b int) transport
	// chain: the tree is NCCL's single-node chain instead of the double
	// binary tree (tree only).
	chain bool
	// unroll: Simple's 16-byte loads in flight per thread and source
	// (ncclCollUnroll).
	unroll int
	// release: the NCCL release whose enqueue rules cut the steps (the
	// zero value: ncclmodel.Version's).
	release ncclmodel.Release
	// parts, where set, is each channel's bytes as NCCL's planner spreads
	// the call over them (ncclmodel.Release.ChannelParts), the first being
	// channel first; nil: an even split over channels.
	parts []int64
	first int
}

// split returns each channel's offset and bytes of a call of bytes
// (elements of elem bytes): spec.parts, or an even split.
func (spec ncclSpec) split(bytes, elem int64) (off, size []int64) {
	if spec.parts == nil {
		return Split(bytes, elem, spec.channels)
	}
	off = make([]int64, len(spec.parts))
	size = slices.Clone(spec.parts)
	var o int64
	for i, b := range spec.parts {
		off[i] = o
		o += b
	}
	return off, size
}

// commonSpec reads the options ring and tree share.
func commonSpec(req Request, algo string) (ncclSpec, error) {
	p, err := parseProto(req.Opt("proto", "simple"))
	if err != nil {
		return ncclSpec{}, fmt.Errorf("algos: %s: %w", algo, err)
	}
	t := p2p
	switch req.Opt("transport", "p2p") {
	case "shm":
		t = shm
	case "p2p_read":
		if p == protoSimple {
			t = p2pRead // LL and LL128 write into the receiver's buffer in either mode
		}
	}
	return ncclSpec{
		algo: algo, proto: p,
		threads:   req.IntOpt("threads", p.defaultThreads()),
		channels:  req.IntOpt("channels", 2),
		transport: func(int, int) transport { return t },
		unroll:    simpleUnroll(req.Top, ncclmodel.Release{}),
	}, nil
}

var ncclCommonOptions = []OptionSpec{
	{Name: "proto", Values: []string{"ll", "ll128", "simple"}, Default: "simple", Doc: "NCCL protocol: LL (8-B data + 8-B flag lines), LL128 (120 of 128 B), Simple (bulk + fence + flag)"},
	{Name: "transport", Values: []string{"p2p", "shm", "p2p_read"}, Default: "p2p", Doc: "p2p: write into the peer's GPU buffer; shm: stage through host memory on the receiver's socket (NCCL_P2P_DISABLE); p2p_read: Simple's FIFO in the sender's GPU memory, loaded by the receiver (NCCL_P2P_READ_ENABLE=1; LL and LL128 as p2p)"},
	{Name: "channels", Int: channelsRange, Default: "2", Doc: "channels (CTAs), each over its share of the data"},
	{Name: "threads", Int: threadsRange, Doc: "threads per channel (default NCCL's max for the protocol: LL 512, LL128 640, Simple 512)"},
}

// noteReadUnused says, where transport=p2p_read was asked of a protocol
// other than Simple, that its connections write (LL and LL128 keep their
// buffers at the receiver in NCCL's read mode too).
func noteReadUnused(b *Builder, req Request, spec ncclSpec) {
	if req.Opts["transport"] == "p2p_read" && spec.proto != protoSimple {
		b.Note("%s: transport=p2p_read reads Simple's FIFO only; %s writes into the receiver's buffer, as over p2p", spec.algo, spec.proto)
	}
}

// checkP2P refuses a P2P connection the platform does not allow.
func checkP2P(req Request, spec ncclSpec, a, b int) error {
	if spec.transport(a, b) == shm {
		return nil
	}
	ok, c, err := req.Top.P2PAllowed(req.Top.GPUs()[a], req.Top.GPUs()[b])
	if err != nil {
		return fmt.Errorf("algos: %s: %w", spec.algo, err)
	}
	if !ok {
		return fmt.Errorf("algos: %s: GPU%d→GPU%d crosses a %s path, where %s does not allow P2P; use transport=shm", spec.algo, a, b, c, req.Top.Name)
	}
	return nil
}

// conn is one directed connection of one channel, with NCCL's FIFO of
// slots. Steps are numbered from 1 per allreduce; the tail flag holds the
// last step posted, the head flag the last step consumed.
type conn struct {
	id       string
	from, to int
	tr       transport
	buf      hw.Mem // where the FIFO lives
	tail     Flag
	head     Flag
	slots    int
	slotLen  int64
	// recvGroup, if set, is the loop group of the receiver's loads over
	// SHM (default: a group of their own): the ring's receiver block runs
	// its primitives one after another, its receives in the group of its
	// sends.
	recvGroup string
	sent      int
	recvd     int
	released  int
	lastHead  int // op index (on to) of the last head signal, −1 none
	lastTail  int // op index (on from) of the last tail signal, −1 none
}

// ncclPlanner builds NCCL-style programs.
type ncclPlanner struct {
	b      *Builder
	req    Request
	spec   ncclSpec
	launch []int
	kern   hw.Kernel
	// inOrder: each connection's loops move its steps one at a time
	// (hw.Kernel.InOrder), as NCCL's thread groups do; set by the tree.
	inOrder bool
	// stepBytes, if set, is the payload of one NCCL step where it is not
	// the protocol's FIFO step (the tree's halved LL128 steps): each step
	// pays the protocol's bookkeeping.
	stepBytes int64
}

func newNCCLPlanner(req Request, spec ncclSpec, algo string) *ncclPlanner {
	b := NewBuilder(spec.algo, req.Ranks, req.Bytes, req.DType.Size())
	pl := &ncclPlanner{b: b, req: req, spec: spec, launch: make([]int, req.Ranks),
		kern: hw.Kernel{Blocks: 1, Threads: spec.threads, Wire: spec.proto.wire()}}
	switch spec.proto {
	case protoLL:
		// NCCL's LL moves at most llMaxBw in all (its tuning model's
		// ceiling for LL, from measurement): each channel gets its share.
		pl.kern.RateCap = sim.Rate(req.Top.Params.Get("nccl.ll_max_bw")) * sim.GBps / sim.Rate(max(spec.channels, 1))
	case protoLL128:
		// NCCL's own per-channel ceiling of LL128 (its tuning model's
		// perChMaxRingLL128Bw), beside the block's LL128 loop.
		pl.kern.RateCap = sim.Rate(req.Top.Params.Get("nccl.ll128_channel_bw")) * sim.GBps
	}
	base := NCCLCallSetup(req.Top.Params, algo, spec.proto.String())
	if req.Launch == hw.Graph {
		if req.Opt("graph_mixing", "on") == "off" {
			// without graph mixing support NCCL's call in a CUDA graph
			// costs its kernel's own less the one-GPU saving: the two-GPU
			// per-call residuals are that support's cost (graphMixingOption)
			base = max(0, NCCLKernelOwn(req.Top.Params)-NCCLGraphMixingSaving(req.Top.Params))
		} else {
			base = max(0, base+NCCLGraphLengthCost(req.Top.Params, req.IntOpt("graph_calls", graphCallsFitted)))
		}
	}
	for r := 0; r < req.Ranks; r++ {
		l := b.Add(r, Op{Kind: Launch, Label: "launch"})
		pl.launch[r] = b.Add(r, Op{Kind: Compute, Dur: base, Label: "NCCL per-call cost (its kernel's own, and what two GPUs add)"}, l)
	}
	return pl
}

// newConn makes the connection from → to of a channel; slotLen is the
// largest slice it will carry.
func (pl *ncclPlanner) newConn(name string, from, to int, slotLen int64) *conn {
	id := fmt.Sprintf("%s.%d>%d", name, from, to)
	c := &conn{id: id, from: from, to: to, tr: pl.spec.transport(from, to), slots: pl.spec.proto.slots(), slotLen: slotLen, lastHead: -1, lastTail: -1}
	switch c.tr {
	case p2p, p2pRead:
		// The FIFO and its tail in the receiver's memory; the head in the
		// sender's, written by the receiver. P2P read keeps Simple's FIFO
		// in the sender's memory instead, the flags where they are.
		c.buf = hw.GPUMem(to)
		if c.tr == p2pRead {
			c.buf = hw.GPUMem(from)
			pl.b.s.Moves = movesP2PRead
		}
		c.tail = Flag{At: hw.GPUMem(to), Name: id + ".tail"}
		c.head = Flag{At: hw.GPUMem(from), Name: id + ".head"}
	default:
		// SHM: the FIFO and its tail in the host memory of the receiver's
		// socket, the head in the sender's (NCCL_SHM_LOCALITY's default 2,
		// receiver side: src/transport/shm.cc), so a FIFO across sockets
		// is crossed by the sender's posted stores and read locally.
		c.buf = hw.HostMem(pl.req.Top.GPU(to).Socket)
		c.tail = Flag{At: c.buf, Name: id + ".tail"}
		c.head = Flag{At: hw.HostMem(pl.req.Top.GPU(from).Socket), Name: id + ".head"}
	}
	return c
}

// stepLabels name the ops of one step on a connection: the step's name,
// and that name with each suffix the planner's ops add, made once however
// many ops (of however many ranks) carry it.
type stepLabels struct {
	name string
	with [nSuffixes]string
}

// labelSuffix is one of the suffixes of a step's labels.
type labelSuffix uint8

const (
	sufCredit labelSuffix = iota
	sufBookkeeping
	sufTail
	sufWait
	sufLoad
	sufHead
	sufReduce
	sufStore
	nSuffixes
)

var suffixText = [nSuffixes]string{" credit", " Simple step bookkeeping", " tail", " wait", " load", " head", " reduce", " store"}

func newStepLabels(name string) *stepLabels { return &stepLabels{name: name} }

// plus returns the step's name with suffix x.
func (l *stepLabels) plus(x labelSuffix) string {
	if l.with[x] == "" {
		l.with[x] = l.name + suffixText[x]
	}
	return l.with[x]
}

func (c *conn) slot(k int, n int64) Range {
	return Range{Buf: Buf{At: c.buf, Name: c.id}, Off: int64((k-1)%c.slots) * c.slotLen, Len: n}
}

// loopKern is the planner's kernel for a transfer whose per-thread loop
// bounds its rate (package hw, LoopRate): LL's and LL128's line loops,
// waiting on the memory their lines (or sources) live in, or Simple's
// unrolled copy of sources inputs per element (NCCL's prims_ll.h,
// prims_ll128.h and prims_simple.h; reduceCopy in common_kernel.h); share
// is the fraction of the block's threads on it.
func (pl *ncclPlanner) loopKern(at hw.Mem, sources int, share float64) hw.Kernel {
	k := pl.kern
	k.Share = share
	switch pl.spec.proto {
	case protoLL:
		// Lines in host memory are the SHM FIFO's, which the peer wrote
		// just before (hw.Kernel.Fresh).
		k.Loop, k.LoopAt, k.Fresh, k.NCCLLoop = hw.LoopLL, at, at.Host, true
		k.StepBytes = protoLL.sliceBytes() // each NCCL step's barriers and head store (prims_ll.h)
		// A reduction loads the user buffer, from device memory when the
		// call's input and output span more than the L2.
		k.FromDRAM = sources >= 2 && float64(2*pl.req.Bytes) > pl.req.Top.Params.Get("gpu.l2_size")
		if k.FromDRAM {
			// what it loads from device memory per byte of data, as the
			// per-block twins count it (hw.Kernel.MemLoads): its lines and
			// the user buffer it adds
			k.MemLoads = max(k.Wire, 1) + 1
		}
	case protoLL128:
		// Host lines are the SHM FIFO's, as for LL (hw.Kernel.Fresh).
		k.Loop, k.LoopAt, k.Reload, k.NCCLLoop, k.Sources, k.Fresh = hw.LoopLL128, at, true, true, sources, at.Host
		k.StepBytes = protoLL128.sliceBytes() // each NCCL step's barriers and head store (prims_ll128.h)
		if pl.stepBytes > 0 {
			k.StepBytes = pl.stepBytes
		}
	case protoSimple:
		// NCCL's reduceCopy: warp hunks, no loop start (hw.Kernel.Hunks),
		// its warps renumbered before the packs left over
		// (hw.Kernel.HunkRotate); from 96 threads a primitive that sends
		// keeps one warp out of the copy for the sync (prims_simple.h:
		// nworkers, NCCL_SIMPLE_EXTRA_GROUP_IF_NTHREADS_GE).
		k.Loop, k.LoopAt, k.Unroll, k.Sources, k.Hunks, k.HunkRotate = hw.LoopSimple, at, pl.spec.unroll, sources, true, true
		threads := float64(k.Threads)
		if k.Share > 0 && k.Share < 1 {
			threads *= k.Share // the tree's half of the block
		}
		if threads >= 96 {
			k.SyncWarps = 1
		}
	}
	return k
}

// send posts src (on the sender's GPU) as the connection's next step,
// after deps; it waits for the slot to be free first (head ≥ step −
// slots). sources > 0: the step's loop (its sources in the sender's
// memory, sources inputs per element) bounds the write; 0: the loop that
// produced src carried the bound already (an SHM step forwarding what its
// receive loop loaded). It returns the index of the write.
func (pl *ncclPlanner) send(c *conn, src Range, share float64, label *stepLabels, sources int, deps ...int) int {
	return pl.sendLoop(c, src, share, label, sources, 0, false, deps...)
}

// sendOut is send for a primitive that also stores each element to the
// rank's output (recvReduceCopySend, recvCopySend: hw.Kernel.OutStores);
// the copy to the output is its own op as well (its memory traffic), but
// the loop that issues both stores is the send's.
func (pl *ncclPlanner) sendOut(c *conn, src Range, share float64, label *stepLabels, sources int, deps ...int) int {
	return pl.sendLoop(c, src, share, label, sources, 1, false, deps...)
}

// sendInput is NCCL's send primitive: it posts src, a rank's own data, as
// the connection's next step, its loop loading src with no lines to poll
// (hw.Kernel.NoPoll).
func (pl *ncclPlanner) sendInput(c *conn, src Range, share float64, label *stepLabels, deps ...int) int {
	return pl.sendLoop(c, src, share, label, 1, 0, true, deps...)
}

// sendLoop is send, outStores the primitive's stores to the output
// (hw.Kernel.OutStores), noPoll telling a loop that polls no lines.
func (pl *ncclPlanner) sendLoop(c *conn, src Range, share float64, label *stepLabels, sources, outStores int, noPoll bool, deps ...int) int {
	c.sent++
	k := c.sent
	r := c.from
	var room [8]int // Add copies the list: it need not outlive the call
	after := append(append(room[:0], pl.launch[r]), deps...)
	if k > c.slots {
		after = append(after, pl.b.Add(r, Op{Kind: Wait, Flag: c.head, Value: int64(k - c.slots), Label: label.plus(sufCredit)}, pl.launch[r]))
	}
	kern := pl.kern
	kern.Share = share
	if sources > 0 {
		kern = pl.loopKern(hw.GPUMem(r), sources, share)
		kern.NoPoll = noPoll && kern.Loop == hw.LoopLL
		if kern.Loop == hw.LoopSimple {
			kern.OutStores = outStores
		}
		kern.LoopGroup = c.id // the steps in flight share the block's loop
		kern.InOrder = pl.inOrder
	}
	if kern.RateCap > 0 {
		// LL's and LL128's ceilings bound the connection, however many of
		// its FIFO steps are in flight at once.
		kern.CapGroup = c.id
	}
	w := pl.b.Add(r, Op{Kind: Write, Src: src, Dst: c.slot(k, src.Len), Kernel: kern, Label: label.name}, after...)
	flagAfter := w
	if !pl.spec.proto.inline() {
		// Simple: the data must be visible at the receiver before the tail
		// flag, so every step pays a fence before its flag, and the
		// protocol's per-step bookkeeping.
		flagAfter = fence(pl.b, r, c.buf, w)
		flagAfter = pl.b.Add(r, Op{Kind: Compute, Dur: sim.Nanos(pl.req.Top.Params.Get("nccl.simple_step_overhead")), Label: label.plus(sufBookkeeping)}, flagAfter)
	}
	// The tail counts the steps sent in order, as NCCL's step counter does:
	// a step's tail follows the step before's, so that tail ≥ v means
	// every step up to v has landed (a later step sent first must not
	// release a wait for an earlier one).
	tailAfter := [2]int{flagAfter, c.lastTail}
	tdeps := tailAfter[:1]
	if c.lastTail >= 0 {
		tdeps = tailAfter[:]
	}
	c.lastTail = pl.b.Add(r, Op{Kind: Signal, Flag: c.tail, Value: int64(k), Inline: pl.spec.proto.inline(), Kernel: kern, Label: label.plus(sufTail)}, tdeps...)
	return w
}

// recv waits for the connection's next step of n bytes and returns where
// the data can be used locally and the op after which it can: the FIFO
// slot itself for P2P, or, for SHM and P2P read, a local copy that the
// receive loop loaded from host memory or from the sender's GPU memory.
//
// onward, if set, is the connection the block sends the received data on
// in the same primitive (recvReduceSend, recvCopySend, …): over SHM too,
// Simple's receive loop then stores what it loads from host memory to
// host memory (hw.Kernel.StoresHost).
//
// sources is what the primitive's loop loads per element (2 where it
// reduces the received data with the rank's own, 1 where it copies): the
// receive loop loads both in one loop (prims_simple.h: recvReduceSend
// loads the FIFO and the user buffer; with DirectRead the peer's FIFO),
// waiting its round trip to the FIFO's memory, so its loop counts them
// (Simple: their loads' issue; LL128: the reduction's extra).
func (pl *ncclPlanner) recv(c *conn, n int64, share float64, label *stepLabels, onward *conn, sources int) (Range, int) {
	c.recvd++
	k := c.recvd
	r := c.to
	w := pl.b.Add(r, Op{Kind: Wait, Flag: c.tail, Value: int64(k), Kernel: pl.kern, Label: label.plus(sufWait)}, pl.launch[r])
	slot := c.slot(k, n)
	if c.tr == p2p {
		return slot, w
	}
	tmp := On(r, c.id+".tmp", slot.Off, n)
	// The receive loop polls and loads the lines in host memory (SHM), or
	// loads Simple's FIFO from the sender's GPU memory (P2P read). LL and
	// LL128 lines carry their flags: the poll that saw the tail was the
	// load of the data, so the load pays no second round trip.
	kern := pl.loopKern(c.buf, 1, share)
	kern.Sources = max(sources, 1) // the primitive's own input too, where it reduces
	kern.Polled = pl.spec.proto.inline()
	kern.LoopGroup = c.id + ".recv"
	if c.recvGroup != "" {
		kern.LoopGroup = c.recvGroup
	}
	kern.InOrder = pl.inOrder
	kern.StoresHost = onward != nil && onward.tr == shm && kern.Loop == hw.LoopSimple
	rd := pl.b.Add(r, Op{Kind: Read, Src: slot, Dst: tmp, Kernel: kern, Label: label.plus(sufLoad)}, w)
	return tmp, rd
}

// onwardIf is c when the receiving block sends the data on over it in
// the same primitive, nil otherwise (recv's onward).
func onwardIf(sends bool, c *conn) *conn {
	if sends {
		return c
	}
	return nil
}

// release tells the sender that the oldest received step's slot is free,
// once the ops in after (every use of the data) are done. Head signals of
// a connection are chained so that head ≥ v means every step up to v is
// consumed.
func (pl *ncclPlanner) release(c *conn, label *stepLabels, after ...int) {
	c.released++
	var room [8]int // Add copies the list: it need not outlive the call
	deps := append(room[:0], after...)
	if c.lastHead >= 0 {
		deps = append(deps, c.lastHead)
	}
	c.lastHead = pl.b.Add(c.to, Op{Kind: Signal, Flag: c.head, Value: int64(c.released), Kernel: pl.kern, Label: label.plus(sufHead)}, deps...)
}

// finish makes the sender wait until the receiver has consumed every step.
// NCCL does this credit check at the start of the next kernel (its step
// counters run on across kernels); here flags count per allreduce, so the
// check closes this allreduce instead, costing about one flag latency.
func (pl *ncclPlanner) finish(c *conn) {
	if c.sent == 0 {
		return
	}
	pl.b.Add(c.from, Op{Kind: Wait, Flag: c.head, Value: int64(c.sent), Label: c.id + " drain"}, pl.launch[c.from])
	if !pl.spec.proto.inline() {
		// Simple's primitives end by saving the connection's step counter
		// behind a system-scope fence (prims_simple.h, the destructor), after
		// everything the rank did on this channel.
		fence(pl.b, c.from, c.buf, pl.b.Last(c.from))
	}
}

// local is a copy or reduction inside one GPU.
func (pl *ncclPlanner) local(r int, kind OpKind, dst, src Range, label string, deps ...int) int {
	return pl.b.Add(r, Op{Kind: kind, Src: src, Dst: dst, Kernel: pl.kern, Label: label}, deps...)
}

// store is the last pass of received data into the output when no send
// follows it (NCCL's recv): over P2P it is the receive loop itself (it
// polls the lines in the rank's own FIFO), so the loop bounds it; over SHM
// the receive loop was the load from host memory (recv). group, if set,
// is the loop group of the block's sends (send): the block runs its
// primitives one after another, so this pass takes the block's loop time
// that they share (NCCL's ring: 2n−1 passes of a chunk, the last recv).
func (pl *ncclPlanner) store(c *conn, group string, dst, src Range, share float64, label string, deps ...int) int {
	k := pl.kern
	if c.tr == p2p {
		k = pl.loopKern(hw.GPUMem(c.to), 1, share)
		if group == "" && pl.inOrder {
			group = c.id + ".recv" // the receive loop's steps, one at a time
		}
		if group != "" && k.Loop != hw.LoopNone {
			k.LoopGroup = group
			k.InOrder = pl.inOrder
		}
	}
	return pl.b.Add(c.to, Op{Kind: Read, Src: src, Dst: dst, Kernel: k, Label: label}, deps...)
}
