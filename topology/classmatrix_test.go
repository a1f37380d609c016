package topology

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// ClassMatrix, one search per GPU, gives exactly what PathClass gives pair
// by pair (a search of its own each): on every preset, every imported test
// machine and generated fabrics.
func TestClassMatrixIsPathClassPairByPair(t *testing.T) {
	var tops []*Topology
	for _, name := range Presets() {
		top, err := Load(name)
		require.NoError(t, err)
		tops = append(tops, top)
	}
	files, err := filepath.Glob("testdata/*")
	require.NoError(t, err)
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.IsDir() || filepath.Base(f)[:4] == "bad_" {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		top, _, err := Import(bytes.NewReader(data), filepath.Base(f), ImportOptions{})
		require.NoError(t, err, f)
		tops = append(tops, top)
	}
	for _, gen := range []func() (*Topology, error){
		func() (*Topology, error) { return SwitchFabric(24, 4) },
		func() (*Topology, error) { return Ring(12) },
		func() (*Topology, error) { return ImportSMI(bytes.NewReader(bigSMI(32, true)), "big", ImportOptions{}) },
		func() (*Topology, error) { return ImportSMI(bytes.NewReader(allNV(16, true)), "nv", ImportOptions{}) },
	} {
		top, err := gen()
		require.NoError(t, err)
		tops = append(tops, top)
	}
	for _, top := range tops {
		m, err := top.ClassMatrix()
		require.NoError(t, err, top.Name)
		for i, a := range top.GPUs() {
			for j, b := range top.GPUs() {
				if i == j {
					continue
				}
				c, err := top.PathClass(a, b)
				require.NoError(t, err)
				require.Equal(t, c, m[i][j], "%s: GPU%d–GPU%d", top.Name, i, j)
			}
		}
	}
}

// slowMayShareSocket is the obvious form of socketGroups.mayShare, a scan
// of the matrix per question, kept as the test's oracle.
func slowMayShareSocket(b *smiBuild, i, j int) bool {
	ri, rj := b.sock.find(i), b.sock.find(j)
	var gi, gj []int
	for g := 0; g < b.m.n; g++ {
		switch b.sock.find(g) {
		case ri:
			gi = append(gi, g)
		case rj:
			gj = append(gj, g)
		}
	}
	for _, x := range gi {
		for _, y := range gj {
			if b.lv(x, y) == lvSYS {
				return false
			}
		}
	}
	numa := func(members []int) map[int]bool {
		s := map[int]bool{}
		for _, g := range members {
			if b.m.numa[g] >= 0 {
				s[b.m.numa[g]] = true
			}
		}
		return s
	}
	ni, nj := numa(gi), numa(gj)
	if len(ni) == 0 || len(nj) == 0 {
		return true
	}
	for k := range ni {
		if nj[k] {
			return true
		}
	}
	return false
}

// The sockets found with word operations are those the scan finds, on
// matrices that mix NVLink pairs, SYS and NUMA nodes (the fuzz corpus and
// the test files).
func TestSocketGroupsAnswerAsTheScan(t *testing.T) {
	var inputs [][]byte
	files, _ := filepath.Glob("testdata/*topo_m.txt")
	more, _ := filepath.Glob("testdata/fuzz/FuzzImportSMI/*")
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if rest, ok := bytes.CutPrefix(data, []byte("go test fuzz v1\n[]byte(")); ok { // a corpus entry
			q, err := strconv.Unquote(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(")"))))
			require.NoError(t, err, f)
			data = []byte(q)
		}
		inputs = append(inputs, data)
	}
	inputs = append(inputs, bigSMI(32, true), allNV(8, true), allNV(8, false))
	seed := uint64(14)
	rng := rand.New(rand.NewPCG(seed, 1))
	for range 300 {
		inputs = append(inputs, randomSMI(rng))
	}
	compared := 0
	defer func() { t.Logf("seed %d: %d matrices, %d compared", seed, len(inputs), compared) }()
	for _, in := range inputs {
		m, notes, err := parseSMI(bytes.NewReader(in), "t")
		if err != nil {
			continue
		}
		fast := &smiBuild{m: m, file: "t", notes: notes}
		slow := &smiBuild{m: m, file: "t", notes: notes}
		errFast := fast.findSockets()
		// The scan, in findSockets' order.
		n := m.n
		slow.sock = newUnionFind(n)
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if l := slow.lv(i, j); l >= lvPIX && l <= lvNODE {
					slow.sock.union(i, j)
				}
			}
		}
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if slow.lv(i, j) == 0 && slow.sock.find(i) != slow.sock.find(j) && slowMayShareSocket(slow, i, j) {
					slow.sock.union(i, j)
				}
			}
		}
		if errFast != nil {
			continue // a SYS entry inside a socket: found before any NVLink pair is joined
		}
		compared++
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				require.Equal(t, slow.sock.find(i) == slow.sock.find(j), fast.sock.find(i) == fast.sock.find(j), "GPU%d, GPU%d", i, j)
			}
		}
	}
}

// randomSMI is the matrix of a random machine of 2–24 GPUs: each on a
// socket, host bridge, upper switch and switch drawn from a few, some
// pairs NVLinked, NUMA Affinity per socket, wrong or missing at times.
func randomSMI(rng *rand.Rand) []byte {
	n := 2 + rng.IntN(23)
	type place struct{ sock, hb, up, sw int }
	at := make([]place, n)
	for i := range at {
		at[i] = place{rng.IntN(2), rng.IntN(3), rng.IntN(2), rng.IntN(2)}
	}
	nv := map[[2]int]bool{}
	for range rng.IntN(n + 1) {
		a, b := rng.IntN(n), rng.IntN(n)
		nv[[2]int{min(a, b), max(a, b)}] = a != b
	}
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tGPU%d", i)
	}
	b.WriteString("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	numaMode := rng.IntN(3) // 0 per socket, 1 N/A, 2 random
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "GPU%d", i)
		for j := 0; j < n; j++ {
			p, q := at[i], at[j]
			c := "SYS"
			switch {
			case i == j:
				c = " X "
			case nv[[2]int{min(i, j), max(i, j)}]:
				c = "NV4"
			case p.sock != q.sock:
			case p.hb != q.hb:
				c = "NODE"
			case p.up != q.up:
				c = "PHB"
			case p.sw != q.sw:
				c = "PXB"
			default:
				c = "PIX"
			}
			b.WriteString("\t" + c)
		}
		numa := fmt.Sprint(at[i].sock)
		switch numaMode {
		case 1:
			numa = "N/A"
		case 2:
			numa = fmt.Sprint(rng.IntN(2))
		}
		fmt.Fprintf(&b, "\t0-63\t%s\t\tN/A\n", numa)
	}
	return b.Bytes()
}
