package design

import (
	"fmt"
	"strings"

	"github.com/arsim/arsim/algos"
)

// Params is one point of the design space. Empty fields take their
// defaults; Validate says which combinations exist.
type Params struct {
	// Shape: one_shot (every rank gathers every input), two_shot
	// (reduce-scatter, then all-gather), islands (reduce inside islands,
	// exchange between them, gather inside), or an NCCL-style schedule
	// kept as built: ring, tree, nccl, halving_doubling, custom_ar.
	Shape string `json:"shape"`
	// Move: pull (loads of peers' memory) or push (stores into it).
	Move string `json:"move,omitempty"`
	// Exchange: how islands exchange their partial sums: pull or push.
	Exchange string `json:"exchange,omitempty"`
	// Islands: socket or switch (PCIe switch, else socket).
	Islands string `json:"islands,omitempty"`
	// Order: all (every peer at once) or staged (one peer per pass, a
	// permutation: one stream out and one in per GPU at a time).
	Order string `json:"order,omitempty"`
	// Barrier: flag (posted flag stores), atomic (compare-and-swap
	// signals) or data (completion carried by the data: a sentinel).
	Barrier string `json:"barrier,omitempty"`
	// Rearm, for Barrier data: deferred (the buffer of the previous call
	// is cleared, three rotating copies: TensorRT-LLM's Lamport) or reader
	// (the reader writes the sentinel back, two copies: FlashInfer).
	Rearm string `json:"rearm,omitempty"`
	// Flags: gpu (in the waiting GPU's memory) or host (pinned memory of
	// the waiting GPU's socket).
	Flags string `json:"flags,omitempty"`
	// Staging: direct (GPU to GPU) or host (through pinned host memory,
	// for machines without peer-to-peer).
	Staging string `json:"staging,omitempty"`
	// FlagApart, for Staging host: bytes between the ranks' flag sectors
	// in host memory (host_one_shot's and host_two_shot's flag_apart);
	// 0: next to each other (128).
	FlagApart int `json:"flag_apart,omitempty"`
	// Chunks: the message in this many pieces, each with its own
	// completion, so that the receiver works on one while the next lands
	// (pipeline depth); 0 or 1 for none.
	Chunks int `json:"chunks,omitempty"`
	// Blocks and Threads per GPU; 0: the kernel's own default.
	Blocks  int `json:"blocks,omitempty"`
	Threads int `json:"threads,omitempty"`
	// LoadWaits, for pulls: the round trips the compiled loop waits for
	// its loads each iteration (hw.Kernel.LoadWaits, as `arsim sass` reads
	// it from the kernel's SASS); 0: every load in flight at once. It is
	// the compiled code's, so the search leaves it 0: a designer sets it
	// in a spec once the kernel is CUDA.
	LoadWaits int `json:"load_waits,omitempty"`
	// Proto, Transport and P2PLevel of the NCCL-style shapes.
	Proto     string `json:"proto,omitempty"`
	Transport string `json:"transport,omitempty"`
	P2PLevel  string `json:"p2p_level,omitempty"`
}

// nccl reports whether the shape is one kept as built.
func (p Params) nccl() bool {
	switch p.Shape {
	case "ring", "tree", "nccl", "halving_doubling", "custom_ar":
		return true
	}
	return false
}

// Name is a short, unique, readable name of the point, as the search
// lists it: "islands:socket push+push data/reader 16x256".
func (p Params) Name() string {
	var parts []string
	shape := p.Shape
	if p.Shape == "islands" {
		shape += ":" + p.Islands
	}
	parts = append(parts, shape)
	if p.Staging == "host" {
		parts = append(parts, "via-host")
	}
	if p.Move != "" {
		m := p.Move
		if p.Exchange != "" {
			m += "+" + p.Exchange
		}
		if p.Order == "staged" {
			m += "/staged"
		}
		parts = append(parts, m)
	}
	if p.Barrier != "" {
		b := p.Barrier
		if p.Rearm != "" {
			b += "/" + p.Rearm
		}
		if p.Flags == "host" {
			b += "@host"
		}
		if p.FlagApart > 0 {
			b += fmt.Sprintf("/%dB", p.FlagApart)
		}
		parts = append(parts, b)
	}
	if p.Chunks > 1 {
		parts = append(parts, fmt.Sprintf("c%d", p.Chunks))
	}
	for _, x := range []string{p.Proto, p.Transport} {
		if x != "" {
			parts = append(parts, x)
		}
	}
	if p.P2PLevel != "" {
		parts = append(parts, "p2p="+p.P2PLevel)
	}
	if p.Blocks > 0 || p.Threads > 0 {
		parts = append(parts, fmt.Sprintf("%sx%s", orDefault(p.Blocks), orDefault(p.Threads)))
	}
	if p.LoadWaits > 0 {
		parts = append(parts, fmt.Sprintf("waits%d", p.LoadWaits))
	}
	return strings.Join(parts, " ")
}

func orDefault(n int) string {
	if n == 0 {
		return "dflt"
	}
	return fmt.Sprint(n)
}

// oneOf checks a field's value.
func oneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("design: %s %q is not one of %s", field, v, strings.Join(allowed, ", "))
}

// Validate checks every field's value (not whether the combination can be
// built: Build says that).
func (p Params) Validate() error {
	checks := []struct {
		field, v string
		allowed  []string
	}{
		{"shape", p.Shape, []string{"one_shot", "two_shot", "islands", "ring", "tree", "nccl", "halving_doubling", "custom_ar"}},
		{"move", p.Move, []string{"", "pull", "push"}},
		{"exchange", p.Exchange, []string{"", "pull", "push"}},
		{"islands", p.Islands, []string{"", "socket", "switch"}},
		{"order", p.Order, []string{"", "all", "staged"}},
		{"barrier", p.Barrier, []string{"", "flag", "atomic", "data"}},
		{"rearm", p.Rearm, []string{"", "deferred", "reader"}},
		{"flags", p.Flags, []string{"", "gpu", "host"}},
		{"staging", p.Staging, []string{"", "direct", "host"}},
		{"proto", p.Proto, []string{"", "ll", "ll128", "simple"}},
		{"transport", p.Transport, []string{"", "p2p", "shm"}},
		{"p2p_level", p.P2PLevel, []string{"", "loc", "nvl", "pix", "pxb", "phb", "sys"}},
	}
	for _, c := range checks {
		if err := oneOf(c.field, c.v, c.allowed...); err != nil {
			return err
		}
	}
	for _, x := range []struct {
		field string
		v     int
		hi    int
	}{{"chunks", p.Chunks, 64}, {"blocks", p.Blocks, 1024}, {"threads", p.Threads, 1024}, {"flag_apart", p.FlagApart, 4096},
		{"load_waits", p.LoadWaits, algos.MaxCheckRanks}} {
		if x.v < 0 || x.v > x.hi {
			return fmt.Errorf("design: %s %d: want 0–%d", x.field, x.v, x.hi)
		}
	}
	return nil
}
