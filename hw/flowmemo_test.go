package hw

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Kept flows change nothing: writes and reads repeated with kept flows,
// or with WriteAgain, give the event log of a machine computing every
// flow afresh (a new machine per transfer has nothing kept).
func TestKeptFlowsMatchFreshOnes(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	kernels := []Kernel{{Blocks: 4, Threads: 512}, {Blocks: 2, Threads: 256, Loop: LoopSimple, Unroll: 4, Sources: 1}}
	type xfer struct {
		read, fenced, again bool
		r, at, k            int
	}
	var xs []xfer
	for i := 0; i < 40; i++ {
		x := xfer{read: i%5 == 3, fenced: i%7 == 2, r: i % 3, at: 3 + i%4, k: i / 3 % 2}
		if i > 0 && i%6 == 0 {
			x = xs[i-1]
			x.again = !x.read
		}
		xs = append(xs, x)
	}
	run := func(fresh bool) string {
		rec := &sim.Recorder{}
		m, err := New(top)
		require.NoError(t, err)
		m.Net.SetObserver(rec)
		for i, x := range xs {
			require.NoError(t, m.Eng.RunUntil(sim.Time(i)*sim.Time(sim.Microsecond)))
			if fresh {
				m.wmemo, m.rmemo = nil, nil
			}
			k, bytes := kernels[x.k], sim.Bytes(1000+100*i)
			switch {
			case x.read:
				err = m.Read(x.r, GPUMem(x.at), bytes, k, "read", nil)
			case x.again && !fresh:
				err = m.WriteAgain(x.r, bytes, "write", nil)
			case x.fenced:
				err = m.WriteFenced(x.r, GPUMem(x.at), bytes, k, "write", nil)
			default:
				err = m.Write(x.r, GPUMem(x.at), bytes, k, "write", nil)
			}
			require.NoError(t, err, "transfer %d", i)
		}
		require.NoError(t, m.Eng.Run())
		return rec.String()
	}
	require.Equal(t, run(true), run(false))
}

// WriteAgain needs an earlier write of the rank.
func TestWriteAgainNeedsAWrite(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	require.Error(t, m.WriteAgain(0, 100, "w", nil))
	require.NoError(t, m.Write(0, GPUMem(1), 100, Kernel{Blocks: 1, Threads: 64}, "w", nil))
	require.Error(t, m.WriteAgain(1, 100, "w", nil))
	require.NoError(t, m.WriteAgain(0, 100, "w", nil))
}
