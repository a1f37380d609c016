package msccl

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

const (
	ringFile = "testdata/ring_allreduce_8.xml"
	hierFile = "testdata/hierarchical_allreduce_8.xml"
)

func request(t *testing.T, bytes int64) algos.Request {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	return algos.Request{Top: top, Ranks: 8, Bytes: bytes, DType: algos.BF16, Launch: hw.Graph}
}

func steadyUs(t *testing.T, s *algos.Schedule, top *topology.Topology) float64 {
	m, err := hw.New(top)
	require.NoError(t, err)
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: 3})
	require.NoError(t, err)
	return res.SteadyUs()
}

// Both samples import, prove correct over back-to-back calls (their
// receive areas rotate two copies) and run, at one chunk per element and
// at sizes whose chunks take several slices of the protocol's step.
func TestSamplesCheckAndRun(t *testing.T) {
	for _, f := range []string{ringFile, hierFile} {
		a, err := algos.Lookup(Prefix + f)
		require.NoError(t, err)
		assert.Equal(t, "file:"+f, a.Name())
		for _, b := range []int64{16, 43008, 1 << 20} {
			r := request(t, b)
			s, err := a.Plan(r)
			require.NoError(t, err, "%s %d B", f, b)
			require.NoError(t, algos.Check(s), "%s %d B", f, b)
			t.Logf("%s %d B: %.2f µs", f, b, steadyUs(t, s, r.Top))
		}
	}
}

// The ring moves 2(n−1) messages in a chain, each a Simple step with a
// fence and a flag; the hierarchical schedule chains 2(g−1)+1 = 7 LL
// messages with their flags in the lines: at 42 KiB it is faster. At 8 MiB
// the ring is bound by bandwidth: each GPU sends 2(n−1)/n of the message
// over its link, so its bus bandwidth lands below the PCIe payload rate
// (about 52 GB/s) but within a factor of two of it.
func TestSampleTimings(t *testing.T) {
	r := request(t, 43008)
	ring, err := Load(ringFile)
	require.NoError(t, err)
	hier, err := Load(hierFile)
	require.NoError(t, err)
	rs, err := ring.Plan(r)
	require.NoError(t, err)
	hs, err := hier.Plan(r)
	require.NoError(t, err)
	ru, hu := steadyUs(t, rs, r.Top), steadyUs(t, hs, r.Top)
	t.Logf("42 KiB: ring %.2f µs, hierarchical %.2f µs", ru, hu)
	assert.Less(t, hu, ru)
	r = request(t, 8<<20)
	rs, err = ring.Plan(r)
	require.NoError(t, err)
	us := steadyUs(t, rs, r.Top)
	busbw := float64(8<<20) / (us * 1e-6) / 1e9 * 2 * 7 / 8
	t.Logf("8 MiB ring: %.1f µs, bus bandwidth %.1f GB/s", us, busbw)
	assert.Less(t, busbw, 52.0)
	assert.Greater(t, busbw, 26.0)
}

func TestSizeMustBeWholeChunks(t *testing.T) {
	a, err := Load(ringFile)
	require.NoError(t, err)
	_, err = a.Plan(request(t, 43010))
	assert.ErrorContains(t, err, "43010 B is not 8 whole chunks of bf16 elements: use a multiple of 16 B")
	assert.Equal(t, int64(16), a.(algos.SizeUnit).Unit(2))
	_, err = algos.Plan(Prefix+ringFile, algos.Request{Top: request(t, 16).Top, Ranks: 4, Bytes: 64, DType: algos.BF16})
	assert.ErrorContains(t, err, "is written for 8 GPUs, not 4")
}

// two is a valid two-GPU ring; the cases below break it.
const two = `<algo name="t" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
`

func TestTwoGPURingChecks(t *testing.T) {
	a, err := Parse(strings.NewReader(two), "two.xml")
	require.NoError(t, err)
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	s, err := a.Schedule("file:two.xml", algos.Request{Top: top, Ranks: 2, Bytes: 4096, DType: algos.BF16})
	require.NoError(t, err)
	require.NoError(t, algos.Check(s))
}

