package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const captureSASS = "../../testdata/h200x1-arsim/system/sass_perblock_sm_90.txt.gz"

func TestSassReadsTheCaptureKernels(t *testing.T) {
	out, _, err := runCLI(t, "sass", "--file", captureSASS, "--kernel", "^pb_pull_(bf16_|unrolled)8$")
	require.NoError(t, err)
	assert.Regexp(t, `pb_pull_bf16_8 +171 +8 +1 +1\.01`, out)
	assert.Regexp(t, `pb_pull_unrolled8 +47 +8 +1 +2\.01`, out)
	assert.NotContains(t, out, "pb_pull_bf16_4")
}

func TestSassRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	notDump := filepath.Join(dir, "not.sass")
	require.NoError(t, os.WriteFile(notDump, []byte("hello\n"), 0o644))
	badGzip := filepath.Join(dir, "bad.gz")
	require.NoError(t, os.WriteFile(badGzip, []byte{0x1f, 0x8b, 0, 1, 2}, 0o644))
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sass"}, exitBadInput, "--file is required"},
		{[]string{"sass", "--file", notDump}, exitBadInput, `no "Function :" line`},
		{[]string{"sass", "--file", badGzip}, exitBadInput, "bad.gz"},
		{[]string{"sass", "--file", filepath.Join(dir, "none")}, exitBadInput, "no such file"},
		{[]string{"sass", "--file", captureSASS, "--kernel", "("}, exitBadInput, "--kernel"},
		{[]string{"sass", "--file", captureSASS, "--kernel", "^nothing$"}, exitNoResult, "no kernel with a loop matching"},
	} {
		_, _, err := runCLI(t, c.args...)
		require.Error(t, err, c.args)
		assert.Equal(t, c.code, exitCode(err), c.args)
		assert.Contains(t, err.Error(), c.want, c.args)
	}
}
