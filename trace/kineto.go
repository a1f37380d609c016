package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// KinetoCollective is one NCCL kernel of a PyTorch profiler (Kineto)
// trace, with the size of the collective it ran.
type KinetoCollective struct {
	// Line is the 1-based line of the kernel's event in the trace file.
	Line int
	// Kernel is the kernel's full name.
	Kernel string
	// Name is the collective, lower case without separators: "allreduce",
	// "allgather", "reducescatter", "broadcast", "reduce", "sendrecv";
	// from the kernel name, or from the matched record_param_comms for
	// ncclDevKernel_Generic.
	Name string
	// Algo ("ring", "tree", "collnet_direct", "nvls", ...) and Proto ("ll",
	// "ll128", "simple") are read from the kernel name. Since NCCL 2.19
	// every allreduce kernel is named ..._RING_LL or ..._TREE_LL whatever
	// protocol it runs, so Proto is only the kernel's name, not a fact.
	Algo, Proto string
	// Dtype is the element type in NCCL's short form: "bf16", "f16", "f32",
	// "f64", "i8", "u8", "i32", "u32", "i64", "u64", "f8e4m3", "f8e5m2".
	Dtype string
	// Op is the reduction ("sum", "prod", "min", "max", "premulsum",
	// "sumpostdiv"); "" for collectives without one.
	Op string
	// Bytes is max(In msg nelems, Out msg nelems) × the element size, which
	// for an allreduce is its buffer and matches nccl-tests' size column
	// for every collective. 0 when no record_param_comms could be matched.
	Bytes int64
	// GroupSize is the "Group size" of the matched record_param_comms; 0
	// when unknown.
	GroupSize int
	// ProcessGroup is its "Process Group Name".
	ProcessGroup string
	// Seq is its "Seq" (or, failing that, "Sequence number") arg; −1 when
	// absent.
	Seq int64
	// Channels is the grid's x dimension (one block per NCCL channel) and
	// Threads the block's x dimension; 0 when the trace does not say.
	Channels, Threads int
	// StartUs and DurationUs are the kernel's "ts" and "dur" in µs.
	StartUs, DurationUs float64
	// Device is the CUDA device (args "device", else the event's pid); −1
	// when unknown.
	Device int
	// Match says how the size was found: "kernel_args" (Kineto copied the
	// record_param_comms metadata onto the kernel), "external_id",
	// "correlation" (the kernel's launch lies inside a record_param_comms),
	// "order" (n-th record_param_comms ↔ n-th kernel of that collective on
	// the device), or "" (not found).
	Match string
}

// Validate checks the invariants ReadKineto guarantees: finite,
// non-negative time, size and launch shape, and a device of at least −1.
func (c KinetoCollective) Validate() error {
	switch {
	case math.IsNaN(c.StartUs) || math.IsInf(c.StartUs, 0):
		return at("kernel", c.Line, fieldErrf("ts", "must be finite, got %v", c.StartUs))
	case math.IsNaN(c.DurationUs) || math.IsInf(c.DurationUs, 0) || c.DurationUs < 0:
		return at("kernel", c.Line, fieldErrf("dur", "must be a finite number >= 0, got %v", c.DurationUs))
	case c.Bytes < 0:
		return at("kernel", c.Line, fieldErrf("bytes", "must be >= 0, got %d", c.Bytes))
	case c.Channels < 0:
		return at("kernel", c.Line, fieldErrf("grid", "must be >= 0, got %d", c.Channels))
	case c.Threads < 0:
		return at("kernel", c.Line, fieldErrf("block", "must be >= 0, got %d", c.Threads))
	case c.Device < -1:
		return at("kernel", c.Line, fieldErrf("device", "must be >= -1, got %d", c.Device))
	}
	return nil
}

// KinetoTrace is what ReadKineto finds in a trace.
type KinetoTrace struct {
	// Collectives are the NCCL kernels, ordered by (Device, StartUs, Line).
	Collectives []KinetoCollective
	// Warnings report kernels whose size could not be found (their Bytes
	// is 0) and other things a reader should know; in Collectives' order.
	Warnings []string
}

