package sim

import (
	"math"
	"slices"
)

// Solved components kept
//
// A component's rates are a function of its flows in canonical order:
// their routes (resources and weights), caps, kinds and classes (the
// kinds and classes set collapsed capacities; every flow crossing a
// component's resource is in the component) and the resources'
// capacities, which do not change (see solve). Collectives solve the
// same few components again and again (an 8-GPU verify pass solves a few
// thousand of a few dozen kinds), so the network keeps the rates of the
// components it solved, by that signature, and a component whose
// signature it finds takes them instead of being solved: the same bits.
//
// A route's part of the signature is its number among the prepared
// routes of equal hops (PreparedRoute.id); a component with a flow
// started with a route of its own is solved every time.

// memoEntry is a solved component: its signature and its flows' rates in
// canonical order.
type memoEntry struct {
	sig   []uint64
	rates []float64
	next  int32 // the next entry of the same hash, −1 for none
}

// maxMemo bounds the components kept.
const maxMemo = 4096

// memoSig writes comp's signature into n.sig; false if a flow has no
// prepared route.
func (n *Network) memoSig(comp []*Flow) bool {
	sig := n.sig[:0]
	for _, f := range comp {
		if f.routeID == 0 {
			return false
		}
		sig = append(sig, uint64(f.routeID)<<8|uint64(f.Spec.Kind), math.Float64bits(float64(f.Spec.Cap)), uint64(f.Spec.Class))
	}
	n.sig = sig
	return true
}

func sigHash(sig []uint64) uint64 {
	h := uint64(len(sig))
	for _, w := range sig {
		h = (h ^ w) * 0x9E3779B97F4A7C15
		h ^= h >> 29
	}
	return h
}

// solveKept gives comp (in canonical order) the rates kept for its
// signature, and reports whether there were any. Otherwise it solves
// comp and keeps its rates.
func (n *Network) solveKept(comp []*Flow) {
	if !n.memoSig(comp) {
		n.solve(comp)
		return
	}
	h := sigHash(n.sig)
	first, ok := n.memo[h]
	if ok {
		for i := first; i >= 0; i = n.memoEntries[i].next {
			if e := &n.memoEntries[i]; slices.Equal(e.sig, n.sig) {
				for j, f := range comp {
					f.frozen, f.next = true, e.rates[j]
				}
				return
			}
		}
	}
	n.solve(comp)
	if len(n.memoEntries) >= maxMemo {
		return
	}
	if n.memo == nil {
		n.memo = map[uint64]int32{}
	}
	e := memoEntry{sig: slices.Clone(n.sig), rates: make([]float64, len(comp)), next: -1}
	for j, f := range comp {
		e.rates[j] = f.next
	}
	if ok {
		e.next = first
	}
	n.memo[h] = int32(len(n.memoEntries))
	n.memoEntries = append(n.memoEntries, e)
}

// routeID returns the number of the prepared routes with hops equal to
// hops (weights normalised), from 1.
func (n *Network) routeID(hops []Hop) int32 {
	key := make([]byte, 0, 16*len(hops))
	for _, h := range hops {
		key = appendU64(key, uint64(h.Res))
		key = appendU64(key, math.Float64bits(h.Weight))
	}
	if n.routeIDs == nil {
		n.routeIDs = map[string]int32{}
	}
	id, ok := n.routeIDs[string(key)]
	if !ok {
		id = int32(len(n.routeIDs) + 1)
		n.routeIDs[string(key)] = id
	}
	return id
}

func appendU64(b []byte, v uint64) []byte {
	for range 8 {
		b = append(b, byte(v))
		v >>= 8
	}
	return b
}
