package topology

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/arsim/arsim/sim"
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

// parseSMI reads the matrix and checks it on its own (square, symmetric,
// X on the diagonal only).
func parseSMI(r io.Reader, file string) (*smiMatrix, *noteList, error) {
	notes := &noteList{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxImportBytes)
	errf := func(line int, format string, a ...any) error {
		return fmt.Errorf("topology: %s:%d: %s", file, line, fmt.Sprintf(format, a...))
	}
	lineNo := 0
	var cols []string // device columns: GPU0..GPUn-1 then NICs
	var after []string
	headerLine := 0
	for sc.Scan() {
		lineNo++
		f := strings.Fields(stripANSI(sc.Text()))
		if len(f) > 0 && f[0] == "GPU0" && (len(f) == 1 || f[1] != "X") {
			var err error
			cols, after, err = parseSMIHeader(f)
			if err != nil {
				return nil, nil, errf(lineNo, "header: %v", err)
			}
			headerLine = lineNo
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	if headerLine == 0 {
		return nil, nil, fmt.Errorf("topology: %s: no `nvidia-smi topo -m` header line (one starting with GPU0)", file)
	}
	n := 0
	for _, c := range cols {
		if strings.HasPrefix(c, "GPU") {
			n++
		}
	}
	if n > maxImportGPUs {
		return nil, nil, errf(headerLine, "%d GPU columns; at most %d are supported", n, maxImportGPUs)
	}
	m := &smiMatrix{n: n, cells: make([][]PathClass, n), numa: make([]int, n), line: make([]int, n), nics: cols[n:]}
	raw := make([][]string, n)
	numaCol := -1
	for i, a := range after {
		if a == "NUMA Affinity" {
			numaCol = i
			m.hasNUMA = true
		}
	}
	row := 0 // next expected row index into cols
	for sc.Scan() {
		lineNo++
		text := stripANSI(sc.Text())
		f := strings.Fields(text)
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
			return nil, nil, errf(lineNo, "row %s after the last column's row (%s): the matrix is not square", f[0], cols[len(cols)-1])
		}
		if f[0] != cols[row] {
			return nil, nil, errf(lineNo, "row %s where the row of column %s was expected (rows must follow the header's columns)", f[0], cols[row])
		}
		if row >= n {
			notes.addItem("nic", "ignored NIC rows and columns (%s): NICs are not simulated", cols[row])
			row++
			continue
		}
		cells := f[1:]
		if len(cells) < len(cols) {
			return nil, nil, errf(lineNo, "row %s has %d cells for %d device columns: the matrix is not square", f[0], len(cells), len(cols))
		}
		if len(cells) != len(cols)+len(after) {
			// A short or long row shows as affinity values among the cells.
			for _, v := range cells[:len(cols)] {
				if _, _, err := parseSMICell(v); err != nil && v != "X" {
					return nil, nil, errf(lineNo, "row %s has %d fields for %d device and %d affinity columns: the matrix is not square", f[0], len(cells), len(cols), len(after))
				}
			}
		}
		raw[row] = cells[:len(cols)]
		rest := cells[len(cols):]
		if len(rest) > len(after) {
			return nil, nil, errf(lineNo, "row %s has %d fields for %d device and %d affinity columns: the matrix is not square", f[0], len(cells), len(cols), len(after))
		}
		m.numa[row] = -1
		if numaCol >= 0 && numaCol < len(rest) {
			v := rest[numaCol]
			if k, err := strconv.Atoi(v); err == nil && k >= 0 && k < 1<<16 {
				m.numa[row] = k
			} else if v != "N/A" {
				notes.addItem("numa-odd", "NUMA Affinity values that are not one node (%s) taken as unknown", v)
			}
		}
		m.line[row] = lineNo
		row++
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	if row < n {
		return nil, nil, errf(lineNo, "the matrix has %d GPU rows for %d GPU columns (truncated?): no row for %s", row, n, cols[row])
	}
	for i := n; i < len(cols); i++ {
		notes.addItem("nic", "ignored NIC rows and columns (%s): NICs are not simulated", cols[i])
	}
	// Cells.
	for i := 0; i < n; i++ {
		m.cells[i] = make([]PathClass, n)
		for j := 0; j < n; j++ {
			v := raw[i][j]
			if i == j {
				if v != "X" {
					return nil, nil, errf(m.line[i], "%s–%s is %q: the diagonal must be X", cols[i], cols[j], v)
				}
				continue
			}
			c, old, err := parseSMICell(v)
			if err != nil {
				return nil, nil, errf(m.line[i], "%s–%s: %v", cols[i], cols[j], err)
			}
			if old {
				notes.addItem("soc", "old class name SOC read as SYS", "")
			}
			m.cells[i][j] = c
		}
		// The NIC cells of a GPU row must still be known classes.
		for j := n; j < len(cols); j++ {
			if _, _, err := parseSMICell(raw[i][j]); err != nil && raw[i][j] != "X" {
				return nil, nil, errf(m.line[i], "%s–%s: %v", cols[i], cols[j], err)
			}
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			if m.cells[i][j] != m.cells[j][i] {
				return nil, nil, errf(m.line[i], "%s–%s is %v but %s–%s (line %d) is %v: the matrix must be symmetric",
					cols[i], cols[j], m.cells[i][j], cols[j], cols[i], m.line[j], m.cells[j][i])
			}
		}
	}
	return m, notes, nil
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

// unionFind is a plain disjoint-set forest.
type unionFind []int

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

func (u unionFind) find(i int) int {
	for u[i] != i {
		u[i] = u[u[i]]
		i = u[i]
	}
	return i
}

func (u unionFind) union(a, b int) {
	a, b = u.find(a), u.find(b)
	if a < b {
		u[b] = a
	} else if b < a {
		u[a] = b
	}
}

// groups returns the sets of members (ascending), ordered by their first member.
func (u unionFind) groups(members []int) [][]int {
	idx := map[int]int{}
	var out [][]int
	for _, m := range members {
		r := u.find(m)
		k, ok := idx[r]
		if !ok {
			k = len(out)
			idx[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], m)
	}
	return out
}

func buildSMI(m *smiMatrix, file string, opts ImportOptions, notes *noteList) (*Topology, error) {
	n := m.n
	gpuName := func(i int) string { return "GPU" + strconv.Itoa(i) }
	errf := func(line int, format string, a ...any) error {
		return fmt.Errorf("topology: %s:%d: %s", file, line, fmt.Sprintf(format, a...))
	}
	gen, width := opts.PCIeGen, opts.PCIeWidth
	if gen == 0 {
		gen = 5
	}
	if width == 0 {
		width = 16
	}
	if _, err := pcieRate(gen, width); err != nil {
		return nil, fmt.Errorf("topology: %s: import options: %w", file, err)
	}
	ps, psNote, err := importParams(opts)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	lv := func(i, j int) int { return classLevel(m.cells[i][j]) }

	// Sockets: GPUs joined by known non-SYS entries share one.
	sock := newUnionFind(n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if l := lv(i, j); l >= lvPIX && l <= lvNODE {
				sock.union(i, j)
			}
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if lv(i, j) == lvSYS && sock.find(i) == sock.find(j) {
				return nil, errf(m.line[i], "GPU%d–GPU%d is SYS, but a chain of non-SYS entries (%s) puts them on one socket: no machine gives that",
					i, j, chainWitness(m, sock, i, j))
			}
		}
	}
	// NVLink pairs hide their PCIe path: join their sockets where nothing
	// contradicts it (same NUMA node, or NUMA unknown; no SYS between).
	numaOf := func(members []int) map[int]bool {
		s := map[int]bool{}
		for _, g := range members {
			if m.numa[g] >= 0 {
				s[m.numa[g]] = true
			}
		}
		return s
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if lv(i, j) != 0 || sock.find(i) == sock.find(j) {
				continue
			}
			ri, rj := sock.find(i), sock.find(j)
			var gi, gj []int
			for g := 0; g < n; g++ {
				switch sock.find(g) {
				case ri:
					gi = append(gi, g)
				case rj:
					gj = append(gj, g)
				}
			}
			ok := true
			for _, a := range gi {
				for _, b := range gj {
					if lv(a, b) == lvSYS {
						ok = false
					}
				}
			}
			ni, nj := numaOf(gi), numaOf(gj)
			if len(ni) > 0 && len(nj) > 0 {
				same := false
				for k := range ni {
					if nj[k] {
						same = true
					}
				}
				ok = ok && same
			}
			if ok {
				sock.union(i, j)
			}
		}
	}
	sockets := sock.groups(all)
	socketOf := make([]int, n)
	for s, members := range sockets {
		for _, g := range members {
			socketOf[g] = s
		}
	}
	// How sockets relate to NUMA affinity.
	numaKnown := m.hasNUMA
	for _, k := range m.numa {
		if k < 0 {
			numaKnown = false
		}
	}
	if n > 0 {
		if numaKnown {
			agree := true
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					if (m.numa[i] == m.numa[j]) != (socketOf[i] == socketOf[j]) {
						agree = false
						notes.addItem("numa-disagree", "NUMA Affinity disagrees with the SYS entries (%s): sockets follow the matrix", fmt.Sprintf("GPU%d on node %d and GPU%d on node %d", i, m.numa[i], j, m.numa[j]))
					}
				}
			}
			if agree {
				notes.add(fmt.Sprintf("%d socket(s) from the NUMA Affinity column", len(sockets)))
			}
		} else {
			notes.add(fmt.Sprintf("NUMA Affinity not given for every GPU: %d socket(s) derived from the SYS structure (GPUs joined by non-SYS entries share a socket; NVLink pairs share one unless that contradicts the matrix)", len(sockets)))
		}
	}

	// Within a socket: single-linkage clusters at PIX, PXB and PHB. A
	// pair's level in the tree is the first at which it is clustered.
	spec := &hostSpec{gpus: n}
	hier := make([]unionFind, lvPHB+1)
	for l := lvPIX; l <= lvPHB; l++ {
		hier[l] = newUnionFind(n)
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if k := lv(i, j); k >= lvPIX && k <= l {
					hier[l].union(i, j)
				}
			}
		}
	}
	treeLevel := func(i, j int) int {
		if socketOf[i] != socketOf[j] {
			return lvSYS
		}
		for l := lvPIX; l <= lvPHB; l++ {
			if hier[l].find(i) == hier[l].find(j) {
				return l
			}
		}
		return lvNODE
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			want := lv(i, j)
			if want == 0 {
				continue
			}
			if got := treeLevel(i, j); got != want {
				return nil, errf(m.line[i], "GPU%d–GPU%d is %v, but %s: no PCIe tree gives that",
					i, j, levelKind[want], forcedWitness(m, hier, got, i, j))
			}
		}
	}
	gpuLink := func(g int) *devSpec { return &devSpec{gpu: g, gen: gen, width: width} }
	switches, uppers := 0, 0
	for _, members := range sockets {
		var hbs [][]*devSpec
		for _, phb := range hier[lvPHB].groups(members) {
			var onHB []*devSpec
			for _, pxb := range hier[lvPXB].groups(phb) {
				pix := hier[lvPIX].groups(pxb)
				if len(pix) == 1 {
					if len(pix[0]) == 1 {
						onHB = append(onHB, gpuLink(pix[0][0]))
						continue
					}
					sw := &devSpec{gpu: -1, gen: gen, width: width}
					for _, g := range pix[0] {
						sw.children = append(sw.children, gpuLink(g))
					}
					switches++
					onHB = append(onHB, sw)
					continue
				}
				up := &devSpec{gpu: -1, gen: gen, width: width}
				uppers++
				for _, grp := range pix {
					sw := &devSpec{gpu: -1, gen: gen, width: width}
					for _, g := range grp {
						sw.children = append(sw.children, gpuLink(g))
					}
					switches++
					up.children = append(up.children, sw)
				}
				onHB = append(onHB, up)
			}
			hbs = append(hbs, onHB)
		}
		spec.sockets = append(spec.sockets, hbs)
	}

	// NVLink.
	ps0 := ps
	perLink := sim.Rate(ps0.Get("nvlink.link_bandwidth")) * sim.GBps
	uniform, nvPairs := 0, 0
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			c := m.cells[i][j]
			if c.Kind != PathNV {
				uniform = -1
				continue
			}
			nvPairs++
			if uniform == 0 {
				uniform = c.NVLinks
			} else if uniform != c.NVLinks {
				uniform = -1
			}
		}
	}
	if uniform > 0 {
		ports := make([]nvPort, n)
		for g := range ports {
			ports[g] = nvPort{gpu: g, count: uniform, perLink: perLink}
		}
		spec.nvsw = [][]nvPort{ports}
		if err := ps.Set("nvlink.count", float64(uniform), fmt.Sprintf("imported: NV%d in %s", uniform, file)); err != nil {
			return nil, fmt.Errorf("topology: %s: %v", file, err)
		}
		notes.add(fmt.Sprintf("every GPU pair is NV%d: GPUs joined by one NVSwitch, %d NVLinks each", uniform, uniform))
	} else if nvPairs > 0 {
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if c := m.cells[i][j]; c.Kind == PathNV {
					spec.direct = append(spec.direct, nvPair{a: i, b: j, count: c.NVLinks, perLink: perLink})
				}
			}
		}
		notes.add(fmt.Sprintf("NV# pairs joined by direct GPU–GPU NVLinks of that count (%d pairs)", nvPairs))
	}
	if nvPairs > 0 {
		notes.add(fmt.Sprintf("assumed %s GB/s per NVLink per direction (nvlink.link_bandwidth): the matrix gives no link speeds", gbString(ps.Get("nvlink.link_bandwidth"))))
		notes.add("the PCIe path of an NV# pair is hidden by the matrix: such GPUs are put as far apart as the other entries allow (own host bridge, same socket where possible)")
	}

	// Notes on the PCIe assumptions.
	notes.add(fmt.Sprintf("assumed PCIe Gen%d x%d for every GPU link: the matrix gives no link speeds", gen, width))
	if switches+uppers > 0 {
		notes.add(fmt.Sprintf("PIX groups behind one PCIe switch each (%d), PXB groups under an upper switch (%d); switch uplinks assumed Gen%d x%d", switches, uppers, gen, width))
	}
	notes.add("one host bridge per PHB group (GPUs that are PHB share a host bridge; NODE means different host bridges of one socket)")
	if len(sockets) > 1 {
		notes.add(fmt.Sprintf("sockets joined in a chain by the socket interconnect at smp.bandwidth %s GB/s: the matrix gives no speeds", gbString(ps.Get("smp.bandwidth"))))
	}
	notes.add(psNote)

	t, err := buildImported(topoName(file), ps, spec)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	t.Description = fmt.Sprintf("imported from %s (nvidia-smi topo -m): %d GPUs, %d socket(s)", file, n, len(sockets))
	t.Notes = notes.list()
	// The machine must give back the matrix.
	got, err := t.ClassMatrix()
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && got[i][j] != m.cells[i][j] {
				return nil, errf(m.line[i], "%s–%s is %v in the matrix but the machine built from it gives %v (check the parameters' latencies)",
					gpuName(i), gpuName(j), m.cells[i][j], got[i][j])
			}
		}
	}
	return t, nil
}

