package sim

import "testing"

// BenchmarkEventLoop measures the bare event queue: 64 chains of events
// rescheduling themselves at pseudo-random offsets.
func BenchmarkEventLoop(b *testing.B) {
	const chains, steps = 64, 2000
	var events uint64
	for b.Loop() {
		e := NewEngine()
		for c := 0; c < chains; c++ {
			left := steps
			var tick func()
			x := uint64(c)*2654435761 + 1
			tick = func() {
				left--
				if left == 0 {
					return
				}
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				e.After(Duration(x%1000)*Nanosecond, tick)
			}
			e.After(0, tick)
		}
		_ = e.Run()
		events += e.Processed()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
