package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Validate checks r against JSON Lines v1: known kind and clock, the
// fields its kind requires, known enum values, positive sizes and times,
// and min ≤ median ≤ max. Records returned by ReadJSONL always pass.
func (r Record) Validate() error {
	if err := r.validate(); err != nil {
		return at("record", r.Line, err)
	}
	return nil
}

func (r *Record) validate() error {
	for _, name := range []string{"system", "kind", "clock"} {
		if fieldIndex[name].isZero(r) {
			return fieldErrf(name, "missing")
		}
	}
	for i := range fieldDefs {
		d := &fieldDefs[i]
		if d.isZero(r) {
			continue
		}
		if err := d.checkValue(r); err != nil {
			return err
		}
	}
	for _, name := range required[r.Kind] {
		if fieldIndex[name].isZero(r) {
			return fieldErrf(name, "missing (required for kind %q)", r.Kind)
		}
	}
	if (r.Kind == KindAllreduce || r.Kind == KindAllreduceSequence) && r.Impl == "nccl" && r.Proto == "" {
		return fieldErrf("proto", "missing (required for impl \"nccl\")")
	}
	if r.UsMin != 0 && r.Us != 0 && r.UsMin > r.Us {
		return fieldErrf("us_min", "%v is above us %v", r.UsMin, r.Us)
	}
	if r.UsMax != 0 && r.Us != 0 && r.UsMax < r.Us {
		return fieldErrf("us_max", "%v is below us %v", r.UsMax, r.Us)
	}
	if r.NsPerIterSlowestBlock != 0 && r.NsPerIter != 0 && r.NsPerIterSlowestBlock < r.NsPerIter*(1-1e-6) { // a millionth: the capture rounds ns_per_iter
		return fieldErrf("ns_per_iter_slowest_block", "%v is below ns_per_iter %v (the median block's)", r.NsPerIterSlowestBlock, r.NsPerIter)
	}
	if r.OneWayUsMin != 0 && r.OneWayUs != 0 && r.OneWayUsMin > r.OneWayUs {
		return fieldErrf("one_way_us_min", "%v is above one_way_us %v", r.OneWayUsMin, r.OneWayUs)
	}
	return nil
}

// Primary returns the record's primary measured value and its unit:
//
//   - allreduce, memcpy, sm_access, empty_kernel, barrier, nccl_kernel:
//     Us, "us";
//   - allreduce_sequence: Us, the time of the whole sequence, "us";
//   - pointer_chase: NsPerStep, "ns";
//   - flag_pingpong: OneWayUs, "us";
//   - host_link_concurrency: GbpsTotal, "GB/s" (FORMAT.md names the
//     bandwidth of this kind only loosely; the total over all GPUs is the
//     figure that shows a shared host-side limit, so it is the primary one;
//     GbpsPerGPU is the other).
//
// It fails when the kind is unknown or the value is missing.
func (r Record) Primary() (value float64, unit string, err error) {
	var field string
	switch r.Kind {
	case KindAllreduce, KindAllreduceSequence, KindMemcpy, KindSMAccess, KindEmptyKernel, KindBarrier, KindNCCLKernel:
		value, unit, field = r.Us, "us", "us"
	case KindPointerChase:
		value, unit, field = r.NsPerStep, "ns", "ns_per_step"
	case KindFence, KindLoop:
		value, unit, field = r.NsPerIter, "ns", "ns_per_iter"
	case KindPoll:
		value, unit, field = r.NsPerOp, "ns", "ns_per_op"
	case KindBlockPingpong:
		value, unit, field = r.OneWayNs, "ns", "one_way_ns"
	case KindFlagPingpong:
		value, unit, field = r.OneWayUs, "us", "one_way_us"
	case KindHostLinkConcurrency:
		value, unit, field = r.GbpsTotal, "GB/s", "gbps_total"
	default:
		return 0, "", at("record", r.Line, fieldErrf("kind", "unknown value %q; allowed: %s", r.Kind, strings.Join(kindValues(), ", ")))
	}
	if value == 0 {
		return 0, "", at("record", r.Line, fieldErrf(field, "missing"))
	}
	return value, unit, nil
}

// Configuration is what r was measured in, as text: every field of
// JSON Lines v1 that r sets but its measured values, in the
// format's order, "name=value" joined by ";". Two records with the same
// configuration measured the same thing (on the same system id: another
// run, process or instance of one machine type); fields this package does
// not know are left out.
func (r Record) Configuration() string {
	var b strings.Builder
	for i := range fieldDefs {
		f := &fieldDefs[i]
		if f.value {
			continue
		}
		var v string
		switch {
		case f.str != nil:
			v = *f.str(&r)
		case f.num != nil:
			if x := *f.num(&r); x != 0 {
				v = strconv.FormatFloat(x, 'g', -1, 64)
			}
		case f.i32 != nil:
			if x := *f.i32(&r); x != 0 {
				v = strconv.Itoa(x)
			}
		case f.i64 != nil:
			if x := *f.i64(&r); x != 0 {
				v = strconv.FormatInt(x, 10)
			}
		case f.obj != nil:
			m := *f.obj(&r)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				v += k + ":" + m[k] + ","
			}
		}
		if v == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		b.WriteString(f.name)
		b.WriteByte('=')
		b.WriteString(v)
	}
	return b.String()
}

// jsonTypeOf names the JSON type of a raw value, for error messages.
func jsonTypeOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// least says what a number must be: "> 0", or "≥ 0" where 0 is allowed.
func (d *fieldDef) least() string {
	if d.zeroOK {
		return "≥ 0"
	}
	return "> 0"
}

