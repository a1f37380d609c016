package algos

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// NCCL can be given its graphs instead of searching for them: with
// NCCL_GRAPH_FILE naming an XML file of <graph> elements (the format
// NCCL_GRAPH_DUMP_FILE writes), ncclTopoCompute loads the graph whose id
// is the one it is computing (0 the ring, 1 the tree, src/graph/search.cc
// ncclTopoGetGraphFromXmlSub) and skips its search and the search's
// channel duplication for it; the runtime still doubles the ring's
// channels (connect.cc). Such a file is how users of AMD hosts work around
// the search's fallback graph (NCCL's single AMD socket-link figure, 16
// GB/s before NCCL 2.29, leaves no speed that fits eight GPUs on two
// sockets, and NCCL then runs one 0.1 GB/s channel and Simple from a few
// KiB). The nccl algorithm takes a graph as the options graph_channels,
// graph_speed and graph_type (and graph_tree_channels, graph_tree_speed),
// which TranslateNCCLEnv fills from NCCL_GRAPH_FILE.

// NCCLGraph is one <graph> of an NCCL graph file.
type NCCLGraph struct {
	ID, Pattern int
	// Channels is the graph's channel count: its <channel> elements, or
	// its nchannels attribute where it lists none.
	Channels int
	// SpeedIntra and SpeedInter are the graph's per-channel bandwidths,
	// GB/s (speedintra, speedinter).
	SpeedIntra, SpeedInter float64
	// TypeIntra and TypeInter are NCCL's path types, upper case (NVL, PIX,
	// PXB, PHB, SYS, …).
	TypeIntra, TypeInter string
	// GPUs is how many GPUs each channel lists (0 where the graph lists no
	// channels).
	GPUs int
}

// ncclPathTypes are the path type names NCCL's graph files use
// (kvDictLinkType, src/graph/topo.cc).
var ncclPathTypes = []string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS", "NET", "DIS"}

type xmlGraphs struct {
	XMLName xml.Name   `xml:"graphs"`
	Graphs  []xmlGraph `xml:"graph"`
}

type xmlGraph struct {
	ID         string       `xml:"id,attr"`
	Pattern    string       `xml:"pattern,attr"`
	NChannels  string       `xml:"nchannels,attr"`
	SpeedIntra string       `xml:"speedintra,attr"`
	SpeedInter string       `xml:"speedinter,attr"`
	TypeIntra  string       `xml:"typeintra,attr"`
	TypeInter  string       `xml:"typeinter,attr"`
	Channels   []xmlChannel `xml:"channel"`
}

type xmlChannel struct {
	GPUs []xmlDev `xml:"gpu"`
	Nets []xmlDev `xml:"net"`
}

type xmlDev struct {
	Dev string `xml:"dev,attr"`
}

// maxGraphFileBytes bounds what ReadNCCLGraphFile reads: NCCL's graph files
// are a few KB (a channel element per channel, a line per GPU).
const maxGraphFileBytes = 1 << 20

// ReadNCCLGraphFile reads the NCCL graph file at path (NCCL_GRAPH_FILE);
// see ParseNCCLGraphs.
func ReadNCCLGraphFile(path string) ([]NCCLGraph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("NCCL_GRAPH_FILE: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGraphFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("NCCL_GRAPH_FILE %s: %w", path, err)
	}
	if len(data) > maxGraphFileBytes {
		return nil, fmt.Errorf("NCCL_GRAPH_FILE %s: larger than %d bytes: not an NCCL graph file", path, maxGraphFileBytes)
	}
	return ParseNCCLGraphs(data, path)
}

// ParseNCCLGraphs reads an NCCL graph file: a <graphs> element of <graph>
// elements, each with the attributes NCCL reads (id, pattern, nchannels,
// speedintra, speedinter, typeintra, typeinter) and <channel> elements
// listing <gpu dev=…/> (and, between nodes, <net dev=…/>) in ring order.
// name labels the errors, which say what is wrong and where.
func ParseNCCLGraphs(data []byte, name string) ([]NCCLGraph, error) {
	var doc xmlGraphs
	dec := xml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("NCCL_GRAPH_FILE %s: line %d: %s", name, se.Line, se.Msg)
		}
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("NCCL_GRAPH_FILE %s: no XML element: want a <graphs> element of <graph> elements", name)
		}
		var ue xml.UnmarshalError
		if errors.As(err, &ue) && strings.Contains(string(ue), "<system>") {
			return nil, fmt.Errorf("NCCL_GRAPH_FILE %s: a <system> element is NCCL's topology file (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE), not a graph file (NCCL_GRAPH_DUMP_FILE writes those: a <graphs> element of <graph> elements)", name)
		}
		return nil, fmt.Errorf("NCCL_GRAPH_FILE %s: %v (want a <graphs> element of <graph> elements)", name, err)
	}
	if len(doc.Graphs) == 0 {
		return nil, fmt.Errorf("NCCL_GRAPH_FILE %s: no <graph> element", name)
	}
	var out []NCCLGraph
	seen := map[int]bool{}
	for i, x := range doc.Graphs {
		where := fmt.Sprintf("NCCL_GRAPH_FILE %s: graph %d", name, i+1)
		g, err := x.graph(where)
		if err != nil {
			return nil, err
		}
		if seen[g.ID] {
			return nil, fmt.Errorf("%s: a second graph with id %d", where, g.ID)
		}
		seen[g.ID] = true
		out = append(out, g)
	}
	return out, nil
}

