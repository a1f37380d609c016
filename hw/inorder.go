package hw

import "github.com/arsim/arsim/sim"

// In-order loop groups (Kernel.InOrder): a group's transfers run one at a
// time, in the order they become ready. The one running carries a Sent
// callback; when its last byte leaves, the next waiting transfer starts at
// once (the loop's pipeline is full: no first-iteration wait), or the
// group falls idle and the next transfer to come starts as any would.

// orderQueue is one in-order group's state.
type orderQueue struct {
	group string // its Kernel.LoopGroup
	busy  bool
	wait  []pendingStart // ready transfers, oldest first
	sent  func()         // starts the next one; made once per group
}

// launchInOrder starts spec d from now (now: directly, without an event,
// when direct; on prepared route pr, when not nil), or, when its kernel's
// group runs in order and is busy, once the transfers before it have sent
// their bytes.
func (m *Machine) launchInOrder(r int, k *Kernel, d sim.Duration, spec sim.FlowSpec, pr *sim.PreparedRoute, direct bool) error {
	if !k.InOrder || k.LoopGroup == "" {
		return m.launchNow(d, spec, pr, direct)
	}
	if spec.Bytes < 0 {
		return m.startAfter(d, spec, pr) // refused there, with its message
	}
	q := m.orderOf(r, k.LoopGroup)
	if q.busy {
		q.wait = append(q.wait, pendingStart{spec, pr})
		return nil
	}
	q.busy = true
	spec.Sent = q.sent
	return m.launchNow(d, spec, pr, direct)
}

// orderOf returns the queue of rank r's in-order group name, made at the
// group's first transfer. A GPU rank's queues are also listed by rank: a
// rank has a few groups, and comparing their names costs less than
// hashing the key.
func (m *Machine) orderOf(r int, name string) *orderQueue {
	gpu := r >= 0 && r < m.Top.NumGPUs()
	if gpu && r < len(m.orderByRank) {
		for _, q := range m.orderByRank[r] {
			if q.group == name {
				return q
			}
		}
	}
	key := loopGroupKey{rank: r, group: name}
	q := m.order[key]
	if q == nil {
		if m.order == nil {
			m.order = map[loopGroupKey]*orderQueue{}
		}
		q = &orderQueue{group: name}
		q.sent = func() { m.nextInOrder(q) }
		m.order[key] = q
	}
	if gpu {
		if m.orderByRank == nil {
			m.orderByRank = make([][]*orderQueue, m.Top.NumGPUs())
		}
		m.orderByRank[r] = append(m.orderByRank[r], q)
	}
	return q
}

// launchNow starts spec d from now, or now without an event when direct,
// on prepared route pr when not nil.
func (m *Machine) launchNow(d sim.Duration, spec sim.FlowSpec, pr *sim.PreparedRoute, direct bool) error {
	if !direct {
		return m.startAfter(d, spec, pr)
	}
	if pr != nil {
		return m.Net.LaunchOn(pr, &spec)
	}
	return m.Net.Launch(spec)
}

// nextInOrder starts q's next waiting transfer, or marks it idle.
func (m *Machine) nextInOrder(q *orderQueue) {
	if len(q.wait) == 0 {
		q.busy = false
		return
	}
	st := q.wait[0]
	copy(q.wait, q.wait[1:])
	q.wait[len(q.wait)-1] = pendingStart{}
	q.wait = q.wait[:len(q.wait)-1]
	st.spec.Sent = q.sent
	// Checked when it was queued: the launch cannot fail here.
	_ = m.launchNow(0, st.spec, st.pr, true)
}

// InOrderIdle reports whether no in-order group has a transfer running or
// waiting: their queues are state a snapshot does not see.
func (m *Machine) InOrderIdle() bool {
	for _, q := range m.order {
		if q.busy {
			return false
		}
	}
	return true
}
