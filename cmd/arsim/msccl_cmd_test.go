package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ringXML = "../../msccl/testdata/ring_allreduce_8.xml"

// An MSCCL ring imports, checks and times.
func TestMSCCLRingImportsChecksAndTimes(t *testing.T) {
	out, _, err := runCLI(t, "check", "--schedule", ringXML, "--max-bytes", "1MiB")
	require.NoError(t, err)
	assert.Contains(t, out, "file:"+ringXML)
	assert.Contains(t, out, "schedules proved correct")
	assert.Regexp(t, `file:\S+ring_allreduce_8.xml\s+8\s+\d+\s+ok`, out)
	out, _, err = runCLI(t, "sweep", "--algos", "file:"+ringXML+",two_stage", "--sizes", "42KiB,1MiB", "--format", "csv")
	require.NoError(t, err)
	assert.Contains(t, out, "file:"+ringXML+",43008,")
	assert.NotContains(t, out, "not 8 whole chunks")
}

func TestMSCCLBadFilesExitTwo(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.xml")
	require.NoError(t, os.WriteFile(bad, []byte("<algo coll=\"allreduce\" proto=\"LL\" ngpus=\"2\" nchunksperloop=\"2\">\n  <gpu id=\"0\">\n</algo>\n"), 0o644))
	for _, args := range [][]string{
		{"check", "--schedule", bad},
		{"sweep", "--algos", "file:" + bad},
		{"check", "--schedule", "no-such-file.xml"},
	} {
		_, _, err := runCLI(t, args...)
		require.Error(t, err, "%v", args)
		assert.Equal(t, 2, exitCode(err), "%v: %v", args, err)
		assert.Contains(t, err.Error(), "msccl: ", "%v", args)
	}
	_, _, err := runCLI(t, "check", "--schedule", bad)
	assert.Contains(t, err.Error(), "bad.xml:3: not well-formed XML")
}
