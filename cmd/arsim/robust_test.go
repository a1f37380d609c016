package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
)

// Hostile and odd input to the real binary, every command: each case ends
// with the exit status it should (2 bad input, 1 no result, 0 success), a
// message that says what is wrong, within a minute and 2 GB, and writes no
// half an output. The process is run for real, so that a crash of the Go
// runtime (its own status 2, out of memory, a panic in a goroutine) would
// show as what it is.

// robustCase is one command line and what it must give.
type robustCase struct {
	name string
	args []string
	code int
	want string // in standard error (for status 0: in standard output)
	// absent lists files (relative to the case's folder) that must not
	// exist after the run: outputs of a run that failed.
	absent []string
}

const (
	recordH200 = `{"system": "h200x2-vm", "clock": "device_events", "kind": "memcpy", "launch": "eager", "engine": "copy_engine", "dir": "h2d", "bytes": 4, "us": 6.514}`
	sequence   = `{"system": "h200x2-vm", "clock": "device_events", "kind": "allreduce_sequence", "impl": "nccl", "proto": "ll", "algo": "ring", "transport": "p2p", "launch": "cudagraph", "world": 2, "dtype": "bf16", "count": COUNT, "tokens": 1, "hidden": 7168, "bytes": 14336, "us": 10}`
	barrier    = `{"system": "h200x2-vm", "clock": "device_events", "kind": "barrier", "world": 2, "barrier": "flag", "stride_words": 1, "blocks": 1, "threads": 512, "barriers_per_launch": N, "us": 3}`
)

// robustFiles writes the inputs the cases read into dir.
func robustFiles(t *testing.T, dir string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(14, 1))
	binary := make([]byte, 1<<16)
	for i := range binary {
		binary[i] = byte(rng.Uint32())
	}
	big := bytes.Repeat([]byte("garbage, "), 50<<20/9) // 50 MB, no newline
	nested := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	nestedXML := `<system version="1">` + strings.Repeat(`<cpu numaid="0">`, 20_000) + strings.Repeat(`</cpu>`, 20_000) + `</system>`
	files := map[string][]byte{
		"garbage.txt":      []byte("this is not a trace\n{{{{\n"),
		"binary.bin":       binary,
		"truncated.jsonl":  []byte(recordH200[:60]),
		"nested.jsonl":     []byte(nested + "\n"),
		"nested.xml":       []byte(nestedXML),
		"big50mb.txt":      big,
		"bom.jsonl":        []byte("\xef\xbb\xbf" + recordH200 + "\n"),
		"count.jsonl":      []byte(strings.Replace(sequence, "COUNT", "2147483647", 1) + "\n"),
		"bpl.jsonl":        []byte(strings.Replace(barrier, "N", "2147483647", 1) + "\n"),
		"bpl1e6.jsonl":     []byte(strings.Replace(barrier, "N", "1000000", 1) + "\n"),
		"nosystem.jsonl":   []byte(strings.Replace(recordH200, "h200x2-vm", "no-such-box", 1) + "\n"),
		"sms.params":       []byte("gpu.sms = 1.5\n"),
		"bandwidth.params": []byte("hostmem.bandwidth = 1e308\n"),
		"nan.params":       []byte("hostmem.latency = NaN\n"),
		"topo256.txt":      smi256(),
		"empty.txt":        nil,
	}
	h200, err := os.ReadFile("../../testdata/h200x2/measurements.jsonl")
	require.NoError(t, err)
	files["h200x2.jsonl"] = h200
	files["nop2p.params"] = []byte("p2p.through_host_bridge = 0\np2p.across_sockets = 0\n")
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
}