// kEvent is one trace event this package cares about.
type kEvent struct {
	line     int
	ph, cat  string
	name     string
	pid, tid string // as written, numbers or strings
	ts, dur  float64
	id       string // flow id
	args     map[string]json.RawMessage
	corr     int64 // args "correlation"; −1 when absent
	ext      int64 // args "External id"; −1 when absent
	used     bool  // a record_param_comms already given to a kernel
	hasPid   bool
	pidNum   int64
	devInArg bool
	dev      int64
}

// ReadKineto reads a PyTorch profiler (Kineto) Chrome trace:
// {"traceEvents": [...]} or a bare array of events. name is used in
// messages.
//
// It returns one KinetoCollective per NCCL kernel (cat "kernel", name
// ncclDevKernel_*, ncclKernel_* or ncclSymkDevKernel_*), with the size of
// its collective taken from, in order of preference: collective metadata
// on the kernel itself; the record_param_comms CPU op linked to the kernel
// through its launch (the "correlation" arg or an ac2g flow leads to the
// cudaLaunchKernel event, whose "External id" or enclosing
// record_param_comms gives the op); or, failing both, order (the n-th
// record_param_comms of a collective ↔ the n-th kernel of that collective
// on the device).
//
// Events that matter (NCCL kernels, record_param_comms, kernel launches,
// ac2g flows) with a field of the wrong type are errors naming the line
// and field, or BadLines with opts.SkipBad; other events are not checked.
// Malformed JSON is always an error.
func ReadKineto(r io.Reader, name string, opts ReadOptions) (KinetoTrace, []BadLine, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTraceBytes+1))
	if err != nil {
		return KinetoTrace{}, nil, fmt.Errorf("trace: %s: %w", name, err)
	}
	if len(data) > MaxTraceBytes {
		return KinetoTrace{}, nil, fmt.Errorf("trace: %s: larger than %d MiB; a trace is at most that large (MaxTraceBytes; export fewer profiler steps)", name, MaxTraceBytes>>20)
	}
	raws, lines, err := splitTraceEvents(data, name)
	if err != nil {
		return KinetoTrace{}, nil, err
	}
	var (
		bad                    []BadLine
		kernels, rpcs, launchs []*kEvent
		flowS, flowF           []*kEvent
	)
	for i, raw := range raws {
		ev, kind, err := decodeKinetoEvent(raw, lines[i])
		if err != nil {
			pe := at(name, lines[i], err)
			if !opts.SkipBad {
				return KinetoTrace{}, nil, pe
			}
			bad = append(bad, BadLine{Line: lines[i], Err: pe})
			continue
		}
		switch kind {
		case evKernel:
			kernels = append(kernels, ev)
		case evRPC:
			rpcs = append(rpcs, ev)
		case evLaunch:
			launchs = append(launchs, ev)
		case evFlowStart:
			flowS = append(flowS, ev)
		case evFlowEnd:
			flowF = append(flowF, ev)
		}
	}
	out := linkKineto(kernels, rpcs, launchs, flowS, flowF)
	return out, bad, nil
}

// ReadKinetoFile reads the Kineto trace at path; see ReadKineto.
func ReadKinetoFile(path string, opts ReadOptions) (KinetoTrace, []BadLine, error) {
	f, err := openFile(path)
	if err != nil {
		return KinetoTrace{}, nil, err
	}
	defer f.Close()
	return ReadKineto(f, path, opts)
}

