package msccl

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Algo is an MSCCL allreduce schedule as read from its XML file.
type Algo struct {
	File      string // where it was read from (for messages)
	Name      string
	Proto     string // Simple, LL or LL128
	NChannels int
	NChunks   int // nchunksperloop: the message is split into this many chunks
	NGPUs     int
	Inplace   bool
	GPUs      []GPU // by id
	Line      int
}

// GPU is one rank's program: thread blocks that run in parallel.
type GPU struct {
	ID, IChunks, OChunks, SChunks int
	TBs                           []TB // by id
	Line                          int
}

// TB is a thread block: steps run in order, sending to Send and receiving
// from Recv (−1: none) over channel Chan.
type TB struct {
	ID, Send, Recv, Chan int
	Steps                []Step
	Line                 int
}

// Step is one instruction of a thread block.
type Step struct {
	S              int
	Type           string
	SrcBuf, DstBuf byte // 'i', 'o' or 's'
	SrcOff, DstOff int
	Cnt            int
	DepID, Deps    int // the thread block and step this one waits for, −1: none
	HasDep         bool
	Line           int
}

// Limits on what Parse accepts, so that a hostile or broken file cannot
// make the importer (or the checker after it) run out of memory.
const (
	maxGPUs   = 64 // the checker's limit
	maxChunks = 1 << 16
	maxSteps  = 1 << 16 // all steps of all thread blocks
	maxTBs    = 256     // per GPU
	maxChans  = 64
)

// Error is a refusal of a malformed file: what is wrong and on which line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("msccl: %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("msccl: %s: %s", e.File, e.Msg)
}

