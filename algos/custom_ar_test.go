package algos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
)

// ncclRegistered says whether the fallback exists yet (it is written in
// another file, nccl.go).
func ncclRegistered() bool {
	_, err := Lookup("nccl")
	return err == nil
}

// planCustomAR plans custom_ar; when the gate sends the allreduce to NCCL
// and nccl is not registered, it checks that the error names the fallback
// and the reason, and returns nil.
func planCustomAR(t *testing.T, r Request, reason string) *Schedule {
	t.Helper()
	s, err := Plan("custom_ar", r)
	if reason != "" && !ncclRegistered() {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "custom_ar: falls back to nccl ("+reason)
		return nil
	}
	require.NoError(t, err)
	assert.Equal(t, "custom_ar", s.Algo)
	if reason != "" {
		assert.Contains(t, s.Notes[0], "custom_ar: fell back to nccl: "+reason)
	}
	return s
}

func TestCustomARChecks(t *testing.T) {
	// custom_ar takes only 16-byte multiples; the rest (and 16 MiB ≥
	// max_size, and world sizes 3 and 5) go to NCCL, which checks itself
	// once it exists.
	sizes := []int64{16, 1024, 43008, 1 << 20, 16 << 20}
	for _, preset := range []string{"rtxpro6000x8-2numa", "h200x8-nvswitch"} {
		for _, n := range sweepWorlds {
			for _, sz := range sizes {
				for _, algo := range []string{"auto", "1stage", "2stage"} {
					s, err := Plan("custom_ar", req(t, preset, n, sz, map[string]string{"algo": algo}))
					if err != nil && !ncclRegistered() {
						assert.Contains(t, err.Error(), "falls back to nccl", "%s n=%d %d B algo=%s", preset, n, sz, algo)
						continue
					}
					require.NoError(t, err)
					assert.NoError(t, Check(s), "%s n=%d %d B algo=%s: %v", preset, n, sz, algo, s.Notes)
				}
			}
		}
	}
}

// The dispatch table of vLLM/SGLang on a full-NVLink machine.
func TestCustomARDispatchOnNVLink(t *testing.T) {
	cases := []struct {
		n     int
		bytes int64
		want  string
	}{
		{2, 4 << 20, "1stage"},                          // world size 2 is always 1-stage
		{4, 512<<10 - 16, "1stage"},                     // ws ≤ 4 and < 512 KiB
		{4, 512 << 10, "2stage"},                        // the 512 KiB bound is exclusive
		{6, 256<<10 - 16, "1stage"},                     // ws ≤ 8 and < 256 KiB
		{6, 256 << 10, "2stage"},                        //
		{8, 128 << 10, "1stage"},                        //
		{8, 256 << 10, "2stage"},                        // the 256 KiB bound is exclusive
		{8, 8<<20 - 16, "2stage"},                       // just below max_size
		{3, 1024, "world size 3 is not"},                // odd world sizes go to NCCL
		{8, 8 << 20, "8388608 B is not below max_size"}, // max_size is exclusive
		{8, 1000, "1000 B is not a multiple of 16"},     // 16-byte packs
	}
	for _, c := range cases {
		r := req(t, "h200x8-nvswitch", c.n, c.bytes, nil)
		if c.want != "1stage" && c.want != "2stage" {
			// Outside the gate: NCCL, with the reason recorded.
			planCustomAR(t, r, c.want)
			continue
		}
		s := planCustomAR(t, r, "")
		assert.Contains(t, s.Notes[0], "custom_ar: "+c.want, "n=%d %d B", c.n, c.bytes)
	}
}

// On the PCIe box (no NVLink) 4 and 8 ranks fall back to NCCL; 2 ranks
// stay custom; algo=1stage forces 1-stage past the NVLink gate and then
// is exactly one_stage.
func TestCustomAROnPCIe(t *testing.T) {
	const preset = "rtxpro6000x8-2numa"
	for _, n := range []int{4, 8} {
		planCustomAR(t, req(t, preset, n, 43008, nil), fmt.Sprintf("%d ranks without NVLink between every pair", n))
	}
	s := planCustomAR(t, req(t, preset, 2, 43008, nil), "")
	assert.Contains(t, s.Notes[0], "1stage (world size 2)")

	forced := req(t, preset, 8, 43008, map[string]string{"algo": "1stage"})
	s = planCustomAR(t, forced, "")
	assert.Contains(t, s.Notes[0], "1stage (algo=1stage forced (full NVLink: false))")
	// Same schedule, same time as one_stage: custom_ar only dispatches.
	assert.Equal(t, runUs(t, "one_stage", req(t, preset, 8, 43008, nil), 2), runUs(t, "custom_ar", forced, 2))
	forced2 := req(t, preset, 8, 1<<20, map[string]string{"algo": "2stage", "blocks": "8"})
	assert.Equal(t, runUs(t, "two_stage", req(t, preset, 8, 1<<20, map[string]string{"blocks": "8"}), 2), runUs(t, "custom_ar", forced2, 2))
	// Forcing does not lift the other gates: 16 MiB is above max_size.
	planCustomAR(t, req(t, preset, 8, 16<<20, map[string]string{"algo": "1stage"}), "16777216 B is not below max_size")
	// A larger max_size lets it through.
	s = planCustomAR(t, req(t, preset, 8, 16<<20, map[string]string{"algo": "2stage", "max_size": fmt.Sprint(32 << 20)}), "")
	assert.Contains(t, s.Notes[0], "2stage")
}

// NCCL's settings are the process's: the allreduces custom_ar's gate sends
// to NCCL run under them as NCCL's own do, and NCCL_ALGO (algo=ring|tree)
// names the fallback's algorithm without touching the gate.
func TestCustomARFallbackRunsUnderNCCLSettings(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	for _, opts := range []map[string]string{
		{"p2p_level": "sys"},
		{"algo": "ring", "proto": "ll"},
		{"p2p_level": "sys", "graph_channels": "2", "graph_speed": "24000", "graph_type": "phb"},
	} {
		r := Request{Top: top, Ranks: 8, Bytes: 43008, DType: BF16, Opts: opts}
		require.NoError(t, Validate(customAR{}, r), "%v", opts)
		s := planCustomAR(t, r, "8 ranks without NVLink between every pair")
		n, err := Plan("nccl", Request{Top: top, Ranks: 8, Bytes: 43008, DType: BF16, Opts: opts})
		require.NoError(t, err)
		assert.Equal(t, n.Notes, s.Notes[1:], "%v", opts)
	}
}
