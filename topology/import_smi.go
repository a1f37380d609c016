package topology

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// smiMatrix is what the `nvidia-smi topo -m` parser read.
type smiMatrix struct {
	n       int           // GPUs
	cells   [][]PathClass // by GPU index; diagonal unused
	numa    []int         // NUMA affinity per GPU, -1 when N/A or absent
	line    []int         // file line of each GPU row
	nics    []string      // ignored NIC (non-GPU) columns
	hasNUMA bool          // the header has a NUMA Affinity column
}

// levels of the PCIe tree a non-NV class says two GPUs meet at.
const (
	lvPIX  = 1
	lvPXB  = 2
	lvPHB  = 3
	lvNODE = 4
	lvSYS  = 5
)

func classLevel(c PathClass) int {
	switch c.Kind {
	case PathPIX:
		return lvPIX
	case PathPXB:
		return lvPXB
	case PathPHB:
		return lvPHB
	case PathNODE:
		return lvNODE
	case PathSYS:
		return lvSYS
	}
	return 0 // NV: hides the PCIe path
}

var levelKind = [...]PathKind{lvPIX: PathPIX, lvPXB: PathPXB, lvPHB: PathPHB, lvNODE: PathNODE, lvSYS: PathSYS}

// ImportSMI reads the matrix printed by `nvidia-smi topo -m` and builds a
// machine that reproduces it exactly. name is the file name, used in errors
// and (without directory and extension) as the topology name.
//
// The matrix has no speeds: GPU links and switch uplinks are opts.PCIeGen ×
// opts.PCIeWidth (Gen5 x16 by default), NVLinks nvlink.link_bandwidth each,
// and everything else comes from the parameters; Topology.Notes lists every
// such assumption. A matrix no PCIe tree can produce is an error naming the
// pair at fault.
func ImportSMI(r io.Reader, name string, opts ImportOptions) (*Topology, error) {
	m, notes, err := parseSMI(r, name)
	if err != nil {
		return nil, err
	}
	return buildSMI(m, name, opts, notes)
}

// smiParser reads `nvidia-smi topo -m` line by line.
type smiParser struct {
	file    string
	sc      *bufio.Scanner
	lineNo  int
	notes   *noteList
	numaCol int // index of NUMA Affinity among the affinity columns, -1: none
}

func (p *smiParser) errf(line int, format string, a ...any) error {
	return fmt.Errorf("topology: %s:%d: %s", p.file, line, fmt.Sprintf(format, a...))
}

// parseSMI reads the matrix and checks it on its own (square, symmetric,
// X on the diagonal only).
func parseSMI(r io.Reader, file string) (*smiMatrix, *noteList, error) {
	p := &smiParser{file: file, sc: bufio.NewScanner(r), notes: &noteList{}}
	p.sc.Buffer(nil, maxImportBytes)
	cols, after, headerLine, err := p.header()
	if err != nil {
		return nil, nil, err
	}
	n := 0
	for _, c := range cols {
		if strings.HasPrefix(c, "GPU") {
			n++
		}
	}
	if n > maxImportGPUs {
		return nil, nil, p.errf(headerLine, "%d GPU columns; at most %d are supported", n, maxImportGPUs)
	}
	m := &smiMatrix{n: n, cells: make([][]PathClass, n), numa: make([]int, n), line: make([]int, n), nics: cols[n:]}
	p.numaCol = -1
	for i, a := range after {
		if a == "NUMA Affinity" {
			p.numaCol = i
			m.hasNUMA = true
		}
	}
	raw, err := p.rows(m, cols, after)
	if err != nil {
		return nil, nil, err
	}
	if err := p.cells(m, cols, raw); err != nil {
		return nil, nil, err
	}
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			if m.cells[i][j] != m.cells[j][i] {
				return nil, nil, p.errf(m.line[i], "%s–%s is %v but %s–%s (line %d) is %v: the matrix must be symmetric",
					cols[i], cols[j], m.cells[i][j], cols[j], cols[i], m.line[j], m.cells[j][i])
			}
		}
	}
	return m, p.notes, nil
}

