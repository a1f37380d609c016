package algos

import (
	"fmt"
	"sort"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// hierarchical is a two-level allreduce for machines whose GPUs sit in
// islands — behind one PCIe switch, or else on one socket:
//
//  1. start handshake with every rank that will read this rank's buffers;
//  2. reduce-scatter inside the island: island member j pulls share j
//     from every island peer's input and sums it into its tmp (island
//     partial of share j);
//  3. rs barrier with the counterparts (member j of every other island);
//  4. exchange: member j sums its own tmp and its counterparts' tmp (one
//     cross-island pull per counterpart, of one share) into red;
//  5. ag barrier with the island peers;
//  6. all-gather inside the island: out[share j'] ← red of member j'.
//
// No end barrier: peers read my input only before they signal step 5,
// which I wait for before step 6; my tmp and red are rewritten in the next
// allreduce only after the start handshake with the ranks that read them,
// whose start flags follow the end of their previous kernel; out is local.
type hierarchical struct{ anyRanks }

func init() { Register(hierarchical{}) }

func (hierarchical) Name() string { return "hierarchical" }

func (hierarchical) Describe() string {
	return "two-level: reduce-scatter inside each PCIe-switch (else socket) island, exchange one share with the counterparts in other islands, all-gather inside"
}

func (hierarchical) Options() []OptionSpec { return pullOptions }

// islands groups ranks 0…n−1: by PCIe switch (PIX path) when the topology
// has PCIe switches, else by socket. Islands are ordered by their lowest
// rank, members by rank.
func islands(top *topology.Topology, n int) ([][]int, string, error) {
	switches := false
	for _, nd := range top.Nodes() {
		switches = switches || nd.Kind == topology.PCIeSwitch
	}
	g := top.GPUs()
	var out [][]int
	if switches {
		seen := make([]bool, n)
		for a := 0; a < n; a++ {
			if seen[a] {
				continue
			}
			isl := []int{a}
			seen[a] = true
			for b := a + 1; b < n; b++ {
				if seen[b] {
					continue
				}
				c, err := top.PCIePathClass(g[a], g[b])
				if err != nil {
					return nil, "", err
				}
				if c.Kind == topology.PathPIX {
					isl = append(isl, b)
					seen[b] = true
				}
			}
			out = append(out, isl)
		}
		return out, "PCIe switch", nil
	}
	bySock := map[int][]int{}
	for r := 0; r < n; r++ {
		s := top.GPU(r).Socket
		bySock[s] = append(bySock[s], r)
	}
	for _, isl := range bySock {
		out = append(out, isl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out, "socket", nil
}

// barrierAmong is a flag handshake inside groups: every rank r signals
// value v into flag name[r] in the memory of each rank of to(r), and waits
// for name[p] in its own memory from each rank p of from(r); the waits run
// after after[r]. It returns the indices of each rank's waits.
func barrierAmong(b *Builder, name string, v int64, k hw.Kernel, label string, to, from func(r int) []int, after [][]int) [][]int {
	n := b.s.Ranks
	done := make([][]int, n)
	for r := 0; r < n; r++ {
		var dep []int
		if after != nil {
			dep = after[r]
		}
		for _, p := range to(r) {
			b.Add(r, Op{Kind: Signal, Flag: Flag{At: hw.GPUMem(p), Name: fmt.Sprintf("%s[%d]", name, r)}, Value: v, Kernel: k, Label: label}, dep...)
		}
		for _, p := range from(r) {
			done[r] = append(done[r], b.Add(r, Op{Kind: Wait, Flag: Flag{At: hw.GPUMem(r), Name: fmt.Sprintf("%s[%d]", name, p)}, Value: v, Kernel: k, Label: label}, dep...))
		}
	}
	return done
}

func (hierarchical) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	es := req.DType.Size()
	isl, by, err := islands(req.Top, n)
	if err != nil {
		return nil, fmt.Errorf("algos: hierarchical: %w", err)
	}
	m, g := len(isl), len(isl[0])
	var sizes []string
	equal := true
	for _, x := range isl {
		sizes = append(sizes, fmt.Sprint(len(x)))
		equal = equal && len(x) == g
	}
	if !equal {
		return nil, fmt.Errorf("algos: hierarchical: %d ranks on %s form %s islands of unequal sizes %s; islands must be equal",
			n, req.Top.Name, by, strings.Join(sizes, ", "))
	}
	// island and member index of every rank.
	where := make([][2]int, n)
	for i, x := range isl {
		for j, r := range x {
			where[r] = [2]int{i, j}
		}
	}
	peers := func(r int) []int { // island peers, rotated
		i, j := where[r][0], where[r][1]
		var out []int
		for d := 1; d < g; d++ {
			out = append(out, isl[i][(j+d)%g])
		}
		return out
	}
	counterparts := func(r int) []int {
		i, j := where[r][0], where[r][1]
		var out []int
		for d := 1; d < m; d++ {
			out = append(out, isl[(i+d)%m][j])
		}
		return out
	}
	both := func(r int) []int { return append(peers(r), counterparts(r)...) }

	b := NewBuilder("hierarchical", n, req.Bytes, es)
	off, size := Split(req.Bytes, es, g)
	k, kIsl, kEx, err := hierKernels(req, g, m)
	if err != nil {
		return nil, fmt.Errorf("algos: hierarchical: %w", err)
	}
	b.Note("%d %s islands of %d: %v; shares of %d B (last %d B); %d blocks × %d threads per GPU",
		m, by, g, isl, size[0], size[g-1], k.Blocks, k.Threads)

	launch := b.Launches()
	start := barrierAmong(b, "hier.start", 1, k, "start barrier", both, both, launch)
	// Reduce-scatter inside the island.
	rs := make([][]int, n)
	for r := 0; r < n; r++ {
		j := where[r][1]
		own := b.Add(r, Op{Kind: Read, Src: b.In(r, off[j], size[j]), Dst: On(r, "tmp", 0, size[j]), Kernel: kIsl, Label: "rs own share"}, start[r]...)
		rs[r] = []int{own}
		for _, p := range peers(r) {
			rs[r] = append(rs[r], b.Add(r, Op{Kind: Read, Accumulate: true, Src: b.In(p, off[j], size[j]), Dst: On(r, "tmp", 0, size[j]),
				Kernel: kIsl, Label: fmt.Sprintf("rs pull rank %d", p)}, own))
		}
	}
	mid := barrierAmong(b, "hier.rs", 1, k, "rs barrier", counterparts, counterparts, rs)
	// Exchange the island partials of one share across islands.
	ex := make([][]int, n)
	for r := 0; r < n; r++ {
		j := where[r][1]
		own := b.Add(r, Op{Kind: Read, Src: On(r, "tmp", 0, size[j]), Dst: On(r, "red", 0, size[j]), Kernel: kEx, Label: "exchange own partial"},
			append(append([]int{}, rs[r]...), mid[r]...)...)
		ex[r] = []int{own}
		for _, p := range counterparts(r) {
			ex[r] = append(ex[r], b.Add(r, Op{Kind: Read, Accumulate: true, Src: On(p, "tmp", 0, size[j]), Dst: On(r, "red", 0, size[j]),
				Kernel: kEx, Label: fmt.Sprintf("exchange pull rank %d", p)}, own))
		}
	}
	ag := barrierAmong(b, "hier.ag", 1, k, "ag barrier", peers, peers, ex)
	// All-gather inside the island.
	for r := 0; r < n; r++ {
		j := where[r][1]
		b.Add(r, Op{Kind: Read, Src: On(r, "red", 0, size[j]), Dst: b.Out(r, off[j], size[j]), Kernel: kIsl, Label: "ag own share"},
			append(append([]int{}, ex[r]...), ag[r]...)...)
		for _, p := range peers(r) {
			jp := where[p][1]
			b.Add(r, Op{Kind: Read, Src: On(p, "red", 0, size[jp]), Dst: b.Out(r, off[jp], size[jp]), Kernel: kIsl,
				Label: fmt.Sprintf("ag pull rank %d", p)}, append(append([]int{}, ex[r]...), ag[r]...)...)
		}
	}
	return b.Schedule(), nil
}

// hierKernels are hierarchical's pull kernel (its barriers'), and the same
// loading a pack from each of the island's g buffers (reduce-scatter,
// all-gather) and each of the m islands' (the exchange) an iteration.
func hierKernels(req Request, g, m int) (k, kIsl, kEx hw.Kernel, err error) {
	if k, err = pullKernel(req.Bytes, req); err != nil {
		return k, k, k, err
	}
	// Each phase is a loop whose body loads a pack from every source
	// rank (as vLLM's stages): about one load per peer in flight.
	k.LoadsInFlight = 1
	if kIsl, err = pullBuffers(k, g, "the island's reduce-scatter"); err != nil {
		return k, k, k, err
	}
	kEx, err = pullBuffers(k, m, "the islands' exchange")
	return k, kIsl, kEx, err
}