// splitTraceEvents returns the raw events of a trace and the line each
// starts on.
func splitTraceEvents(data []byte, name string) ([]json.RawMessage, []int, error) {
	sp := &eventSplitter{data: data, name: name, dec: json.NewDecoder(bytes.NewReader(data)), lastLine: 1}
	tok, err := sp.dec.Token()
	if err != nil {
		return nil, nil, sp.syntax(err)
	}
	switch tok {
	case json.Delim('['):
		err = sp.readArray()
	case json.Delim('{'):
		err = sp.readObject()
	default:
		err = &ParseError{File: name, Msg: "want a JSON object with traceEvents, or an array of events"}
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := sp.dec.Token(); err != io.EOF {
		return nil, nil, &ParseError{File: name, Msg: "bad JSON: data after the trace"}
	}
	return sp.raws, sp.lines, nil
}

// eventSplitter walks a trace's JSON, keeping each event undecoded with
// the line it starts on.
type eventSplitter struct {
	data     []byte
	name     string
	dec      *json.Decoder
	raws     []json.RawMessage
	lines    []int
	lastOff  int
	lastLine int
}

// syntax reports a JSON error at its line.
func (sp *eventSplitter) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := min(int(se.Offset), len(sp.data))
		return &ParseError{File: sp.name, Line: 1 + bytes.Count(sp.data[:off], []byte{'\n'}), Msg: "bad JSON: " + se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{File: sp.name, Line: 1 + bytes.Count(sp.data, []byte{'\n'}), Msg: "bad JSON: unexpected end of input"}
	}
	return &ParseError{File: sp.name, Msg: "bad JSON: " + err.Error()}
}

// readArray reads the events of an array whose '[' has been read, and its
// ']'.
func (sp *eventSplitter) readArray() error {
	for sp.dec.More() {
		off := int(sp.dec.InputOffset())
		var raw json.RawMessage
		if err := sp.dec.Decode(&raw); err != nil {
			return sp.syntax(err)
		}
		for off < len(sp.data) && strings.IndexByte(" \t\r\n,", sp.data[off]) >= 0 {
			off++
		}
		sp.lastLine += bytes.Count(sp.data[sp.lastOff:off], []byte{'\n'})
		sp.lastOff = off
		sp.raws = append(sp.raws, raw)
		sp.lines = append(sp.lines, sp.lastLine)
	}
	if _, err := sp.dec.Token(); err != nil { // ']'
		return sp.syntax(err)
	}
	return nil
}

// readObject reads an object whose '{' has been read, the events of its
// (first) traceEvents array, and its '}'; other members are skipped.
func (sp *eventSplitter) readObject() error {
	found := false
	for sp.dec.More() {
		kt, err := sp.dec.Token()
		if err != nil {
			return sp.syntax(err)
		}
		if key, _ := kt.(string); key == "traceEvents" && !found {
			t, err := sp.dec.Token()
			if err != nil {
				return sp.syntax(err)
			}
			if t != json.Delim('[') {
				return &ParseError{File: sp.name, Field: "traceEvents", Msg: "want array"}
			}
			if err := sp.readArray(); err != nil {
				return err
			}
			found = true
			continue
		}
		var skip json.RawMessage
		if err := sp.dec.Decode(&skip); err != nil {
			return sp.syntax(err)
		}
	}
	if _, err := sp.dec.Token(); err != nil { // '}'
		return sp.syntax(err)
	}
	if !found {
		return &ParseError{File: sp.name, Field: "traceEvents", Msg: "missing"}
	}
	return nil
}

type evKind int

const (
	evOther evKind = iota
	evKernel
	evRPC
	evLaunch
	evFlowStart
	evFlowEnd
)

var ncclKernelPrefixes = []string{"ncclDevKernel_", "ncclKernel_", "ncclSymkDevKernel_"}

