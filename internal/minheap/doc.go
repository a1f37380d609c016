// Package minheap is a binary min-heap of any element type that orders
// itself (a Less method), for searches that push and pop millions of small
// values: container/heap moves each one through an interface, which
// allocates, and made route search five times slower.
//
// Push and Pop are O(log n); nothing here allocates beyond the growth of
// the heap's slice.
package minheap
