package algos

import (
	"fmt"

	"github.com/arsim/arsim/topology"
)

// customAR is the vLLM / SGLang custom allreduce as a whole: the Python
// gate (should_custom_ar) and the C++ dispatch between 1-stage and 2-stage,
// with NCCL as the fallback when the gate says no.
//
// Gate: world size in {2, 4, 6, 8}, bytes % 16 == 0, bytes < max_size
// (8 MiB) and (world size 2 or every pair of GPUs on NVLink); otherwise the
// allreduce goes to NCCL. Dispatch: world size 2 → 1-stage; with full
// NVLink, (ws ≤ 4 and bytes < 512 KiB) or (ws ≤ 8 and bytes < 256 KiB) →
// 1-stage, else 2-stage. Option algo (SGLANG_CUSTOM_ALLREDUCE_ALGO /
// VLLM_CUSTOM_ALLREDUCE_ALGO) forces a stage and bypasses the NVLink gate,
// as on a patched PCIe box; the world-size and size gates still apply.
type customAR struct{ anyRanks }

func init() { Register(customAR{}) }

func (customAR) Name() string { return "custom_ar" }

func (customAR) Describe() string {
	return "vLLM/SGLang custom allreduce: their gate and 1-stage/2-stage dispatch, NCCL fallback outside the gate"
}

// customARMaxSize is vLLM's and SGLang's default max_size (8192 × 1024).
const customARMaxSize = 8 << 20

func (customAR) Options() []OptionSpec {
	return append(append([]OptionSpec{
		{Name: "algo", Values: []string{"auto", "1stage", "2stage", "ring", "tree"}, Default: "auto",
			Doc: "as SGLANG_CUSTOM_ALLREDUCE_ALGO: force 1-stage or 2-stage, bypassing the full-NVLink gate; ring or tree (NCCL_ALGO) is the NCCL fallback's algorithm, the gate's choice staying auto"},
		{Name: "max_size", Int: bytesRange, Default: fmt.Sprint(customARMaxSize),
			Doc: "largest message (exclusive) custom allreduce takes, in bytes (vLLM/SGLang max_size)"},
	}, pullOptions...), customARNCCLOptions()...)
}

// customARNCCLOptions are NCCL's settings (nccl's options but the
// algorithm, which shares algo, and the forced channel count), which reach
// custom_ar's NCCL fallback: NCCL's environment is the process's, so
// NCCL_P2P_LEVEL and the rest apply to the allreduces the gate sends to
// NCCL as to any other NCCL call.
func customARNCCLOptions() []OptionSpec {
	var out []OptionSpec
	for _, o := range (nccl{}).Options() {
		if o.Name == "algo" || o.Name == "channels" {
			continue
		}
		o.Doc = "for the NCCL fallback: " + o.Doc
		out = append(out, o)
	}
	return out
}

// customARFallbackOpts are the options of req that reach the NCCL
// fallback: NCCL's settings, and algo where it names NCCL's ring or tree.
func customARFallbackOpts(req Request) map[string]string {
	out := map[string]string{}
	for _, o := range customARNCCLOptions() {
		if v, ok := req.Opts[o.Name]; ok {
			out[o.Name] = v
		}
	}
	if v := req.Opt("algo", "auto"); v == "ring" || v == "tree" {
		out["algo"] = v
	}
	return out
}

// customARWorldSizes is _SUPPORTED_WORLD_SIZES of vLLM and SGLang.
var customARWorldSizes = []int{2, 4, 6, 8}

// fullNVLink reports whether every pair of ranks 0…n−1 is connected by
// NVLink (nvmlDeviceGetP2PStatus with the NVLink capability on every pair).
func fullNVLink(top *topology.Topology, n int) (bool, error) {
	g := top.GPUs()
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			c, err := top.PathClass(g[a], g[b])
			if err != nil {
				return false, err
			}
			if c.Kind != topology.PathNV {
				return false, nil
			}
		}
	}
	return true, nil
}

// customARDecision returns "1stage", "2stage", or "" with the reason for
// falling back to NCCL.
func customARDecision(req Request) (string, string, error) {
	n := req.Ranks
	force := req.Opt("algo", "auto") // ring and tree are the NCCL fallback's
	maxSize := int64(req.IntOpt("max_size", customARMaxSize))
	supported := false
	for _, w := range customARWorldSizes {
		supported = supported || w == n
	}
	if !supported {
		return "", fmt.Sprintf("world size %d is not one of %v", n, customARWorldSizes), nil
	}
	if req.Bytes%16 != 0 {
		return "", fmt.Sprintf("%d B is not a multiple of 16 B", req.Bytes), nil
	}
	if req.Bytes >= maxSize {
		return "", fmt.Sprintf("%d B is not below max_size %d B", req.Bytes, maxSize), nil
	}
	nv, err := fullNVLink(req.Top, n)
	if err != nil {
		return "", "", err
	}
	switch force {
	case "1stage", "2stage":
		return force, fmt.Sprintf("algo=%s forced (full NVLink: %v)", force, nv), nil
	}
	if n > 2 && !nv {
		return "", fmt.Sprintf("%d ranks without NVLink between every pair (\"not supported on more than two PCIe-only GPUs\")", n), nil
	}
	switch {
	case n == 2:
		return "1stage", "world size 2", nil
	case n <= 4 && req.Bytes < 512<<10:
		return "1stage", fmt.Sprintf("full NVLink, %d ranks ≤ 4 and %d B < 512 KiB", n, req.Bytes), nil
	case n <= 8 && req.Bytes < 256<<10:
		return "1stage", fmt.Sprintf("full NVLink, %d ranks ≤ 8 and %d B < 256 KiB", n, req.Bytes), nil
	}
	return "2stage", fmt.Sprintf("full NVLink, %d ranks, %d B above the 1-stage thresholds", n, req.Bytes), nil
}

func (customAR) Plan(req Request) (*Schedule, error) {
	stage, why, err := customARDecision(req)
	if err != nil {
		return nil, fmt.Errorf("algos: custom_ar: %w", err)
	}
	sub := req
	sub.Opts = map[string]string{}
	var s *Schedule
	runs := "nccl"
	switch stage {
	case "":
		// The gate says no: the allreduce goes to NCCL, with the process's
		// NCCL settings (custom allreduce options mean nothing there).
		sub.Opts = customARFallbackOpts(req)
		s, err = Plan("nccl", sub)
		if err != nil {
			return nil, fmt.Errorf("algos: custom_ar: falls back to nccl (%s), which failed: %w", why, err)
		}
		s.Notes = append([]string{"custom_ar: fell back to nccl: " + why}, s.Notes...)
	default:
		for _, o := range pullOptions {
			if v, ok := req.Opts[o.Name]; ok {
				sub.Opts[o.Name] = v
			}
		}
		if stage == "1stage" {
			runs = "one_stage"
			s, err = oneStage{}.Plan(sub)
		} else {
			runs = "two_stage"
			s, err = twoStage{}.Plan(sub)
		}
		if err != nil {
			return nil, fmt.Errorf("algos: custom_ar: %s: %w", stage, err)
		}
		s.Notes = append([]string{fmt.Sprintf("custom_ar: %s (%s)", stage, why)}, s.Notes...)
	}
	s.Algo, s.Runs = "custom_ar", runs
	return s, nil
}