func isNCCLKernelName(n string) bool {
	n = strings.TrimPrefix(n, "void ")
	for _, p := range ncclKernelPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

func isLaunchName(n string) bool {
	return strings.Contains(n, "LaunchKernel") || strings.HasPrefix(n, "cuLaunch") || strings.Contains(n, "GraphLaunch")
}

// decodeKinetoEvent classifies one event and, if it matters, decodes and
// checks the fields used.
func decodeKinetoEvent(raw json.RawMessage, line int) (*kEvent, evKind, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, evOther, fieldErrf("", "event: want a JSON object, got %s", jsonTypeOf(raw))
	}
	ev := &kEvent{line: line, corr: -1, ext: -1, dev: -1}
	// ph, cat and name decide whether the event matters; a wrong type in
	// any of them is reported only when the others say it might.
	ph, _ := optString(obj, "ph")
	cat, _ := optString(obj, "cat")
	name, nameErr := optString(obj, "name")
	ev.ph, ev.cat, ev.name = ph, cat, name
	kind := classifyEvent(ph, cat, name)
	if kind == evOther {
		return nil, evOther, nil
	}
	flow := kind == evFlowStart || kind == evFlowEnd
	if nameErr != nil && !flow {
		return nil, kind, nameErr
	}
	if err := ev.decodeTiming(obj, flow); err != nil {
		return nil, kind, err
	}
	if flow {
		var err error
		if ev.id, err = idString(obj, "id"); err != nil {
			return nil, kind, err
		}
		if ev.id == "" {
			return nil, kind, fieldErrf("id", "missing")
		}
		return ev, kind, nil
	}
	if err := ev.decodeArgs(obj, kind); err != nil {
		return nil, kind, err
	}
	return ev, kind, nil
}

// classifyEvent says which of the events that matter an event is, by its
// phase, category and name.
func classifyEvent(ph, cat, name string) evKind {
	switch {
	case ph == "X" && strings.EqualFold(cat, "kernel") && isNCCLKernelName(name):
		return evKernel
	case ph == "X" && name == "record_param_comms":
		return evRPC
	case ph == "X" && (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") && isLaunchName(name):
		return evLaunch
	case ph == "s" && cat == "ac2g":
		return evFlowStart
	case ph == "f" && cat == "ac2g":
		return evFlowEnd
	}
	return evOther
}

// decodeTiming reads ts, dur (not for flow events: they have none), pid
// and tid.
func (ev *kEvent) decodeTiming(obj map[string]json.RawMessage, flow bool) error {
	var err error
	if ev.ts, err = reqNumber(obj, "ts"); err != nil {
		return err
	}
	if !flow {
		if ev.dur, err = reqNumber(obj, "dur"); err != nil {
			return err
		}
		if ev.dur < 0 {
			return fieldErrf("dur", "must be >= 0, got %v", ev.dur)
		}
	}
	if ev.pid, err = idString(obj, "pid"); err != nil {
		return err
	}
	if ev.tid, err = idString(obj, "tid"); err != nil {
		return err
	}
	if n, err := strconv.ParseInt(ev.pid, 10, 64); err == nil {
		ev.hasPid, ev.pidNum = true, n
	}
	return nil
}

// decodeArgs reads the args of a kernel, launch or record_param_comms: the
// correlation and External ids, a kernel's device and launch dimensions,
// and the collective's metadata.
func (ev *kEvent) decodeArgs(obj map[string]json.RawMessage, kind evKind) error {
	if a, ok := obj["args"]; ok {
		if jsonTypeOf(a) != "object" {
			return fieldErrf("args", "want object, got %s", jsonTypeOf(a))
		}
		if err := json.Unmarshal(a, &ev.args); err != nil {
			return fieldErrf("args", "%v", err)
		}
	}
	var err error
	if ev.corr, err = argInt(ev.args, "correlation"); err != nil {
		return err
	}
	if ev.ext, err = argInt(ev.args, "External id", "external id"); err != nil {
		return err
	}
	if kind == evKernel {
		if ev.dev, err = argInt(ev.args, "device"); err != nil {
			return err
		}
		ev.devInArg = ev.dev >= 0
		for _, k := range []string{"grid", "block"} {
			if _, err := argDim0(ev.args, k); err != nil {
				return err
			}
		}
	}
	if kind == evKernel || kind == evRPC {
		if _, _, err := commsMeta(ev.args); err != nil {
			return err
		}
	}
	return nil
}

func optString(obj map[string]json.RawMessage, key string) (string, error) {
	raw, ok := obj[key]
	if !ok {
		return "", nil
	}
	var s string
	if jsonTypeOf(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		return "", fieldErrf(key, "want string, got %s", jsonTypeOf(raw))
	}
	return s, nil
}

func reqNumber(obj map[string]json.RawMessage, key string) (float64, error) {
	raw, ok := obj[key]
	if !ok {
		return 0, fieldErrf(key, "missing")
	}
	if t := jsonTypeOf(raw); t != "number" {
		return 0, fieldErrf(key, "want number, got %s", t)
	}
	v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fieldErrf(key, "want finite number, got %s", raw)
	}
	return v, nil
}

