package trace

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The second half of ReadKineto: linking each NCCL kernel to the
// record_param_comms op that launched it, which gives its size.

// kinetoLinker indexes the decoded events for linking.
type kinetoLinker struct {
	rpcs, launches, flowF []*kEvent
	rpcByExt              map[int64]*kEvent  // record_param_comms by External id (first)
	launchByCorr          map[int64]*kEvent  // launches by correlation id (first)
	startByID             map[string]*kEvent // flow starts by id (first)
}

func newKinetoLinker(rpcs, launches, flowS, flowF []*kEvent) *kinetoLinker {
	l := &kinetoLinker{rpcs: rpcs, launches: launches, flowF: flowF,
		rpcByExt: map[int64]*kEvent{}, launchByCorr: map[int64]*kEvent{}, startByID: map[string]*kEvent{}}
	for _, r := range rpcs {
		if _, dup := l.rpcByExt[r.ext]; r.ext >= 0 && !dup {
			l.rpcByExt[r.ext] = r
		}
	}
	for _, e := range launches {
		if _, dup := l.launchByCorr[e.corr]; e.corr >= 0 && !dup {
			l.launchByCorr[e.corr] = e
		}
	}
	for _, s := range flowS {
		if _, dup := l.startByID[s.id]; !dup {
			l.startByID[s.id] = s
		}
	}
	return l
}

// enclosing returns the latest-starting event of evs on pid/tid whose span
// holds ts.
func enclosing(evs []*kEvent, pid, tid string, ts float64) *kEvent {
	var best *kEvent
	for _, e := range evs {
		if e.pid == pid && e.tid == tid && e.ts <= ts && ts <= e.ts+e.dur {
			if best == nil || e.ts > best.ts {
				best = e
			}
		}
	}
	return best
}

// launchOf finds the launch of kernel k: by correlation id, or through a
// flow event whose end lies in the kernel.
func (l *kinetoLinker) launchOf(k *kEvent) *kEvent {
	if k.corr >= 0 {
		if e := l.launchByCorr[k.corr]; e != nil {
			return e
		}
	}
	for _, f := range l.flowF {
		if f.pid == k.pid && f.tid == k.tid && k.ts <= f.ts && f.ts <= k.ts+k.dur {
			if s := l.startByID[f.id]; s != nil {
				return enclosing(l.launches, s.pid, s.tid, s.ts)
			}
		}
	}
	return nil
}

// directRPC finds the record_param_comms that launched kernel k: by
// External id, of the kernel or of its launch, or as the op enclosing the
// launch, and says which way it found it.
func (l *kinetoLinker) directRPC(k *kEvent) (*kEvent, string) {
	if k.ext >= 0 {
		if r := l.rpcByExt[k.ext]; r != nil {
			return r, "external_id"
		}
	}
	launch := l.launchOf(k)
	if launch == nil {
		return nil, ""
	}
	if launch.ext >= 0 {
		if r := l.rpcByExt[launch.ext]; r != nil {
			return r, "external_id"
		}
	}
	if r := enclosing(l.rpcs, launch.pid, launch.tid, launch.ts); r != nil {
		return r, "correlation"
	}
	return nil, ""
}

// collective describes kernel k, sized from its own arguments or from the
// op that launched it, when either says.
func (l *kinetoLinker) collective(k *kEvent) KinetoCollective {
	kn := parseKernelName(k.name)
	c := KinetoCollective{
		Line: k.line, Kernel: k.name, Name: normCollName(kn.coll), Algo: kn.algo, Proto: kn.proto,
		Dtype: kn.dtype, Op: kn.op, StartUs: k.ts, DurationUs: k.dur, Device: -1, Seq: -1,
	}
	c.Channels, _ = argDim0(k.args, "grid")
	c.Threads, _ = argDim0(k.args, "block")
	switch {
	case k.devInArg && k.dev <= math.MaxInt32:
		c.Device = int(k.dev)
	case k.hasPid && k.pidNum >= 0 && k.pidNum <= math.MaxInt32:
		c.Device = int(k.pidNum)
	}
	if meta, ok, _ := commsMeta(k.args); ok {
		applyMeta(&c, meta, "kernel_args")
	} else if r, how := l.directRPC(k); r != nil {
		meta, _, _ := commsMeta(r.args)
		applyMeta(&c, meta, how)
		r.used = true
	}
	return c
}

