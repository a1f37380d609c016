package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
)

// MarshalJSON writes r as one object of JSON Lines v1: the fields it sets,
// in the format's order, then Extra's fields by name. ReadJSONL reads it
// back to an equal Record (Line aside): typed values are written as the
// format spells them.
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	put := func(name string, raw []byte) {
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteString(": ")
		b.Write(raw)
	}
	for i := range fieldDefs {
		d := &fieldDefs[i]
		if d.isZero(&r) {
			continue
		}
		raw, err := d.encode(&r)
		if err != nil {
			return nil, fmt.Errorf("trace: record line %d: field %q: %w", r.Line, d.name, err)
		}
		put(d.name, raw)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Extra)) {
		put(k, r.Extra[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode writes the field of r that d describes as JSON.
func (d *fieldDef) encode(r *Record) ([]byte, error) {
	switch {
	case d.str != nil:
		return json.Marshal(*d.str(r))
	case d.num != nil:
		return json.Marshal(*d.num(r))
	case d.i32 != nil:
		return strconv.AppendInt(nil, int64(*d.i32(r)), 10), nil
	case d.i64 != nil:
		return strconv.AppendInt(nil, *d.i64(r), 10), nil
	default:
		return json.Marshal(*d.obj(r))
	}
}

// WriteJSONL writes recs as a JSON Lines v1 trace, one record per line.
func WriteJSONL(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	for _, r := range recs {
		line, err := r.MarshalJSON()
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}