// idString returns a pid, tid or id written as a number or a string.
func idString(obj map[string]json.RawMessage, key string) (string, error) {
	raw, ok := obj[key]
	if !ok {
		return "", nil
	}
	switch jsonTypeOf(raw) {
	case "number":
		return string(bytes.TrimSpace(raw)), nil
	case "string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fieldErrf(key, "%v", err)
		}
		return s, nil
	default:
		return "", fieldErrf(key, "want number or string, got %s", jsonTypeOf(raw))
	}
}

// argInt returns the first of keys present in args as a non-negative
// integer; −1 when none is present.
func argInt(args map[string]json.RawMessage, keys ...string) (int64, error) {
	for _, k := range keys {
		raw, ok := args[k]
		if !ok {
			continue
		}
		if t := jsonTypeOf(raw); t != "number" {
			return -1, fieldErrf("args."+k, "want integer, got %s", t)
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
		if err != nil || v < 0 {
			return -1, fieldErrf("args."+k, "want integer >= 0, got %s", raw)
		}
		return v, nil
	}
	return -1, nil
}

// argDim0 returns x of a [x, y, z] launch dimension; 0 when absent.
func argDim0(args map[string]json.RawMessage, key string) (int, error) {
	raw, ok := args[key]
	if !ok {
		return 0, nil
	}
	var dims []int64
	if jsonTypeOf(raw) != "array" || json.Unmarshal(raw, &dims) != nil {
		return 0, fieldErrf("args."+key, "want array of integers, got %s", jsonTypeOf(raw))
	}
	if len(dims) == 0 || dims[0] < 0 || dims[0] > math.MaxInt32 {
		return 0, fieldErrf("args."+key, "want [x, y, z] with 0 <= x < 2^31, got %s", raw)
	}
	return int(dims[0]), nil
}

// commsMetaT is the record_param_comms metadata of an event.
type commsMetaT struct {
	coll       string
	nelems     int64 // max(in, out); −1 when absent
	dtype      string
	groupSize  int64
	pg         string
	seq        int64
	hasAnyMeta bool
}

func commsMeta(args map[string]json.RawMessage) (commsMetaT, bool, error) {
	m := commsMetaT{nelems: -1, seq: -1, groupSize: -1}
	var err error
	if m.coll, err = optString(args, "Collective name"); err != nil {
		return m, false, prefixArgs(err)
	}
	if m.dtype, err = optString(args, "dtype"); err != nil {
		return m, false, prefixArgs(err)
	}
	if m.pg, err = optString(args, "Process Group Name"); err != nil {
		return m, false, prefixArgs(err)
	}
	in, err := argInt(args, "In msg nelems")
	if err != nil {
		return m, false, err
	}
	out, err := argInt(args, "Out msg nelems")
	if err != nil {
		return m, false, err
	}
	m.nelems = max(in, out)
	if m.groupSize, err = argInt(args, "Group size"); err != nil {
		return m, false, err
	}
	if m.seq, err = argInt(args, "Seq", "Sequence number"); err != nil {
		return m, false, err
	}
	m.hasAnyMeta = m.coll != "" || m.nelems >= 0
	return m, m.hasAnyMeta, nil
}

func prefixArgs(err error) error {
	if fe, ok := err.(*fieldError); ok {
		return &fieldError{field: "args." + fe.field, msg: fe.msg}
	}
	return err
}
