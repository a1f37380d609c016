package scenarios

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
)

// public_measurements.csv is a copy of the project's shared table of
// published figures for PCIe-only machines, each with its source.
//
//go:embed public_measurements.csv
var publishedCSV string

// Published is one published figure.
type Published struct {
	System, Impl, Algo, Launch, Kind, Source, Note string
	GPUs                                           int
	Bytes                                          int64
	Value                                          float64 // µs for allreduce and latency kinds, µs for verify_pass
}

// PublishedFigures returns the embedded table.
func PublishedFigures() ([]Published, error) {
	rows, err := csv.NewReader(strings.NewReader(publishedCSV)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("scenarios: public_measurements.csv: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("scenarios: public_measurements.csv is empty")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, need := range []string{"system", "gpus", "impl", "algo", "bytes", "us", "launch", "kind", "source", "note"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("scenarios: public_measurements.csv: no column %q", need)
		}
	}
	var out []Published
	for i, r := range rows[1:] {
		g, err1 := strconv.Atoi(r[col["gpus"]])
		b, err2 := strconv.ParseInt(r[col["bytes"]], 10, 64)
		v, err3 := strconv.ParseFloat(r[col["us"]], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("scenarios: public_measurements.csv line %d: gpus, bytes and us must be numbers", i+2)
		}
		out = append(out, Published{System: r[col["system"]], GPUs: g, Impl: r[col["impl"]], Algo: r[col["algo"]], Bytes: b, Value: v,
			Launch: r[col["launch"]], Kind: r[col["kind"]], Source: r[col["source"]], Note: r[col["note"]]})
	}
	return out, nil
}