// smi256 is the `nvidia-smi topo -m` matrix of 256 GPUs on two sockets of
// PCIe switches.
func smi256() []byte {
	const n = 256
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tGPU%d", i)
	}
	b.WriteString("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "GPU%d", i)
		for j := 0; j < n; j++ {
			c := "NODE"
			switch {
			case i == j:
				c = " X "
			case i/(n/2) != j/(n/2):
				c = "SYS"
			case i/4 == j/4:
				c = "PIX"
			}
			b.WriteString("\t" + c)
		}
		fmt.Fprintf(&b, "\t0-63\t%d\t\tN/A\n", i/(n/2))
	}
	return b.Bytes()
}

func robustCases() []robustCase {
	var cs []robustCase
	add := func(code int, want string, args ...string) {
		cs = append(cs, robustCase{name: strings.Join(args, " "), args: args, code: code, want: want})
	}
	addOut := func(code int, want string, absent []string, args ...string) {
		cs = append(cs, robustCase{name: strings.Join(args, " "), args: args, code: code, want: want, absent: absent})
	}
	// Bounded work: every size, count, iteration, rank and channel.
	addOut(2, "is above the limit of 800000", []string{"t.json"}, "timeline", "--algo", "ring", "--iters", "1000", "--bytes", "256MiB", "--out", "t.json")
	addOut(2, "is above the limit of 800000", []string{"t.json"}, "timeline", "--algo", "tree", "--iters", "1000", "--bytes", "256MiB", "--out", "t.json")
	addOut(2, "--picture of about", []string{"t.json", "t.png"}, "timeline", "--algo", "ring", "--iters", "27", "--bytes", "256MiB", "--out", "t.json", "--picture", "t.png")
	add(2, "the checker handles at most 64 ranks", "check", "--ranks", "1024", "--algos", "one_stage")
	add(2, "the checker handles at most 64 ranks", "check", "--ranks", "4096", "--algos", "ring")
	add(2, `field "count": 2147483647 is above the limit 100000`, "validate", "--traces", "count.jsonl")
	add(2, `field "barriers_per_launch": 2147483647 is above the limit 1024`, "validate", "--traces", "bpl.jsonl")
	add(1, "nothing was simulated: every line was malformed", "validate", "--traces", "bpl.jsonl", "--skip-bad")
	add(2, `field "barriers_per_launch": 1000000 is above the limit 1024`, "validate", "--traces", "bpl1e6.jsonl")
	add(2, "line longer than 1048576 bytes", "validate", "--traces", "/dev/zero")
	add(2, "larger than 256 MiB", "validate", "--traces", "/dev/zero", "--skip-bad")
	// Random bytes are bad JSON Lines, or, when they start like a JSON
	// document (a profiler trace), a document past the size limit.
	add(2, "bad JSON|a trace is at most that", "validate", "--traces", "/dev/urandom")
	add(2, "a trace is at most that", "validate", "--traces", "/dev/urandom", "--skip-bad") // long or many lines
	add(2, "larger than 16 MiB", "check", "--algos", "file:/dev/zero")
	add(2, "line 1 is longer than 64 KiB", "verify", "--params", "/dev/zero")
	add(2, "channels=2000000000: 2000000000 is above the limit 64 (NCCL's MAXCHANNELS)", "verify", "--opts", "channels=2000000000")
	add(2, "channels=99999999: 99999999 is above the limit 64", "verify", "--opts", "channels=99999999")
	add(2, "blocks=1000000000: 1000000000 is above the limit 188", "verify", "--opts", "blocks=1000000000,threads=1000000000")
	add(2, "threads=1000000000: 1000000000 is above the limit 1024 (CUDA's limit of threads per block)", "sweep", "--algos", "one_stage", "--opts", "threads=1000000000")
	add(2, `size "2TiB" is above the limit of 1099511627776 B`, "sweep", "--sizes", "1KiB..2TiB")
	add(2, "300 sizes: want at most 256", "sweep", "--sizes", strings.Repeat("1KiB,", 300))
	add(2, "--tokens \"70000\"", "verify", "--tokens", "70000")
	add(2, "--iters 1001: want 1–1000", "timeline", "--algo", "ring", "--iters", "1001", "--out", "t.json")
	add(2, "--max-evals 1000000000: want 1–100000", "calibrate", "--traces", "bom.jsonl", "--fit", "ce.setup", "--params-out", "p.params", "--max-evals", "1000000000")
	add(2, "--budget 1000000: want 1–100000", "design", "--budget", "1000000")
	add(2, "--ranks 9: want 2–8", "sweep", "--ranks", "9")
	// Strict options, whatever the number of algorithms.
	add(2, `option "nosuchkey" is taken by none of the algorithms run (one_stage)`, "verify", "--algos", "one_stage", "--opts", "nosuchkey=1")
	add(2, `option "nosuchkey" is taken by none of the `, "verify", "--opts", "nosuchkey=1")
	add(2, `proto="bogus": want ll, ll128, simple`, "verify", "--opts", "proto=bogus")
	add(2, "channels=0: 0 is below the minimum 1", "verify", "--algos", "ring", "--opts", "channels=0")
	add(2, "channels=-1: -1 is below the minimum 1", "verify", "--opts", "channels=-1")
	add(2, "threads=0: 0 is below the minimum 1", "verify", "--opts", "threads=0")
	add(2, "max_size=-1: -1 is below the minimum 1", "verify", "--opts", "max_size=-1")
	add(2, `option shape="bogus" is not one of dbtree, chain`, "verify", "--opts", "shape=bogus")
	add(2, `option channels="1.5" must be a whole number`, "explain", "ring", "--opts", "channels=1.5")
	add(2, `option nthreads=100: 100 is not a multiple of 32`, "timeline", "--algo", "nccl", "--opts", "nthreads=100", "--out", "t.json")
	add(2, `option "x": want key=value`, "verify", "--opts", "x")
	// Numbers: NaN, Inf, overflowing durations, fractions, huge values.
	add(2, "--accept NaN: want a finite number", "verify", "--accept", "NaN")
	add(2, "--accept +Inf: want a finite number", "verify", "--accept", "Inf", "--format", "json")
	add(2, "--compute 6000h0m0s: want a duration from 0 to 1h0m0s", "verify", "--compute", "6000h")
	add(2, "--draft 2562047h47m16.854775807s: want a duration", "verify", "--draft", "9223372036854775807ns")
	add(2, "gpu.sms = 1.5 count must be a whole number", "verify", "--params", "sms.params")
	add(2, "hostmem.bandwidth = 1e+308 GB/s is outside its physical range [1, 100000]", "sweep", "--params", "bandwidth.params")
	add(2, "hostmem.latency = NaN ns is outside its physical range", "topology", "show", "h200x2", "--params", "nan.params")
	for _, s := range []string{"0", "-1", "1e30", "NaN", "12 parsecs", "1MiB..1KiB"} {
		add(2, "", "sweep", "--sizes", s)
	}
	add(2, "", "timeline", "--algo", "ring", "--bytes", "0", "--out", "t.json")
	// Stray arguments.
	add(2, `verify: unexpected argument "foo" (and 1 more: bar)`, "verify", "foo", "bar")
	add(2, `algos: unexpected argument "extra"`, "algos", "extra")
	add(2, `topology show: unexpected argument "extra" (and 2 more: --params f)`, "topology", "show", "h200x2", "extra", "--params", "f")
	add(2, `explain: unexpected argument "more"`, "explain", "ring", "more")
	add(2, `topology import: unexpected argument "b.txt"`, "topology", "import", "topo256.txt", "b.txt")
	add(2, `unexpected argument "x"`, "sweep", "--sizes", "1KiB", "x")
	add(2, `help: unexpected argument "extra" (arsim help COMMAND)`, "help", "verify", "extra")
	// Results that cannot be produced: exit 1 with why, and no output file.
	add(1, "nothing was simulated: all 1 records were skipped", "validate", "--traces", "nosystem.jsonl")
	addOut(2, "holdout-every 1000000 holds out none of the 419 records that simulate", []string{"p.params"},
		"calibrate", "--traces", "h200x2.jsonl", "--fit", "ce.setup", "--params-out", "p.params", "--holdout-every", "1000000")
	add(1, "nothing was simulated: no algorithm could run on rtxpro6000x8-2numa", "verify", "--algos", "ring", "--opts", "transport=p2p", "--params", "nop2p.params")
	// Malformed and endless files, unknown names: the classes handled well.
	for _, f := range []string{"garbage.txt", "binary.bin", "truncated.jsonl", "nested.jsonl", "big50mb.txt", "empty.txt"} {
		if f == "empty.txt" {
			add(1, "nothing was simulated: the traces hold no record", "validate", "--traces", f)
			add(0, "Verify pass", "verify", "--params", f, "--algos", "one_stage") // no parameter changed
		} else {
			add(2, "", "validate", "--traces", f)
			add(2, "", "verify", "--params", f, "--algos", "one_stage")
		}
		add(2, "", "topology", "import", f)
		add(2, "", "check", "--algos", "file:"+f)
		add(2, "", "check", "--algos", "spec:"+f)
	}
	add(2, "", "topology", "import", "nested.xml")
	add(2, "larger than 16 MiB", "topology", "import", "/dev/urandom")
	add(2, "larger than 16 MiB", "verify", "--topology", "/dev/zero")
	add(2, "larger than 16 MiB", "sweep", "--topology", "/dev/urandom", "--algos", "one_stage")
	add(2, `NCCL_PROTO="bogus": "bogus" is not one of LL, LL128, Simple`, "verify", "--opts", "NCCL_PROTO=bogus")
	add(2, "max_channels=2000000000: 2000000000 is above the limit 64", "verify", "--algos", "nccl", "--opts", "NCCL_MAX_NCHANNELS=2000000000")
	add(2, `unknown preset "nope"`, "verify", "--topology", "nope")
	add(2, `unknown algorithm "nope"`, "sweep", "--algos", "ring,nope")
	add(2, `unknown command "nope"`, "nope")
	add(2, "no such file", "validate", "--traces", "no-such.jsonl")
	add(2, "flag provided but not defined", "verify", "--no-such-flag")
	// What now works: a byte-order mark, and a 256-GPU import in time.
	add(0, "Measured versus simulated", "validate", "--traces", "bom.jsonl")
	add(0, "(nvidia-smi topo -m): 256 GPUs, 2 socket(s)", "topology", "import", "topo256.txt")
	return cs
}

