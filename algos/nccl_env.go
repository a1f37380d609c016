package algos

import (
	"fmt"
	"github.com/arsim/arsim/algos/ncclmodel"
	"slices"
	"strconv"
	"strings"
)

// NCCL's own spellings of the options of the nccl algorithm (and of ring
// and tree where they take the same setting). TranslateNCCLEnv turns
// them into the short forms before anything is planned, so that
// NCCL_P2P_LEVEL=SYS,NCCL_PROTO=LL plans exactly what p2p_level=sys,proto=ll
// plans. Values are read as NCCL reads them: case-insensitive, lists with
// commas, exclusions with a leading '^' (src/graph/tuning.cc parseList,
// src/graph/paths.cc ncclGetLevel).

// NCCLEnvVars are the NCCL variables TranslateNCCLEnv reads, sorted.
var NCCLEnvVars = []string{
	"NCCL_ALGO", "NCCL_GRAPH_FILE", "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS", "NCCL_NTHREADS",
	"NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_READ_ENABLE", "NCCL_PROTO", "NCCL_SHM_DISABLE",
}

// ncclShortKeys are the short options whose values NCCL spells in upper
// case (SYS, LL, Ring): their values are lowered.
var ncclShortKeys = map[string]bool{"p2p_level": true, "proto": true, "algo": true, "transport": true, "shm": true, "p2p_read": true}

// TranslateNCCLEnv returns opts with every NCCL_* variable replaced by the
// short option it sets, and the values of the short NCCL options
// (p2p_level, proto, algo, transport, shm, p2p_read) in lower case. opts itself is
// not changed. A variable arsim does not read, a value NCCL would not
// accept, or a setting given twice (NCCL_PROTO and proto) is an error
// naming it.
//
//	NCCL_P2P_LEVEL=LOC|NVL|NVB|PIX|PXB|PHB|SYS|0…5   p2p_level (NVB as nvl; 0…5: LOC PIX PXB PHB SYS SYS)
//	NCCL_P2P_DISABLE=1                              transport=shm (it overrides NCCL_P2P_LEVEL)
//	NCCL_SHM_DISABLE=1                              shm=off
//	NCCL_P2P_READ_ENABLE=0|1                        p2p_read=off|on
//	NCCL_PROTO=LL|LL128|Simple, lists, ^exclusions  proto (one protocol, or a set such as ll+simple)
//	NCCL_ALGO=Ring|Tree, lists, ^exclusions         algo (ring or tree; both: NCCL's choice)
//	NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS          min_channels, max_channels
//	NCCL_NTHREADS                                   nthreads
//	NCCL_GRAPH_MIXING_SUPPORT=0|1                   graph_mixing=off|on
//	NCCL_GRAPH_FILE=path                            graph_channels, graph_speed, graph_type (its ring graph, id 0),
//	                                                graph_tree_channels, graph_tree_speed (its tree graph, id 1), graph_gpus
//
// NCCL_GRAPH_FILE is read here (ReadNCCLGraphFile), a relative path from
// the working directory, as NCCL reads it.
func TranslateNCCLEnv(opts map[string]string) (map[string]string, error) {
	if len(opts) == 0 {
		return opts, nil
	}
	t := envTranslation{out: map[string]string{}, from: map[string]string{}}
	// Short forms first, so that an NCCL variable that disagrees with one
	// is reported.
	if err := t.shortForms(opts); err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, k := range sortedKeys(opts) {
		if up := strings.ToUpper(k); strings.HasPrefix(up, "NCCL_") && k != "nccl_version" {
			if !slices.Contains(NCCLEnvVars, up) {
				return nil, fmt.Errorf("algos: NCCL setting %s=%s is not modelled (arsim reads %s)", k, opts[k], strings.Join(NCCLEnvVars, ", "))
			}
			env[up] = strings.TrimSpace(opts[k])
		}
	}
	if err := t.transport(env); err != nil {
		return nil, err
	}
	if err := t.lists(env); err != nil {
		return nil, err
	}
	if v, ok := env["NCCL_GRAPH_MIXING_SUPPORT"]; ok {
		b, err := ncclBool("NCCL_GRAPH_MIXING_SUPPORT", v)
		if err != nil {
			return nil, err
		}
		if err := t.set("graph_mixing", map[bool]string{true: "on", false: "off"}[b], "NCCL_GRAPH_MIXING_SUPPORT"); err != nil {
			return nil, err
		}
	}
	if v, ok := env["NCCL_GRAPH_FILE"]; ok {
		if v == "" {
			return nil, fmt.Errorf("algos: NCCL_GRAPH_FILE is empty: want the path of an NCCL graph file")
		}
		if err := t.graphOptions(v); err != nil {
			return nil, err
		}
	}
	for _, m := range []struct{ env, key string }{{"NCCL_MIN_NCHANNELS", "min_channels"}, {"NCCL_MAX_NCHANNELS", "max_channels"}, {"NCCL_NTHREADS", "nthreads"}} {
		v, ok := env[m.env]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("algos: %s=%q: want a positive integer", m.env, v)
		}
		if err := t.set(m.key, strconv.Itoa(n), m.env); err != nil {
			return nil, err
		}
	}
	return t.out, nil
}

