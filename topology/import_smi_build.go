package topology

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/arsim/arsim/sim"
)

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

// buildSMI builds the machine the matrix describes: sockets, then the PCIe
// tree inside each, then NVLink; it checks that the machine gives back the
// matrix.
func buildSMI(m *smiMatrix, file string, opts ImportOptions, notes *noteList) (*Topology, error) {
	b := &smiBuild{m: m, file: file, notes: notes, gen: opts.PCIeGen, width: opts.PCIeWidth}
	if opts.GPU != nil && b.gen == 0 {
		b.gen, b.width = opts.GPU.PCIeGen, opts.GPU.PCIeWidth
	}
	if b.gen == 0 {
		b.gen = 5
	}
	if b.width == 0 {
		b.width = 16
	}
	if _, err := pcieRate(b.gen, b.width); err != nil {
		return nil, fmt.Errorf("topology: %s: import options: %w", file, err)
	}
	ps, psNote, err := importParams(opts)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	gpu, err := importGPU(ps, opts, 0, "", notes)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	if err := b.findSockets(); err != nil {
		return nil, err
	}
	b.noteNUMA()
	if err := b.findTree(); err != nil {
		return nil, err
	}
	spec := b.hostSpec()
	if err := b.nvlinks(spec, ps); err != nil {
		return nil, err
	}
	b.notePCIe(ps)
	notes.add("host CPU taken as AMD EPYC for NCCL's model (its 16 GB/s socket link figure): the matrix does not name the CPU")
	notes.add(psNote)
	if err := importOverrides(ps, opts, notes); err != nil {
		return nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	t, err := buildImported(topoName(file), ps, spec)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", file, err)
	}
	t.HostCPU = "amd"
	t.Description = fmt.Sprintf("imported from %s (nvidia-smi topo -m): %d GPUs%s, %d socket(s)", file, m.n, gpuSuffix(gpu), len(b.sockets))
	t.Notes = notes.list()
	if err := b.checkGivesMatrix(t); err != nil {
		return nil, err
	}
	return t, nil
}

// smiBuild is the state of buildSMI.
type smiBuild struct {
	m          *smiMatrix
	file       string
	notes      *noteList
	gen, width int // PCIe of every GPU link and switch uplink

	sock     unionFind // GPUs on one socket
	sockets  [][]int   // GPUs by socket, each ascending
	socketOf []int
	// hier[l] joins GPUs that meet at tree level l or below (lvPIX…lvPHB).
	hier             []unionFind
	switches, uppers int
}

func (b *smiBuild) errf(line int, format string, a ...any) error {
	return fmt.Errorf("topology: %s:%d: %s", b.file, line, fmt.Sprintf(format, a...))
}

func (b *smiBuild) lv(i, j int) int { return classLevel(b.m.cells[i][j]) }

// findSockets joins GPUs whose entries are known and not SYS into sockets,
// refuses a SYS entry inside one, then joins NVLink pairs (whose PCIe path
// the matrix hides) where nothing contradicts it.
func (b *smiBuild) findSockets() error {
	n := b.m.n
	b.sock = newUnionFind(n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if l := b.lv(i, j); l >= lvPIX && l <= lvNODE {
				b.sock.union(i, j)
			}
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if b.lv(i, j) == lvSYS && b.sock.find(i) == b.sock.find(j) {
				return b.errf(b.m.line[i], "GPU%d–GPU%d is SYS, but a chain of non-SYS entries (%s) puts them on one socket: no machine gives that",
					i, j, chainWitness(b.m, b.sock, i, j))
			}
		}
	}
	sg := b.newSocketGroups()
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			ri, rj := b.sock.find(i), b.sock.find(j)
			if b.lv(i, j) == 0 && ri != rj && sg.mayShare(ri, rj) {
				b.sock.union(i, j)
				into, from := ri, rj // union keeps the lower root
				if b.sock.find(i) == rj {
					into, from = rj, ri
				}
				sg.merge(into, from)
			}
		}
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	b.sockets = b.sock.groups(all)
	b.socketOf = make([]int, n)
	for s, members := range b.sockets {
		for _, g := range members {
			b.socketOf[g] = s
		}
	}
	return nil
}

// bitset is a set of small integers (GPUs, NUMA nodes by order of first
// appearance), at most maxImportGPUs of them.
type bitset [(maxImportGPUs + 63) / 64]uint64

func (s *bitset) add(i int) { s[i/64] |= 1 << (i % 64) }

func (s *bitset) or(o *bitset) {
	for k := range s {
		s[k] |= o[k]
	}
}

func (s *bitset) meets(o *bitset) bool {
	for k := range s {
		if s[k]&o[k] != 0 {
			return true
		}
	}
	return false
}

func (s *bitset) empty() bool { return *s == bitset{} }