// header skips to the header line (the one starting with GPU0) and splits
// it into device columns and affinity columns.
func (p *smiParser) header() (cols, after []string, line int, err error) {
	for p.sc.Scan() {
		p.lineNo++
		f := strings.Fields(stripANSI(p.sc.Text()))
		if len(f) > 0 && f[0] == "GPU0" && (len(f) == 1 || f[1] != "X") {
			cols, after, err := parseSMIHeader(f)
			if err != nil {
				return nil, nil, 0, p.errf(p.lineNo, "header: %v", err)
			}
			return cols, after, p.lineNo, nil
		}
	}
	if err := p.sc.Err(); err != nil {
		return nil, nil, 0, fmt.Errorf("topology: %s: %w", p.file, err)
	}
	return nil, nil, 0, fmt.Errorf("topology: %s: no `nvidia-smi topo -m` header line (one starting with GPU0)", p.file)
}

// rows reads one row per column after the header, up to a blank line or
// the legend: the GPU rows' device cells (returned) and NUMA affinities
// and lines (into m); NIC rows are noted and skipped.
func (p *smiParser) rows(m *smiMatrix, cols, after []string) ([][]string, error) {
	raw := make([][]string, m.n)
	row := 0 // next expected row index into cols
	for p.sc.Scan() {
		p.lineNo++
		f := strings.Fields(stripANSI(p.sc.Text()))
		if len(f) == 0 {
			if row == 0 {
				continue // blank lines between header and rows
			}
			break
		}
		if strings.HasPrefix(f[0], "Legend") {
			break
		}
		if row >= len(cols) {
			return nil, p.errf(p.lineNo, "row %s after the last column's row (%s): the matrix is not square", f[0], cols[len(cols)-1])
		}
		if f[0] != cols[row] {
			return nil, p.errf(p.lineNo, "row %s where the row of column %s was expected (rows must follow the header's columns)", f[0], cols[row])
		}
		if row >= m.n {
			p.notes.addItem("nic", "ignored NIC rows and columns (%s): NICs are not simulated", cols[row])
			row++
			continue
		}
		cells, err := p.row(m, row, f, cols, after)
		if err != nil {
			return nil, err
		}
		raw[row] = cells
		row++
	}
	if err := p.sc.Err(); err != nil {
		return nil, fmt.Errorf("topology: %s: %w", p.file, err)
	}
	if row < m.n {
		return nil, p.errf(p.lineNo, "the matrix has %d GPU rows for %d GPU columns (truncated?): no row for %s", row, m.n, cols[row])
	}
	for i := m.n; i < len(cols); i++ {
		p.notes.addItem("nic", "ignored NIC rows and columns (%s): NICs are not simulated", cols[i])
	}
	return raw, nil
}

// row checks the fields f of GPU row and returns its device cells, setting
// the row's NUMA affinity and line in m.
func (p *smiParser) row(m *smiMatrix, row int, f, cols, after []string) ([]string, error) {
	cells := f[1:]
	if len(cells) < len(cols) {
		return nil, p.errf(p.lineNo, "row %s has %d cells for %d device columns: the matrix is not square", f[0], len(cells), len(cols))
	}
	notSquare := func() error {
		return p.errf(p.lineNo, "row %s has %d fields for %d device and %d affinity columns: the matrix is not square", f[0], len(cells), len(cols), len(after))
	}
	if len(cells) != len(cols)+len(after) {
		// A short or long row shows as affinity values among the cells.
		for _, v := range cells[:len(cols)] {
			if _, _, err := parseSMICell(v); err != nil && v != "X" {
				return nil, notSquare()
			}
		}
	}
	rest := cells[len(cols):]
	if len(rest) > len(after) {
		return nil, notSquare()
	}
	m.numa[row] = -1
	if p.numaCol >= 0 && p.numaCol < len(rest) {
		v := rest[p.numaCol]
		if node, err := strconv.Atoi(v); err == nil && node >= 0 && node < 1<<16 {
			m.numa[row] = node
		} else if v != "N/A" {
			p.notes.addItem("numa-odd", "NUMA Affinity values that are not one node (%s) taken as unknown", v)
		}
	}
	m.line[row] = p.lineNo
	return cells[:len(cols)], nil
}

