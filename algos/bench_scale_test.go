package algos_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// scaleChunks is how many chunks the peer (ASTRA-sim's analytical backend)
// cuts the allreduce into; each runs its own ring.
const scaleChunks = 4

// ringChunks builds the benchmark's ring allreduce, the way ASTRA-sim's
// analytical backend runs it: the data is cut into scaleChunks chunks and
// each chunk is an independent ring allreduce of n parts over the ring
// r → r+1, 2(n−1) steps of one part each (reduce-scatter, then
// all-gather), the chunks' rings running concurrently on the same links.
// A step is three ops on the sender: wait for the previous step's part to
// have arrived (flag, from step 1), write the part to the next rank, and
// raise the next rank's flag inline (the flag travels with the data).
// There are no FIFO credits (unbounded receive buffers) and no reduction
// compute, as in the analytical peer.
//
// algos' own ring (channels=1, proto=simple) is not used because its
// slicing does not give 4 chunks: 1 MiB is one slice per step at every
// size, 1 GiB 2–8 slices per step depending on the rank count, and each
// slice costs about seven ops (credits, heads, local copies).
func ringChunks(n int, bytes int64) *algos.Schedule {
	const elem = 2
	b := algos.NewBuilder("ring4", n, bytes, elem)
	kern := hw.Kernel{Blocks: 1, Threads: 512}
	cOff, cLen := algos.Split(bytes, elem, scaleChunks)
	for c := 0; c < scaleChunks; c++ {
		pOff, pLen := algos.Split(cLen[c], elem, n)
		name := "chunk" + strconv.Itoa(c)
		for r := 0; r < n; r++ {
			to := (r + 1) % n
			in := algos.Flag{At: hw.GPUMem(r), Name: name}
			out := algos.Flag{At: hw.GPUMem(to), Name: name}
			prev := -1
			for s := 0; s < 2*(n-1); s++ {
				x := ((r-s)%n + n) % n
				off, ln := cOff[c]+pOff[x], pLen[x]
				var deps []int
				if s > 0 {
					deps = []int{b.Add(r, algos.Op{Kind: algos.Wait, Flag: in, Value: int64(s), Kernel: kern}, prev)}
				}
				src := b.In(r, off, ln)
				if s >= n-1 {
					src = b.Out(r, off, ln)
				}
				prev = b.Add(r, algos.Op{Kind: algos.Write, Src: src, Dst: algos.On(to, name, off, ln), Kernel: kern}, deps...)
				b.Add(r, algos.Op{Kind: algos.Signal, Flag: out, Value: int64(s + 1), Inline: true, Kernel: kern}, prev)
			}
		}
	}
	return b.Schedule()
}

// BenchmarkRingAllreduce simulates one ring allreduce of 4 chunks on a
// ring of n GPUs (topology.Ring: NVLink bonds between neighbours), the
// peer's configuration. The schedule is planned once outside the timed
// loop; each iteration builds a fresh machine and runs it. algos.Check is
// not run (it is O(ops²)).
func BenchmarkRingAllreduce(b *testing.B) {
	for _, n := range []int{8, 64, 256, 512, 1024} {
		top, err := topology.Ring(n)
		if err != nil {
			b.Fatal(err)
		}
		for _, size := range []sim.Bytes{sim.MiB, sim.GiB} {
			b.Run(fmt.Sprintf("ranks=%d/size=%s", n, sizeName(size)), func(b *testing.B) {
				s := ringChunks(n, int64(size))
				b.ReportAllocs()
				var events uint64
				for b.Loop() {
					m, err := hw.New(top)
					if err != nil {
						b.Fatal(err)
					}
					res, err := algos.Run(m, s, algos.RunOptions{EventLimit: 1 << 40})
					if err != nil {
						b.Fatal(err)
					}
					events += res.Events
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(events)/float64(b.N), "events/op")
			})
		}
	}
}

func sizeName(b sim.Bytes) string {
	if b%sim.GiB == 0 {
		return strconv.FormatInt(int64(b/sim.GiB), 10) + "GiB"
	}
	return strconv.FormatInt(int64(b/sim.MiB), 10) + "MiB"
}

// The benchmark's schedule is a correct allreduce and finishes, on a small ring.
func TestRingChunksRuns(t *testing.T) {
	top, err := topology.Ring(6)
	if err != nil {
		t.Fatal(err)
	}
	s := ringChunks(6, 1<<20)
	m, err := hw.New(top)
	if err != nil {
		t.Fatal(err)
	}
	res, err := algos.Run(m, s, algos.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Time <= 0 {
		t.Fatalf("time %v", res.Time)
	}
}
