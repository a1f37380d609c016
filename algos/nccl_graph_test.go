package algos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos/ncclmodel"
	"github.com/arsim/arsim/topology"
)

const turinGraphXML = `<graphs version="1">
  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="24" speedinter="24" latencyinter="0" typeintra="PHB" typeinter="PIX" samechannels="1">
    <channel><gpu dev="0"/><gpu dev="1"/><gpu dev="2"/><gpu dev="3"/><gpu dev="4"/><gpu dev="5"/><gpu dev="6"/><gpu dev="7"/></channel>
    <channel><gpu dev="0"/><gpu dev="1"/><gpu dev="2"/><gpu dev="3"/><gpu dev="4"/><gpu dev="5"/><gpu dev="6"/><gpu dev="7"/></channel>
  </graph>
  <graph id="1" pattern="1" crossnic="0" nchannels="1" speedintra="12.5" speedinter="12.5" typeintra="PHB" typeinter="PIX">
    <channel><gpu dev="0"/><gpu dev="1"/><gpu dev="2"/><gpu dev="3"/><gpu dev="4"/><gpu dev="5"/><gpu dev="6"/><gpu dev="7"/></channel>
  </graph>
</graphs>`

func TestParseNCCLGraphs(t *testing.T) {
	gs, err := ParseNCCLGraphs([]byte(turinGraphXML), "turin.xml")
	require.NoError(t, err)
	require.Len(t, gs, 2)
	assert.Equal(t, NCCLGraph{ID: 0, Pattern: 4, Channels: 2, SpeedIntra: 24, SpeedInter: 24, TypeIntra: "PHB", TypeInter: "PIX", GPUs: 8}, gs[0])
	assert.Equal(t, NCCLGraph{ID: 1, Pattern: 1, Channels: 1, SpeedIntra: 12.5, SpeedInter: 12.5, TypeIntra: "PHB", TypeInter: "PIX", GPUs: 8}, gs[1])

	// A graph without channels takes its nchannels attribute.
	gs, err = ParseNCCLGraphs([]byte(`<graphs><graph id="0" pattern="4" nchannels="3" speedintra="20" speedinter="20" typeintra="nvl" typeinter="PIX"/></graphs>`), "x")
	require.NoError(t, err)
	assert.Equal(t, 3, gs[0].Channels)
	assert.Equal(t, "NVL", gs[0].TypeIntra)
	assert.Zero(t, gs[0].GPUs)
}

func TestParseNCCLGraphsSaysWhatIsWrong(t *testing.T) {
	head := `<graphs><graph id="0" pattern="4" nchannels="1" speedintra="24" speedinter="24" typeintra="PHB" typeinter="PIX">`
	for _, c := range []struct{ name, xml, want string }{
		{"not xml", "hello", "no XML element"},
		{"empty", "", "no XML element"},
		{"syntax", "<graphs>\n<graph id=\"0\"\n</graphs>", "line 3"},
		{"no graph", "<graphs></graphs>", "no <graph> element"},
		{"other root", "<graph id=\"0\"/>", "want a <graphs> element"},
		{"topology file", `<system version="1"><cpu numaid="0"/></system>`, "NCCL's topology file"},
		{"no id", `<graphs><graph pattern="4"/></graphs>`, "no id attribute"},
		{"bad channels", `<graphs><graph id="0" pattern="4" nchannels="x" speedintra="1" speedinter="1" typeintra="PHB" typeinter="PIX"/></graphs>`, `nchannels="x": want an integer 1..32`},
		{"too many channels", `<graphs><graph id="0" pattern="4" nchannels="33" speedintra="1" speedinter="1" typeintra="PHB" typeinter="PIX"/></graphs>`, "want an integer 1..32"},
		{"bad speed", `<graphs><graph id="0" pattern="4" nchannels="1" speedintra="-3" speedinter="1" typeintra="PHB" typeinter="PIX"/></graphs>`, `speedintra="-3"`},
		{"nan speed", `<graphs><graph id="0" pattern="4" nchannels="1" speedintra="NaN" speedinter="1" typeintra="PHB" typeinter="PIX"/></graphs>`, `speedintra="NaN"`},
		{"bad type", `<graphs><graph id="0" pattern="4" nchannels="1" speedintra="1" speedinter="1" typeintra="PHQ" typeinter="PIX"/></graphs>`, `typeintra="PHQ" is not one of NCCL's path types`},
		{"channel count", head + `<channel><gpu dev="0"/><gpu dev="1"/></channel><channel><gpu dev="0"/><gpu dev="1"/></channel></graph></graphs>`, "nchannels=1 but 2 <channel> elements"},
		{"gpu twice", head + `<channel><gpu dev="0"/><gpu dev="0"/></channel></graph></graphs>`, "lists GPU dev 0 twice"},
		{"no gpu", head + `<channel></channel></graph></graphs>`, "lists no <gpu>"},
		{"gpu without dev", head + `<channel><gpu/></channel></graph></graphs>`, "a <gpu> without dev"},
		{"id twice", `<graphs><graph id="0" pattern="4" nchannels="1" speedintra="1" speedinter="1" typeintra="PHB" typeinter="PIX"/><graph id="0" pattern="4" nchannels="1" speedintra="1" speedinter="1" typeintra="PHB" typeinter="PIX"/></graphs>`, "a second graph with id 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNCCLGraphs([]byte(c.xml), "g.xml")
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "g.xml")
		})
	}
	_, err := ParseNCCLGraphs([]byte(`<graphs><graph id="0" pattern="4" speedintra="1" speedinter="1" typeintra="PHB" typeinter="PIX"><channel><gpu dev="0"/><gpu dev="1"/></channel><channel><gpu dev="0"/></channel></graph></graphs>`), "g.xml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "channel 2 lists 1 GPUs, channel 1 2")
}

