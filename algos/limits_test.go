package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
)

// Every integer option of every algorithm has a finite limit, so that no
// number on a command line can ask for unbounded work.
func TestEveryIntegerOptionIsBounded(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	for _, name := range Names() {
		a, _ := Lookup(name)
		for _, o := range a.Options() {
			if o.Values != nil {
				continue
			}
			lo, hi, why := o.Int.bounds(top)
			assert.Greater(t, hi, 0, "%s: option %s has no limit", name, o.Name)
			assert.GreaterOrEqual(t, hi, lo, "%s: option %s", name, o.Name)
			assert.NotEmpty(t, why, "%s: option %s does not say what its limit is", name, o.Name)
			assert.Error(t, o.check("1000000000000000000000", top), "%s: option %s takes a number beyond int", name, o.Name)
			assert.Error(t, o.check("NaN", top), "%s: option %s", name, o.Name)
		}
	}
}

func TestValidateOptionsAcrossAlgorithms(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	cases := []struct {
		names []string
		opts  map[string]string
		want  string // "" for valid
	}{
		{[]string{"ring", "one_stage"}, map[string]string{"proto": "ll", "blocks": "4"}, ""},
		{[]string{"one_stage"}, map[string]string{"nosuchkey": "1"}, `option "nosuchkey" is taken by none of the algorithms run (one_stage); their options: barrier, blocks, end_release, load_waits, rank_loop, start_release, threads`},
		{[]string{"ring", "one_stage"}, map[string]string{"proto": "bogus"}, `ring: option proto="bogus" is not one of ll, ll128, simple`},
		{[]string{"ring", "tree", "nccl"}, map[string]string{"channels": "65"}, `option channels=65: 65 is above the limit 64 (NCCL's MAXCHANNELS)`},
		{[]string{"nccl"}, map[string]string{"nthreads": "96"}, ""},
		{[]string{"nccl"}, map[string]string{"nthreads": "100"}, "100 is not a multiple of 32"},
		{[]string{"two_stage", "one_stage"}, map[string]string{"threads": "0"}, "0 is below the minimum 1"},
	}
	for _, c := range cases {
		err := ValidateOptions(c.names, top, c.opts)
		if c.want == "" {
			assert.NoError(t, err, "%v %v", c.names, c.opts)
			continue
		}
		assert.ErrorContains(t, err, c.want, "%v %v", c.names, c.opts)
	}
	assert.Equal(t, map[string]string{"proto": "ll"}, OptionsFor("ring", map[string]string{"proto": "ll", "blocks": "4"}))
}
