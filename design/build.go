package design

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/arsim/arsim/algos"
)

// ErrNotComposable marks a combination of choices no builder makes (atomic
// signals into host memory, say); the search skips such points.
var ErrNotComposable = errors.New("not composable")

func notComposable(format string, args ...any) error {
	return fmt.Errorf("design: %w: %s", ErrNotComposable, fmt.Sprintf(format, args...))
}

// Build plans the schedule of point p for req. It returns the schedule and
// what built it: a built-in algorithm with its options ("two_stage
// barrier=atomic") where one has this shape, or "composed" for the
// composers of this package.
func Build(p Params, req algos.Request) (*algos.Schedule, string, error) {
	if err := p.Validate(); err != nil {
		return nil, "", err
	}
	name, opts, compose, err := resolve(p, req)
	if err != nil {
		return nil, "", err
	}
	if p.LoadWaits > 0 && p.nccl() {
		return nil, "", notComposable("load_waits counts a pull kernel's waits for its loads; %s keeps its own loops", p.Shape)
	}
	if p.LoadWaits > 0 && p.choices().move != "pull" {
		return nil, "", notComposable("load_waits counts a pull loop's waits for its loads; %s moves by %s", p.Name(), p.choices().move)
	}
	if compose != nil {
		if p.LoadWaits > req.Ranks && req.Ranks > 0 {
			// As the built-ins' load_waits option: one wait per rank's
			// buffer at most.
			return nil, "composed", fmt.Errorf("design: load_waits %d: a pull loads one pack from each of the %d ranks' buffers an iteration, so it waits at most %d times", p.LoadWaits, req.Ranks, req.Ranks)
		}
		if req.Top != nil && p.Blocks > algos.MaxBlocks(req.Top) {
			// As the built-ins' blocks option (algos.BlocksOption): the
			// blocks wait on each other, so all must be resident.
			return nil, "composed", fmt.Errorf("design: %d blocks is above the %d %s's GPUs run at once", p.Blocks, algos.MaxBlocks(req.Top), req.Top.Name)
		}
		s, err := compose(p, req)
		return s, "composed", err
	}
	if p.Blocks > 0 {
		opts["blocks"] = strconv.Itoa(p.Blocks)
	}
	if p.Threads > 0 {
		opts["threads"] = strconv.Itoa(p.Threads)
	}
	if p.LoadWaits > 0 {
		opts["load_waits"] = strconv.Itoa(p.LoadWaits)
	}
	r := req
	r.Opts = opts
	s, err := algos.Plan(name, r)
	as := name
	for _, k := range []string{"barrier", "islands", "proto", "transport", "p2p_level", "flag_apart", "load_waits"} {
		if v, ok := opts[k]; ok {
			as += " " + k + "=" + v
		}
	}
	return s, as, err
}

type composer func(p Params, req algos.Request) (*algos.Schedule, error)

// resolve maps a point to the built-in algorithm of its shape (name and
// options) or to a composer.
func resolve(p Params, req algos.Request) (string, map[string]string, composer, error) {
	if p.nccl() {
		return resolveNCCL(p)
	}
	c := p.choices()
	if c.chunks > 1 && !(p.Shape == "one_shot" && c.move == "push" && c.barrier == "data") {
		return "", nil, nil, notComposable("chunks are composed for the data-carried one-shot push only")
	}
	if c.staging == "host" {
		return resolveHostStaged(p, c)
	}
	if p.FlagApart > 0 {
		return "", nil, nil, notComposable("flag_apart is the flag layout of staging through host memory (host_one_shot, host_two_shot)")
	}
	if c.flags == "host" && (c.move != "pull" || c.barrier != "flag" || p.Shape == "islands") {
		return "", nil, nil, notComposable("flags in host memory are composed for the pull kernels' flag barriers")
	}
	switch p.Shape {
	case "one_shot":
		return resolveOneShot(p, c)
	case "two_shot":
		return resolveTwoShot(p, c)
	case "islands":
		return resolveIslands(p, c, req)
	}
	return noBuilder(p)
}

// choices are a point's choices with the defaults of its empty fields
// filled in, and its chunks at least 1.
type choices struct {
	move, barrier, flags, staging   string
	order, rearm, exchange, islands string
	chunks                          int
}

// choices fills in p's defaults: pull, flag barriers in GPU memory,
// direct, every peer at once, reader re-arm, pull exchange, islands by
// socket, one chunk.
func (p Params) choices() choices {
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	return choices{
		move: def(p.Move, "pull"), barrier: def(p.Barrier, "flag"), flags: def(p.Flags, "gpu"), staging: def(p.Staging, "direct"),
		order: def(p.Order, "all"), rearm: def(p.Rearm, "reader"), exchange: def(p.Exchange, "pull"), islands: def(p.Islands, "socket"),
		chunks: max(p.Chunks, 1),
	}
}

// noBuilder is resolve's answer for a point no builder makes.
func noBuilder(p Params) (string, map[string]string, composer, error) {
	return "", nil, nil, notComposable("no builder for %s", p.Name())
}

