package topology

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func class(t *testing.T, top *Topology, a, b int, pcie bool) string {
	t.Helper()
	var c PathClass
	var err error
	if pcie {
		c, err = top.PCIePathClass(top.GPUs()[a], top.GPUs()[b])
	} else {
		c, err = top.PathClass(top.GPUs()[a], top.GPUs()[b])
	}
	require.NoError(t, err)
	return c.String()
}

func TestGeneratorsBuild4096(t *testing.T) {
	t0 := time.Now()
	fab, err := SwitchFabric(4096, 16)
	require.NoError(t, err)
	ring, err := Ring(4096)
	require.NoError(t, err)
	t.Logf("built fabric-4096 and ring-4096 in %v", time.Since(t0))
	require.Equal(t, 4096, fab.NumGPUs())
	require.Equal(t, 4096, ring.NumGPUs())

	assert.Equal(t, "PIX", class(t, fab, 0, 15, false))
	assert.Equal(t, "PXB", class(t, fab, 15, 16, false))
	assert.Equal(t, "PXB", class(t, fab, 0, 4095, false))

	assert.Equal(t, "NV4", class(t, ring, 0, 1, false))
	assert.Equal(t, "NV4", class(t, ring, 4095, 0, false), "the ring closes")
	assert.Equal(t, "PHB", class(t, ring, 0, 2, false), "non-neighbours go through the host bridge")
	assert.Equal(t, "PHB", class(t, ring, 0, 1, true))
	ok, _, err := ring.P2PAllowed(ring.GPUs()[0], ring.GPUs()[2048])
	require.NoError(t, err)
	assert.True(t, ok)

	// Neighbour routes are one hop; host routes reach socket 0's memory.
	r, err := ring.Route(ring.GPUs()[7], ring.GPUs()[8], RouteAny)
	require.NoError(t, err)
	assert.Len(t, r.Steps, 1)
	for _, top := range []*Topology{fab, ring} {
		for _, g := range []int{0, 1, 2047, 4095} {
			hr, err := top.HostRoute(top.GPUs()[g])
			require.NoError(t, err)
			assert.Equal(t, HostMemory, top.Node(hr.Steps[len(hr.Steps)-1].To).Kind)
		}
	}
}

func TestRingSmall(t *testing.T) {
	one, err := Ring(1)
	require.NoError(t, err)
	assert.Equal(t, 1, one.NumGPUs())
	two, err := Ring(2)
	require.NoError(t, err)
	nv := 0
	for _, l := range two.Links() {
		if l.Type == NVLink {
			nv++
		}
	}
	assert.Equal(t, 1, nv, "two GPUs share one bond")
	assert.Equal(t, "NV4", class(t, two, 0, 1, false))
	_, err = Ring(0)
	assert.ErrorContains(t, err, "want 1–4096")
	_, err = Ring(4097)
	assert.ErrorContains(t, err, "want 1–4096")
}

// pairwiseCheck is Build's original check: a Dijkstra per GPU pair and a
// host route per GPU.
func pairwiseCheck(t *Topology) error {
	for _, a := range t.gpus {
		for _, c := range t.gpus {
			if a != c {
				if _, err := t.Route(a, c, RouteAny); err != nil {
					return fmt.Errorf("topology %s: %s has no path to %s", t.Name, t.nodes[a].Name, t.nodes[c].Name)
				}
			}
		}
		if _, err := t.HostRoute(a); err != nil {
			return fmt.Errorf("topology %s: %s has no path to host memory: %v", t.Name, t.nodes[a].Name, err)
		}
	}
	return nil
}

// The connectivity check gives exactly the pairwise check's verdict and
// error on random machines (seeded; the seed is in the message).
func TestCheckConnectedMatchesPairwise(t *testing.T) {
	kinds := []Kind{GPU, PCIeSwitch, HostBridge, CPU, HostMemory, NVSwitch}
	failures := 0
	for seed := uint64(1); seed <= 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		b := NewBuilder("rand", commonParams())
		var ids []NodeID
		ids = append(ids, b.Node(GPU, "gpu0", 0, 0))
		mems := map[int]bool{}
		if rng.IntN(5) > 0 {
			// Mostly: a CPU with both sockets' memories.
			cpu := b.Node(CPU, "cpu", 0, 0)
			for s := 0; s < 2; s++ {
				b.PlainLink(cpu, b.Node(HostMemory, fmt.Sprintf("mem%d", s), s, 0), Memory, 100e9, 0)
				mems[s] = true
			}
			ids = append(ids, cpu)
		}
		for i := 1; i < 3+rng.IntN(10); i++ {
			k := kinds[rng.IntN(len(kinds))]
			sock := rng.IntN(2)
			if k == HostMemory {
				if mems[sock] {
					k = PCIeSwitch
				}
				mems[sock] = true
			}
			ids = append(ids, b.Node(k, fmt.Sprintf("%s%d", k, i), sock, 0))
		}
		for l := 0; l < rng.IntN(4*len(ids)); l++ {
			a, c := ids[rng.IntN(len(ids))], ids[rng.IntN(len(ids))]
			if a == c {
				continue
			}
			switch rng.IntN(3) {
			case 0:
				b.PCIeLink(a, c, 5, 16, 0)
			case 1:
				b.NVLinkLink(a, c, 2, 25e9, 0)
			default:
				b.PlainLink(a, c, Fabric, 100e9, 0)
			}
		}
		_, err := b.Build()
		want := pairwiseCheck(b.t)
		if want == nil {
			require.NoError(t, err, "seed %d", seed)
			continue
		}
		failures++
		require.Error(t, err, "seed %d", seed)
		require.Equal(t, want.Error(), err.Error(), "seed %d", seed)
	}
	t.Logf("%d of 3000 random machines were rejected", failures)
	assert.Greater(t, failures, 100)
	assert.Less(t, failures, 2900)
}
