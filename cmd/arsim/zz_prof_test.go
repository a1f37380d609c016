package main

import (
	"context"
	"io"
	"testing"
)

func BenchmarkZZSweepRing8(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if err := run(context.Background(), []string{"sweep", "--algos", "ring", "--sizes", "1MiB", "--ranks", "8"}, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
