package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README shows real output. Every `$ arsim …` command in its code
// blocks runs here, in order (a later command may read what an earlier one
// wrote, as calibrate's --params-out), and every output line the README
// shows under it must appear in what the command prints, in the same
// order; lines the README trims end in "…". The default run's block is
// checked the same way.
func TestREADMEOutputsAreReal(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	cmds := readmeCommands(string(readme))
	require.GreaterOrEqual(t, len(cmds), 5, "the README's $ arsim commands")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	// The commands run in a directory of their own (they write files) that
	// sees the repository's testdata.
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(root, "testdata"), filepath.Join(dir, "testdata")))
	t.Chdir(dir)
	for _, c := range cmds {
		if strings.Contains(strings.Join(c.args, " "), "my_one_shot") {
			continue // docs/ADDING_AN_ALGORITHM.md's example, registered by its own test, not by the binary
		}
		var out bytes.Buffer
		_ = run(context.Background(), c.args, &out, &out) // the README shows failures too
		assertLinesInOrder(t, c.want, out.String(), strings.Join(c.args, " "))
	}
	// The default run.
	i := strings.Index(string(readme), "The default run")
	require.Positive(t, i)
	block := string(readme)[i:]
	block = block[strings.Index(block, "```\n")+4:]
	block = block[:strings.Index(block, "```")]
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), nil, &out, &out))
	assertLinesInOrder(t, strings.Split(strings.TrimRight(block, "\n"), "\n"), out.String(), "arsim (the default run)")
}

// readmeCommand is one `$ arsim` command of the README and the output lines
// shown under it.
type readmeCommand struct {
	args []string
	want []string
}

// readmeCommands returns the `$ arsim` commands of md's code blocks with
// their shown output, continuation lines (a trailing backslash) joined.
func readmeCommands(md string) []readmeCommand {
	var cmds []readmeCommand
	inBlock, cont := false, ""
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		switch {
		case cont != "":
			cont += " " + strings.TrimSpace(line)
		case strings.HasPrefix(line, "$ arsim "):
			cont = strings.TrimPrefix(line, "$ arsim ")
		case len(cmds) > 0:
			cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, line)
			continue
		default:
			continue
		}
		if strings.HasSuffix(cont, "\\") {
			cont = strings.TrimSuffix(cont, "\\")
			continue
		}
		cmds = append(cmds, readmeCommand{args: shellWords(cont)})
		cont = ""
	}
	return cmds
}

// shellWords splits s as a shell would, for the README's commands: words
// apart by spaces, single and double quotes grouping.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	quote, inWord := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// assertLinesInOrder checks that every non-empty line of want appears in
// got, in order, each compared without trailing spaces; a line ending in
// "…" matches any line that starts with what comes before it, and a lone
// "…" stands for lines left out.
func assertLinesInOrder(t *testing.T, want []string, got, what string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	j := 0
	for _, w := range want {
		w = strings.TrimRight(w, " ")
		if w == "" || w == "…" {
			continue
		}
		found := false
		for ; j < len(lines); j++ {
			if trimmedMatch(w, strings.TrimRight(lines[j], " ")) {
				found = true
				j++
				break
			}
		}
		if !assert.True(t, found, "%s: the README shows\n%q\nwhich the command does not print (in this order); it prints:\n%s", what, w, got) {
			return
		}
	}
}

// trimmedMatch says whether got is the README's line want, where each "…"
// in want stands for text left out: want's pieces appear in got in order,
// the first at its start and, unless want ends in "…", the last at its end.
func trimmedMatch(want, got string) bool {
	pieces := strings.Split(want, "…")
	if len(pieces) == 1 {
		return want == got
	}
	first := strings.TrimRight(pieces[0], " ")
	if !strings.HasPrefix(got, first) {
		return false
	}
	rest := got[len(first):]
	for _, p := range pieces[1:] {
		p = strings.TrimSpace(p)
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	last := strings.TrimSpace(pieces[len(pieces)-1])
	return last == "" || strings.HasSuffix(got, last)
}

func TestTrimmedMatch(t *testing.T) {
	assert.True(t, trimmedMatch("a (…), b", "a (long text), b"))
	assert.True(t, trimmedMatch("  - sockets …", "  - sockets joined by a link"))
	assert.False(t, trimmedMatch("a (…), b", "a (long text), c"))
	assert.False(t, trimmedMatch("x …", "y x"))
	assert.True(t, trimmedMatch("same", "same"))
}

func TestShellWords(t *testing.T) {
	assert.Equal(t, []string{"sweep", "--gpu", "RTX 5090", "--fit", "a,b", "x"},
		shellWords(`sweep --gpu "RTX 5090"  --fit 'a,b' x`))
}
