package minheap

// Lesser is an element type ordered by its Less method, which must be a
// strict weak order (irreflexive and transitive).
type Lesser[T any] interface {
	Less(T) bool
}

// Heap is a binary min-heap of T. The zero value is an empty heap; a
// heap's storage is reused after Reset. Invariant: for every i > 0,
// h[(i-1)/2] is not greater than h[i].
type Heap[T Lesser[T]] []T

// Len returns the number of elements.
func (h Heap[T]) Len() int { return len(h) }

// Reset empties the heap, keeping its storage.
func (h *Heap[T]) Reset() { *h = (*h)[:0] }

// Push adds x in O(log n).
func (h *Heap[T]) Push(x T) {
	*h = append(*h, x)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q[i].Less(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

// Pop removes and returns the least element in O(log n). Of elements that
// are equal under Less, which comes first is not specified: give elements a
// total order (a sequence number as the last key) where that matters. It
// panics on an empty heap.
func (h *Heap[T]) Pop() T {
	q := *h
	if len(q) == 0 {
		panic("minheap: Pop of an empty heap")
	}
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	*h = q
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q[r].Less(q[l]) {
			m = r
		}
		if !q[m].Less(q[i]) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	return top
}
