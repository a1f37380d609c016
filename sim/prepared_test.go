package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flows on a prepared route run as flows given the route: the same
// rates and times, bit for bit, with the route's weights normalised.
func TestLaunchOnPreparedRouteIsLaunch(t *testing.T) {
	times := func(prepared bool) []Time {
		e, n, ids, _ := newNet(t, 10*GBps, 4*GBps, 7*GBps)
		var ends []Time
		rt := []Hop{{Res: ids[0], Weight: 1.25}, {Res: ids[1]}, {Res: ids[2], Weight: 16.0 / 15}}
		pr, err := n.Prepare(rt)
		require.NoError(t, err)
		for i, b := range []Bytes{10_000, 30_000, 7_777} {
			spec := FlowSpec{Label: "f", Route: rt, Bytes: b, Cap: Rate(i+1) * GBps, Done: func() { ends = append(ends, e.Now()) }}
			if prepared {
				spec.Route = nil
				require.NoError(t, n.LaunchOn(pr, &spec))
			} else {
				require.NoError(t, n.Launch(spec))
			}
		}
		require.NoError(t, e.Run())
		return ends
	}
	assert.Equal(t, times(false), times(true))
}

func TestPrepareRefusesBadHops(t *testing.T) {
	_, n, ids, _ := newNet(t, 10*GBps)
	_, err := n.Prepare([]Hop{{Res: ids[0]}, {Res: 7}})
	assert.ErrorContains(t, err, "hop 1")
	_, err = n.Prepare([]Hop{{Res: ids[0], Weight: -1}})
	assert.ErrorContains(t, err, "weight")
	_, other, oids, _ := newNet(t, 10*GBps)
	pr, err := other.Prepare([]Hop{{Res: oids[0]}})
	require.NoError(t, err)
	assert.ErrorContains(t, n.LaunchOn(pr, &FlowSpec{Label: "x", Bytes: 1}), "another network")
	pr, err = n.Prepare(nil)
	require.NoError(t, err)
	assert.ErrorContains(t, n.LaunchOn(pr, &FlowSpec{Label: "x", Bytes: 1}), "needs a route or a rate cap")
}