// ReadFile parses the MSCCL XML file at path.
func ReadFile(path string) (*Algo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("msccl: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// stepTypes are the instructions arsim imports, with what they do.
var stepTypes = map[string]struct{ send, recv, readSrc, writeDst bool }{
	"s":    {send: true, readSrc: true},
	"r":    {recv: true, writeDst: true},
	"rrc":  {recv: true, readSrc: true, writeDst: true},
	"rrs":  {recv: true, send: true, readSrc: true},
	"rrcs": {recv: true, send: true, readSrc: true, writeDst: true},
	"rcs":  {recv: true, send: true, writeDst: true},
	"cpy":  {readSrc: true, writeDst: true},
	"re":   {readSrc: true, writeDst: true},
	"nop":  {},
}

// Parse reads an MSCCL allreduce schedule. A malformed file is refused
// with an *Error naming the line; Parse never panics.
func Parse(r io.Reader, file string) (*Algo, error) {
	p := &parser{d: xml.NewDecoder(r), file: file}
	p.d.Strict = true
	a, err := p.document()
	if err != nil {
		return nil, err
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	return a, nil
}

type parser struct {
	d    *xml.Decoder
	file string
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) line() int {
	l, _ := p.d.InputPos()
	return l
}

// next returns the next start or end element, skipping comments,
// processing instructions and whitespace; other text is an error.
func (p *parser) next() (xml.Token, int, error) {
	for {
		t, err := p.d.Token()
		line := p.line()
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return nil, se.Line, p.errf(se.Line, "not well-formed XML: %s", se.Msg)
			}
			if err == io.EOF {
				return nil, line, io.EOF
			}
			return nil, line, p.errf(line, "%v", err)
		}
		switch x := t.(type) {
		case xml.StartElement, xml.EndElement:
			return xml.CopyToken(t), line, nil
		case xml.CharData:
			if s := strings.TrimSpace(string(x)); s != "" {
				if len(s) > 20 {
					s = s[:20] + "…"
				}
				return nil, line, p.errf(line, "unexpected text %q", s)
			}
		}
	}
}

// document reads <algo> and everything in it.
func (p *parser) document() (*Algo, error) {
	t, line, err := p.next()
	if err == io.EOF {
		return nil, p.errf(0, "empty file: want an <algo> element")
	}
	if err != nil {
		return nil, err
	}
	st, ok := t.(xml.StartElement)
	if !ok || st.Name.Local != "algo" {
		return nil, p.errf(line, "the document must start with <algo>, found %s", describeToken(t))
	}
	at := attrs{p: p, line: line, el: "algo", m: attrMap(st)}
	a := &Algo{File: p.file, Line: line}
	a.Name = at.str("name", "")
	a.Proto = at.str("proto", "")
	a.NChannels = at.int("nchannels", 1)
	a.NChunks = at.int("nchunksperloop", -1)
	a.NGPUs = at.int("ngpus", -1)
	coll := at.str("coll", "")
	a.Inplace = at.int("inplace", 0) == 1
	if at.err != nil {
		return nil, at.err
	}
	if !strings.EqualFold(coll, "allreduce") {
		return nil, p.errf(line, "<algo coll=%q>: arsim imports allreduce schedules only", coll)
	}
	switch strings.ToLower(a.Proto) {
	case "simple":
		a.Proto = "Simple"
	case "ll":
		a.Proto = "LL"
	case "ll128":
		a.Proto = "LL128"
	default:
		return nil, p.errf(line, "<algo proto=%q>: want Simple, LL or LL128", a.Proto)
	}
	steps := 0
	for {
		t, line, err := p.next()
		if err == io.EOF {
			return nil, p.errf(line, "the file ends inside <algo>")
		}
		if err != nil {
			return nil, err
		}
		if _, ok := t.(xml.EndElement); ok {
			break
		}
		st := t.(xml.StartElement)
		if st.Name.Local != "gpu" {
			return nil, p.errf(line, "unexpected <%s> inside <algo>: want <gpu>", st.Name.Local)
		}
		g, err := p.gpu(st, line, &steps)
		if err != nil {
			return nil, err
		}
		a.GPUs = append(a.GPUs, *g)
		if len(a.GPUs) > maxGPUs {
			return nil, p.errf(line, "more than %d <gpu> elements", maxGPUs)
		}
	}
	if t, line, err := p.next(); err != io.EOF {
		if err != nil {
			return nil, err
		}
		return nil, p.errf(line, "unexpected %s after </algo>", describeToken(t))
	}
	return a, nil
}

func (p *parser) gpu(st xml.StartElement, line int, steps *int) (*GPU, error) {
	at := attrs{p: p, line: line, el: "gpu", m: attrMap(st)}
	g := &GPU{Line: line, ID: at.int("id", -1), IChunks: at.int("i_chunks", 0), OChunks: at.int("o_chunks", 0), SChunks: at.int("s_chunks", 0)}
	if at.err != nil {
		return nil, at.err
	}
	for {
		t, line, err := p.next()
		if err == io.EOF {
			return nil, p.errf(line, "the file ends inside <gpu id=%d>", g.ID)
		}
		if err != nil {
			return nil, err
		}
		if _, ok := t.(xml.EndElement); ok {
			return g, nil
		}
		st := t.(xml.StartElement)
		if st.Name.Local != "tb" {
			return nil, p.errf(line, "unexpected <%s> inside <gpu>: want <tb>", st.Name.Local)
		}
		tb, err := p.tb(st, line, steps)
		if err != nil {
			return nil, err
		}
		g.TBs = append(g.TBs, *tb)
		if len(g.TBs) > maxTBs {
			return nil, p.errf(line, "more than %d <tb> elements in one <gpu>", maxTBs)
		}
	}
}

func (p *parser) tb(st xml.StartElement, line int, steps *int) (*TB, error) {
	at := attrs{p: p, line: line, el: "tb", m: attrMap(st)}
	tb := &TB{Line: line, ID: at.int("id", -1), Send: at.int("send", -1), Recv: at.int("recv", -1), Chan: at.int("chan", 0)}
	if at.err != nil {
		return nil, at.err
	}
	for {
		t, line, err := p.next()
		if err == io.EOF {
			return nil, p.errf(line, "the file ends inside <tb id=%d>", tb.ID)
		}
		if err != nil {
			return nil, err
		}
		if _, ok := t.(xml.EndElement); ok {
			return tb, nil
		}
		st := t.(xml.StartElement)
		name := st.Name.Local
		if name != "step" && name != "op" {
			return nil, p.errf(line, "unexpected <%s> inside <tb>: want <step>", name)
		}
		if name == "op" {
			return nil, p.errf(line, "<op> is msccl-tools' newer format (buf/off per op); arsim reads the format with <step srcbuf dstbuf> (old_format=True)")
		}
		s, err := p.step(st, line)
		if err != nil {
			return nil, err
		}
		tb.Steps = append(tb.Steps, *s)
		if *steps++; *steps > maxSteps {
			return nil, p.errf(line, "more than %d steps in the file", maxSteps)
		}
		// <step/> or <step></step>: nothing may be inside.
		t, line, err = p.next()
		if err == io.EOF {
			return nil, p.errf(line, "the file ends inside <step>")
		}
		if err != nil {
			return nil, err
		}
		if _, ok := t.(xml.EndElement); !ok {
			return nil, p.errf(line, "unexpected %s inside <step>", describeToken(t))
		}
	}
}

func (p *parser) step(st xml.StartElement, line int) (*Step, error) {
	at := attrs{p: p, line: line, el: "step", m: attrMap(st)}
	s := &Step{Line: line}
	s.S = at.int("s", -1)
	s.Type = at.str("type", "")
	s.SrcBuf = at.buf("srcbuf")
	s.DstBuf = at.buf("dstbuf")
	s.SrcOff = at.int("srcoff", -1)
	s.DstOff = at.int("dstoff", -1)
	s.Cnt = at.int("cnt", -1)
	s.DepID = at.int("depid", -1)
	s.Deps = at.int("deps", -1)
	s.HasDep = at.int("hasdep", 0) == 1
	if at.err != nil {
		return nil, at.err
	}
	if _, ok := stepTypes[s.Type]; !ok {
		return nil, p.errf(line, "<step type=%q>: not an MSCCL allreduce step arsim knows (s, r, rrc, rrs, rrcs, rcs, cpy, re, nop)", s.Type)
	}
	return s, nil
}

func describeToken(t xml.Token) string {
	switch x := t.(type) {
	case xml.StartElement:
		return "<" + x.Name.Local + ">"
	case xml.EndElement:
		return "</" + x.Name.Local + ">"
	}
	return "text"
}

func attrMap(st xml.StartElement) map[string]string {
	m := map[string]string{}
	for _, a := range st.Attr {
		m[a.Name.Local] = a.Value
	}
	return m
}

// attrs reads attributes of one element, keeping the first error.
type attrs struct {
	p    *parser
	line int
	el   string
	m    map[string]string
	err  error
}

func (a *attrs) str(name, def string) string {
	if v, ok := a.m[name]; ok {
		return v
	}
	return def
}

// int reads an integer attribute, def when it is absent (validate then
// refuses a missing required one by its out-of-range default).
func (a *attrs) int(name string, def int) int {
	v, ok := a.m[name]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < -1 || n > 1<<30 {
		if a.err == nil {
			a.err = a.p.errf(a.line, "<%s %s=%q>: want an integer from −1 to 2^30", a.el, name, v)
		}
		return def
	}
	return n
}

func (a *attrs) buf(name string) byte {
	v := a.str(name, "i")
	switch v {
	case "i", "o", "s":
		return v[0]
	}
	if a.err == nil {
		a.err = a.p.errf(a.line, "<%s %s=%q>: want i (input), o (output) or s (scratch)", a.el, name, v)
	}
	return 'i'
}

// validate checks the schedule's structure: ids, peers, channels, chunk
// ranges, dependencies and that every send meets a receive.
func (a *Algo) validate() error {
	e := func(line int, format string, args ...any) error {
		return &Error{File: a.File, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if a.NGPUs < 1 || a.NGPUs > maxGPUs {
		return e(a.Line, "<algo ngpus=%d>: want 1–%d", a.NGPUs, maxGPUs)
	}
	if a.NChunks < 1 || a.NChunks > maxChunks {
		return e(a.Line, "<algo nchunksperloop=%d>: want 1–%d", a.NChunks, maxChunks)
	}
	if a.NChannels < 1 || a.NChannels > maxChans {
		return e(a.Line, "<algo nchannels=%d>: want 1–%d", a.NChannels, maxChans)
	}
	if len(a.GPUs) != a.NGPUs {
		return e(a.Line, "<algo ngpus=%d> but the file has %d <gpu> elements", a.NGPUs, len(a.GPUs))
	}
	byID := make([]*GPU, a.NGPUs)
	for i := range a.GPUs {
		g := &a.GPUs[i]
		if g.ID < 0 || g.ID >= a.NGPUs {
			return e(g.Line, "<gpu id=%d>: want 0–%d", g.ID, a.NGPUs-1)
		}
		if byID[g.ID] != nil {
			return e(g.Line, "<gpu id=%d> appears twice (first on line %d)", g.ID, byID[g.ID].Line)
		}
		byID[g.ID] = g
		if g.SChunks > maxChunks {
			return e(g.Line, "<gpu s_chunks=%d>: more than %d", g.SChunks, maxChunks)
		}
	}
	gpus := make([]GPU, a.NGPUs)
	for id, g := range byID {
		gpus[id] = *g
	}
	a.GPUs = gpus
	chunks := func(g *GPU, b byte) int {
		if b == 's' {
			return g.SChunks
		}
		return a.NChunks // the input and output are the message: nchunksperloop chunks
	}
	for gi := range a.GPUs {
		g := &a.GPUs[gi]
		tbByID := make([]*TB, len(g.TBs))
		sendOn, recvOn := map[[2]int]int{}, map[[2]int]int{}
		for i := range g.TBs {
			tb := &g.TBs[i]
			if tb.ID < 0 || tb.ID >= len(g.TBs) {
				return e(tb.Line, "<tb id=%d>: GPU %d has %d thread blocks, ids 0–%d", tb.ID, g.ID, len(g.TBs), len(g.TBs)-1)
			}
			if tbByID[tb.ID] != nil {
				return e(tb.Line, "<tb id=%d> appears twice in GPU %d (first on line %d)", tb.ID, g.ID, tbByID[tb.ID].Line)
			}
			tbByID[tb.ID] = tb
			for _, x := range []struct {
				what string
				peer int
			}{{"send", tb.Send}, {"recv", tb.Recv}} {
				if x.peer < -1 || x.peer >= a.NGPUs || x.peer == g.ID {
					return e(tb.Line, "<tb %s=%d> on GPU %d: want another GPU's id (0–%d) or −1", x.what, x.peer, g.ID, a.NGPUs-1)
				}
			}
			if tb.Chan < 0 || tb.Chan >= a.NChannels {
				return e(tb.Line, "<tb chan=%d>: the algo has %d channels", tb.Chan, a.NChannels)
			}
			if tb.Send >= 0 {
				k := [2]int{tb.Send, tb.Chan}
				if l, dup := sendOn[k]; dup {
					return e(tb.Line, "GPU %d: two thread blocks send to GPU %d on channel %d (the other on line %d); a connection has one sender", g.ID, tb.Send, tb.Chan, l)
				}
				sendOn[k] = tb.Line
			}
			if tb.Recv >= 0 {
				k := [2]int{tb.Recv, tb.Chan}
				if l, dup := recvOn[k]; dup {
					return e(tb.Line, "GPU %d: two thread blocks receive from GPU %d on channel %d (the other on line %d); a connection has one receiver", g.ID, tb.Recv, tb.Chan, l)
				}
				recvOn[k] = tb.Line
			}
		}
		ts := make([]TB, len(g.TBs))
		for id, tb := range tbByID {
			ts[id] = *tb
		}
		g.TBs = ts
		for ti := range g.TBs {
			tb := &g.TBs[ti]
			for si := range tb.Steps {
				s := &tb.Steps[si]
				kind := stepTypes[s.Type]
				if s.S != si {
					return e(s.Line, "<step s=%d> is step %d of thread block %d on GPU %d; steps are numbered from 0 in order", s.S, si, tb.ID, g.ID)
				}
				if s.Type != "nop" && s.Cnt < 1 {
					return e(s.Line, "<step cnt=%d>: want at least one chunk", s.Cnt)
				}
				if kind.send && tb.Send < 0 {
					return e(s.Line, "<step type=%q> sends, but thread block %d on GPU %d has no send peer", s.Type, tb.ID, g.ID)
				}
				if kind.recv && tb.Recv < 0 {
					return e(s.Line, "<step type=%q> receives, but thread block %d on GPU %d has no recv peer", s.Type, tb.ID, g.ID)
				}
				if kind.readSrc {
					if c := chunks(g, s.SrcBuf); s.SrcOff < 0 || s.SrcOff+s.Cnt > c {
						return e(s.Line, "<step srcbuf=%q srcoff=%d cnt=%d>: outside the %d chunks of that buffer on GPU %d", string(s.SrcBuf), s.SrcOff, s.Cnt, c, g.ID)
					}
				}
				if kind.writeDst {
					if c := chunks(g, s.DstBuf); s.DstOff < 0 || s.DstOff+s.Cnt > c {
						return e(s.Line, "<step dstbuf=%q dstoff=%d cnt=%d>: outside the %d chunks of that buffer on GPU %d", string(s.DstBuf), s.DstOff, s.Cnt, c, g.ID)
					}
				}
				if (s.DepID < 0) != (s.Deps < 0) {
					return e(s.Line, "<step depid=%d deps=%d>: both −1 or both set", s.DepID, s.Deps)
				}
				if s.DepID >= 0 {
					if s.DepID >= len(g.TBs) {
						return e(s.Line, "<step depid=%d>: GPU %d has thread blocks 0–%d", s.DepID, g.ID, len(g.TBs)-1)
					}
					dt := &g.TBs[s.DepID]
					if s.Deps >= len(dt.Steps) {
						return e(s.Line, "<step deps=%d>: thread block %d on GPU %d has %d steps", s.Deps, s.DepID, g.ID, len(dt.Steps))
					}
					if s.DepID == tb.ID && s.Deps >= si {
						return e(s.Line, "step %d of thread block %d waits for its own step %d, which runs after it (deadlock)", si, tb.ID, s.Deps)
					}
					if d := dt.Steps[s.Deps]; s.DepID != tb.ID && !d.HasDep {
						return e(s.Line, "step %d of thread block %d on GPU %d waits for step %d of thread block %d (line %d), which has hasdep=0: the interpreter only publishes the completion of steps marked hasdep=1, so the wait never ends",
							si, tb.ID, g.ID, s.Deps, s.DepID, d.Line)
					}
				}
			}
		}
	}
	// Every send meets a receive of the same size, in order.
	for gi := range a.GPUs {
		g := &a.GPUs[gi]
		for ti := range g.TBs {
			tb := &g.TBs[ti]
			if tb.Send < 0 {
				continue
			}
			sends := tb.messages(true)
			p := &a.GPUs[tb.Send]
			var rtb *TB
			for j := range p.TBs {
				if p.TBs[j].Recv == g.ID && p.TBs[j].Chan == tb.Chan {
					rtb = &p.TBs[j]
				}
			}
			if rtb == nil {
				if len(sends) > 0 {
					return e(sends[0].Line, "GPU %d sends to GPU %d on channel %d, but no thread block of GPU %d receives from GPU %d on channel %d", g.ID, tb.Send, tb.Chan, tb.Send, g.ID, tb.Chan)
				}
				continue
			}
			recvs := rtb.messages(false)
			for k := 0; k < max(len(sends), len(recvs)); k++ {
				switch {
				case k >= len(recvs):
					return e(sends[k].Line, "send %d of GPU %d to GPU %d on channel %d has no matching receive: GPU %d's thread block (line %d) receives %d times", k+1, g.ID, tb.Send, tb.Chan, tb.Send, rtb.Line, len(recvs))
				case k >= len(sends):
					return e(recvs[k].Line, "receive %d of GPU %d from GPU %d on channel %d has no matching send: GPU %d's thread block (line %d) sends %d times", k+1, tb.Send, g.ID, tb.Chan, g.ID, tb.Line, len(sends))
				case sends[k].Cnt != recvs[k].Cnt:
					return e(recvs[k].Line, "receive %d of GPU %d from GPU %d on channel %d takes %d chunks, but the matching send (line %d) sends %d", k+1, tb.Send, g.ID, tb.Chan, recvs[k].Cnt, sends[k].Line, sends[k].Cnt)
				}
			}
		}
		for ti := range g.TBs {
			tb := &g.TBs[ti]
			if tb.Recv < 0 {
				continue
			}
			recvs := tb.messages(false)
			found := false
			for _, x := range a.GPUs[tb.Recv].TBs {
				found = found || (x.Send == g.ID && x.Chan == tb.Chan)
			}
			if !found && len(recvs) > 0 {
				return e(recvs[0].Line, "GPU %d receives from GPU %d on channel %d, but no thread block of GPU %d sends to GPU %d on channel %d", g.ID, tb.Recv, tb.Chan, tb.Recv, g.ID, tb.Chan)
			}
		}
	}
	return nil
}

// messages returns the steps of tb that send (or receive), in order.
func (tb *TB) messages(send bool) []Step {
	var out []Step
	for _, s := range tb.Steps {
		k := stepTypes[s.Type]
		if (send && k.send) || (!send && k.recv) {
			out = append(out, s)
		}
	}
	return out
}