func TestHostileInputEndsWithAClearStatus(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /dev/zero, /dev/urandom and Linux's max RSS")
	}
	bin := buildArsim(t)
	for _, c := range robustCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			robustFiles(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, c.args...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			require.NoError(t, ctx.Err(), "ran past a minute")
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
			assert.Equal(t, c.code, code, "exit status; stderr: %s", tail(stderr.String()))
			assert.NotContains(t, stderr.String(), "goroutine ", "a Go crash")
			assert.Less(t, rss, int64(2<<30), "max RSS %d MiB", rss>>20)
			if c.code == 0 {
				assert.Contains(t, stdout.String(), c.want)
			} else {
				assert.Contains(t, stderr.String(), "arsim: ", "the error line")
				assert.True(t, slices.ContainsFunc(strings.Split(c.want, "|"), func(w string) bool { return strings.Contains(stderr.String(), w) }),
					"stderr %q says none of %q", tail(stderr.String()), c.want)
			}
			for _, f := range c.absent {
				_, err := os.Stat(filepath.Join(dir, f))
				assert.True(t, os.IsNotExist(err), "%s was left behind", f)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				assert.False(t, strings.Contains(e.Name(), ".tmp"), "temporary file %s left", e.Name())
			}
			t.Logf("status %d in %v, max RSS %d MiB", code, took.Round(time.Millisecond), rss>>20)
		})
	}
}

