package ncclmodel

// How NCCL 2.22 and later spread one collective over its channels.
//
// Up to 2.21 a collective's data is split evenly over the channels that
// the thread-threshold rule leaves (Model.Choose). From 2.22 the planner
// (scheduleCollTasksToPlan, src/enqueue.cc) cuts the data into cells and
// gives each channel up to a traffic budget of them: the first channel
// ("lo") and the middle ones a full budget, the last ("hi") the rest. The
// budget is the call's traffic (2 bytes a byte for AllReduce; 4 × that for
// LL from 2.26) over the channels the threshold rule leaves, at least
// MinTrafficPerChannel; a cell carries MinTrafficPerChannel of traffic
// (16 B of data in 2.22). So a small call's channels are whole cells, not
// even shares: NCCL 2.30 runs 42 KiB of LL on two ranks over 4 channels of
// 12, 12, 12 and 6 KiB where the threshold rule gave 5 of 8.4 KiB.
//
// The rules by release, read from v2.22.3-1, v2.23.4-1, v2.25.1-1,
// v2.26.6-1, v2.28.9-1, v2.29.7-1 and v2.30.7-1 (src/enqueue.cc,
// scheduleCollTasksToPlan and the aggregation loop before it):
//   - 2.22: MinTrafficPerChannel 512; cells of 16 B; the budget
//     max(512, traffic / channels); the lo channel floor(budget / cell).
//   - 2.23–2.25: MinTrafficPerChannel 16 KiB; the call's traffic at least
//     that; cells of MinTrafficPerChannel / trafficPerByte (rounded up to
//     16 B); the lo channel divUp(budget, cell).
//   - 2.26–2.28: LL's traffic and trafficPerByte × 4.
//   - 2.29–2.30: MinTrafficPerChannel 32 KiB; the budget divUp(traffic /
//     channels, 16) × 16.
//
// One call per plan is what nccl-tests, PyTorch's eager calls and arsim's
// records issue; calls grouped into one plan share the budget, which this
// does not model.

// ChannelParts returns how NCCL release r spreads one AllReduce of count
// elements of elem bytes, protocol p, over its channels: the first
// channel's index and each channel's bytes, in order. taskChannels is the
// threshold rule's channels (Choice.Channels), commChannels the
// communicator's (Model.Channels). Before 2.22, or for nothing to move,
// it returns 0 and nil: the even split by taskChannels.
func (r Release) ChannelParts(p Proto, count, elem int64, taskChannels, commChannels int) (first int, parts []int64) {
	if !r.from(22) || count <= 0 || elem <= 0 || taskChannels < 1 || commChannels < 1 {
		return 0, nil
	}
	const trafficPerByte = 2 // ncclFuncTrafficPerByte(AllReduce)
	minTraffic := int64(16 << 10)
	switch {
	case !r.from(23):
		minTraffic = 512
	case r.from(29):
		minTraffic = 32 << 10
	}
	ll4 := r.from(26) && p == LL
	traffic := count * elem * trafficPerByte
	if ll4 {
		traffic *= 4
	}
	if r.from(23) {
		traffic = max(traffic, minTraffic)
	}
	nch := int64(min(taskChannels, commChannels))
	var perChannel int64
	if r.from(29) {
		perChannel = divUp(traffic/nch, 16) * 16
	} else {
		perChannel = max(minTraffic, traffic/nch)
	}
	tpb := int64(trafficPerByte)
	if ll4 {
		tpb *= 4
	}
	cellSize := int64(16)
	if r.from(23) {
		cellSize = divUp(divUp(minTraffic, tpb), 16) * 16
	}
	perCell := cellSize / elem
	if perCell < 1 {
		return 0, nil // an element wider than a cell: no NCCL type is
	}
	cells := divUp(count*elem, cellSize)
	trafficPerCell := cellSize * tpb
	cellsPerChannel := min(cells, divUp(perChannel, trafficPerCell))
	maxCh := int64(commChannels)
	var lo int64
	switch {
	case maxCh == 1:
		lo = cells // on the last channel everything goes to lo
	case r.from(23):
		lo = min(cells, divUp(perChannel, trafficPerCell))
	default:
		lo = min(cells, perChannel/trafficPerCell)
	}
	mid := (cells - lo) / cellsPerChannel
	hi := (cells - lo) % cellsPerChannel
	n := mid + nonzero(lo) + nonzero(hi)
	if maxCh < n { // more channels than the communicator has
		mid = maxCh - 2
		cellsPerChannel = (cells - lo) / (mid + 1)
		hi = cellsPerChannel + (cells-lo)%(mid+1)
	}
	if hi == 0 && mid != 0 {
		hi = cellsPerChannel
		mid--
	}
	if lo == 0 { // the least channel skipped: the next one is the new least
		first = 1
		if mid == 0 {
			lo, hi = hi, 0
		} else {
			lo = cellsPerChannel
			mid--
		}
	}
	countLo, countMid, countHi := lo*perCell, cellsPerChannel*perCell, hi*perCell
	excess := cells*perCell - count
	if countHi != 0 {
		countHi -= excess
	} else {
		countLo -= excess
	}
	if countLo != 0 {
		parts = append(parts, countLo*elem)
	}
	for range mid {
		parts = append(parts, countMid*elem)
	}
	if hi != 0 {
		parts = append(parts, countHi*elem)
	}
	return first, parts
}

// nonzero is 1 for a channel with cells, 0 for none.
func nonzero(cells int64) int64 {
	if cells != 0 {
		return 1
	}
	return 0
}

func divUp(a, b int64) int64 { return (a + b - 1) / b }
