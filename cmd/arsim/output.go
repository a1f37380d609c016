package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Output files are never half-written: each is written to a temporary
// file beside it and renamed over it once complete, so a failed run (a
// full disk, an error, an interrupt) leaves the old file or none, never an
// empty or truncated one. A write that fails is exit status 1.

// checkWritable fails before a long run if path cannot be written: a file
// type not in exts, a missing or read-only folder, a folder of that name.
// It creates nothing.
func checkWritable(path string, exts ...string) error {
	ext := strings.ToLower(filepath.Ext(path))
	ok := len(exts) == 0
	for _, e := range exts {
		ok = ok || e == ext
	}
	if !ok {
		return badInputf("%s: file type %q is not one of %s", path, ext, strings.Join(exts, ", "))
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badInputf("cannot write %s: it is a folder", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return badInputf("cannot write %s: %v", path, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath drops the temporary file's name from an error about it.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// writeFileAtomic writes path with write, through a temporary file renamed
// over path once write, the flush and the sync have succeeded.
func writeFileAtomic(path string, write func(w io.Writer) error) error {
	return replaceAtomic(path, func(tmp *os.File) error {
		bw := bufio.NewWriter(tmp)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// drawAtomic is writeFileAtomic for writers that take a file name (the
// plots: their format follows the extension, which the temporary file
// keeps).
func drawAtomic(path string, draw func(name string) error) error {
	return replaceAtomic(path, func(tmp *os.File) error { return draw(tmp.Name()) })
}

func replaceAtomic(path string, write func(tmp *os.File) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+strings.TrimSuffix(base, filepath.Ext(base))+".*.tmp"+filepath.Ext(base))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