// linkKineto turns the decoded events into collectives, ordered by device,
// start and line, with a warning for each kernel left without a size.
func linkKineto(kernels, rpcs, launches, flowS, flowF []*kEvent) KinetoTrace {
	l := newKinetoLinker(rpcs, launches, flowS, flowF)
	cs := make([]KinetoCollective, len(kernels))
	for i, k := range kernels {
		cs[i] = l.collective(k)
	}
	matchByOrder(kernels, rpcs, cs)
	out := KinetoTrace{Collectives: slices.Clone(cs)}
	slices.SortStableFunc(out.Collectives, func(a, b KinetoCollective) int {
		return cmp.Or(cmp.Compare(a.Device, b.Device), cmp.Compare(a.StartUs, b.StartUs), cmp.Compare(a.Line, b.Line))
	})
	for _, c := range out.Collectives {
		switch {
		case c.Match == "":
			out.Warnings = append(out.Warnings, fmt.Sprintf(
				"kernel %s on device %d at %.3f us (line %d): no record_param_comms gives its size; Bytes is 0",
				c.Kernel, c.Device, c.StartUs, c.Line))
		case c.Bytes == 0:
			out.Warnings = append(out.Warnings, fmt.Sprintf(
				"kernel %s on device %d at %.3f us (line %d): its record_param_comms (%s) has no element count or a dtype of unknown size (%q); Bytes is 0",
				c.Kernel, c.Device, c.StartUs, c.Line, c.Match, c.Dtype))
		}
	}
	return out
}

// normCollName turns a kernel's collective ("allreduce") into the
// output name; kernels and ops use the same spelling.
func normCollName(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "") }

func applyMeta(c *KinetoCollective, m commsMetaT, how string) {
	c.Match = how
	if c.Name == "" {
		c.Name = normColl(m.coll)
	}
	dt := c.Dtype
	if m.dtype != "" {
		if d := normDtype(m.dtype); dtypeSizes[d] != 0 || dt == "" {
			dt = d
		}
	}
	if c.Dtype == "" {
		c.Dtype = dt
	}
	if size, ok := dtypeSizes[dt]; ok && m.nelems > 0 && m.nelems <= math.MaxInt64/size {
		c.Bytes = m.nelems * size
	}
	if m.groupSize > 0 && m.groupSize <= math.MaxInt32 {
		c.GroupSize = int(m.groupSize)
	}
	c.ProcessGroup = m.pg
	c.Seq = m.seq
}

// matchByOrder gives each kernel still without a size the next unused
// record_param_comms of the same collective: per device when the kernels
// sit on one device, else per device d using the ops whose "Rank" is d.
func matchByOrder(kernels, rpcs []*kEvent, cs []KinetoCollective) {
	devices := map[int]bool{}
	for i := range cs {
		devices[cs[i].Device] = true
	}
	type key struct {
		dev  int
		coll string
	}
	queues := map[key][]*kEvent{}
	sortedRPCs := slices.Clone(rpcs)
	slices.SortStableFunc(sortedRPCs, func(a, b *kEvent) int { return cmp.Compare(a.ts, b.ts) })
	for _, r := range sortedRPCs {
		if r.used {
			continue
		}
		meta, _, _ := commsMeta(r.args)
		coll := normColl(meta.coll)
		if coll == "" {
			continue
		}
		if len(devices) == 1 {
			for d := range devices {
				queues[key{d, coll}] = append(queues[key{d, coll}], r)
			}
			continue
		}
		rank, err := argInt(r.args, "Rank")
		if err != nil || rank < 0 || rank > math.MaxInt32 {
			continue
		}
		queues[key{int(rank), coll}] = append(queues[key{int(rank), coll}], r)
	}
	idx := make([]int, len(kernels))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(cs[a].StartUs, cs[b].StartUs) })
	for _, i := range idx {
		c := &cs[i]
		if c.Match != "" || c.Name == "" {
			continue
		}
		k := key{c.Device, normColl(c.Name)}
		q := queues[k]
		if len(q) == 0 {
			continue
		}
		meta, _, _ := commsMeta(q[0].args)
		applyMeta(c, meta, "order")
		q[0].used = true
		queues[k] = q[1:]
	}
}
