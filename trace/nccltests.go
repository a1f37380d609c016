package trace

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// NCCLTestsRun is one run of an nccl-tests benchmark (all_reduce_perf,
// all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf,
// alltoall_perf, ...), parsed from its text output.
type NCCLTestsRun struct {
	// Collective is the benchmark's name without "_perf", e.g.
	// "all_reduce". It comes from the "# Collective test starting:" header,
	// else from a command line echoed before the output, else from the
	// file name; "" when none says.
	Collective string
	// Version is the nccl-tests version from the first header line; "" for
	// builds that do not print it.
	Version string
	// NCCLLibrary is the NCCL library the run used, from the same line's
	// "nccl-library=22907" (NCCL_VERSION_CODE, major×10000 + minor×100 +
	// patch) written as "2.29.7"; "" where the line does not say.
	NCCLLibrary string
	// NThread and NGpus are the "-t" and "-g" options: threads per process
	// and GPUs per thread. The total number of ranks is len(Ranks).
	NThread, NGpus int
	// MinBytes and MaxBytes are the size range swept.
	MinBytes, MaxBytes int64
	// WarmupIters and Iters are the warm-up and timed iteration counts.
	WarmupIters, Iters int
	// Graph is the "graph:" header value: 0 for eager launches, more for
	// operations captured in CUDA graphs (-G), −1 when the header does not
	// say.
	Graph int
	// Ranks lists the "#  Rank ..." lines, in file order.
	Ranks []NCCLTestsRank
	// Rows are the result rows, in file order.
	Rows []NCCLTestsRow
	// AvgBusBw is the "# Avg bus bandwidth" footer in GB/s; 0 when absent.
	AvgBusBw float64
	// OutOfBounds is the "# Out of bounds values" footer count; −1 when
	// absent.
	OutOfBounds int64
}

// NCCLTestsRank is one "#  Rank  0 Group  0 Pid 1234 on host device  0
// [0x1b] NVIDIA H100 80GB HBM3" header line.
type NCCLTestsRank struct {
	Rank, Group, Pid int
	// Host is the host name.
	Host string
	// Device is the CUDA device index on Host.
	Device int
	// BusID is the PCI bus id as printed between brackets: "0x1b" in
	// older builds, "0000:1b:00" in newer ones.
	BusID string
	// Name is the GPU's name.
	Name string
}

// NCCLTestsRow is one result row: one message size.
type NCCLTestsRow struct {
	// Line is the 1-based line number of the row.
	Line int
	// Bytes is the "size" column and Count the "count" column (elements).
	Bytes, Count int64
	// Type is the element type ("float", "half", "bfloat16", ...) and RedOp
	// the reduction ("sum", "none", ...).
	Type, RedOp string
	// Root is the "root" column; −1 where the collective has none, or
	// where the build prints no root column.
	Root int
	// OutOfPlace and InPlace are the two halves of the row.
	OutOfPlace, InPlace NCCLTestsTiming
}

// NCCLTestsTiming is one placement (out-of-place or in-place) of a row.
type NCCLTestsTiming struct {
	// TimeUs is the mean time of one operation in µs.
	TimeUs float64
	// AlgBwGBs and BusBwGBs are the algorithm and bus bandwidths in GB/s.
	AlgBwGBs, BusBwGBs float64
	// Wrong is the "#wrong" column; −1 when printed as N/A (validation
	// off, -c 0) or when the build prints an "error" column instead.
	Wrong int64
	// MaxError is the "error" column of old builds (a maximum relative
	// error); 0 for builds that print "#wrong".
	MaxError float64
}

// Validate checks a row: non-negative sizes, times and bandwidths, a
// root of at least −1, a #wrong of at least −1.
func (row NCCLTestsRow) Validate() error {
	if err := row.validate(); err != nil {
		return at("row", row.Line, err)
	}
	return nil
}