// set decodes raw into the field of r that d describes.
func (d *fieldDef) set(r *Record, raw json.RawMessage) error {
	if got := jsonTypeOf(raw); got != d.typ.json() {
		return fieldErrf(d.name, "want %s, got %s", d.typ, got)
	}
	switch d.typ {
	case jString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fieldErrf(d.name, "want string: %v", err)
		}
		if s == "" && !d.zeroOK {
			return fieldErrf(d.name, "must not be empty")
		}
		*d.str(r) = s
	case jNumber:
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		if err != nil || math.IsInf(v, 0) {
			return fieldErrf(d.name, "want finite number, got %s", raw)
		}
		if v < 0 || (v == 0 && !d.zeroOK) {
			return fieldErrf(d.name, "must be %s, got %v", d.least(), v)
		}
		*d.num(r) = v
	case jInt:
		txt := string(bytes.TrimSpace(raw))
		v, err := strconv.ParseInt(txt, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(txt, 64)
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return fieldErrf(d.name, "want integer, got %s", txt)
			}
			v = int64(f)
		}
		if err := d.checkInt(v); err != nil {
			return err
		}
		if d.i32 != nil {
			*d.i32(r) = int(v)
		} else {
			*d.i64(r) = v
		}
	case jObject:
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return fieldErrf(d.name, "want an object of strings: %v", err)
		}
		if len(m) > 0 {
			*d.obj(r) = m
		}
	}
	return nil
}

// decodeRecord parses and validates one non-blank line.
func decodeRecord(line []byte, lineNo int) (Record, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return Record{}, fieldErrf("", "want a JSON object, got %s", ute.Value)
		}
		return Record{}, fieldErrf("", "bad JSON: %v", err)
	}
	if obj == nil {
		return Record{}, fieldErrf("", "want a JSON object, got null")
	}
	r := Record{Line: lineNo}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		d, ok := fieldIndex[k]
		if !ok {
			if r.Extra == nil {
				r.Extra = make(map[string]json.RawMessage)
			}
			r.Extra[k] = obj[k]
			continue
		}
		if err := d.set(&r, obj[k]); err != nil {
			return Record{}, err
		}
	}
	if err := r.validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// ReadJSONL reads a JSON Lines v1 trace (one record per line, format in
// the package documentation). name is used in error messages only. A UTF-8
// byte-order mark before the first line is skipped.
//
// Blank lines are ignored. By default the first malformed line ends the
// read with a *ParseError naming name, the line number and the field; with
// opts.SkipBad malformed lines are skipped and returned as BadLines, and
// the error is non-nil only when r fails. A line longer than MaxLineBytes
// is malformed; an input beyond MaxTraceBytes or MaxTraceLines is refused
// with an error whatever opts say (the work and memory of a read are
// bounded, even for an endless input).
func ReadJSONL(r io.Reader, name string, opts ReadOptions) ([]Record, []BadLine, error) {
	lr := &io.LimitedReader{R: r, N: MaxTraceBytes + 1}
	br := bufio.NewReader(lr)
	var (
		recs []Record
		bad  []BadLine
	)
	for lineNo := 1; ; lineNo++ {
		if lineNo > MaxTraceLines {
			return nil, nil, fmt.Errorf("trace: %s: more than %d lines; a trace is at most that long (MaxTraceLines)", name, MaxTraceLines)
		}
		line, long, err := readLine(br, MaxLineBytes, opts.SkipBad)
		if lr.N <= 0 {
			return nil, nil, fmt.Errorf("trace: %s: larger than %d MiB; a trace is at most that large (MaxTraceBytes)", name, MaxTraceBytes>>20)
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if long {
			pe := at(name, lineNo, fieldErrf("", "line longer than %d bytes: not a record (a JSON Lines record is one short line)", MaxLineBytes))
			if !opts.SkipBad {
				return nil, nil, pe
			}
			bad = append(bad, BadLine{Line: lineNo, Err: pe})
		} else if len(line) > 0 {
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				rec, derr := decodeRecord(trimmed, lineNo)
				if derr != nil {
					pe := at(name, lineNo, derr)
					if !opts.SkipBad {
						return nil, nil, pe
					}
					bad = append(bad, BadLine{Line: lineNo, Err: pe})
				} else {
					recs = append(recs, rec)
				}
			}
		}
		if err == io.EOF {
			return recs, bad, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("trace: %s line %d: %w", name, lineNo, err)
		}
	}
}

// readLine reads one line (with its '\n', if any) of at most limit bytes.
// A longer line gives long true: read to its end and dropped when drain
// (the read goes on after it), else left at once.
func readLine(br *bufio.Reader, limit int, drain bool) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > limit {
				long, line = true, nil
				if !drain {
					return nil, true, nil
				}
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}

// ReadJSONLFile reads the JSON Lines v1 trace at path; see ReadJSONL.
func ReadJSONLFile(path string, opts ReadOptions) ([]Record, []BadLine, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	recs, bad, err := ReadJSONL(f, path, opts)
	if err != nil {
		return recs, bad, err
	}
	halves, err := halvesBeside(path)
	if err != nil {
		return nil, nil, err
	}
	rel, err := ncclReleaseBeside(path)
	if err != nil {
		return nil, nil, err
	}
	tags, err := tagsBeside(path)
	if err != nil {
		return nil, nil, err
	}
	phases, err := runPhasesBeside(path)
	if err != nil {
		return nil, nil, err
	}
	for i := range recs {
		recs[i].SMHalves = halves
		recs[i].NCCLRelease = rel
		recs[i].PCIeTags = tags
		recs[i].RunPhases = phases
	}
	return recs, bad, nil
}