func FuzzParseNCCLGraphs(f *testing.F) {
	f.Add([]byte(turinGraphXML))
	f.Add([]byte(`<graphs><graph id="0" pattern="4" nchannels="3" speedintra="20" speedinter="20" typeintra="nvl" typeinter="PIX"/></graphs>`))
	f.Add([]byte("<graphs>\n<graph id=\"0\"\n</graphs>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, err := ParseNCCLGraphs(data, "fuzz.xml")
		if err != nil {
			return
		}
		require.NotEmpty(t, gs)
		for _, g := range gs {
			assert.True(t, g.Channels >= 1 && g.Channels <= maxGraphChannels, "channels %d", g.Channels)
			assert.Greater(t, g.SpeedIntra, 0.0)
			assert.Contains(t, ncclPathTypes, g.TypeIntra)
		}
	})
}

func writeGraphFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.xml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestNCCLGraphFileSetsTheGraphOptions(t *testing.T) {
	path := writeGraphFile(t, turinGraphXML)
	out, err := TranslateNCCLEnv(map[string]string{"NCCL_GRAPH_FILE": path, "NCCL_P2P_LEVEL": "SYS"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"p2p_level": "sys", "graph_channels": "2", "graph_speed": "24000", "graph_type": "phb",
		"graph_tree_channels": "1", "graph_tree_speed": "12500", "graph_gpus": "8"}, out)

	// A short option that disagrees with the file is an error naming both.
	_, err = TranslateNCCLEnv(map[string]string{"NCCL_GRAPH_FILE": path, "graph_channels": "4"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NCCL_GRAPH_FILE")
	assert.Contains(t, err.Error(), "graph_channels")

	_, err = TranslateNCCLEnv(map[string]string{"NCCL_GRAPH_FILE": filepath.Join(t.TempDir(), "missing.xml")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.xml")
	_, err = TranslateNCCLEnv(map[string]string{"NCCL_GRAPH_FILE": ""})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NCCL_GRAPH_FILE is empty")
}

// On two AMD sockets NCCL's search finds no speed for eight GPUs and falls
// back to one 0.1 GB/s channel, which makes Simple its choice from a few
// KiB; given a graph of 2 channels × 24 GB/s, typeIntra PHB (the graph file
// users of such hosts pass), its tuning picks LL and runs 4 channels. The
// time is the model's; the choice is NCCL's rule on the graph.
func TestNCCLGraphGivenReplacesTheFallbackSearch(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	req := Request{Top: top, Ranks: 8, Bytes: 32 << 10, Opts: map[string]string{"p2p_level": "sys"}}
	d, err := ncclDecide(req)
	require.NoError(t, err)
	assert.True(t, d.fallback)
	assert.Equal(t, ncclmodel.Simple, d.choice.Proto)

	ringOnly := turinGraphXML[:strings.Index(turinGraphXML, `  <graph id="1"`)] + "</graphs>"
	opts, err := TranslateNCCLEnv(map[string]string{"NCCL_GRAPH_FILE": writeGraphFile(t, ringOnly), "NCCL_P2P_LEVEL": "SYS"})
	require.NoError(t, err)
	req.Opts = opts
	d, err = ncclDecide(req)
	require.NoError(t, err)
	assert.False(t, d.fallback)
	assert.Equal(t, ncclmodel.LL, d.choice.Proto)
	assert.Contains(t, strings.Join(d.notes, "\n"), "ring graph given")
	assert.Contains(t, strings.Join(d.notes, "\n"), "runtime channels 4")

	// A tree graph of one channel: NCCL runs min(ring, tree) channels
	// (init.cc), 2 at run time.
	opts, err = TranslateNCCLEnv(map[string]string{"NCCL_GRAPH_FILE": writeGraphFile(t, turinGraphXML), "NCCL_P2P_LEVEL": "SYS"})
	require.NoError(t, err)
	req.Opts = opts
	d3, err := ncclDecide(req)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(d3.notes, "\n"), "tree graph 1 channels × 12.5 GB/s; runtime channels 2")

	// The same graph as options, without a file.
	req.Opts = map[string]string{"p2p_level": "sys", "graph_channels": "2", "graph_speed": "24000", "graph_type": "phb"}
	d2, err := ncclDecide(req)
	require.NoError(t, err)
	assert.Equal(t, d.choice.Proto, d2.choice.Proto)
	assert.Equal(t, d.choice.Channels, d2.choice.Channels)
}

func TestNCCLGraphOptionsSayWhatIsMissing(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"graph_channels": "2"}, "graph_channels, graph_speed and graph_type together"},
		{map[string]string{"graph_channels": "2", "graph_speed": "24000", "graph_type": "phb", "graph_tree_channels": "1"}, "graph_tree_channels and graph_tree_speed together"},
		{map[string]string{"graph_channels": "2", "graph_speed": "24000", "graph_type": "phb", "graph_gpus": "4"}, "list 4 GPUs, the run has 8 ranks"},
	} {
		_, err := ncclDecide(Request{Top: top, Ranks: 8, Bytes: 4096, Opts: c.opts})
		require.Error(t, err, "%v", c.opts)
		assert.Contains(t, err.Error(), c.want)
	}
}