// graph checks one <graph> element's attributes and channels.
func (x xmlGraph) graph(where string) (NCCLGraph, error) {
	var g NCCLGraph
	var err error
	if g.ID, err = graphInt(where, "id", x.ID, 0, 15); err != nil {
		return g, err
	}
	where = fmt.Sprintf("%s (id %d)", where, g.ID)
	if g.Pattern, err = graphInt(where, "pattern", x.Pattern, 1, 15); err != nil {
		return g, err
	}
	if g.SpeedIntra, err = graphSpeed(where, "speedintra", x.SpeedIntra); err != nil {
		return g, err
	}
	if g.SpeedInter, err = graphSpeed(where, "speedinter", x.SpeedInter); err != nil {
		return g, err
	}
	if g.TypeIntra, err = graphType(where, "typeintra", x.TypeIntra); err != nil {
		return g, err
	}
	if g.TypeInter, err = graphType(where, "typeinter", x.TypeInter); err != nil {
		return g, err
	}
	n := len(x.Channels)
	if x.NChannels != "" || n == 0 {
		attr, err := graphInt(where, "nchannels", x.NChannels, 1, maxGraphChannels)
		if err != nil {
			return g, err
		}
		if n > 0 && attr != n {
			return g, fmt.Errorf("%s: nchannels=%d but %d <channel> elements", where, attr, n)
		}
		n = attr
	}
	if n > maxGraphChannels {
		return g, fmt.Errorf("%s: %d channels: NCCL's graphs have at most %d", where, n, maxGraphChannels)
	}
	g.Channels = n
	for c, ch := range x.Channels {
		devs := map[string]bool{}
		for _, d := range ch.GPUs {
			if d.Dev == "" {
				return g, fmt.Errorf("%s: channel %d: a <gpu> without dev", where, c+1)
			}
			if devs[d.Dev] {
				return g, fmt.Errorf("%s: channel %d lists GPU dev %s twice", where, c+1, d.Dev)
			}
			devs[d.Dev] = true
		}
		if len(ch.GPUs) == 0 {
			return g, fmt.Errorf("%s: channel %d lists no <gpu>", where, c+1)
		}
		if c == 0 {
			g.GPUs = len(ch.GPUs)
		} else if len(ch.GPUs) != g.GPUs {
			return g, fmt.Errorf("%s: channel %d lists %d GPUs, channel 1 %d", where, c+1, len(ch.GPUs), g.GPUs)
		}
	}
	return g, nil
}

// maxGraphChannels is the most channels a graph has (MAXCHANNELS/2 for
// the ring graph NCCL doubles at run time).
const maxGraphChannels = 32

func graphInt(where, attr, v string, lo, hi int) (int, error) {
	if v == "" {
		return 0, fmt.Errorf("%s: no %s attribute", where, attr)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s: %s=%q: want an integer %d..%d", where, attr, v, lo, hi)
	}
	return n, nil
}

func graphSpeed(where, attr, v string) (float64, error) {
	if v == "" {
		return 0, fmt.Errorf("%s: no %s attribute", where, attr)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f > 10000 {
		return 0, fmt.Errorf("%s: %s=%q: want GB/s per channel, above 0 and at most 10000", where, attr, v)
	}
	return f, nil
}

func graphType(where, attr, v string) (string, error) {
	up := strings.ToUpper(strings.TrimSpace(v))
	for _, t := range ncclPathTypes {
		if up == t {
			return up, nil
		}
	}
	if v == "" {
		return "", fmt.Errorf("%s: no %s attribute", where, attr)
	}
	return "", fmt.Errorf("%s: %s=%q is not one of NCCL's path types (%s)", where, attr, v, strings.Join(ncclPathTypes, ", "))
}

// graphOptions sets the nccl options that carry the graphs of an NCCL
// graph file: the ring's (id 0) and the tree's (id 1) where the file has
// them. NCCL searches for a graph the file does not give.
func (t *envTranslation) graphOptions(path string) error {
	graphs, err := ReadNCCLGraphFile(path)
	if err != nil {
		return fmt.Errorf("algos: %w", err)
	}
	const by = "NCCL_GRAPH_FILE"
	gpus := 0
	for _, g := range graphs {
		if g.GPUs == 0 || (g.ID != 0 && g.ID != 1) {
			continue
		}
		if gpus > 0 && g.GPUs != gpus {
			return fmt.Errorf("algos: NCCL_GRAPH_FILE %s: its graphs list %d and %d GPUs a channel", path, gpus, g.GPUs)
		}
		gpus = g.GPUs
	}
	if gpus > 0 {
		if err := t.set("graph_gpus", strconv.Itoa(gpus), by); err != nil {
			return err
		}
	}
	for _, g := range graphs {
		var prefix string
		switch g.ID {
		case 0:
			prefix = "graph_"
			if err := t.set("graph_type", strings.ToLower(g.TypeIntra), by); err != nil {
				return err
			}
		case 1:
			prefix = "graph_tree_"
		default:
			continue // CollNet, NVLS: not modelled, not needed on one PCIe node
		}
		if err := t.set(prefix+"channels", strconv.Itoa(g.Channels), by); err != nil {
			return err
		}
		if err := t.set(prefix+"speed", strconv.Itoa(graphMBs(g.SpeedIntra)), by); err != nil {
			return err
		}
	}
	return nil
}

// graphMBs is a graph speed in GB/s as the options carry it: MB/s, at
// least 1.
func graphMBs(gbs float64) int {
	return max(1, int(math.Round(gbs*1000)))
}
