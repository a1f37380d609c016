package topology

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// bigSMI writes the `nvidia-smi topo -m` matrix of n GPUs (n a multiple
// of 16) on two sockets, each with host bridges of two PCIe switches of
// four GPUs (PIX within a switch, PXB between the switches of a bridge,
// NODE between bridges, SYS across sockets); nv makes GPUs 2k and 2k+1
// NVLink pairs (NV4) instead.
func bigSMI(n int, nv bool) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tGPU%d", i)
	}
	b.WriteString("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	half := n / 2
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "GPU%d", i)
		for j := 0; j < n; j++ {
			var c string
			switch {
			case i == j:
				c = " X "
			case nv && i/2 == j/2:
				c = "NV4"
			case i/half != j/half:
				c = "SYS"
			case i/4 == j/4:
				c = "PIX"
			case i/8 == j/8:
				c = "PXB"
			default:
				c = "NODE"
			}
			b.WriteString("\t" + c)
		}
		fmt.Fprintf(&b, "\t0-63\t%d\t\tN/A\n", i/half)
	}
	return b.Bytes()
}

// The importer is near-linear in the matrix: 256 GPUs (65 536 entries)
// import well under half a second (about 25 ms on the 2-core CI machine).
func TestImportSMIOf256GPUsIsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	for _, nv := range []bool{false, true} {
		data := bigSMI(256, nv)
		start := time.Now()
		top, err := ImportSMI(bytes.NewReader(data), "big_topo_m.txt", ImportOptions{})
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if top.NumGPUs() != 256 {
			t.Fatalf("%d GPUs", top.NumGPUs())
		}
		t.Logf("256 GPUs (NVLink pairs %v): %v", nv, took)
		if took > 500*time.Millisecond {
			t.Errorf("importing 256 GPUs took %v, want well under 0.5 s", took)
		}
	}
}

func BenchmarkImportSMI(b *testing.B) {
	for _, n := range []int{32, 64, 128, 256} {
		data := bigSMI(n, true)
		b.Run(fmt.Sprintf("gpus=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := ImportSMI(bytes.NewReader(data), "big_topo_m.txt", ImportOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// allNV is the matrix of n GPUs all joined by NVLink (an NVSwitch
// machine), with NUMA Affinity per half when numa.
func allNV(n int, numa bool) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tGPU%d", i)
	}
	b.WriteString("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "GPU%d", i)
		for j := 0; j < n; j++ {
			if i == j {
				b.WriteString("\t X ")
			} else {
				b.WriteString("\tNV18")
			}
		}
		node := "N/A"
		if numa {
			node = fmt.Sprint(i * 2 / n)
		}
		fmt.Fprintf(&b, "\t0-63\t%s\t\tN/A\n", node)
	}
	return b.Bytes()
}
