// Package sass reads the machine code that cuobjdump prints for a CUDA
// binary (cuobjdump -sass) and tells how many times one thread of a
// kernel's main loop waits for its global loads each pass: the number arsim's
// loop model takes from the code (hw.Kernel.LoadWaits), since the
// compiler, not the source, decides which of a thread's loads are in
// flight at once.
//
// The analysis is deliberately simple: the main loop is the body of the
// function's longest backward branch; its instructions issue in order,
// each global load (LDG) taking one unit to issue and its data a round
// trip (1,000 units) after that, every other instruction nothing, and an
// instruction waits until the registers it reads are ready. The steady
// time of one pass, in round trips, is how many times the pass waits.
// Spill loads (LDL) and shared-memory loads are not round trips to the
// sources. Predicates are ignored (a predicated instruction counts as
// executed), except where a path is asked for (Kernel.MainLoopOn): a loop
// that picks each source's load by a flag (volatile or plain) runs only
// the instructions of the flag's side.
package sass

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Instr is one instruction: its address, opcode and operands, and the
// predicate that guards it ("P0", "!P1"; empty when none).
type Instr struct {
	Addr  int
	Op    string
	Args  []string
	Guard string
}

// Kernel is one function of the dump.
type Kernel struct {
	Name string
	Code []Instr
}

// Loop is what the analysis finds in a kernel's main loop.
type Loop struct {
	// Instrs is the loop body's instructions, branch included.
	Instrs int
	// Loads is its global loads (LDG), Stores16 its 16-byte global stores
	// (STG.E.128): a copy loop of U packs a thread stores U × D of them
	// an iteration (D destinations), so a pass holds Stores16 / (U × D)
	// iterations.
	Loads, Stores16 int
	// Waits is how many round trips one pass of the body waits for its
	// loads.
	Waits float64
	// SpillLoadBytes and SpillStoreBytes are what one thread of a pass
	// loads from and stores to its local memory: register spills (LDL,
	// STL, by their width).
	SpillLoadBytes, SpillStoreBytes int
}

// The patterns, compiled on first use: every arsim command links this
// package, few read SASS.
var patterns = sync.OnceValue(func() *sassPatterns {
	return &sassPatterns{
		funcLine: regexp.MustCompile(`^\s*Function\s*:\s*(\S+)\s*$`),
		instLine: regexp.MustCompile(`^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;`),
		predPfx:  regexp.MustCompile(`^@!?U?P\w+\s+`),
		regRef:   regexp.MustCompile(`\bR(\d+)\b`),
		pairRef:  regexp.MustCompile(`\bR(\d+)\.64`),
		braTo:    regexp.MustCompile(`^BRA\s+(?:\S+\s+)?(0x[0-9a-fA-F]+)$`),
	}
})

type sassPatterns struct{ funcLine, instLine, predPfx, regRef, pairRef, braTo *regexp.Regexp }

// maxLine is the longest line Parse reads.
const maxLine = 1 << 20

// Parse reads cuobjdump -sass output and returns its functions in order.
// Lines that are neither a function's header nor an instruction (headers,
// flags, encodings on their own lines) are skipped; an instruction before
// any function, a function without instructions or a dump without
// functions is an error that names the line.
func Parse(r io.Reader) ([]Kernel, error) {
	pat := patterns()
	var ks []Kernel
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if m := pat.funcLine.FindStringSubmatch(line); m != nil {
			if len(ks) > 0 && len(ks[len(ks)-1].Code) == 0 {
				return nil, fmt.Errorf("sass: line %d: function %s has no instructions", n, ks[len(ks)-1].Name)
			}
			ks = append(ks, Kernel{Name: m[1]})
			continue
		}
		m := pat.instLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if len(ks) == 0 {
			return nil, fmt.Errorf("sass: line %d: an instruction before any \"Function :\" line", n)
		}
		addr, err := strconv.ParseInt(m[1], 16, 64)
		if err != nil || addr > math.MaxInt32 {
			return nil, fmt.Errorf("sass: line %d: address %q", n, m[1])
		}
		pfx := pat.predPfx.FindString(m[2])
		guard := strings.TrimSpace(strings.TrimPrefix(pfx, "@"))
		body := strings.TrimSpace(strings.TrimPrefix(m[2], pfx))
		op, rest, _ := strings.Cut(body, " ")
		in := Instr{Addr: int(addr), Op: op, Guard: guard}
		if rest = strings.TrimSpace(rest); rest != "" {
			for _, a := range strings.Split(rest, ",") {
				in.Args = append(in.Args, strings.TrimSpace(a))
			}
		}
		k := &ks[len(ks)-1]
		k.Code = append(k.Code, in)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sass: line %d: %w", n+1, err)
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("sass: no \"Function :\" line (is it cuobjdump -sass output?)")
	}
	if last := ks[len(ks)-1]; len(last.Code) == 0 {
		return nil, fmt.Errorf("sass: function %s has no instructions", last.Name)
	}
	return ks, nil
}

// ParseFile is Parse of the named file, gunzipped when it starts as gzip
// does (the capture keeps its dumps gzipped).
func ParseFile(name string) ([]Kernel, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("sass: %s: %w", name, err)
		}
		defer z.Close()
		r = z
	}
	ks, err := Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ks, nil
}