// cells reads the GPU-to-GPU classes into m: X on the diagonal only, known
// classes elsewhere (NIC cells of a GPU row included).
func (p *smiParser) cells(m *smiMatrix, cols []string, raw [][]string) error {
	for i := 0; i < m.n; i++ {
		m.cells[i] = make([]PathClass, m.n)
		for j := 0; j < m.n; j++ {
			v := raw[i][j]
			if i == j {
				if v != "X" {
					return p.errf(m.line[i], "%s–%s is %q: the diagonal must be X", cols[i], cols[j], v)
				}
				continue
			}
			c, old, err := parseSMICell(v)
			if err != nil {
				return p.errf(m.line[i], "%s–%s: %v", cols[i], cols[j], err)
			}
			if old {
				p.notes.addItem("soc", "old class name SOC read as SYS", "")
			}
			m.cells[i][j] = c
		}
		for j := m.n; j < len(cols); j++ {
			if _, _, err := parseSMICell(raw[i][j]); err != nil && raw[i][j] != "X" {
				return p.errf(m.line[i], "%s–%s: %v", cols[i], cols[j], err)
			}
		}
	}
	return nil
}

// parseSMIHeader splits the header into device columns and the trailing
// affinity columns.
func parseSMIHeader(f []string) (cols, after []string, err error) {
	seen := map[string]bool{}
	i := 0
	for ; i < len(f); i++ {
		w := f[i]
		if w == "CPU" || w == "NUMA" || (w == "GPU" && i+1 < len(f) && f[i+1] == "NUMA") {
			break
		}
		if seen[w] {
			return nil, nil, fmt.Errorf("column %s appears twice", w)
		}
		seen[w] = true
		if c := w[0]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return nil, nil, fmt.Errorf("column %q is not a device name like GPU0 or NIC0", w)
		}
		if strings.HasPrefix(w, "GPU") {
			want := "GPU" + strconv.Itoa(len(cols))
			if w != want {
				return nil, nil, fmt.Errorf("column %s where %s was expected (GPU columns come first, in order)", w, want)
			}
		}
		cols = append(cols, w)
	}
	for ; i < len(f); i++ {
		switch {
		case f[i] == "CPU" && i+1 < len(f) && f[i+1] == "Affinity":
			after = append(after, "CPU Affinity")
			i++
		case f[i] == "NUMA" && i+1 < len(f) && f[i+1] == "Affinity":
			after = append(after, "NUMA Affinity")
			i++
		case f[i] == "GPU" && i+2 < len(f) && f[i+1] == "NUMA" && f[i+2] == "ID":
			after = append(after, "GPU NUMA ID")
			i += 2
		default:
			return nil, nil, fmt.Errorf("unexpected column %q after the device columns (want CPU Affinity, NUMA Affinity, GPU NUMA ID)", f[i])
		}
	}
	return cols, after, nil
}

// parseSMICell reads one off-diagonal cell; old reports the pre-2017 name SOC.
func parseSMICell(v string) (c PathClass, old bool, err error) {
	switch v {
	case "PIX":
		return PathClass{Kind: PathPIX}, false, nil
	case "PXB":
		return PathClass{Kind: PathPXB}, false, nil
	case "PHB":
		return PathClass{Kind: PathPHB}, false, nil
	case "NODE":
		return PathClass{Kind: PathNODE}, false, nil
	case "SYS":
		return PathClass{Kind: PathSYS}, false, nil
	case "SOC":
		return PathClass{Kind: PathSYS}, true, nil
	case "X":
		return c, false, fmt.Errorf("X off the diagonal (X means a device with itself)")
	}
	if rest, ok := strings.CutPrefix(v, "NV"); ok {
		k, err := strconv.Atoi(rest)
		if err != nil {
			return c, false, fmt.Errorf("unknown cell value %q (want X, NV#, PIX, PXB, PHB, NODE or SYS)", v)
		}
		if k <= 0 || k > 64 {
			return c, false, fmt.Errorf("%s: the NVLink count must be 1–64", v)
		}
		return PathClass{Kind: PathNV, NVLinks: k}, false, nil
	}
	return c, false, fmt.Errorf("unknown cell value %q (want X, NV#, PIX, PXB, PHB, NODE or SYS)", v)
}
