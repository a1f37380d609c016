package scenarios

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Fingerprints: a refactor or a speed-up must leave every simulated result
// bit-identical. TestFingerprints runs a wide matrix of configurations
// (every preset × algorithm × option value × size × launch mode ×
// iterations, the verify pass's 122 back-to-back allreduces with their
// compute gaps, spans included) and writes one line per run: the
// configuration, a SHA-256 of the result's times (total, per iteration and
// every op's span, sorted by rank, iteration and op so that the order in
// which spans complete within one instant does not count) and, in a column
// of its own, the engine's event count (which a speed-up may change on
// purpose). Compare two builds with diff:
//
//	go test ./scenarios -run Fingerprints -fingerprints /tmp/before.txt
//	(change the code)
//	go test ./scenarios -run Fingerprints -fingerprints /tmp/after.txt
//	diff <(cut -d' ' -f1-2 /tmp/before.txt) <(cut -d' ' -f1-2 /tmp/after.txt)
//
// Without the flag the test is skipped: the goldens guard the physics; this
// guards exactness.
var fingerprints = flag.String("fingerprints", "", "write the fingerprint of every run of the matrix to this file")

type fpCase struct {
	preset string
	algo   string
	opts   map[string]string
	bytes  int64
	launch hw.LaunchMode
	iters  int
	gap    sim.Duration
}

func (c fpCase) key() string {
	var o []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range c.opts {
			if !yield(k) {
				return
			}
		}
	}) {
		o = append(o, k+"="+c.opts[k])
	}
	opts := strings.Join(o, ",")
	if opts == "" {
		opts = "-"
	}
	return fmt.Sprintf("%s/%s/%s/%dB/%s/x%d/gap%d", c.preset, c.algo, opts, c.bytes, c.launch, c.iters, c.gap)
}

// optionVariants returns the default (no options) and one request per
// value of each enumerated option, and 1 and 4 for each integer option.
func optionVariants(a algos.Algorithm) []map[string]string {
	out := []map[string]string{nil}
	for _, o := range a.Options() {
		vals := o.Values
		if vals == nil {
			vals = []string{"1", "4"}
		}
		for _, v := range vals {
			out = append(out, map[string]string{o.Name: v})
		}
	}
	return out
}

func fingerprintCases() []fpCase {
	var cs []fpCase
	for _, p := range topology.Presets() {
		for _, name := range algos.Names() {
			a, _ := algos.Lookup(name)
			for _, opts := range optionVariants(a) {
				for _, b := range []int64{8, 4096, 43008, 1 << 20, 16 << 20} {
					for _, l := range []hw.LaunchMode{hw.Graph, hw.Eager} {
						for _, it := range []int{1, 3} {
							cs = append(cs, fpCase{preset: p, algo: name, opts: opts, bytes: b, launch: l, iters: it})
						}
					}
				}
			}
			// The verify pass: 122 allreduces between compute gaps.
			for _, b := range []int64{14336, 43008} {
				cs = append(cs, fpCase{preset: p, algo: name, bytes: b, launch: hw.Graph, iters: Layers * AllreducesPerLayer, gap: 40 * sim.Microsecond})
			}
		}
	}
	return cs
}

// fingerprint runs one case; a planning or run error is part of the
// fingerprint (its text), so a refused configuration must stay refused.
func fingerprint(c fpCase) string {
	top, err := topology.Load(c.preset)
	if err != nil {
		return "error " + err.Error()
	}
	s, err := algos.Plan(c.algo, algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: c.bytes, DType: algos.BF16, Launch: c.launch, Opts: c.opts})
	if err != nil {
		return "plan-error"
	}
	m, err := hw.New(top)
	if err != nil {
		return "machine-error"
	}
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: c.iters, Launch: c.launch, Gap: c.gap, Spans: true})
	if err != nil {
		return "run-error " + strings.ReplaceAll(err.Error(), " ", "_")
	}
	spans := slices.Clone(res.Spans)
	slices.SortFunc(spans, func(a, b algos.Span) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		if a.Iter != b.Iter {
			return a.Iter - b.Iter
		}
		return a.Op - b.Op
	})
	h := sha256.New()
	put := func(v int64) { _ = binary.Write(h, binary.LittleEndian, v) }
	put(int64(res.Time))
	for _, t := range res.PerIter {
		put(int64(t))
	}
	for _, sp := range spans {
		put(int64(sp.Rank))
		put(int64(sp.Op))
		put(int64(sp.Iter))
		put(int64(sp.Start))
		put(int64(sp.End))
	}
	return fmt.Sprintf("%x events=%d", h.Sum(nil)[:12], res.Events)
}

func TestFingerprints(t *testing.T) {
	if *fingerprints == "" {
		t.Skip("pass -fingerprints FILE to write the fingerprint of every run")
	}
	cs := fingerprintCases()
	out := make([]string, len(cs))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, c := range cs {
		g.Go(func() error {
			out[i] = c.key() + " " + fingerprint(c)
			return nil
		})
	}
	require.NoError(t, g.Wait())
	require.NoError(t, os.WriteFile(*fingerprints, []byte(strings.Join(out, "\n")+"\n"), 0o644))
	t.Logf("%d runs fingerprinted into %s", len(cs), *fingerprints)
}