// socketGroups holds, per socket found so far (by its union-find root),
// its GPUs, the GPUs it has a SYS entry with, and its known NUMA nodes:
// whether two may be one socket is then a few word operations, not a scan
// of the matrix, so joining NVLink pairs costs O(n²) word operations.
type socketGroups struct {
	members, sysWith, numa []bitset
}

func (b *smiBuild) newSocketGroups() *socketGroups {
	n := b.m.n
	g := &socketGroups{members: make([]bitset, n), sysWith: make([]bitset, n), numa: make([]bitset, n)}
	nodes := map[int]int{} // NUMA node → dense index
	for x := 0; x < n; x++ {
		r := b.sock.find(x)
		g.members[r].add(x)
		for y := 0; y < n; y++ {
			if b.lv(x, y) == lvSYS {
				g.sysWith[r].add(y)
			}
		}
		if k := b.m.numa[x]; k >= 0 {
			if _, ok := nodes[k]; !ok {
				nodes[k] = len(nodes)
			}
			g.numa[r].add(nodes[k])
		}
	}
	return g
}

// mayShare says whether the sockets of roots ri and rj may be one: no SYS
// entry between them, and a NUMA node in common where both know theirs.
func (g *socketGroups) mayShare(ri, rj int) bool {
	if g.sysWith[ri].meets(&g.members[rj]) {
		return false
	}
	return g.numa[ri].empty() || g.numa[rj].empty() || g.numa[ri].meets(&g.numa[rj])
}

// merge adds socket root `from` into socket root `into`.
func (g *socketGroups) merge(into, from int) {
	g.members[into].or(&g.members[from])
	g.sysWith[into].or(&g.sysWith[from])
	g.numa[into].or(&g.numa[from])
}

// noteNUMA says how the sockets relate to the NUMA Affinity column.
func (b *smiBuild) noteNUMA() {
	m := b.m
	if m.n == 0 {
		return
	}
	known := m.hasNUMA && !slices.ContainsFunc(m.numa, func(k int) bool { return k < 0 })
	if !known {
		b.notes.add(fmt.Sprintf("NUMA Affinity not given for every GPU: %d socket(s) derived from the SYS structure (GPUs joined by non-SYS entries share a socket; NVLink pairs share one unless that contradicts the matrix)", len(b.sockets)))
		return
	}
	agree := true
	for i := 0; i < m.n; i++ {
		for j := i + 1; j < m.n; j++ {
			if (m.numa[i] == m.numa[j]) != (b.socketOf[i] == b.socketOf[j]) {
				agree = false
				b.notes.addItem("numa-disagree", "NUMA Affinity disagrees with the SYS entries (%s): sockets follow the matrix", fmt.Sprintf("GPU%d on node %d and GPU%d on node %d", i, m.numa[i], j, m.numa[j]))
			}
		}
	}
	if agree {
		b.notes.add(fmt.Sprintf("%d socket(s) from the NUMA Affinity column", len(b.sockets)))
	}
}

// findTree clusters the GPUs of each socket at PIX, PXB and PHB (single
// linkage: a pair's level in the tree is the first at which it is
// clustered) and checks that every entry is the level the tree gives.
func (b *smiBuild) findTree() error {
	n := b.m.n
	b.hier = make([]unionFind, lvPHB+1)
	for l := lvPIX; l <= lvPHB; l++ {
		b.hier[l] = newUnionFind(n)
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if k := b.lv(i, j); k >= lvPIX && k <= l {
					b.hier[l].union(i, j)
				}
			}
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			want := b.lv(i, j)
			if i == j || want == 0 {
				continue
			}
			if got := b.treeLevel(i, j); got != want {
				return b.errf(b.m.line[i], "GPU%d–GPU%d is %v, but %s: no PCIe tree gives that",
					i, j, levelKind[want], forcedWitness(b.m, b.hier, got, i, j))
			}
		}
	}
	return nil
}

// hasNODE reports whether two GPUs meet only on their socket (NODE).
func (b *smiBuild) hasNODE() bool {
	for i := 0; i < b.m.n; i++ {
		for j := i + 1; j < b.m.n; j++ {
			if b.treeLevel(i, j) == lvNODE {
				return true
			}
		}
	}
	return false
}

// treeLevel is where GPUs i and j meet in the tree built so far.
func (b *smiBuild) treeLevel(i, j int) int {
	if b.socketOf[i] != b.socketOf[j] {
		return lvSYS
	}
	for l := lvPIX; l <= lvPHB; l++ {
		if b.hier[l].find(i) == b.hier[l].find(j) {
			return l
		}
	}
	return lvNODE
}

