package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tagsLine = "0000:00:06.0: 10-bit tag completer supported 1, requester supported 1, requester enabled %s; extended tags enabled 1; max payload 256 B, max read request 4096 B\n"

func TestReadTags(t *testing.T) {
	for in, want := range map[string]Tags{
		strings.Replace(tagsLine, "%s", "1", 1):                                         TagsTenBit,
		strings.Replace(tagsLine, "%s", "0", 1):                                         TagsEightBit,
		"a header\n" + strings.Replace(tagsLine, "%s", "0", 1):                          TagsEightBit,
		strings.Replace(tagsLine, "%s", "1", 1) + "0000:00:07.0: requester enabled 0\n": TagsTenBit, // the first GPU's
	} {
		got, err := ReadTags(strings.NewReader(in), "t.txt")
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, want := range map[string]string{
		"": "no line says",
		"0000:00:06.0: config space 64 B, no PCIe capability readable\n": "no line says",
		strings.Replace(tagsLine, "%s", "2", 1):                          `"2" after "requester enabled": want 0 or 1`,
		"x: requester enabled ":                                          `"" after`,
		strings.Repeat("x", maxTagsBytes+1):                              "not a tags file",
	} {
		_, err := ReadTags(strings.NewReader(in), "t.txt")
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
		assert.Contains(t, err.Error(), "t.txt", in)
	}
}

// A trace's records carry the tags file beside it, and a bad one is an
// error that names it.
func TestReadJSONLFileTakesTheTagsBesideIt(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "cap.jsonl")
	require.NoError(t, os.WriteFile(tr, []byte(`{"system":"h100x1-vm","kind":"pointer_chase","clock":"sm_clock64","target":"host","ns_per_step":1000}`+"\n"), 0o644))
	recs, _, err := ReadJSONLFile(tr, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, TagsUnknown, recs[0].PCIeTags)

	require.NoError(t, os.Mkdir(filepath.Join(dir, "system"), 0o755))
	// the capture's own, as its system phase writes it
	own := filepath.Join(dir, "system", "pcie_tags.txt")
	require.NoError(t, os.WriteFile(own, []byte(strings.Replace(tagsLine, "%s", "1", 1)), 0o644))
	recs, _, err = ReadJSONLFile(tr, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, TagsTenBit, recs[0].PCIeTags)
	// the trace's own file comes first
	p := TagsPath(tr)
	assert.Equal(t, filepath.Join(dir, "system", "cap.pcie_tags.txt"), p)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(tagsLine, "%s", "0", 1)), 0o644))
	recs, _, err = ReadJSONLFile(tr, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, TagsEightBit, recs[0].PCIeTags)

	require.NoError(t, os.WriteFile(p, []byte("garbage\n"), 0o644))
	_, _, err = ReadJSONLFile(tr, ReadOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cap.pcie_tags.txt")
}

func FuzzReadTags(f *testing.F) {
	f.Add([]byte(strings.Replace(tagsLine, "%s", "1", 1)))
	f.Add([]byte(strings.Replace(tagsLine, "%s", "0", 1)))
	f.Add([]byte("requester enabled"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadTags(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			assert.Equal(t, TagsUnknown, got)
			return
		}
		require.True(t, got == TagsTenBit || got == TagsEightBit)
		require.Contains(t, string(data), tenBitEnabled)
	})
}