func tail(s string) string {
	if len(s) > 400 {
		return "…" + s[len(s)-400:]
	}
	return s
}

// The command, built once for the tests that run it as a process, into a
// folder TestMain removes.
var (
	buildOnce sync.Once
	binDir    string
	binErr    error
)

// buildArsim builds the command (once) and returns its path.
func buildArsim(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "arsim-test-"); binErr != nil {
			return
		}
		out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", filepath.Join(binDir, "arsim"), ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, binErr)
	return filepath.Join(binDir, "arsim")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// A full disk: standard output that cannot be written is exit status 1,
// whatever the command printed before.
func TestFullDiskIsNoResult(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	bin := buildArsim(t)
	for _, args := range [][]string{{"explain", "ring"}, {"topology", "show", "h200x2"}, {"algos"}, {"verify", "--algos", "one_stage"}} {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		require.NoError(t, err)
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &stderr
		err = cmd.Run()
		full.Close()
		ee, ok := errors.AsType[*exec.ExitError](err)
		require.True(t, ok, "%v: %v", args, err)
		assert.Equal(t, 1, ee.ExitCode(), "%v", args)
		assert.Contains(t, stderr.String(), "no space left on device", "%v", args)
	}
}

// A write that fails (a full disk) leaves no file, and the previous one
// untouched; the error is exit status 1.
func TestFailedWriteLeavesNothingHalfWritten(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	require.NoError(t, os.WriteFile(old, []byte("old"), 0o644))
	full := errors.New("no space left on device")
	failing := func(w io.Writer) error {
		if _, err := w.Write([]byte("partial")); err != nil {
			return err
		}
		return full
	}
	err := writeFileAtomic(old, failing)
	require.ErrorIs(t, err, full)
	assert.Equal(t, 1, exitCode(err))
	got, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))
	require.ErrorIs(t, writeFileAtomic(filepath.Join(dir, "new.json"), failing), full)
	require.ErrorIs(t, drawAtomic(filepath.Join(dir, "new.svg"), func(string) error { return full }), full)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the old file")
	require.NoError(t, writeFileAtomic(old, func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }))
	got, _ = os.ReadFile(old)
	assert.Equal(t, "new", string(got))
}

