package main

import (
	"sort"
	"strings"

	"github.com/arsim/arsim/algos"
)

// parseOpts reads "k=v,k=v" algorithm options. NCCL's variables may be
// given in NCCL's spelling, lists included (NCCL_PROTO=LL,Simple: a part
// without '=' continues the value before it); they are translated to the
// short options here, once, before anything is planned
// (algos.TranslateNCCLEnv).
func parseOpts(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	last := ""
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok && last != "" && strings.HasPrefix(strings.ToUpper(last), "NCCL_") {
			out[last] += "," + strings.TrimSpace(kv)
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, badInputf("option %q: want key=value (e.g. proto=ll,channels=2 or NCCL_P2P_LEVEL=SYS,NCCL_PROTO=LL,Simple)", kv)
		}
		if _, dup := out[k]; dup {
			return nil, badInputf("option %s given twice", k)
		}
		out[k], last = v, k
	}
	o, err := algos.TranslateNCCLEnv(out)
	if err != nil {
		return nil, badInputf("--opts: %v", strings.TrimPrefix(err.Error(), "algos: "))
	}
	return o, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
