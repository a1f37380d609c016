package design

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

func load(t testing.TB, name string) *topology.Topology {
	top, err := topology.Load(name)
	require.NoError(t, err)
	return top
}

// The acceptance bar: on both PCIe boxes at 42 KiB, at least 20 proved
// candidates, and the best is at least as fast as every built-in at its
// defaults (every built-in is a point of the space, so this holds by
// construction; the test keeps it so).
func TestSearchBeatsEveryBuiltin(t *testing.T) {
	for _, name := range []string{"rtxpro6000x8-2numa", "rtxpro6000x8-switches"} {
		r, err := Search(context.Background(), Config{Top: load(t, name), Bytes: 43008, Budget: 120})
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(r.Candidates), 20, name)
		for _, c := range r.Candidates {
			assert.True(t, c.Checked, c.Name)
		}
		best := r.Best()
		require.NotNil(t, best)
		require.NotEmpty(t, r.Builtins)
		for _, b := range r.Builtins {
			assert.LessOrEqual(t, best.Us, b.Us, "%s: %s (%.2f µs) against built-in %s", name, best.Name, best.Us, b.Name)
		}
		t.Logf("%s: best %s %.2f µs (as %s); best built-in %s %.2f µs; %d candidates", name, best.Name, best.Us, best.As, r.Builtins[0].Name, r.Builtins[0].Us, len(r.Candidates))
	}
}

// Every registered algorithm, at its default options, is a point of the
// space: some candidate is built by it and runs exactly as fast.
func TestSpaceHoldsEveryBuiltin(t *testing.T) {
	top := load(t, "rtxpro6000x8-2numa")
	r, err := Search(context.Background(), Config{Top: top, Bytes: 14336, Budget: 60, Refine: 1})
	require.NoError(t, err)
	for _, b := range r.Builtins {
		found := false
		for _, c := range r.Candidates {
			if c.Params.Blocks == 0 && c.Params.Threads == 0 && strings.Fields(c.As)[0] == b.Name && c.Us == b.Us {
				found = true
			}
		}
		assert.True(t, found, "built-in %s (%.3f µs) is not a point of the space", b.Name, b.Us)
	}
}

// The same search gives the same ranking whatever the parallelism.
func TestSearchIsDeterministic(t *testing.T) {
	top := load(t, "rtxpro6000x8-switches")
	run := func(par int) string {
		r, err := Search(context.Background(), Config{Top: top, Bytes: 43008, Budget: 80, Parallel: par})
		require.NoError(t, err)
		var b strings.Builder
		for _, c := range r.Candidates {
			fmt.Fprintf(&b, "%s %v %s\n", c.Name, c.Us, c.Binds)
		}
		return b.String()
	}
	assert.Equal(t, run(1), run(4))
}

// The composers' schedules pass the checker at every world size the
// machines allow and at sizes with remainders.
func TestComposedSchedulesCheck(t *testing.T) {
	composed := []Params{
		{Shape: "one_shot", Move: "pull", Barrier: "flag", Flags: "host"},
		{Shape: "two_shot", Move: "pull", Barrier: "flag", Flags: "host"},
		{Shape: "one_shot", Move: "push", Barrier: "data", Rearm: "deferred", Chunks: 3},
		{Shape: "one_shot", Move: "push", Barrier: "data", Rearm: "reader", Chunks: 2},
		{Shape: "islands", Islands: "socket", Move: "pull", Exchange: "push", Barrier: "flag"},
		{Shape: "islands", Islands: "socket", Move: "pull", Exchange: "pull", Barrier: "flag"},
	}
	for _, preset := range []string{"rtxpro6000x8-2numa", "rtxpro6000x8-switches"} {
		top := load(t, preset)
		for _, p := range composed {
			for _, n := range []int{2, 3, 4, 8} {
				for _, b := range []int64{2, 14, 43010, 1 << 20} {
					req := algos.Request{Top: top, Ranks: n, Bytes: b, DType: algos.BF16, Launch: hw.Graph}
					// Call the composer itself: Build hands islands of
					// hierarchical's grouping to hierarchical.
					_, _, compose, err := resolve(p, req)
					require.NoError(t, err, p.Name())
					if compose == nil {
						compose = composeIslands
					}
					s, err := compose(p, req)
					if errors.Is(err, ErrNotComposable) {
						continue // one island, say
					}
					require.NoError(t, err, "%s n=%d %d B on %s", p.Name(), n, b, preset)
					assert.NoError(t, algos.Check(s), "%s n=%d %d B on %s", p.Name(), n, b, preset)
				}
			}
		}
	}
}

