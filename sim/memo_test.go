package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeptSolvesMatchReference is TestIncrementalMatchesReference with
// flows on a few prepared routes, with few caps, kinds and classes, so
// that components repeat and take kept rates (memo.go): every rate, after
// every instant, is the reference's bit for bit.
func TestKeptSolvesMatchReference(t *testing.T) {
	seeds := 1500
	if testing.Short() {
		seeds = 150
	}
	kept := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		e, n := randomNetwork(t, rng)
		var prs []*PreparedRoute
		for range 1 + rng.IntN(5) {
			spec := randomSpec(rng, len(n.res))
			if len(spec.Route) == 0 {
				spec.Route = []Hop{{Res: ResourceID(rng.IntN(len(n.res)))}}
			}
			pr, err := n.Prepare(spec.Route)
			require.NoError(t, err)
			prs = append(prs, pr)
		}
		caps := []Rate{0, 3 * GBps, Rate(7.3) * GBps}
		for s := range 1 + rng.IntN(40) {
			for k := rng.IntN(6); k > 0; k-- {
				spec := FlowSpec{Label: "f", Kind: FlowKind(rng.IntN(2)), Class: rng.IntN(3),
					Bytes: Bytes(1 + rng.IntN(1<<20)), Cap: caps[rng.IntN(len(caps))]}
				require.NoError(t, n.LaunchOn(prs[rng.IntN(len(prs))], &spec), "seed %d", seed)
			}
			require.NoError(t, e.RunUntil(e.Now()), "seed %d", seed)
			compareWithReference(t, n, seed, s)
			require.NoError(t, e.RunUntil(e.Now().Add(Duration(rng.IntN(40_000))*Nanosecond)), "seed %d", seed)
			compareWithReference(t, n, seed, s)
		}
		require.NoError(t, e.Run(), "seed %d", seed)
		kept += len(n.memoEntries)
	}
	require.Positive(t, kept)
	t.Logf("%d seeds, %d components kept", seeds, kept)
}