// A panic anywhere in a run is exit status 3, "please report", never 2 and
// never shown as a reason an algorithm could not run.
func TestPanicIsAnInternalError(t *testing.T) {
	// A loader, not Register: a name only this test uses, so that the
	// commands that run every algorithm do not meet it.
	algos.RegisterLoader("testpanic:", func(string) (algos.Algorithm, error) { return panicky{}, nil })
	for _, args := range [][]string{
		{"verify", "--algos", "testpanic:x"},
		{"sweep", "--algos", "one_stage,testpanic:x", "--sizes", "1KiB"},
		{"explain", "testpanic:x"},
	} {
		_, _, err := runCLI(t, args...)
		require.Error(t, err, "%v", args)
		assert.Equal(t, 3, exitCode(err), "%v: %v", args, err)
		var buf bytes.Buffer
		reportError(&buf, err, args)
		assert.Contains(t, buf.String(), "internal error: panic: test_panics plans by panicking")
		assert.Contains(t, buf.String(), "Please report it with the command line\n\n  arsim "+strings.Join(args, " "))
		assert.Contains(t, buf.String(), "goroutine", "the stack")
	}
}

// panicky is an algorithm whose planner panics: a stand-in for a bug.
type panicky struct{}

func (panicky) Name() string                                { return "test_panics" }
func (panicky) Describe() string                            { return "a planner that panics (test)" }
func (panicky) Options() []algos.OptionSpec                 { return nil }
func (panicky) WorldSizes(int) error                        { return nil }
func (panicky) Plan(algos.Request) (*algos.Schedule, error) { panic("test_panics plans by panicking") }
