package algos

import (
	"bufio"
	"compress/gzip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ncclCallLine is NCCL's INFO line for one call (NCCL_DEBUG_SUBSYS=COLL or
// TUNING): its size, algorithm, protocol and the channels it ran on.
var ncclCallLine = regexp.MustCompile(`AllReduce: (\d+) Bytes -> Algo (RING|TREE) proto (LL|LL128|SIMPLE) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}`)

// loggedChannels reads the channels NCCL logged for each call of a
// (gzipped) rank-0 log: "bytes algo proto" → [lo, hi].
func loggedChannels(t *testing.T, path string) map[string][2]int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	z, err := gzip.NewReader(f)
	require.NoError(t, err)
	out := map[string][2]int{}
	sc := bufio.NewScanner(z)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := ncclCallLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		lo, _ := strconv.Atoi(m[4])
		hi, _ := strconv.Atoi(m[5])
		key := m[1] + " " + strings.ToLower(m[2]) + " " + strings.ToLower(m[3])
		if prev, ok := out[key]; ok {
			require.Equal(t, prev, [2]int{lo, hi}, "%s: %s logged on two channel ranges", path, key)
		}
		out[key] = [2]int{lo, hi}
	}
	require.NoError(t, sc.Err())
	return out
}

// NCCL 2.28.9 logged, for every allreduce of the two-H200 captures, the
// channels it ran on (testdata/h200x2-arsim/system/nccl*, rank 0). arsim's
// nccl, told the release, the algorithm and the protocol, puts every one of
// them on the same channels: the threshold rule and then the 2.22+
// planner's cells (ncclmodel.Release.ChannelParts). The threshold rule
// alone put 43,008 B of tree/LL on 10 channels where NCCL ran 7, of
// ring/LL128 on 8 where it ran 6.
func TestNCCLChannelsAsNCCLLoggedThem(t *testing.T) {
	dir := filepath.Join("..", "testdata", "h200x2-arsim", "system")
	logs := map[string]map[string]string{
		"nccl/nccl_p2p_rank0.log.gz": nil,
		"nccl/nccl_shm_rank0.log.gz": {"p2p_level": "loc"},
	}
	for _, tr := range []string{"p2p", "shm"} {
		for _, n := range []string{"1", "2", "4", "8"} {
			o := map[string]string{"max_channels": n}
			if tr == "shm" {
				o["p2p_level"] = "loc"
			}
			logs["nccl_channels_logs/nccl_"+tr+"_ch"+n+"_rank0.log.gz"] = o
		}
	}
	checked := 0
	for name, opts := range logs {
		for key, want := range loggedChannels(t, filepath.Join(dir, name)) {
			f := strings.Fields(key)
			bytes, err := strconv.ParseInt(f[0], 10, 64)
			require.NoError(t, err)
			o := map[string]string{"nccl_version": "2.28", "algo": f[1], "proto": f[2]}
			for k, v := range opts {
				o[k] = v
			}
			d, err := ncclDecide(req(t, "h200x2", 2, bytes, o))
			require.NoError(t, err, "%s %s", name, key)
			got := [2]int{d.spec.first, d.spec.first + d.spec.channels - 1}
			assert.Equal(t, want, got, "%s: %s B", name, key)
			checked++
		}
	}
	t.Logf("%d distinct calls", checked)
	assert.Greater(t, checked, 300, "the logs hold this many distinct calls")
}