// Planted bug in a composer's output: the push exchange without the
// counterpart's "slots free" wait lets the next call overwrite a receive
// slot that is still being added.
func TestCheckerCatchesComposedExchangeWithoutFreeWait(t *testing.T) {
	p := Params{Shape: "islands", Islands: "socket", Move: "pull", Exchange: "push", Barrier: "flag"}
	s, _, err := Build(p, algos.Request{Top: load(t, "rtxpro6000x8-2numa"), Ranks: 8, Bytes: 4096, DType: algos.BF16})
	require.NoError(t, err)
	for r := range s.Programs {
		for i, op := range s.Programs[r] {
			if strings.HasPrefix(op.Label, "exchange slot free at") {
				s.Programs[r][i] = algos.Op{Kind: algos.Compute, After: op.After, Label: "removed"}
			}
		}
	}
	err = algos.Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu")
	assert.Contains(t, err.Error(), ":dx.recv bytes")
}

func TestBuildRefusesWhatNoBuilderMakes(t *testing.T) {
	req := algos.Request{Top: load(t, "rtxpro6000x8-2numa"), Ranks: 8, Bytes: 4096, DType: algos.BF16}
	for _, p := range []Params{
		{Shape: "one_shot", Move: "push", Barrier: "atomic"},
		{Shape: "one_shot", Move: "push", Barrier: "flag", Flags: "host"},
		{Shape: "two_shot", Move: "pull", Barrier: "flag", Chunks: 4},
		{Shape: "ring", Blocks: 4},
		{Shape: "one_shot", Move: "pull", Barrier: "flag", Flags: "host", FlagApart: 1024}, // not staged through host memory
	} {
		_, _, err := Build(p, req)
		assert.ErrorIs(t, err, ErrNotComposable, p.Name())
	}
	_, _, err := Build(Params{Shape: "one_shot", Move: "sideways"}, req)
	assert.ErrorContains(t, err, `design: move "sideways" is not one of , pull, push`)
}

func TestSpecRoundTrip(t *testing.T) {
	p := Params{Shape: "islands", Islands: "socket", Move: "push", Exchange: "push", Barrier: "data", Rearm: "reader", Blocks: 8, Threads: 256}
	var buf bytes.Buffer
	require.NoError(t, WriteSpec(&buf, Spec{Params: p, Topology: "rtxpro6000x8-2numa", Ranks: 8, Bytes: 43008, Us: 6.85}))
	s, err := ReadSpec(&buf, "w.json")
	require.NoError(t, err)
	assert.Equal(t, p, s.Params)
	assert.Equal(t, p.Name(), s.Name)
	for _, bad := range []struct{ doc, want string }{
		{`{"arsim_design": 2, "params": {"shape": "one_shot"}}`, "arsim_design version 2, want 1"},
		{`{"arsim_design": 1, "params": {"shape": "one_shot"}, "extra": 1}`, `unknown field "extra"`},
		{`{"arsim_design": 1, "params": {"shape": "spiral"}}`, `shape "spiral" is not one of`},
		{`{"arsim_design": 1, "params": {"shape": "one_shot", "blocks": -2}}`, "blocks -2: want 0–1024"},
		{`{"arsim_design": 1`, "unexpected EOF"},
	} {
		_, err := ReadSpec(strings.NewReader(bad.doc), "bad.json")
		require.Error(t, err, bad.doc)
		assert.Contains(t, err.Error(), "design: spec bad.json: ")
		assert.Contains(t, err.Error(), bad.want)
	}
}

// FuzzReadSpec: no input makes the spec reader or the builder panic.
func FuzzReadSpec(f *testing.F) {
	f.Add([]byte(`{"arsim_design": 1, "params": {"shape": "two_shot", "move": "push", "barrier": "data", "rearm": "reader"}}`))
	f.Add([]byte(`{"arsim_design": 1, "params": {"shape": "islands", "islands": "switch", "move": "pull", "exchange": "push", "barrier": "flag", "chunks": 3}}`))
	f.Add([]byte(`{"arsim_design": 1, "params": {"shape": "one_shot", "move": "push", "barrier": "data", "rearm": "deferred", "chunks": 64, "blocks": 1024}}`))
	f.Add([]byte(`{"arsim_design": 1, "params": {"shape": "one_shot", "move": "pull", "barrier": "flag", "flags": "host", "load_waits": 3}}`))
	top, err := topology.Load("rtxpro6000x8-switches")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadSpec(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			return
		}
		sch, _, err := Build(s.Params, algos.Request{Top: top, Ranks: 4, Bytes: 256, DType: algos.BF16})
		if err != nil {
			return
		}
		_ = algos.Check(sch)
	})
}

