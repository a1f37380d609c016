package trace

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zeros is an endless input of one byte, as /dev/zero is.
type zeros struct{ b byte }

func (z zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = z.b
	}
	return len(p), nil
}

// An endless input ends the read with an error in bounded time and
// memory, with or without SkipBad: a line has a length limit, an input a
// size and a line limit.
func TestReadJSONLBoundsEndlessInput(t *testing.T) {
	_, _, err := ReadJSONL(zeros{0}, "/dev/zero", ReadOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 1: line longer than 1048576 bytes: not a record")
	_, _, err = ReadJSONL(zeros{0}, "/dev/zero", ReadOptions{SkipBad: true})
	assert.ErrorContains(t, err, "larger than 256 MiB")
	_, _, err = ReadJSONL(zeros{'\n'}, "newlines", ReadOptions{SkipBad: true})
	assert.ErrorContains(t, err, "more than 1048576 lines")
}

// The nccl-tests and profiler readers have the same bounds.
func TestOtherReadersBoundEndlessInput(t *testing.T) {
	for _, opts := range []ReadOptions{{}, {SkipBad: true}} {
		_, _, err := ReadNCCLTests(zeros{'#'}, "endless.txt", opts)
		assert.Error(t, err)
		_, _, err = ReadNCCLTests(zeros{'\n'}, "newlines.txt", opts)
		assert.ErrorContains(t, err, "more than 1048576 lines")
		_, _, err = ReadKineto(io.MultiReader(strings.NewReader("["), zeros{' '}), "endless.json", opts)
		assert.ErrorContains(t, err, "larger than 256 MiB")
	}
}

// A long line is one bad line: with SkipBad the read goes on after it.
func TestReadJSONLSkipsALongLine(t *testing.T) {
	in := io.MultiReader(strings.NewReader(goodLine+"\n"), io.LimitReader(zeros{'x'}, MaxLineBytes+5), strings.NewReader("\n"+goodLine+"\n"))
	recs, bad, err := ReadJSONL(in, "t.jsonl", ReadOptions{SkipBad: true})
	require.NoError(t, err)
	assert.Len(t, recs, 2)
	require.Len(t, bad, 1)
	assert.Equal(t, 2, bad[0].Line)
	assert.Equal(t, 3, recs[1].Line)
}

func TestReadJSONLSkipsAByteOrderMark(t *testing.T) {
	recs, _, err := ReadJSONL(strings.NewReader("\xef\xbb\xbf"+goodLine+"\n"), "bom.jsonl", ReadOptions{})
	require.NoError(t, err)
	assert.Len(t, recs, 1)
}

// Every integer field has a limit, named with the field when it is passed.
func TestIntegerFieldsHaveLimits(t *testing.T) {
	for _, d := range fieldDefs {
		if d.typ == jInt {
			assert.Positive(t, d.max, d.name)
			assert.NotEmpty(t, d.why, d.name)
			if d.i32 != nil {
				assert.LessOrEqual(t, d.max, int64(math.MaxInt32), d.name)
			}
		}
	}
	for _, c := range []struct{ line, want string }{
		{`{"system":"s","clock":"device_events","kind":"allreduce_sequence","impl":"nccl","proto":"ll","algo":"ring","transport":"p2p","launch":"cudagraph","world":2,"dtype":"bf16","count":2147483647,"tokens":1,"hidden":7168,"bytes":14336,"us":10}`,
			`field "count": 2147483647 is above the limit 100000`},
		{`{"system":"s","clock":"device_events","kind":"barrier","world":2,"barrier":"flag","stride_words":1,"blocks":1,"threads":512,"barriers_per_launch":2147483647,"us":3}`,
			`field "barriers_per_launch": 2147483647 is above the limit 1024`},
		{`{"system":"s","clock":"device_events","kind":"sm_access","op":"read","target":"peer","blocks":1,"threads":1025,"bytes":1024,"us":3}`,
			`field "threads": 1025 is above the limit 1024 (CUDA's limit of threads per block)`},
		{`{"system":"s","clock":"device_events","kind":"memcpy","dir":"h2d","bytes":1099511627777,"us":3}`,
			`field "bytes": 1099511627777 is above the limit 1099511627776`},
	} {
		_, _, err := ReadJSONL(bytes.NewReader([]byte(c.line)), "t.jsonl", ReadOptions{})
		assert.ErrorContains(t, err, c.want)
	}
}
