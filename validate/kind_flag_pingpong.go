package validate

import (
	"cmp"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// flag_pingpong: two GPUs passing a counter back and forth through flags in
// host or peer memory, the one-way time.
func init() { Register(trace.KindFlagPingpong, flagPingPongTwin) }

func flagPingPongTwin(r trace.Record) (*Twin, error) {
	rounds := cmp.Or(r.RoundTrips, 2000)
	return &Twin{
		Group: "flag_pingpong " + r.Via,
		Sim:   device(func(top *topology.Topology) (float64, error) { return FlagPingPongUs(top, r.Via, rounds) }),
	}, nil
}
