package algos

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The file docs/ADDING_AN_ALGORITHM.md shows compiles as it stands: its
// first Go block is added to this package (a build overlay, the tree is not
// touched), the program is built with it, and the checker proves the new
// algorithm and a sweep times it.
func TestAddingAnAlgorithmDocCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	doc, err := os.ReadFile("../docs/ADDING_AN_ALGORITHM.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "```go\n")
	require.True(t, ok, "no Go block in the document")
	code, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	dir := t.TempDir()
	src := filepath.Join(dir, "my_one_shot.go")
	require.NoError(t, os.WriteFile(src, []byte(code), 0o644))
	here, err := filepath.Abs("my_one_shot.go")
	require.NoError(t, err)
	_, err = os.Stat(here)
	require.True(t, os.IsNotExist(err), "algos/my_one_shot.go exists: the overlay would hide it")
	ov, err := json.Marshal(map[string]map[string]string{"Replace": {here: src}})
	require.NoError(t, err)
	overlay := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlay, ov, 0o644))
	bin := filepath.Join(dir, "arsim")
	build := exec.Command("go", "build", "-overlay", overlay, "-o", bin, "./cmd/arsim")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	out, err = exec.Command(bin, "check", "--algos", "my_one_shot", "--ranks", "2,3,8", "--max-bytes", "64KiB").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "my_one_shot  8      7              ok")
	out, err = exec.Command(bin, "sweep", "--algos", "my_one_shot,one_stage", "--sizes", "42KiB").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "my_one_shot")

	// The document's claim: without the end barrier the checker names a race.
	const end = "\tb.Barrier(\"end\", 1, k, \"end barrier\", ends)\n"
	require.Contains(t, code, end)
	require.NoError(t, os.WriteFile(src, []byte(strings.Replace(code, end, "\t_ = ends\n", 1)), 0o644))
	build = exec.Command("go", "build", "-overlay", overlay, "-o", bin, "./cmd/arsim")
	build.Dir = ".."
	out, err = build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "sweep", "--algos", "my_one_shot", "--sizes", "42KiB").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "the checker refuses the schedule")
	assert.Contains(t, string(out), "race")
}
