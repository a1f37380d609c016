package trace_test

import (
	"fmt"
	"strings"

	"github.com/arsim/arsim/trace"
)

func ExampleReadJSONL() {
	const input = `{"system": "h200x2-vm", "clock": "device_events", "kind": "allreduce", "launch": "cudagraph", "world": 2, "dtype": "bf16", "bytes": 43008, "impl": "nccl", "algo": "ring", "proto": "ll", "transport": "p2p", "us": 10.9}

{"system": "h200x2-vm", "kind": "pointer_chase", "target": "host", "ns_per_step": 1094.295, "clock": "sm_clock64"}
{"system": "h200x2-vm", "kind": "memcpy", "clock": "device_events", "dir": "h2d", "bytes": "4", "us": 6.5}
`
	recs, bad, err := trace.ReadJSONL(strings.NewReader(input), "example.jsonl", trace.ReadOptions{SkipBad: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range recs {
		v, unit, _ := r.Primary()
		fmt.Printf("line %d: %s %d B: %g %s\n", r.Line, r.Kind, r.Bytes, v, unit)
	}
	for _, b := range bad {
		fmt.Println(b.Err)
	}
	// Output:
	// line 1: allreduce 43008 B: 10.9 us
	// line 3: pointer_chase 0 B: 1094.295 ns
	// trace: example.jsonl line 4: field "bytes": want integer, got string
}
