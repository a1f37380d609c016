package trace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// openFirst opens the first of paths that exists, for the files a
// capture keeps beside its trace; (nil, "", nil) when none does.
func openFirst(paths ...string) (*os.File, string, error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("trace: %w", err)
		}
		return f, p, nil
	}
	return nil, "", nil
}