// envTranslation is the short-form options being built and, for each,
// the spelling that set it.
type envTranslation struct {
	out, from map[string]string
}

// set sets key to val on behalf of by; two spellings that disagree are an
// error naming both.
func (t *envTranslation) set(key, val, by string) error {
	if prev, ok := t.from[key]; ok && t.out[key] != val {
		return fmt.Errorf("algos: %s and %s both set %s (%s, %s)", prev, by, key, t.out[key], val)
	}
	t.out[key], t.from[key] = val, by
	return nil
}

// shortForms copies the options that are not NCCL variables, lower-casing
// NCCL's own keys' values and reading proto lists.
func (t *envTranslation) shortForms(opts map[string]string) error {
	for _, k := range sortedKeys(opts) {
		if strings.HasPrefix(strings.ToUpper(k), "NCCL_") && k != "nccl_version" {
			continue // an NCCL variable (nccl_version is arsim's: NCCL has none)
		}
		v := opts[k]
		if ncclShortKeys[k] {
			v = strings.ToLower(v)
		}
		if k == "proto" {
			p, err := protoSetFromShort(v)
			if err != nil {
				return err
			}
			v = p
		}
		if k == "nccl_version" { // 2.21.5 or 2.21: the rules change by minor release
			r, err := ncclmodel.ParseRelease(v)
			if err != nil {
				return fmt.Errorf("algos: nccl_version: %w", err)
			}
			v = fmt.Sprintf("2.%d", r.Minor)
		}
		if err := t.set(k, v, k); err != nil {
			return err
		}
	}
	return nil
}

// transport reads NCCL_P2P_DISABLE, NCCL_P2P_LEVEL (ignored when P2P is
// disabled), NCCL_P2P_READ_ENABLE and NCCL_SHM_DISABLE.
func (t *envTranslation) transport(env map[string]string) error {
	disabled := false
	if v, ok := env["NCCL_P2P_DISABLE"]; ok {
		b, err := ncclBool("NCCL_P2P_DISABLE", v)
		if err != nil {
			return err
		}
		if b {
			disabled = true
			if err := t.set("transport", "shm", "NCCL_P2P_DISABLE"); err != nil {
				return err
			}
		}
	}
	if v, ok := env["NCCL_P2P_LEVEL"]; ok && !disabled {
		l, err := ncclP2PLevel(v)
		if err != nil {
			return err
		}
		if err := t.set("p2p_level", l, "NCCL_P2P_LEVEL"); err != nil {
			return err
		}
	}
	if v, ok := env["NCCL_P2P_READ_ENABLE"]; ok {
		b, err := ncclBool("NCCL_P2P_READ_ENABLE", v)
		if err != nil {
			return err
		}
		if err := t.set("p2p_read", map[bool]string{true: "on", false: "off"}[b], "NCCL_P2P_READ_ENABLE"); err != nil {
			return err
		}
	}
	if v, ok := env["NCCL_SHM_DISABLE"]; ok {
		b, err := ncclBool("NCCL_SHM_DISABLE", v)
		if err != nil {
			return err
		}
		if b {
			return t.set("shm", "off", "NCCL_SHM_DISABLE")
		}
	}
	return nil
}

// lists reads NCCL_PROTO and NCCL_ALGO.
func (t *envTranslation) lists(env map[string]string) error {
	if v, ok := env["NCCL_PROTO"]; ok {
		p, err := ncclProtoList(v)
		if err != nil {
			return err
		}
		if p != "" {
			if err := t.set("proto", p, "NCCL_PROTO"); err != nil {
				return err
			}
		}
	}
	if v, ok := env["NCCL_ALGO"]; ok {
		a, err := ncclAlgoList(v)
		if err != nil {
			return err
		}
		if a != "" {
			return t.set("algo", a, "NCCL_ALGO")
		}
	}
	return nil
}