func (row *NCCLTestsRow) validate() error {
	switch {
	case row.Bytes < 0:
		return fieldErrf("size", "must be >= 0, got %d", row.Bytes)
	case row.Count < 0:
		return fieldErrf("count", "must be >= 0, got %d", row.Count)
	case row.Type == "":
		return fieldErrf("type", "missing")
	case row.RedOp == "":
		return fieldErrf("redop", "missing")
	case row.Root < -1:
		return fieldErrf("root", "must be >= -1, got %d", row.Root)
	}
	for _, p := range []struct {
		name string
		t    NCCLTestsTiming
	}{{"out-of-place", row.OutOfPlace}, {"in-place", row.InPlace}} {
		for _, v := range []struct {
			col string
			x   float64
		}{{"time", p.t.TimeUs}, {"algbw", p.t.AlgBwGBs}, {"busbw", p.t.BusBwGBs}, {"error", p.t.MaxError}} {
			if math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x < 0 {
				return fieldErrf(p.name+" "+v.col, "must be a finite number >= 0, got %v", v.x)
			}
		}
		if p.t.Wrong < -1 {
			return fieldErrf(p.name+" #wrong", "must be >= -1, got %d", p.t.Wrong)
		}
	}
	return nil
}

// The expressions are compiled on first use, not at every start of a
// program that imports the package.
var (
	// launcherPrefix matches what mpirun ("[1,0]<stdout>:") or srun
	// --label ("0: ") put before each line.
	launcherPrefix = lazyRegexp(`^(\[\d+,\d+\]<std(out|err)>:|\d+: )`)
	rankLine       = lazyRegexp(`^Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	programName    = lazyRegexp(`([a-z_]+?)_perf(_mpi)?$`)
)

// lazyRegexp returns expr, compiled when first asked for.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// ncclTestsParser holds the state of one ReadNCCLTests call.
type ncclTestsParser struct {
	name        string
	run         NCCLTestsRun
	hasRoot     bool // the column header has a "root" column
	errorColumn bool // the column header has "error" instead of "#wrong"
	seenHeader  bool // a column header was seen
}

// ReadNCCLTests parses the text output of one nccl-tests benchmark run.
// name is used in error messages, and to guess the collective from a file
// name such as "all_reduce_perf.txt" when the output does not say.
//
// Header lines start with '#'; result rows start with the size. Lines that
// are neither (NCCL INFO logging, launcher noise) are ignored, as is a
// launcher prefix such as "[1,0]<stdout>:". A result row that does not
// parse is an error naming the line, or, with opts.SkipBad, a BadLine. It
// is an error to find no result rows, or a second run's header after the
// first run's rows.
func ReadNCCLTests(r io.Reader, name string, opts ReadOptions) (NCCLTestsRun, []BadLine, error) {
	p := &ncclTestsParser{name: name, hasRoot: true}
	p.run.OutOfBounds = -1
	p.run.Graph = -1
	var bad []BadLine
	lr := &io.LimitedReader{R: r, N: MaxTraceBytes + 1}
	br := bufio.NewReader(lr)
	for lineNo := 1; ; lineNo++ {
		if lineNo > MaxTraceLines {
			return NCCLTestsRun{}, nil, fmt.Errorf("trace: %s: more than %d lines; a trace is at most that long (MaxTraceLines)", name, MaxTraceLines)
		}
		raw, long, rerr := readLine(br, MaxLineBytes, opts.SkipBad)
		if lr.N <= 0 {
			return NCCLTestsRun{}, nil, fmt.Errorf("trace: %s: larger than %d MiB; a trace is at most that large (MaxTraceBytes)", name, MaxTraceBytes>>20)
		}
		if long {
			pe := at(name, lineNo, fieldErrf("", "line longer than %d bytes: not nccl-tests output", MaxLineBytes))
			if !opts.SkipBad {
				return NCCLTestsRun{}, nil, pe
			}
			bad = append(bad, BadLine{Line: lineNo, Err: pe})
		} else if line := string(raw); len(line) > 0 {
			if err := p.line(line, lineNo); err != nil {
				pe := at(name, lineNo, err)
				if !opts.SkipBad {
					return NCCLTestsRun{}, nil, pe
				}
				bad = append(bad, BadLine{Line: lineNo, Err: pe})
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return NCCLTestsRun{}, nil, fmt.Errorf("trace: %s line %d: %w", name, lineNo, rerr)
		}
	}
	if len(p.run.Rows) == 0 {
		return NCCLTestsRun{}, bad, &ParseError{File: name, Msg: "no nccl-tests result rows found"}
	}
	if p.run.Collective == "" {
		p.run.Collective = collectiveFromProgram(path.Base(strings.ReplaceAll(name, `\`, "/")))
	}
	return p.run, bad, nil
}

// ReadNCCLTestsFile reads the nccl-tests output at path; see ReadNCCLTests.
func ReadNCCLTestsFile(path string, opts ReadOptions) (NCCLTestsRun, []BadLine, error) {
	f, err := openFile(path)
	if err != nil {
		return NCCLTestsRun{}, nil, err
	}
	defer f.Close()
	return ReadNCCLTests(f, path, opts)
}

// collectiveFromProgram returns "all_reduce" for "all_reduce_perf",
// "/x/build/all_reduce_perf_mpi" or "all_reduce_perf.log"; "" otherwise.
func collectiveFromProgram(s string) string {
	s = path.Base(s)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s = s[:i]
	}
	m := programName().FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], "_")
}

func (p *ncclTestsParser) line(line string, lineNo int) error {
	line = strings.TrimSpace(line)
	line = strings.TrimSpace(launcherPrefix().ReplaceAllString(line, ""))
	if line == "" {
		return nil
	}
	if strings.HasPrefix(line, "#") {
		return p.header(strings.TrimSpace(strings.TrimPrefix(line, "#")))
	}
	f := strings.Fields(line)
	if _, err := strconv.ParseInt(f[0], 10, 64); err != nil {
		// Not a result row: a command line echoed before the output gives
		// the program; anything else is logging.
		if p.run.Collective == "" {
			p.run.Collective = collectiveFromProgram(f[0])
		}
		return nil
	}
	row, err := p.row(f)
	if err != nil {
		return err
	}
	row.Line = lineNo
	if err := row.validate(); err != nil {
		return err
	}
	p.run.Rows = append(p.run.Rows, row)
	return nil
}

func (p *ncclTestsParser) header(h string) error {
	switch {
	case strings.HasPrefix(h, "nccl-tests version "):
		f := strings.Fields(h)
		if len(f) >= 3 {
			p.run.Version = f[2]
		}
		for _, kv := range f[min(len(f), 3):] {
			if code, ok := strings.CutPrefix(kv, "nccl-library="); ok {
				p.run.NCCLLibrary = ncclVersionFromCode(code)
			}
		}
	case strings.HasPrefix(h, "Collective test starting:"):
		if c := collectiveFromProgram(strings.TrimSpace(strings.TrimPrefix(h, "Collective test starting:"))); c != "" {
			p.run.Collective = c
		}
	case strings.HasPrefix(h, "nThread "):
		if len(p.run.Rows) > 0 {
			return fieldErrf("", "a second run starts here; split the output into one file per run")
		}
		return p.params(strings.Fields(h))
	case strings.HasPrefix(h, "Rank "):
		m := rankLine().FindStringSubmatch(h)
		if m == nil {
			return fieldErrf("Rank", "want \"Rank N Group N Pid N on HOST device N [BUSID] NAME\", got %q", h)
		}
		var nums [4]int
		for i, s := range []string{m[1], m[2], m[3], m[5]} {
			v, err := strconv.Atoi(s)
			if err != nil {
				return fieldErrf("Rank", "bad number %q", s)
			}
			nums[i] = v
		}
		p.run.Ranks = append(p.run.Ranks, NCCLTestsRank{Rank: nums[0], Group: nums[1], Pid: nums[2],
			Host: m[4], Device: nums[3], BusID: m[6], Name: strings.TrimSpace(m[7])})
	case strings.HasPrefix(h, "Avg bus bandwidth"):
		v, err := afterColon(h, "Avg bus bandwidth")
		if err != nil {
			return err
		}
		f, perr := strconv.ParseFloat(v, 64)
		if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return fieldErrf("Avg bus bandwidth", "want a number >= 0, got %q", v)
		}
		p.run.AvgBusBw = f
	case strings.HasPrefix(h, "Out of bounds values"):
		v, err := afterColon(h, "Out of bounds values")
		if err != nil {
			return err
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			return fieldErrf("Out of bounds values", "missing count")
		}
		n, perr := strconv.ParseInt(fields[0], 10, 64)
		if perr != nil || n < 0 {
			return fieldErrf("Out of bounds values", "want a count >= 0, got %q", fields[0])
		}
		p.run.OutOfBounds = n
	default:
		f := strings.Fields(h)
		if len(f) >= 4 && f[0] == "size" && f[1] == "count" {
			p.seenHeader = true
			p.hasRoot = false
			p.errorColumn = false
			for _, c := range f {
				switch c {
				case "root":
					p.hasRoot = true
				case "error":
					p.errorColumn = true
				}
			}
		}
	}
	return nil
}

func afterColon(h, field string) (string, error) {
	i := strings.IndexByte(h, ':')
	if i < 0 {
		return "", fieldErrf(field, "missing ':'")
	}
	return strings.TrimSpace(h[i+1:]), nil
}

// params parses "nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step:
// 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0".
func (p *ncclTestsParser) params(f []string) error {
	for i := 0; i+1 < len(f); i++ {
		key, val := f[i], f[i+1]
		var dst64 *int64
		var dst *int
		switch {
		case key == "nThread":
			dst = &p.run.NThread
		case key == "nGpus":
			dst = &p.run.NGpus
		case key == "minBytes":
			dst64 = &p.run.MinBytes
		case key == "maxBytes":
			dst64 = &p.run.MaxBytes
		case key == "iters:" && i > 0 && f[i-1] == "warmup":
			dst = &p.run.WarmupIters
		case key == "iters:" && (i == 0 || f[i-1] != "agg"):
			dst = &p.run.Iters
		case key == "graph:":
			dst = &p.run.Graph
		default:
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			return fieldErrf(strings.TrimSuffix(key, ":"), "want an integer >= 0, got %q", val)
		}
		if dst64 != nil {
			*dst64 = n
		} else {
			if n > math.MaxInt32 {
				return fieldErrf(strings.TrimSuffix(key, ":"), "%d is out of range", n)
			}
			*dst = int(n)
		}
		i++
	}
	return nil
}

// row parses the fields of a result row.
func (p *ncclTestsParser) row(f []string) (NCCLTestsRow, error) {
	// size count type redop [root] then two groups of time algbw busbw #wrong.
	want := 12
	hasRoot := p.hasRoot
	if !p.seenHeader {
		// No column header: tell the layouts apart by the field count.
		hasRoot = len(f) == 13
	}
	if hasRoot {
		want = 13
	}
	if len(f) != want {
		return NCCLTestsRow{}, fieldErrf("", "result row has %d columns, want %d", len(f), want)
	}
	var row NCCLTestsRow
	var err error
	if row.Bytes, err = parseInt64("size", f[0]); err != nil {
		return row, err
	}
	if row.Count, err = parseInt64("count", f[1]); err != nil {
		return row, err
	}
	row.Type, row.RedOp = f[2], f[3]
	rest := f[4:]
	row.Root = -1
	if hasRoot {
		root, err := parseInt64("root", f[4])
		if err != nil {
			return row, err
		}
		if root < math.MinInt32 || root > math.MaxInt32 {
			return row, fieldErrf("root", "%d is out of range", root)
		}
		row.Root = int(root)
		rest = f[5:]
	}
	if row.OutOfPlace, err = p.timing("out-of-place", rest[:4]); err != nil {
		return row, err
	}
	if row.InPlace, err = p.timing("in-place", rest[4:]); err != nil {
		return row, err
	}
	return row, nil
}

func (p *ncclTestsParser) timing(place string, f []string) (NCCLTestsTiming, error) {
	var t NCCLTestsTiming
	for i, col := range []string{"time", "algbw", "busbw"} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return t, fieldErrf(place+" "+col, "want a number, got %q", f[i])
		}
		switch i {
		case 0:
			t.TimeUs = v
		case 1:
			t.AlgBwGBs = v
		default:
			t.BusBwGBs = v
		}
	}
	w := f[3]
	switch {
	case w == "N/A":
		t.Wrong = -1
	case p.errorColumn:
		v, err := strconv.ParseFloat(w, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return t, fieldErrf(place+" error", "want a number, got %q", w)
		}
		t.Wrong, t.MaxError = -1, v
	default:
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			return t, fieldErrf(place+" #wrong", "want an integer or N/A, got %q", w)
		}
		t.Wrong = n
	}
	return t, nil
}

func parseInt64(col, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fieldErrf(col, "want an integer, got %q", s)
	}
	return n, nil
}

// ncclVersionFromCode writes NCCL_VERSION_CODE (22907: major×10000 +
// minor×100 + patch, NCCL ≥ 2.9) as "2.29.7"; "" for anything else.
func ncclVersionFromCode(code string) string {
	n, err := strconv.Atoi(code)
	if err != nil || n < 20900 || n > 99999 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", n/10000, n/100%100, n%100)
}
