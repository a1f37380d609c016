package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSMHalves(t *testing.T) {
	h, err := ReadSMHalves(strings.NewReader(`{"sms": 4, "sm0_half": [0, 3], "readers": {}}`), "x")
	require.NoError(t, err)
	assert.Equal(t, []int8{0, 1, 1, 0}, h)
	for in, want := range map[string]string{
		`{"sms": 4, "sm0_half": [1, 3]}`:    "must hold SM 0",
		`{"sms": 4, "sm0_half": [0, 4]}`:    "SM 4; the GPU has SMs 0 to 3",
		`{"sms": 4, "sm0_half": [0, 0]}`:    "SM 0 twice",
		`{"sms": 2, "sm0_half": [0, 1]}`:    "the other half is empty",
		`{"sm0_half": [0]}`:                 "sms must be an SM count",
		`{"sms": 100000, "sm0_half": [0]}`:  "sms must be an SM count",
		`{"sms": 4, "sm0_half": "0"}`:       "not a halves file",
		`[`:                                 "not a halves file",
		`{"sms": 4, "sm0_half": [-1, 0]}`:   "SM -1",
		`{"sms": 4.5, "sm0_half": [0]}`:     "not a halves file",
		`{"sms": 4, "sm0_half": [0], "x":}`: "not a halves file",
	} {
		_, err := ReadSMHalves(strings.NewReader(in), "f.json")
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
		assert.Contains(t, err.Error(), "f.json", in)
	}
}

// A trace's records carry the halves file beside it, and a bad one is an
// error that names it.
func TestReadJSONLFileTakesTheHalvesBesideIt(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "cap.jsonl")
	require.NoError(t, os.WriteFile(tr, []byte(`{"system":"h200x1-vm","kind":"pointer_chase","clock":"sm_clock64","target":"host","ns_per_step":1000}`+"\n"), 0o644))
	recs, _, err := ReadJSONLFile(tr, ReadOptions{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Nil(t, recs[0].SMHalves, "no halves file: the GPU class's map")

	require.NoError(t, os.Mkdir(filepath.Join(dir, "system"), 0o755))
	hp := filepath.Join(dir, "system", "cap.halves.json")
	require.NoError(t, os.WriteFile(hp, []byte(`{"sms": 3, "sm0_half": [0, 2]}`), 0o644))
	recs, _, err = ReadJSONLFile(tr, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int8{0, 1, 0}, recs[0].SMHalves)

	require.NoError(t, os.WriteFile(hp, []byte(`{"sms": 3, "sm0_half": [2]}`), 0o644))
	_, _, err = ReadJSONLFile(tr, ReadOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cap.halves.json")
}

func FuzzReadSMHalves(f *testing.F) {
	f.Add([]byte(`{"sms": 132, "sm0_half": [0, 1, 8]}`))
	f.Add([]byte(`{"sms": 4, "sm0_half": [0, 3], "readers": {"131": {}}}`))
	f.Add([]byte(`{"sms": -1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadSMHalves(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			assert.Nil(t, h)
			return
		}
		require.GreaterOrEqual(t, len(h), 2)
		require.Equal(t, int8(0), h[0])
		ones := 0
		for _, v := range h {
			require.True(t, v == 0 || v == 1)
			ones += int(v)
		}
		require.Positive(t, ones, "the other half holds an SM")
	})
}
