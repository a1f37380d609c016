package algos

// Program images
//
// A stored schedule's window is a rank's whole program: each allreduce of
// the rank loads all its ops at once (startIter), before any of them has
// finished, so every dep is then waiting and the slots the allreduce
// begins with are the same every time. The executor makes them once per
// rank, the first time the rank begins an allreduce, and each allreduce
// copies them and starts the ops without deps, in program order, which is
// what loading them one by one does (an op's start touches only its own
// slot and schedules its completion; none finishes during startIter). The
// successors beyond a slot's own (rankRun.more) are the image's, shared,
// as no op of such a rank is loaded again.

// rankImage is a rank's slots as loading its whole program leaves them,
// before any op starts.
type rankImage struct {
	built  bool // made (or tried: ok says whether it is usable)
	ok     bool
	placed bool // its kernels and labels are in the rank's cold slots
	slots  []slot
	kern   []int32 // slotCold.kernel by op
	label  []int32 // slotCold.label by op
	more   [][]int32
	roots  []int32 // ops without deps, in program order
}

// loadImage loads rank r's whole program from its image and starts the
// ops without deps; it reports false, loading nothing, when the rank has
// no usable image (a stream, or an op that fails to load: the ordinary
// path then reports it where it did).
func (x *executor) loadImage(r int) bool {
	if x.images == nil {
		return false
	}
	im := &x.images[r]
	if !im.built {
		x.buildImage(r, im)
	}
	if !im.ok {
		return false
	}
	p := &x.ranks[r]
	nr, slots, src := x.nranks, x.slots, im.slots
	for k, i := 0, r; k < len(src); k, i = k+1, i+nr {
		slots[i] = src[k]
	}
	if !im.placed {
		// The kernels and labels stay: nothing else writes the rank's
		// cold slots.
		im.placed = true
		for k := range src {
			c := &x.cold[k*nr+r]
			c.kernel, c.label = im.kern[k], im.label[k]
		}
	}
	p.next, p.nextPos = p.n, 0 // the window is the program: next wraps to 0
	p.more = im.more
	for _, k := range im.roots {
		x.start(r, k)
	}
	return true
}

// buildImage makes rank r's image: the slots load leaves, op by op, with
// every dep waiting (see load).
func (x *executor) buildImage(r int, im *rankImage) {
	im.built = true
	p := &x.ranks[r]
	if p.cap != p.n {
		x.makeFins(r, nil)
		return
	}
	n := p.n
	im.slots = make([]slot, n)
	im.kern = make([]int32, n)
	im.label = make([]int32, n)
	var c slotCold
	for j := range n {
		s := &im.slots[j]
		after, err := x.src.fill(x, r, j, s, &c)
		if err != nil {
			x.makeFins(r, nil)
			return
		}
		im.kern[j], im.label[j] = c.kernel, c.label
		for _, d := range after {
			if uint(d) >= uint(j) {
				x.makeFins(r, nil)
				return
			}
			t := &im.slots[d]
			if t.nsucc < inlineSucc {
				t.setSucc(int(t.nsucc), int32(j))
			} else {
				if im.more == nil {
					im.more = make([][]int32, n)
				}
				im.more[d] = append(im.more[d], int32(j))
			}
			t.nsucc++
			s.waiting++
		}
		if len(after) == 0 {
			im.roots = append(im.roots, int32(j))
		}
	}
	im.ok = true
	x.makeFins(r, im.slots)
}

// makeFins makes the completion callbacks (slotCold.fin) of rank r's
// window positions: of every one, or, given the rank's program image,
// of the ops that hand hw a callback (transfers and waits; launches,
// computes, fences and signals finish by finishIn).
func (x *executor) makeFins(r int, ops []slot) {
	for k := range int32(x.ranks[r].cap) {
		if ops != nil {
			switch ops[k].kind {
			case Launch, Compute, Fence, Signal:
				continue
			}
		}
		x.cold[int(k)*x.nranks+r].fin = x.eng.Func(x.hDone, x.opArg(r, k))
	}
}
