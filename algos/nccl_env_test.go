package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// NCCL's spellings translate to the short forms, values as NCCL reads
// them (any case, lists, exclusions, legacy integers).
func TestTranslateNCCLEnv(t *testing.T) {
	cases := []struct {
		in   map[string]string
		want map[string]string
	}{
		{map[string]string{"NCCL_P2P_LEVEL": "SYS", "NCCL_PROTO": "LL"}, map[string]string{"p2p_level": "sys", "proto": "ll"}},
		{map[string]string{"p2p_level": "SYS", "proto": "LL"}, map[string]string{"p2p_level": "sys", "proto": "ll"}},
		{map[string]string{"nccl_p2p_level": "phb"}, map[string]string{"p2p_level": "phb"}},
		{map[string]string{"NCCL_P2P_LEVEL": "2"}, map[string]string{"p2p_level": "pxb"}},
		{map[string]string{"NCCL_P2P_LEVEL": "5"}, map[string]string{"p2p_level": "sys"}},
		{map[string]string{"NCCL_P2P_LEVEL": "NVB"}, map[string]string{"p2p_level": "nvl"}},
		{map[string]string{"NCCL_P2P_DISABLE": "1", "NCCL_P2P_LEVEL": "SYS"}, map[string]string{"transport": "shm"}},
		{map[string]string{"NCCL_P2P_DISABLE": "0"}, map[string]string{}},
		{map[string]string{"NCCL_SHM_DISABLE": "1"}, map[string]string{"shm": "off"}},
		{map[string]string{"NCCL_P2P_READ_ENABLE": "1"}, map[string]string{"p2p_read": "on"}},
		{map[string]string{"NCCL_P2P_READ_ENABLE": "0"}, map[string]string{"p2p_read": "off"}},
		{map[string]string{"p2p_read": "ON"}, map[string]string{"p2p_read": "on"}},
		{map[string]string{"NCCL_PROTO": "^LL128"}, map[string]string{"proto": "ll+simple"}},
		{map[string]string{"NCCL_PROTO": "Simple,LL"}, map[string]string{"proto": "ll+simple"}},
		{map[string]string{"NCCL_PROTO": "^ll,simple"}, map[string]string{"proto": "ll128"}},
		{map[string]string{"NCCL_PROTO": "LL,LL128,Simple"}, map[string]string{"proto": "ll+ll128+simple"}},
		{map[string]string{"proto": "simple+ll"}, map[string]string{"proto": "ll+simple"}},
		{map[string]string{"NCCL_ALGO": "Ring"}, map[string]string{"algo": "ring"}},
		{map[string]string{"NCCL_ALGO": "^ring"}, map[string]string{"algo": "tree"}},
		{map[string]string{"NCCL_ALGO": "Ring,Tree"}, map[string]string{}},
		{map[string]string{"NCCL_ALGO": "ring,collnetdirect;allreduce:tree"}, map[string]string{"algo": "tree"}},
		{map[string]string{"NCCL_ALGO": "tree;allgather:ring"}, map[string]string{"algo": "tree"}},
		{map[string]string{"NCCL_MIN_NCHANNELS": "4", "NCCL_MAX_NCHANNELS": "8", "NCCL_NTHREADS": "256"}, map[string]string{"min_channels": "4", "max_channels": "8", "nthreads": "256"}},
		{map[string]string{"NCCL_PROTO": "LL", "proto": "ll"}, map[string]string{"proto": "ll"}},
		{map[string]string{"blocks": "6"}, map[string]string{"blocks": "6"}},
		{map[string]string{"NCCL_GRAPH_MIXING_SUPPORT": "0"}, map[string]string{"graph_mixing": "off"}},
		{map[string]string{"NCCL_GRAPH_MIXING_SUPPORT": "1"}, map[string]string{"graph_mixing": "on"}},
	}
	for _, c := range cases {
		got, err := TranslateNCCLEnv(c.in)
		require.NoError(t, err, "%v", c.in)
		assert.Equal(t, c.want, got, "%v", c.in)
	}
}

