package ncclmodel_test

import (
	"fmt"
	"os"

	"github.com/arsim/arsim/algos/ncclmodel"
)

// An 8-GPU single-node PCIe Gen5 box with Blackwell (sm120) GPUs and no
// NVLink: arsim's graph approximation gives 2 ring channels at 24 GB/s, the
// PCI latency row applies and LL128 stays off.
func Example() {
	ch, bw := ncclmodel.GraphFor(48, 120, false)
	m, err := ncclmodel.Tune(ncclmodel.Config{
		NRanks: 8, SM: 120,
		RingChannels: ch, RingBwIntra: bw,
		TreeChannels: ch, TreeBwIntra: bw,
		LL128Enabled: ncclmodel.LL128DefaultEnabled(false, 120),
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("graph: %d channels x %.0f GB/s\n", ch, bw)
	if err := m.Format(os.Stdout); err != nil {
		panic(err)
	}
	for _, size := range []int64{1 << 10, 64 << 10, 1 << 20, 4 << 20, 256 << 20} {
		c := m.Choose(size)
		fmt.Printf("%9d B: %s/%s channels %d threads %d %.1f us\n",
			size, c.Algo, c.Proto, c.Channels, c.Threads, c.Us)
	}
	// Output:
	// graph: 2 channels x 24 GB/s
	//   Algorithm   |                            Tree                  |                            Ring                  |
	//   Protocol    |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |
	//  Max NThreads |            512 |            640 |            512 |            512 |            640 |            512 |
	//     AllReduce |    20.8/   5.8 |    40.6/   0.0 |    64.4/  22.1 |    20.6/  13.7 |    49.0/   0.0 |    88.2/  27.4 |
	// threadThresholds 8/8/64 | 64/8/64 | 512 | 512
	// 4 coll channels
	//      1024 B: ring/ll channels 1 threads 96 20.7 us
	//     65536 B: ring/ll channels 2 threads 512 25.4 us
	//   1048576 B: ring/ll channels 4 threads 512 97.1 us
	//   4194304 B: ring/simple channels 4 threads 544 241.1 us
	// 268435456 B: ring/simple channels 4 threads 544 9874.9 us
}
