package validate

import (
	"cmp"
	"fmt"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// flag_pingpong: two GPUs passing a counter back and forth through flags in
// host or peer memory, the one-way time.
func init() { Register(trace.KindFlagPingpong, flagPingPongTwin) }

func flagPingPongTwin(r trace.Record) (*Twin, error) {
	rounds := cmp.Or(r.RoundTrips, 2000)
	group := "flag_pingpong " + r.Via
	pair := [2]int{r.PingGPU, r.PongGPU}
	switch {
	case r.PongGPU == 0 && r.PingGPU == 0:
		pair[1] = 1
	case r.PongGPU == 0:
		return nil, fmt.Errorf("flag_pingpong: ping_gpu %d without pong_gpu", r.PingGPU)
	case r.PongGPU == r.PingGPU:
		return nil, fmt.Errorf("flag_pingpong: ping_gpu and pong_gpu are both GPU %d", r.PingGPU)
	default:
		group += fmt.Sprintf(" gpu%d-gpu%d", r.PingGPU, r.PongGPU)
	}
	return &Twin{
		Group: group,
		Sim:   device(func(top *topology.Topology) (float64, error) { return FlagPingPongUs(top, r.Via, pair, rounds) }),
	}, nil
}
