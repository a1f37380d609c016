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
	if compose != nil {
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
	r := req
	r.Opts = opts
	s, err := algos.Plan(name, r)
	as := name
	for _, k := range []string{"barrier", "islands", "proto", "transport", "p2p_level"} {
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
	o := map[string]string{}
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	move, barrier, flags, staging := def(p.Move, "pull"), def(p.Barrier, "flag"), def(p.Flags, "gpu"), def(p.Staging, "direct")
	order, rearm, exchange := def(p.Order, "all"), def(p.Rearm, "reader"), def(p.Exchange, "pull")
	chunks := max(p.Chunks, 1)
	if p.nccl() {
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
	if chunks > 1 && !(p.Shape == "one_shot" && move == "push" && barrier == "data") {
		return "", nil, nil, notComposable("chunks are composed for the data-carried one-shot push only")
	}
	if staging == "host" {
		if move != "pull" || barrier != "flag" || flags != "host" || p.Shape == "islands" {
			return "", nil, nil, notComposable("staging through host memory is a pull with host flags (host_one_shot, host_two_shot)")
		}
		if p.Shape == "one_shot" {
			return "host_one_shot", o, nil, nil
		}
		return "host_two_shot", o, nil, nil
	}
	if flags == "host" && (move != "pull" || barrier != "flag" || p.Shape == "islands") {
		return "", nil, nil, notComposable("flags in host memory are composed for the pull kernels' flag barriers")
	}
	switch p.Shape {
	case "one_shot":
		switch {
		case move == "pull" && flags == "host":
			return "", nil, composeHostFlagPull, nil
		case move == "pull" && barrier != "data":
			o["barrier"] = barrier
			return "one_stage", o, nil, nil
		case move == "push" && barrier == "flag" && order == "all":
			return "one_shot_push", o, nil, nil
		case move == "push" && barrier == "flag" && order == "staged":
			return "staged_push", o, nil, nil
		case move == "push" && barrier == "data" && order == "all" && chunks == 1 && rearm == "deferred":
			return "lamport_one_shot", o, nil, nil
		case move == "push" && barrier == "data" && order == "all" && chunks == 1:
			return "pcie_ipc_one_shot", o, nil, nil
		case move == "push" && barrier == "data" && order == "all":
			return "", nil, composeChunkedPush, nil
		}
	case "two_shot":
		switch {
		case move == "pull" && flags == "host":
			return "", nil, composeHostFlagPull, nil
		case move == "pull" && barrier != "data":
			o["barrier"] = barrier
			return "two_stage", o, nil, nil
		case move == "push" && barrier != "data" && order == "all":
			o["barrier"] = barrier
			return "two_shot_push", o, nil, nil
		case move == "push" && barrier == "data" && order == "all" && rearm == "reader":
			o["islands"] = "none"
			return "pcie_ipc_islands", o, nil, nil
		case move == "push" && barrier == "flag" && order == "staged":
			o["islands"] = "none"
			return "pcie_ipc_staged", o, nil, nil
		}
	case "islands":
		by := def(p.Islands, "socket")
		switch {
		case move == "pull" && barrier == "flag":
			// hierarchical groups by switch (else socket); other
			// groupings and the push exchange are composed.
			if exchange == "pull" && sameIslands(req, by, "switch") {
				return "hierarchical", o, nil, nil
			}
			return "", nil, composeIslands, nil
		case move == "push" && exchange == "push" && barrier == "data" && order == "all" && rearm == "reader":
			o["islands"] = by
			return "pcie_ipc_islands", o, nil, nil
		case move == "push" && exchange == "push" && barrier == "flag" && order == "staged":
			o["islands"] = by
			return "pcie_ipc_staged", o, nil, nil
		}
	}
	return "", nil, nil, notComposable("no builder for %s", p.Name())
}

// sameIslands reports whether grouping the request's ranks by a and by b
// gives the same islands.
func sameIslands(req algos.Request, a, b string) bool {
	x, err1 := algos.Islands(req.Top, req.Ranks, a)
	y, err2 := algos.Islands(req.Top, req.Ranks, b)
	return err1 == nil && err2 == nil && fmt.Sprint(x) == fmt.Sprint(y)
}