func TestTranslateNCCLEnvRefusesWhatNCCLWouldNot(t *testing.T) {
	for in, want := range map[string]string{
		"NCCL_P2P_LEVEL=NODE":         "no NODE level",
		"NCCL_P2P_LEVEL=FAR":          "want LOC",
		"NCCL_PROTO=LL256":            `"ll256" is not one of LL, LL128, Simple`,
		"NCCL_PROTO=^LL,LL128,Simple": "leaves no protocol",
		"NCCL_ALGO=NVLS":              "leaves neither Ring nor Tree",
		"NCCL_ALGO=fast":              `"fast" is not one of Ring, Tree`,
		"NCCL_P2P_DISABLE=yes":        "want 0 or 1",
		"NCCL_NTHREADS=-1":            "positive integer",
		"NCCL_GRAPH_MIXING_SUPPORT=2": "want 0 or 1",
		"NCCL_P2P_READ_ENABLE=yes":    "want 0 or 1",
		"NCCL_IB_HCA=mlx5":            "NCCL setting NCCL_IB_HCA=mlx5 is not modelled",
		"proto=fast":                  "want ll, ll128, simple",
	} {
		k, v, _ := cutEq(in)
		_, err := TranslateNCCLEnv(map[string]string{k: v})
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
	_, err := TranslateNCCLEnv(map[string]string{"NCCL_PROTO": "LL", "proto": "simple"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "both set proto")
}

func cutEq(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// The done-when of NCCL's spellings: NCCL_P2P_LEVEL=SYS,NCCL_PROTO=LL gives
// exactly what p2p_level=sys,proto=ll gives, schedule and time.
func TestNCCLSpellingsPlanTheSame(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	run := func(opts map[string]string) (string, float64) {
		o, err := TranslateNCCLEnv(opts)
		require.NoError(t, err)
		s, err := Plan("nccl", Request{Top: top, Ranks: 8, Bytes: 43008, DType: BF16, Launch: hw.Graph, Opts: o})
		require.NoError(t, err)
		m, err := hw.New(top)
		require.NoError(t, err)
		res, err := Run(m, s, RunOptions{Iterations: 3})
		require.NoError(t, err)
		return s.Notes[0], res.SteadyUs()
	}
	noteA, usA := run(map[string]string{"NCCL_P2P_LEVEL": "SYS", "NCCL_PROTO": "LL"})
	noteB, usB := run(map[string]string{"p2p_level": "sys", "proto": "ll"})
	assert.Equal(t, noteB, noteA)
	assert.Equal(t, usB, usA)
	_, usDefault := run(nil)
	assert.Less(t, usA, usDefault/2, "P2P with LL must beat NCCL's default SHM here (the spellings must not be ignored)")
	assert.Contains(t, noteA, "ring/ll over p2p")
}

// A protocol set lets NCCL's tuning model choose within it: with LL128
// excluded on a PCIe box nothing changes (LL128 is off there anyway); with
// only LL and LL128 allowed NCCL cannot pick Simple at 64 MiB.
func TestNCCLProtoSets(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	note := func(opts map[string]string, bytes int64) string {
		o, err := TranslateNCCLEnv(opts)
		require.NoError(t, err)
		s, err := Plan("nccl", Request{Top: top, Ranks: 8, Bytes: bytes, DType: BF16, Launch: hw.Graph, Opts: o})
		require.NoError(t, err)
		return s.Notes[0]
	}
	for _, b := range []int64{1 << 10, 43008, 64 << 20} {
		assert.Equal(t, note(nil, b)[:len("NCCL: ring/simple")], note(map[string]string{"NCCL_PROTO": "^LL128"}, b)[:len("NCCL: ring/simple")], "%d B", b)
	}
	assert.NotContains(t, note(map[string]string{"NCCL_PROTO": "LL,LL128"}, 64<<20), "/simple")
}

// NCCL_SHM_DISABLE: where a pair would need SHM the plan fails, naming it.
func TestNCCLSHMDisable(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	_, err = Plan("nccl", Request{Top: top, Ranks: 8, Bytes: 43008, DType: BF16, Opts: map[string]string{"shm": "off"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NCCL_SHM_DISABLE")
	_, err = Plan("nccl", Request{Top: top, Ranks: 8, Bytes: 43008, DType: BF16, Opts: map[string]string{"shm": "off", "p2p_level": "sys"}})
	require.NoError(t, err)
}

// Whatever NCCL's variables hold, translation never panics and gives only
// short option names.
func FuzzTranslateNCCLEnv(f *testing.F) {
	for _, s := range []string{"SYS", "^LL128", "ring,collnetdirect;allreduce:tree", "LL,Simple", "3", "", "^", ";:", "nvb"} {
		f.Add("NCCL_PROTO", s)
		f.Add("NCCL_ALGO", s)
		f.Add("NCCL_P2P_LEVEL", s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		out, err := TranslateNCCLEnv(map[string]string{k: v})
		if err != nil {
			return
		}
		for key := range out {
			if len(key) > 5 && (key[:5] == "NCCL_" || key[:5] == "nccl_") {
				t.Fatalf("%s=%q left %s untranslated", k, v, key)
			}
		}
	})
}

// NCCL_P2P_DISABLE=1 (transport=shm) is taken by nccl alone and by ring
// alone, and transport=shm disables nccl's P2P as p2p_level=loc does, even
// against an explicit p2p_level.
func TestNCCLP2PDisableRunsNCCLAlone(t *testing.T) {
	p, err := topology.Lookup("h200x2")
	require.NoError(t, err)
	top, err := p.Build()
	require.NoError(t, err)
	opts, err := TranslateNCCLEnv(map[string]string{"NCCL_P2P_DISABLE": "1"})
	require.NoError(t, err)
	require.NoError(t, ValidateOptions([]string{"nccl"}, top, opts))
	require.NoError(t, ValidateOptions([]string{"ring"}, top, opts), "ring takes its transport=shm")
	time := func(o map[string]string) float64 {
		s, err := Plan("nccl", Request{Top: top, Ranks: 2, Bytes: 1 << 10, DType: BF16, Launch: hw.Graph, Opts: o})
		require.NoError(t, err)
		m, err := hw.New(top)
		require.NoError(t, err)
		r, err := Run(m, s, RunOptions{})
		require.NoError(t, err)
		return r.MeanUs()
	}
	shm := time(opts)
	assert.Equal(t, shm, time(map[string]string{"p2p_level": "loc"}))
	assert.Equal(t, shm, time(map[string]string{"transport": "shm", "p2p_level": "sys"}))
	assert.NotEqual(t, shm, time(map[string]string{"p2p_level": "sys"}), "over NVLink it differs")
}

// NCCL_GRAPH_MIXING_SUPPORT=0 takes nccl.graph_mixing_extra and the
// two-GPU per-call residual nccl.call_extra.* off each call in a CUDA
// graph, on every rank, and nothing off an eager call.
func TestNCCLGraphMixingOff(t *testing.T) {
	for _, preset := range []string{"h200x2", "rtxpro6000x8-2numa"} {
		r := req(t, preset, 0, 14336, nil)
		r.Ranks = r.Top.NumGPUs()
		// off saves the one-GPU saving and the two-GPU per-call residual
		// (nccl.call_extra.ring.ll: 14,336 B runs ring/LL; 0 off the H200s)
		saving := NCCLGraphMixingSaving(r.Top.Params).Micros() + r.Top.Params.Get("nccl.call_extra.ring.ll")
		require.Positive(t, saving)
		for _, launch := range []hw.LaunchMode{hw.Graph, hw.Eager} {
			r.Launch = launch
			r.Opts = nil
			on := runUs(t, "nccl", r, 3)
			r.Opts = map[string]string{"graph_mixing": "off"}
			off := runUs(t, "nccl", r, 3)
			want := 0.0
			if launch == hw.Graph {
				want = saving
			}
			assert.InDelta(t, want, on-off, 1e-3, "%s %v: %.3f µs with NCCL's default, %.3f with mixing off", preset, launch, on, off)
		}
	}
}

// With graph mixing support on, every call in a CUDA graph costs
// nccl.graph_mixing_per_call more for each further call its graph holds
// (graph_calls, beyond the 20 the per-call residuals were fitted at), on
// the H200 machine that measured it; eager calls, calls with the support
// off and machines without the parameter are unchanged.
func TestNCCLGraphCalls(t *testing.T) {
	r := req(t, "h200x2", 0, 43008, nil)
	r.Ranks, r.Launch = 2, hw.Graph
	per := r.Top.Params.Get("nccl.graph_mixing_per_call")
	require.Positive(t, per)
	at := func(opts map[string]string) float64 {
		r.Opts = opts
		return runUs(t, "nccl", r, 3)
	}
	base := at(nil)
	assert.InDelta(t, base, at(map[string]string{"graph_calls": "20"}), 1e-9)
	assert.InDelta(t, 102*per, at(map[string]string{"graph_calls": "122"})-base, 1e-3)
	assert.InDelta(t, -10*per, at(map[string]string{"graph_calls": "10"})-base, 1e-3)
	off := at(map[string]string{"graph_mixing": "off"})
	assert.InDelta(t, off, at(map[string]string{"graph_mixing": "off", "graph_calls": "122"}), 1e-9)
	r.Launch = hw.Eager
	eager := at(nil)
	assert.InDelta(t, eager, at(map[string]string{"graph_calls": "122"}), 1e-9)

	d := req(t, "rtxpro6000x8-2numa", 0, 43008, nil)
	d.Ranks, d.Launch = d.Top.NumGPUs(), hw.Graph
	assert.Zero(t, d.Top.Params.Get("nccl.graph_mixing_per_call"))
	plain := runUs(t, "nccl", d, 3)
	d.Opts = map[string]string{"graph_calls": "122"}
	assert.InDelta(t, plain, runUs(t, "nccl", d, 3), 1e-9)
}