// hostSpec lays the tree out: per socket, a host bridge per PHB group; on
// it, a GPU alone, a switch per PIX group, or an upper switch over the PIX
// switches of a PXB group.
func (b *smiBuild) hostSpec() *hostSpec {
	spec := &hostSpec{gpus: b.m.n}
	gpuLink := func(g int) *devSpec { return &devSpec{gpu: g, gen: b.gen, width: b.width} }
	pixSwitch := func(grp []int) *devSpec {
		sw := &devSpec{gpu: -1, gen: b.gen, width: b.width}
		for _, g := range grp {
			sw.children = append(sw.children, gpuLink(g))
		}
		b.switches++
		return sw
	}
	for _, members := range b.sockets {
		var hbs [][]*devSpec
		for _, phb := range b.hier[lvPHB].groups(members) {
			var onHB []*devSpec
			for _, pxb := range b.hier[lvPXB].groups(phb) {
				pix := b.hier[lvPIX].groups(pxb)
				switch {
				case len(pix) == 1 && len(pix[0]) == 1:
					onHB = append(onHB, gpuLink(pix[0][0]))
				case len(pix) == 1:
					onHB = append(onHB, pixSwitch(pix[0]))
				default:
					up := &devSpec{gpu: -1, gen: b.gen, width: b.width}
					b.uppers++
					for _, grp := range pix {
						up.children = append(up.children, pixSwitch(grp))
					}
					onHB = append(onHB, up)
				}
			}
			hbs = append(hbs, onHB)
		}
		spec.sockets = append(spec.sockets, hbs)
	}
	return spec
}

// nvlinks adds the NV# entries: one NVSwitch when every pair has the same
// count, direct GPU–GPU links otherwise.
func (b *smiBuild) nvlinks(spec *hostSpec, ps *Params) error {
	m, n := b.m, b.m.n
	perLink := sim.Rate(ps.Get("nvlink.link_bandwidth")) * sim.GBps
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
		if err := ps.Set("nvlink.count", float64(uniform), fmt.Sprintf("imported: NV%d in %s", uniform, b.file)); err != nil {
			return fmt.Errorf("topology: %s: %w", b.file, err)
		}
		b.notes.add(fmt.Sprintf("every GPU pair is NV%d: GPUs joined by one NVSwitch, %d NVLinks each", uniform, uniform))
	} else if nvPairs > 0 {
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if c := m.cells[i][j]; c.Kind == PathNV {
					spec.direct = append(spec.direct, nvPair{a: i, b: j, count: c.NVLinks, perLink: perLink})
				}
			}
		}
		b.notes.add(fmt.Sprintf("NV# pairs joined by direct GPU–GPU NVLinks of that count (%d pairs)", nvPairs))
	}
	if nvPairs > 0 {
		b.notes.add(fmt.Sprintf("assumed %s GB/s per NVLink per direction (nvlink.link_bandwidth): the matrix gives no link speeds", gbString(ps.Get("nvlink.link_bandwidth"))))
		b.notes.add("the PCIe path of an NV# pair is hidden by the matrix: such GPUs are put as far apart as the other entries allow (own host bridge, same socket where possible)")
	}
	return nil
}

// notePCIe lists the PCIe and socket assumptions.
func (b *smiBuild) notePCIe(ps *Params) {
	b.notes.add(fmt.Sprintf("assumed PCIe Gen%d x%d for every GPU link: the matrix gives no link speeds", b.gen, b.width))
	if b.switches+b.uppers > 0 {
		b.notes.add(fmt.Sprintf("PIX groups behind one PCIe switch each (%d), PXB groups under an upper switch (%d); switch uplinks assumed Gen%d x%d", b.switches, b.uppers, b.gen, b.width))
	}
	b.notes.add("one host bridge per PHB group (GPUs that are PHB share a host bridge; NODE means different host bridges of one socket)")
	if b.switches+b.uppers > 0 && b.hasNODE() {
		b.notes.add(fmt.Sprintf("a NODE pair behind switches crosses its root complexes as a PHB pair crosses its one, plus cpu.fabric_latency (%s ns): as a published GPU ping-pong on one AMD socket has it (docs/VALIDATION.md, the WRX90 box); the switches' own latency (pcie.switch_latency %s ns) is the published cut-through figure", gbString(ps.Get("cpu.fabric_latency")), gbString(ps.Get("pcie.switch_latency"))))
	}
	if len(b.sockets) > 1 {
		b.notes.add(fmt.Sprintf("sockets joined in a chain by the socket interconnect at smp.bandwidth %s GB/s: the matrix gives no speeds", gbString(ps.Get("smp.bandwidth"))))
	}
}

// checkGivesMatrix checks that the machine built gives back the matrix.
func (b *smiBuild) checkGivesMatrix(t *Topology) error {
	got, err := t.ClassMatrix()
	if err != nil {
		return fmt.Errorf("topology: %s: %w", b.file, err)
	}
	for i := 0; i < b.m.n; i++ {
		for j := 0; j < b.m.n; j++ {
			if i != j && got[i][j] != b.m.cells[i][j] {
				return b.errf(b.m.line[i], "GPU%d–GPU%d is %v in the matrix but the machine built from it gives %v (check the parameters' latencies)",
					i, j, b.m.cells[i][j], got[i][j])
			}
		}
	}
	return nil
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
