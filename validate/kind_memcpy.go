package validate

import (
	"cmp"
	"fmt"
	"math"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// memcpy: eager copy-engine copies, one stream back to back (paced by the
// host's issue cost at small sizes), or several at once on one GPU, timed
// to the last end. Copies inside a CUDA graph are not modelled.
func init() { Register(trace.KindMemcpy, memcpyTwin) }

func memcpyTwin(r trace.Record) (*Twin, error) {
	streams := cmp.Or(r.Streams, 1)
	t := &Twin{Group: "memcpy " + r.Dir}
	if streams > 1 {
		t.Group += " multi-stream"
	}
	if r.Launch == trace.LaunchCUDAGraph {
		return nil, notModelled("copy-engine memcpy inside a CUDA graph is not modelled (only eager issue)")
	}
	if r.Dir == "bidir" {
		n := max(cmp.Or(r.Transfers, 2), 2)
		dirs := make([]hw.CopyDir, n)
		for i := range dirs {
			dirs[i] = hw.CopyDir(i % 2) // H2D, D2H, H2D, …
		}
		t.Note = fmt.Sprintf("%d copies of %d B at once on one GPU, half h2d and half d2h, timed to the last end", n, r.Bytes)
		t.Sim = device(func(top *topology.Topology) (float64, error) { return copiesUs(top, dirs, sim.Bytes(r.Bytes)) })
		return t, nil
	}
	dir, ok := map[string]hw.CopyDir{"h2d": hw.H2D, "d2h": hw.D2H, "p2p": hw.P2P}[r.Dir]
	if !ok {
		return nil, notModelled("memcpy dir %q is not modelled (h2d, d2h, p2p, bidir)", r.Dir)
	}
	if streams > 1 {
		transfers := cmp.Or(r.Transfers, streams)
		t.Note = fmt.Sprintf("%d concurrent copies of %d B on one GPU, timed from first start to last end", transfers, r.Bytes)
		t.Sim = device(func(top *topology.Topology) (float64, error) {
			dirs := make([]hw.CopyDir, transfers)
			for i := range dirs {
				dirs[i] = dir
			}
			return copiesUs(top, dirs, sim.Bytes(r.Bytes))
		})
		return t, nil
	}
	api := TorchCopy
	if r.API == "cudaMemcpyAsync" {
		api = CUDAMemcpy
		t.Group += " cudaMemcpyAsync"
	} else {
		t.Group += " tensor.copy_"
	}
	t.Sim = func(top *topology.Topology) (float64, bool, error) {
		us, err := MemcpyEager(top, dir, sim.Bytes(r.Bytes), api)
		if err != nil {
			return 0, false, err
		}
		issue, err := MemcpyIssueUs(top, dir, api)
		return us, math.Abs(us-issue) <= 1e-6*issue, err
	}
	return t, nil
}

// copiesUs runs copy-engine transfers of bytes each, one per direction
// listed, on rank 0 at once (one per stream; their issue cost is far below
// their duration at the sizes captured) and returns the time until the last
// ends, in µs.
func copiesUs(top *topology.Topology, dirs []hw.CopyDir, bytes sim.Bytes) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	var end sim.Time
	for i, dir := range dirs {
		if dir == hw.P2P && m.NumRanks() < 2 {
			return 0, fmt.Errorf("hw: %s: p2p memcpy needs two GPUs", top.Name)
		}
		if err := m.Copy(0, dir, 1, bytes, fmt.Sprintf("memcpy%d", i), func() { end = max(end, m.Eng.Now()) }); err != nil {
			return 0, err
		}
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return sim.Duration(end).Micros(), nil
}