// chainWitness names two non-SYS entries linking i and j through a third
// GPU, when there is one, to explain a socket conflict.
func chainWitness(m *smiMatrix, sock unionFind, i, j int) string {
	for k := 0; k < m.n; k++ {
		a, b := classLevel(m.cells[i][k]), classLevel(m.cells[k][j])
		if k != i && k != j && a >= lvPIX && a <= lvNODE && b >= lvPIX && b <= lvNODE {
			return fmt.Sprintf("GPU%d–GPU%d is %v and GPU%d–GPU%d is %v", i, k, m.cells[i][k], k, j, m.cells[k][j])
		}
	}
	var path []string
	for k := 0; k < m.n; k++ {
		if sock.find(k) == sock.find(i) {
			path = append(path, "GPU"+strconv.Itoa(k))
		}
	}
	sort.Strings(path)
	return "joining " + strings.Join(path, ", ")
}

// forcedWitness explains why i and j end up at level got.
func forcedWitness(m *smiMatrix, hier []unionFind, got, i, j int) string {
	if got == lvSYS {
		return "they are on different sockets"
	}
	if got == lvNODE {
		return "no other entry puts them under one host bridge"
	}
	for k := 0; k < m.n; k++ {
		a, b := classLevel(m.cells[i][k]), classLevel(m.cells[k][j])
		if k != i && k != j && a >= lvPIX && a <= got && b >= lvPIX && b <= got {
			return fmt.Sprintf("GPU%d–GPU%d is %v and GPU%d–GPU%d is %v, which puts them %s", i, k, m.cells[i][k], k, j, m.cells[k][j], levelWhere(got))
		}
	}
	return "the other entries put them " + levelWhere(got)
}

func levelWhere(l int) string {
	switch l {
	case lvPIX:
		return "behind one PCIe switch (PIX)"
	case lvPXB:
		return "under one upper PCIe switch (PXB)"
	case lvPHB:
		return "on one host bridge (PHB)"
	}
	return "on one socket (NODE)"
}