// ncclBool reads a 0/1 NCCL switch.
func ncclBool(name, v string) (bool, error) {
	switch v {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("algos: %s=%q: want 0 or 1", name, v)
}

// ncclP2PLevel reads NCCL_P2P_LEVEL as paths.cc does: a path type name, or
// a legacy integer (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS).
func ncclP2PLevel(v string) (string, error) {
	switch s := strings.ToLower(v); s {
	case "loc", "nvl", "pix", "pxb", "phb", "sys":
		return s, nil
	case "nvb":
		// Through an NVLink-connected GPU: between NVL and PIX, so on the
		// path classes arsim builds (no pair is NVB) it allows what NVL
		// allows.
		return "nvl", nil
	case "node":
		return "", fmt.Errorf("algos: NCCL_P2P_LEVEL=%s: NCCL has no NODE level (nvidia-smi's NODE is NCCL's PHB); use LOC, NVL, NVB, PIX, PXB, PHB or SYS", v)
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return [...]string{"loc", "pix", "pxb", "phb", "sys"}[min(n, 4)], nil
	}
	return "", fmt.Errorf("algos: NCCL_P2P_LEVEL=%q: want LOC, NVL, NVB, PIX, PXB, PHB, SYS or a legacy integer 0–5", v)
}

// ncclProtos are NCCL's protocol names in NCCL's order (LL, LL128, Simple).
var ncclProtos = []string{"ll", "ll128", "simple"}

// protoSet writes a set of protocols as the proto option does: one name,
// or the names in NCCL's order joined by '+'; "" for all three.
func protoSet(on [3]bool) (string, error) {
	var names []string
	for i, ok := range on {
		if ok {
			names = append(names, ncclProtos[i])
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no protocol left")
	}
	return strings.Join(names, "+"), nil
}

// protoSetFromShort checks a short-form proto value (ll, simple, ll+simple
// in any order) and writes it in NCCL's order.
func protoSetFromShort(v string) (string, error) {
	var on [3]bool
	for _, p := range strings.Split(v, "+") {
		i := slices.Index(ncclProtos, strings.TrimSpace(p))
		if i < 0 {
			return "", fmt.Errorf("algos: proto=%q: want ll, ll128, simple, or a set such as ll+simple", v)
		}
		on[i] = true
	}
	return protoSet(on)
}

// ncclProtoList reads NCCL_PROTO as parseList does: names (case-insensitive)
// enable only those; a leading '^' disables the names and enables the
// rest. Setting NCCL_PROTO at all decides LL128 (on where enabled), where
// unset it follows NCCL's default rule; a list of all three is therefore
// ll+ll128+simple, not "".
func ncclProtoList(v string) (string, error) {
	names, exclude, err := ncclList("NCCL_PROTO", v)
	if err != nil {
		return "", err
	}
	var on [3]bool
	for i := range on {
		on[i] = exclude
	}
	for _, n := range names {
		i := slices.Index(ncclProtos, n)
		if i < 0 {
			return "", fmt.Errorf("algos: NCCL_PROTO=%q: %q is not one of LL, LL128, Simple", v, n)
		}
		on[i] = !exclude
	}
	s, err := protoSet(on)
	if err != nil {
		return "", fmt.Errorf("algos: NCCL_PROTO=%q leaves no protocol", v)
	}
	return s, nil
}

// ncclAlgoNames are NCCL_ALGO's names; arsim models ring and tree, the
// others need NVSwitch multicast or CollNet and never run on one PCIe node.
var ncclAlgoNames = []string{"ring", "tree", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"}

// ncclAlgoList reads NCCL_ALGO: a list, '^' exclusions, and NCCL's
// per-collective form "ring;allreduce:tree" (the allreduce entry wins).
// It returns ring or tree when one of the two is left, "" for both.
func ncclAlgoList(v string) (string, error) {
	spec, forAllreduce := "", false
	for _, part := range strings.Split(v, ";") {
		coll, list, ok := strings.Cut(part, ":")
		if !ok {
			if !forAllreduce {
				spec = part // the default for every collective
			}
			continue
		}
		switch strings.ToLower(strings.TrimSpace(coll)) {
		case "allreduce":
			spec, forAllreduce = list, true
		case "broadcast", "reduce", "allgather", "reducescatter", "sendrecv":
		default:
			return "", fmt.Errorf("algos: NCCL_ALGO=%q: %q is not a collective", v, coll)
		}
	}
	if strings.TrimSpace(spec) == "" {
		return "", nil // nothing for allreduce: NCCL's choice
	}
	names, exclude, err := ncclList("NCCL_ALGO", spec)
	if err != nil {
		return "", err
	}
	ring, tree := exclude, exclude
	for _, n := range names {
		if !slices.Contains(ncclAlgoNames, n) {
			return "", fmt.Errorf("algos: NCCL_ALGO=%q: %q is not one of Ring, Tree, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT", v, n)
		}
		switch n {
		case "ring":
			ring = !exclude
		case "tree":
			tree = !exclude
		}
	}
	switch {
	case ring && tree:
		return "", nil
	case ring:
		return "ring", nil
	case tree:
		return "tree", nil
	}
	return "", fmt.Errorf("algos: NCCL_ALGO=%q leaves neither Ring nor Tree, the algorithms NCCL runs for allreduce on one PCIe node", v)
}

// ncclList splits an NCCL list: lower-cased names and whether it excludes.
func ncclList(name, v string) (names []string, exclude bool, err error) {
	s := strings.TrimSpace(v)
	if rest, ok := strings.CutPrefix(s, "^"); ok {
		s, exclude = rest, true
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		names = append(names, p)
	}
	if len(names) == 0 {
		return nil, false, fmt.Errorf("algos: %s=%q: empty list", name, v)
	}
	return names, exclude, nil
}