// A saved design plans under spec:FILE for other sizes and world sizes.
func TestSpecLoader(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/w.json"
	var buf bytes.Buffer
	require.NoError(t, WriteSpec(&buf, Spec{Params: Params{Shape: "two_shot", Move: "push", Barrier: "data", Rearm: "reader"}}))
	require.NoError(t, writeFile(path, buf.Bytes()))
	s, err := algos.Plan(SpecPrefix+path, algos.Request{Top: load(t, "rtxpro6000x8-2numa"), Ranks: 4, Bytes: 1 << 20, DType: algos.BF16})
	require.NoError(t, err)
	assert.Equal(t, "spec:"+path, s.Algo)
	require.NoError(t, algos.Check(s))
	_, err = algos.Lookup(SpecPrefix + dir + "/missing.json")
	assert.ErrorContains(t, err, "missing.json")
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

// A host-staged point with its flags a kibibyte apart is host_one_shot
// with flag_apart, which takes the 8-rank barrier's 7 collisions off each
// of its two barriers; its name says the layout.
func TestFlagApartIsTheHostStagedFlagLayout(t *testing.T) {
	req := algos.Request{Top: load(t, "rtxpro6000x8-2numa"), Ranks: 8, Bytes: 14336, DType: algos.BF16}
	p := Params{Shape: "one_shot", Staging: "host", Move: "pull", Barrier: "flag", Flags: "host", FlagApart: 1024}
	s, as, err := Build(p, req)
	require.NoError(t, err)
	assert.Equal(t, "host_one_shot flag_apart=1024", as)
	assert.Equal(t, "one_shot via-host pull flag@host/1024B", p.Name())
	require.NoError(t, algos.Check(s))
	_, _, err = Build(Params{Shape: "one_shot", Staging: "host", Move: "pull", Barrier: "flag", Flags: "host", FlagApart: 8192}, req)
	assert.ErrorContains(t, err, "flag_apart 8192: want 0–4096")
}

// A spec's load_waits (the compiled pull loop's waits, `arsim sass`) reaches
// the pull kernels, built-in and composed: two waits an iteration (four for
// the composed one-shot) slow the pulls at 14 KiB on eight RTX PRO 6000s, its name and the built-in's
// options say it, and a push or an NCCL-style shape refuses it.
func TestLoadWaitsReachThePullKernels(t *testing.T) {
	req := algos.Request{Top: load(t, "rtxpro6000x8-2numa"), Ranks: 8, Bytes: 14336, DType: algos.BF16}
	us := func(p Params) (float64, string) {
		s, as, err := Build(p, req)
		require.NoError(t, err, p.Name())
		require.NoError(t, algos.Check(s), p.Name())
		m, err := hw.New(req.Top)
		require.NoError(t, err)
		res, err := algos.Run(m, s, algos.RunOptions{Iterations: 3})
		require.NoError(t, err)
		return res.MeanUs(), as
	}
	for _, c := range []struct {
		p     Params
		waits int
	}{
		{Params{Shape: "two_shot", Move: "pull", Barrier: "flag"}, 2},                   // two_stage
		{Params{Shape: "islands", Islands: "socket", Move: "pull", Barrier: "flag"}, 2}, // hierarchical
		// composed: at 14 KiB two waits an iteration still leave its pulls
		// as fast as the barriers around them allow, four do not
		{Params{Shape: "one_shot", Move: "pull", Barrier: "flag", Flags: "host"}, 4},
	} {
		p := c.p
		base, _ := us(p)
		p.LoadWaits = c.waits
		slow, as := us(p)
		t.Logf("%s: %.2f → %.2f µs (%s)", p.Name(), base, slow, as)
		assert.Greater(t, slow, base, p.Name())
		assert.Contains(t, p.Name(), fmt.Sprintf("waits%d", c.waits))
	}
	_, as, err := Build(Params{Shape: "two_shot", Move: "pull", Barrier: "flag", LoadWaits: 2}, req)
	require.NoError(t, err)
	assert.Equal(t, "two_stage barrier=flag load_waits=2", as)
	for _, p := range []Params{
		{Shape: "one_shot", Move: "push", Barrier: "data", LoadWaits: 2},
		{Shape: "ring", LoadWaits: 2},
	} {
		_, _, err := Build(p, req)
		assert.ErrorIs(t, err, ErrNotComposable, p.Name())
	}
	_, _, err = Build(Params{Shape: "one_shot", Move: "pull", Barrier: "flag", Flags: "host", LoadWaits: 9}, req)
	assert.ErrorContains(t, err, "load_waits 9: a pull loads one pack from each of the 8 ranks' buffers an iteration, so it waits at most 8 times")
	_, _, err = Build(Params{Shape: "islands", Islands: "socket", Move: "push", Exchange: "push", Barrier: "data", Rearm: "reader", LoadWaits: 5}, req)
	assert.Error(t, err, "a push refuses load_waits before the islands' size is asked")
	_, _, err = Build(Params{Shape: "islands", Islands: "socket", Move: "pull", Exchange: "push", Barrier: "flag", LoadWaits: 5}, req)
	assert.ErrorContains(t, err, "load_waits 5: the island's pulls load one pack from each of its 4 members' buffers an iteration, so they wait at most 4 times")
	_, _, err = Build(Params{Shape: "two_shot", LoadWaits: -1}, req)
	assert.ErrorContains(t, err, "load_waits -1: want 0–64")
}
