package validate

import (
	"strings"

	"github.com/arsim/arsim/trace"
)

// pcieFits are the PCIe path's latencies of the RTX machines, from the rtx6kpro
// wiki's GPU ping-pongs behind c-payne switches: within a switch the
// GPU port; across two switches on one root complex the crossing of
// its PCIe side (twice), on two the fabric between them. The same
// page's pairs across the two groups (wrx90_pingpong_x.jsonl, the
// sixteen GPUs as one machine) and every published allreduce table are
// their predicted side.
var pcieFits = []Fit{
	{Params: []string{"pcie.gpu_port_latency"}, Files: wrx90PingPongs, Kinds: []trace.Kind{trace.KindFlagPingpong},
		Covers: wrx90PingPong, On: func(r trace.Record) bool { return sameWRX90Switch(r) },
		How: "the model's ping-pong within one switch against the pairs' mean (680.5 ns; the model 680.0)"},
	{Params: []string{"pcie.hostbridge_latency", "cpu.fabric_latency"}, Files: wrx90PingPongs, Kinds: []trace.Kind{trace.KindFlagPingpong},
		Covers: wrx90PingPong, AlsoPredicts: []string{"rtx6kpro/wrx90_pingpong_x.jsonl"},
		On:  func(r trace.Record) bool { return !sameWRX90Switch(r) },
		How: "(the mean across two switches on one root complex − the mean within one − pcie.switch_latency) / 2; the mean on two root complexes − on one"},
}

// wrx90PingPongs are the rtx6kpro wiki's GPU ping-pongs of its WRX90 box's
// two groups of eight GPUs behind two switches of four.
var wrx90PingPongs = []string{"rtx6kpro/wrx90_pingpong_a.jsonl", "rtx6kpro/wrx90_pingpong_b.jsonl"}

func wrx90PingPong(r trace.Record) bool { return strings.HasPrefix(r.System, "rtx6kpro-wrx90") }

// sameWRX90Switch: both GPUs of the ping-pong behind one switch (GPUs 0–3,
// 4–7, … of the machine).
func sameWRX90Switch(r trace.Record) bool { return r.PingGPU/4 == r.PongGPU/4 }
