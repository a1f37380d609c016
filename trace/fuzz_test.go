package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// addSeeds adds every file matching pattern to f's seed corpus.
func addSeeds(f *testing.F, patterns ...string) {
	for _, p := range patterns {
		paths, err := filepath.Glob(p)
		require.NoError(f, err)
		for _, path := range paths {
			data, err := os.ReadFile(path)
			require.NoError(f, err)
			f.Add(data)
		}
	}
}

func FuzzReadJSONL(f *testing.F) {
	data, err := os.ReadFile(h200x2)
	require.NoError(f, err)
	lines := bytes.Split(data, []byte("\n"))
	for i := 0; i < len(lines); i += 40 {
		f.Add(bytes.Join(lines[i:min(i+3, len(lines))], []byte("\n")))
	}
	f.Add([]byte(goodLine + "\n\n{\"kind\": 1}\n  \n[]"))
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, _, err := ReadJSONL(bytes.NewReader(in), "fuzz.jsonl", ReadOptions{})
		if err == nil {
			for _, r := range recs {
				require.NoError(t, r.Validate())
				_, _, err := r.Primary()
				require.NoError(t, err)
				// A record's configuration names its kind and holds no
				// measured value.
				c := r.Configuration()
				require.Contains(t, c, "kind="+string(r.Kind))
				require.NotContains(t, c, ";us=")
			}
		}
		recs, bad, err := ReadJSONL(bytes.NewReader(in), "fuzz.jsonl", ReadOptions{SkipBad: true})
		require.NoError(t, err)
		nonBlank := 0
		for _, l := range bytes.Split(bytes.TrimPrefix(in, []byte("\xef\xbb\xbf")), []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				nonBlank++
			}
		}
		require.Equal(t, nonBlank, len(recs)+len(bad))
		for _, r := range recs {
			require.NoError(t, r.Validate())
		}
	})
}

func FuzzReadNCCLTests(f *testing.F) {
	addSeeds(f, "testdata/nccltests/*")
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, opts := range []ReadOptions{{}, {SkipBad: true}} {
			run, _, err := ReadNCCLTests(bytes.NewReader(in), "fuzz.txt", opts)
			if err != nil {
				continue
			}
			require.NotEmpty(t, run.Rows)
			for _, row := range run.Rows {
				require.NoError(t, row.Validate())
			}
		}
	})
}

func FuzzReadKineto(f *testing.F) {
	addSeeds(f, "testdata/kineto/*.json")
	f.Add([]byte(`[{"ph": "X", "cat": "Kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 0, "tid": "stream 16", "ts": 162, "dur": 1556, "args": {"device": 0, "correlation": 33218, "external id": 2513}}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, opts := range []ReadOptions{{}, {SkipBad: true}} {
			tr, _, err := ReadKineto(bytes.NewReader(in), "fuzz.json", opts)
			if err != nil {
				continue
			}
			for _, c := range tr.Collectives {
				require.NoError(t, c.Validate())
			}
		}
	})
}