// resolveNCCL keeps an NCCL-style shape as built, with its protocol,
// transport or P2P level; only halving_doubling and custom_ar take blocks.
func resolveNCCL(p Params) (string, map[string]string, composer, error) {
	o := map[string]string{}
	switch p.Shape {
	case "ring", "tree":
		if p.Proto != "" {
			o["proto"] = p.Proto
		}
		if p.Transport != "" {
			o["transport"] = p.Transport
		}
	case "nccl":
		if p.Proto != "" {
			o["proto"] = p.Proto
		}
		if p.P2PLevel != "" {
			o["p2p_level"] = p.P2PLevel
		}
	}
	if p.Blocks > 0 && p.Shape != "halving_doubling" && p.Shape != "custom_ar" {
		return "", nil, nil, notComposable("%s takes NCCL's channels, not blocks", p.Shape)
	}
	return p.Shape, o, nil, nil
}

// resolveHostStaged maps staging through host memory to host_one_shot or
// host_two_shot, the only builders of it.
func resolveHostStaged(p Params, c choices) (string, map[string]string, composer, error) {
	if c.move != "pull" || c.barrier != "flag" || c.flags != "host" || p.Shape == "islands" {
		return "", nil, nil, notComposable("staging through host memory is a pull with host flags (host_one_shot, host_two_shot)")
	}
	o := map[string]string{}
	if p.FlagApart > 0 {
		o["flag_apart"] = strconv.Itoa(p.FlagApart)
	}
	if p.Shape == "one_shot" {
		return "host_one_shot", o, nil, nil
	}
	return "host_two_shot", o, nil, nil
}

// resolveOneShot maps a one-shot point: pulls (one_stage, or composed
// with host flags) or pushes (one_shot_push, staged_push, and the
// data-carried lamport_one_shot and pcie_ipc_one_shot, composed in
// chunks).
func resolveOneShot(p Params, c choices) (string, map[string]string, composer, error) {
	o := map[string]string{}
	switch {
	case c.move == "pull" && c.flags == "host":
		return "", nil, composeHostFlagPull, nil
	case c.move == "pull" && c.barrier != "data":
		o["barrier"] = c.barrier
		return "one_stage", o, nil, nil
	case c.move == "push" && c.barrier == "flag" && c.order == "all":
		return "one_shot_push", o, nil, nil
	case c.move == "push" && c.barrier == "flag" && c.order == "staged":
		return "staged_push", o, nil, nil
	case c.move == "push" && c.barrier == "data" && c.order == "all" && c.chunks == 1 && c.rearm == "deferred":
		return "lamport_one_shot", o, nil, nil
	case c.move == "push" && c.barrier == "data" && c.order == "all" && c.chunks == 1:
		return "pcie_ipc_one_shot", o, nil, nil
	case c.move == "push" && c.barrier == "data" && c.order == "all":
		return "", nil, composeChunkedPush, nil
	}
	return noBuilder(p)
}

// resolveTwoShot maps a two-shot point: pulls (two_stage, or composed
// with host flags) or pushes (two_shot_push, and pcie_ipc_islands or
// pcie_ipc_staged without islands).
func resolveTwoShot(p Params, c choices) (string, map[string]string, composer, error) {
	o := map[string]string{}
	switch {
	case c.move == "pull" && c.flags == "host":
		return "", nil, composeHostFlagPull, nil
	case c.move == "pull" && c.barrier != "data":
		o["barrier"] = c.barrier
		return "two_stage", o, nil, nil
	case c.move == "push" && c.barrier != "data" && c.order == "all":
		o["barrier"] = c.barrier
		return "two_shot_push", o, nil, nil
	case c.move == "push" && c.barrier == "data" && c.order == "all" && c.rearm == "reader":
		o["islands"] = "none"
		return "pcie_ipc_islands", o, nil, nil
	case c.move == "push" && c.barrier == "flag" && c.order == "staged":
		o["islands"] = "none"
		return "pcie_ipc_staged", o, nil, nil
	}
	return noBuilder(p)
}

// resolveIslands maps an islands point: pulls with flag barriers
// (hierarchical where it groups the same way, else composed) or pushes
// with a push exchange (pcie_ipc_islands, pcie_ipc_staged).
func resolveIslands(p Params, c choices, req algos.Request) (string, map[string]string, composer, error) {
	o := map[string]string{}
	switch {
	case c.move == "pull" && c.barrier == "flag":
		// hierarchical groups by switch (else socket); other
		// groupings and the push exchange are composed.
		if c.exchange == "pull" && sameIslands(req, c.islands, "switch") {
			return "hierarchical", o, nil, nil
		}
		return "", nil, composeIslands, nil
	case c.move == "push" && c.exchange == "push" && c.barrier == "data" && c.order == "all" && c.rearm == "reader":
		o["islands"] = c.islands
		return "pcie_ipc_islands", o, nil, nil
	case c.move == "push" && c.exchange == "push" && c.barrier == "flag" && c.order == "staged":
		o["islands"] = c.islands
		return "pcie_ipc_staged", o, nil, nil
	}
	return noBuilder(p)
}

// sameIslands reports whether grouping the request's ranks by a and by b
// gives the same islands.
func sameIslands(req algos.Request, a, b string) bool {
	x, err1 := algos.Islands(req.Top, req.Ranks, a)
	y, err2 := algos.Islands(req.Top, req.Ranks, b)
	return err1 == nil && err2 == nil && fmt.Sprint(x) == fmt.Sprint(y)
}