// MainLoop analyses the kernel's main loop (the body of its longest
// backward branch); an error when it has none.
func (k Kernel) MainLoop() (Loop, error) { return k.MainLoopOn(AnySources) }

// LoopAt analyses the loop whose backward branch goes to addr (the body
// from addr to the last branch there); an error when no branch does.
func (k Kernel) LoopAt(addr int) (Loop, error) {
	pat := patterns()
	start, end := -1, -1
	for i, in := range k.Code {
		if in.Addr == addr && start < 0 {
			start = i
		}
		if start < 0 || !strings.HasPrefix(in.Op, "BRA") {
			continue
		}
		m := pat.braTo.FindStringSubmatch(strings.TrimSpace(in.Op + " " + strings.Join(in.Args, " ")))
		if m == nil {
			continue
		}
		if to, err := strconv.ParseInt(m[1], 0, 64); err == nil && int(to) == addr {
			end = i
		}
	}
	if start < 0 || end < 0 {
		return Loop{}, fmt.Errorf("sass: %s has no loop back to %#x", k.Name, addr)
	}
	return analyse(k.Code[start : end+1]), nil
}

// analyse counts a loop body's accesses and its waits.
func analyse(body []Instr) Loop {
	l := Loop{Instrs: len(body), Waits: waits(body)}
	for _, in := range body {
		switch {
		case strings.HasPrefix(in.Op, "LDG"):
			l.Loads++
		case strings.HasPrefix(in.Op, "STG") && strings.Contains(in.Op, ".128"):
			l.Stores16++
		case strings.HasPrefix(in.Op, "LDL"):
			l.SpillLoadBytes += 4 * regWidth(in.Op)
		case strings.HasPrefix(in.Op, "STL"):
			l.SpillStoreBytes += 4 * regWidth(in.Op)
		}
	}
	return l
}

// mainLoop is the body of the longest backward branch in code.
func mainLoop(code []Instr) []Instr {
	pat := patterns()
	var body []Instr
	at := make(map[int]int, len(code))
	for i, in := range code {
		if _, dup := at[in.Addr]; !dup {
			at[in.Addr] = i
		}
	}
	for i, in := range code {
		if !strings.HasPrefix(in.Op, "BRA") {
			continue
		}
		m := pat.braTo.FindStringSubmatch(strings.TrimSpace(in.Op + " " + strings.Join(in.Args, " ")))
		if m == nil {
			continue
		}
		to, err := strconv.ParseInt(m[1], 0, 64)
		if err != nil || int(to) >= in.Addr {
			continue
		}
		if j, ok := at[int(to)]; ok && j <= i && i+1-j > len(body) {
			body = code[j : i+1]
		}
	}
	return body
}

// regWidth is how many 32-bit registers an access of op moves.
func regWidth(op string) int {
	switch {
	case strings.Contains(op, ".128"):
		return 4
	case strings.Contains(op, ".64"):
		return 2
	}
	return 1
}

// trip is a round trip in the timeline's units; a load takes one to issue.
const trip = 1000.0

// waits runs body in order four times over and returns the steady time of
// the last pass in round trips.
func waits(body []Instr) float64 {
	pat := patterns()
	ready := map[int]float64{}
	t, start := 0.0, 0.0
	for range 4 {
		start = t
		for _, in := range body {
			if strings.HasPrefix(in.Op, "BRA") || strings.HasPrefix(in.Op, "NOP") || strings.HasPrefix(in.Op, "EXIT") {
				continue
			}
			load := strings.HasPrefix(in.Op, "LD")
			store := strings.HasPrefix(in.Op, "ST")
			var dst string
			srcs := in.Args
			if !store && len(in.Args) > 0 {
				dst, srcs = in.Args[0], in.Args[1:]
			}
			need := 0.0
			for i, a := range srcs {
				w := 1
				if store && i == len(srcs)-1 {
					w = regWidth(in.Op) // the stored value's registers
				}
				for _, m := range pat.regRef.FindAllStringSubmatch(a, -1) {
					r, _ := strconv.Atoi(m[1])
					for q := r; q < r+w; q++ {
						need = math.Max(need, ready[q])
					}
				}
				for _, m := range pat.pairRef.FindAllStringSubmatch(a, -1) {
					r, _ := strconv.Atoi(m[1])
					need = math.Max(need, ready[r+1]) // a 64-bit address's high half
				}
			}
			t = math.Max(t, need)
			if load {
				t++
			}
			if dst == "" {
				continue
			}
			w := 1
			if load {
				w = regWidth(in.Op)
			} else if strings.Contains(in.Op, ".64") || strings.HasPrefix(in.Op, "CS2R") {
				w = 2
			}
			for _, m := range pat.regRef.FindAllStringSubmatch(dst, -1) {
				r, _ := strconv.Atoi(m[1])
				for q := r; q < r+w; q++ {
					ready[q] = t
					if strings.HasPrefix(in.Op, "LDG") {
						ready[q] = t + trip
					}
				}
			}
		}
	}
	return (t - start) / trip
}
