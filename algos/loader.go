package algos

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// A Loader makes an algorithm from what follows its prefix in an algorithm
// name: "file:ring.xml" asks the loader registered for "file:" for
// "ring.xml". Loaders let schedules that live outside the registry (an
// MSCCL XML file, a design spec) be planned, checked, swept and timed by
// name like the built-in ones.
type Loader func(arg string) (Algorithm, error)

var (
	loadersMu sync.RWMutex
	loaders   = map[string]Loader{}
)

// RegisterLoader adds a loader for names starting with prefix (which ends
// in ':'); it panics on a duplicate or malformed prefix (a bug caught at
// init).
func RegisterLoader(prefix string, l Loader) {
	if !strings.HasSuffix(prefix, ":") || len(prefix) < 2 {
		panic("algos: loader prefix " + prefix + " must be a word ending in ':'")
	}
	loadersMu.Lock()
	defer loadersMu.Unlock()
	if _, dup := loaders[prefix]; dup {
		panic("algos: loader " + prefix + " registered twice")
	}
	loaders[prefix] = l
}

// LoaderPrefixes returns the registered loader prefixes, sorted.
func LoaderPrefixes() []string {
	loadersMu.RLock()
	defer loadersMu.RUnlock()
	out := make([]string, 0, len(loaders))
	for p := range loaders {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// load finds the loader for name's prefix; ok is false when none matches.
func load(name string) (a Algorithm, ok bool, err error) {
	prefix, arg, found := strings.Cut(name, ":")
	if !found {
		return nil, false, nil
	}
	loadersMu.RLock()
	l, ok := loaders[prefix+":"]
	loadersMu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	if arg == "" {
		return nil, true, fmt.Errorf("algos: %q names no file after %s", name, prefix+":")
	}
	a, err = l(arg)
	return a, true, err
}

// SizeUnit is implemented by algorithms that only take message sizes that
// are a multiple of some unit (an MSCCL schedule splits the buffer into a
// fixed number of chunks); callers that pick sizes (arsim check) round up
// to it.
type SizeUnit interface {
	// Unit returns the size unit in bytes for elements of elem bytes.
	Unit(elem int64) int64
}
