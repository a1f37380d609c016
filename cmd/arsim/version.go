package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// printVersion prints the module version, the commit it was built from
// (when the build recorded it) and the Go version.
func printVersion(out io.Writer) error {
	version, commit, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := "arsim " + version
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		line += " commit " + commit
		if dirty {
			line += " (modified)"
		}
	}
	_, err := fmt.Fprintf(out, "%s, %s %s/%s\n", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

// helpFor prints a command's usage, flags and examples on out.
func helpFor(ctx context.Context, name string, out io.Writer) error {
	for _, c := range commands() {
		if c.name == name {
			err := c.run(ctx, []string{"--help"}, out, out)
			if errors.Is(err, errHelpShown) {
				return nil
			}
			return err
		}
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return badInputf("help: unknown command %q (commands: %s)", name, strings.Join(names, ", "))
}
