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