// Malformed files are refused with the line and what is wrong.
func TestRefusesMalformedFiles(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"not xml", `<algo name="t"`, `<algo name="t`, `two.xml:1: not well-formed XML`},
		{"wrong root", `<algo `, `<alg `, `two.xml:1: the document must start with <algo>, found <alg>`},
		{"not allreduce", `coll="allreduce"`, `coll="allgather"`, `two.xml:1: <algo coll="allgather">: arsim imports allreduce schedules only`},
		{"bad proto", `proto="Simple"`, `proto="Fast"`, `<algo proto="Fast">: want Simple, LL or LL128`},
		{"bad int", `i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1"`, `i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="zero" send="1"`, `two.xml:3: <tb id="zero">: want an integer`},
		{"unknown step", `type="rrcs" srcbuf="i" srcoff="1"`, `type="put" srcbuf="i" srcoff="1"`, `two.xml:5: <step type="put">: not an MSCCL allreduce step arsim knows`},
		{"bad buffer", `type="r" srcbuf="i" srcoff="0" dstbuf="i"`, `type="r" srcbuf="i" srcoff="0" dstbuf="x"`, `two.xml:6: <step dstbuf="x">: want i (input), o (output) or s (scratch)`},
		{"chunk out of range", `type="s" srcbuf="i" srcoff="0"`, `type="s" srcbuf="i" srcoff="2"`, `two.xml:4: <step srcbuf="i" srcoff=2 cnt=1>: outside the 2 chunks`},
		{"steps out of order", `<step s="2" type="r" srcbuf="i" srcoff="0"`, `<step s="7" type="r" srcbuf="i" srcoff="0"`, `two.xml:6: <step s=7> is step 2 of thread block 0 on GPU 0`},
		{"self peer", `<tb id="0" send="1" recv="1"`, `<tb id="0" send="0" recv="1"`, `two.xml:3: <tb send=0> on GPU 0: want another GPU's id`},
		{"gpu count", `ngpus="2"`, `ngpus="3"`, `two.xml:1: <algo ngpus=3> but the file has 2 <gpu> elements`},
		{"duplicate gpu", `<gpu id="1"`, `<gpu id="0"`, `two.xml:9: <gpu id=0> appears twice (first on line 2)`},
		{"unmatched send", `<step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1"`, `<step s="2" type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1"`, `two.xml:12: send 2 of GPU 1 to GPU 0 on channel 0 has no matching receive`},
		{"dep without hasdep", `<step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1"`, `<step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="0" deps="1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1"`, `two.xml:9: step 0 of thread block 1 on GPU 0 waits for step 1 of thread block 0 (line 5), which has hasdep=0`},
		{"text", `<gpu id="0"`, `hello <gpu id="0"`, `two.xml:2: unexpected text "hello"`},
		{"truncated", "</algo>\n", "", `two.xml:16: not well-formed XML: unexpected EOF`},
		{"newer format", `<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="1"`, `<op step="0" type="s" buf="i" off="0" cnt="1"/>
      <step s="1" type="rrcs" srcbuf="i" srcoff="1"`, `two.xml:4: <op> is msccl-tools' newer format`},
	}
	for _, c := range cases {
		require.Contains(t, two, c.old, c.name)
		_, err := Parse(strings.NewReader(strings.Replace(two, c.old, c.new, 1)), "two.xml")
		require.Error(t, err, c.name)
		assert.True(t, strings.HasPrefix(err.Error(), "msccl: "), c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	_, err := Parse(strings.NewReader(""), "empty.xml")
	assert.ErrorContains(t, err, "msccl: empty.xml: empty file: want an <algo> element")
}

// Two thread blocks that wait for each other's second step: the importer
// finds the cycle (MSCCL would hang).
func TestRefusesCyclicDependencies(t *testing.T) {
	cyc := strings.Replace(two, `<step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1"`, `<step s="2" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="1" deps="1" hasdep="1"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="0" deps="2" hasdep="1"/>
    </tb>
  </gpu>
  <gpu id="1"`, 1)
	a, err := Parse(strings.NewReader(cyc), "cyc.xml")
	require.NoError(t, err)
	_, err = a.Schedule("file:cyc.xml", request(t, 64))
	if err == nil { // the GPU count differs: plan for two
		t.Fatal("want an error")
	}
	top := request(t, 64).Top
	_, err = a.Schedule("file:cyc.xml", algos.Request{Top: top, Ranks: 2, Bytes: 64, DType: algos.BF16})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "msccl: cyc.xml: the thread blocks of GPU 0 wait for each other in a cycle (deadlock)")
}

// FuzzParse: no input makes the parser, or the schedule built from what
// it accepts, panic; what it accepts is planned for its GPU count.
func FuzzParse(f *testing.F) {
	f.Add([]byte(two))
	f.Add([]byte(two[:len(two)/2]))
	for _, p := range []string{ringFile, hierFile} {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`<algo coll="allreduce" proto="LL" ngpus="1" nchunksperloop="1"><gpu id="0"><tb id="0"><step s="0" type="cpy" cnt="1" srcoff="0" dstoff="0" dstbuf="o"/></tb></gpu></algo>`))
	top, err := topology.SwitchFabric(64, 4)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse(strings.NewReader(string(data)), "fuzz.xml")
		if err != nil {
			var e *Error
			assert.ErrorAs(t, err, &e)
			return
		}
		if a.NGPUs > top.NumGPUs() {
			return
		}
		s, err := a.Schedule("file:fuzz.xml", algos.Request{Top: top, Ranks: a.NGPUs, Bytes: a.Unit(2), DType: algos.BF16})
		if err != nil {
			return
		}
		_ = algos.Check(s)
	})
}
