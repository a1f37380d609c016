package ncclmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each case worked by hand through scheduleCollTasksToPlan of the release
// named (src/enqueue.cc), one AllReduce in the plan.
func TestChannelPartsFollowNCCLsScheduler(t *testing.T) {
	for _, c := range []struct {
		name         string
		rel          string
		p            Proto
		count, elem  int64
		task, comm   int
		first        int
		want         []int64
		wantTheSplit bool // nil: the even split by task channels
	}{
		// 43,008 B of bf16 over LL, two ranks: the threshold rule leaves
		// 5 channels; 2.30's cells are 4 KiB (32 KiB of traffic at 8 a
		// byte) and a channel's budget 68,816 B of traffic: 3 cells.
		{name: "2.30 LL 42 KiB", rel: "2.30.7", p: LL, count: 21504, elem: 2, task: 5, comm: 24,
			want: []int64{12288, 12288, 12288, 6144}},
		// 2.28: cells of 2 KiB (16 KiB of traffic), a budget of 68,812:
		// 5 cells a channel, the last channel the one cell left.
		{name: "2.28 LL 42 KiB", rel: "2.28.9", p: LL, count: 21504, elem: 2, task: 5, comm: 24,
			want: []int64{10240, 10240, 10240, 10240, 2048}},
		// 2.25 has no LL factor: traffic 86,016, budget 17,203, cells of
		// 8 KiB (16 KiB of traffic): 2 cells a channel, 3 channels.
		{name: "2.25 LL 42 KiB", rel: "2.25", p: LL, count: 21504, elem: 2, task: 5, comm: 24,
			want: []int64{16384, 16384, 10240}},
		// 2.22: cells of 16 B, an even 1 MiB over 8 channels.
		{name: "2.22 Simple 1 MiB", rel: "2.22.3", p: Simple, count: 262144, elem: 4, task: 8, comm: 8,
			want: []int64{131072, 131072, 131072, 131072, 131072, 131072, 131072, 131072}},
		// More channels wanted than the communicator has: two halves.
		{name: "2.30 LL 32 KiB on 2", rel: "2.30", p: LL, count: 16384, elem: 2, task: 4, comm: 2,
			want: []int64{16384, 16384}},
		// One channel takes it all.
		{name: "2.30 Simple on 1", rel: "2.30", p: Simple, count: 1000, elem: 4, task: 1, comm: 1,
			want: []int64{4000}},
		// A call below one cell is one channel of its bytes.
		{name: "2.30 LL 8 B", rel: "2.30", p: LL, count: 4, elem: 2, task: 1, comm: 24,
			want: []int64{8}},
		{name: "2.21 even", rel: "2.21", p: LL, count: 21504, elem: 2, task: 5, comm: 24, wantTheSplit: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, parts := rel(t, c.rel).ChannelParts(c.p, c.count, c.elem, c.task, c.comm)
			if c.wantTheSplit {
				assert.Nil(t, parts)
				return
			}
			assert.Equal(t, c.first, first)
			assert.Equal(t, c.want, parts)
			var sum int64
			for _, b := range parts {
				sum += b
			}
			assert.Equal(t, c.count*c.elem, sum, "every byte on some channel")
			assert.LessOrEqual(t, len(parts), c.comm)
		})
	}
}

// Whatever the size, the parts hold every byte, each a whole number of
// elements, on no more channels than the communicator has.
func TestChannelPartsHoldEveryByte(t *testing.T) {
	for _, r := range []string{"2.22", "2.24", "2.27", "2.29", "2.30"} {
		for _, p := range []Proto{LL, LL128, Simple} {
			for _, elem := range []int64{1, 2, 4, 8} {
				for _, comm := range []int{1, 2, 3, 7, 24, 32} {
					for count := int64(1); count < 1<<22; count = count*3 + 1 {
						task := min(comm, 1+int(count%5))
						first, parts := rel(t, r).ChannelParts(p, count, elem, task, comm)
						var sum int64
						for _, b := range parts {
							assert.Positive(t, b)
							assert.Zero(t, b%elem)
							sum += b
						}
						if !assert.Equal(t, count*elem, sum, "%s %v %d×%d on %d/%d", r, p, count, elem, task, comm) {
							return
						}
						assert.LessOrEqual(t, first+len(parts), comm, "%s %v %d×%d on %d/%d", r, p, count, elem, task, comm)
					}
				}
			}
		}
	}
}
