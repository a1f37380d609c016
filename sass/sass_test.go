package sass

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A two-source reduction whose second source's second load reuses the
// first load's register: the thread waits once for the first batch, then
// again for the reused register's load. Hand-written in cuobjdump's form.
const twoWaits = `
	code for sm_90
		Function : reduce2
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/                   LDG.E.128 R8, desc[UR4][R2.64+0x200] ;
        /*0030*/                   LDG.E.128 R12, desc[UR4][R20.64] ;
        /*0040*/                   IADD3 R4, R4, R12, RZ ;
        /*0050*/                   LDG.E.128 R12, desc[UR4][R20.64+0x200] ;
        /*0060*/                   IADD3 R8, R8, R12, RZ ;
        /*0070*/                   STG.E.128 desc[UR4][R22.64], R4 ;
        /*0080*/                   STG.E.128 desc[UR4][R22.64+0x200], R8 ;
        /*0090*/               @P0 BRA 0x10 ;
        /*00a0*/                   EXIT ;
		Function : copy1
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   LDG.E.128 R8, desc[UR4][R2.64+0x200] ;
        /*0020*/                   STG.E.128 desc[UR4][R22.64], R4 ;
        /*0030*/                   STG.E.128 desc[UR4][R22.64+0x200], R8 ;
        /*0040*/               @P0 BRA 0x0 ;
        /*0050*/                   EXIT ;
		Function : straight
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   EXIT ;
`

func TestParseAndWaits(t *testing.T) {
	ks, err := Parse(strings.NewReader(twoWaits))
	require.NoError(t, err)
	require.Len(t, ks, 3)
	assert.Equal(t, "reduce2", ks[0].Name)
	assert.Len(t, ks[0].Code, 11)
	assert.Equal(t, "LDG.E.128", ks[0].Code[1].Op)
	assert.Equal(t, []string{"R4", "desc[UR4][R2.64]"}, ks[0].Code[1].Args)

	l, err := ks[0].MainLoop()
	require.NoError(t, err)
	assert.Equal(t, 9, l.Instrs)
	assert.Equal(t, 4, l.Loads)
	assert.Equal(t, 2, l.Stores16)
	assert.InDelta(t, 2, l.Waits, 0.01, "the reused register's load waits for the first batch")

	l, err = ks[1].MainLoop()
	require.NoError(t, err)
	assert.InDelta(t, 1, l.Waits, 0.01, "a copy's loads are in flight together")

	_, err = ks[2].MainLoop()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "straight has no loop")

	// LoopAt: the loop back to an address, as MainLoop finds it where it
	// is the only one
	l, err = ks[0].LoopAt(0x10)
	require.NoError(t, err)
	assert.Equal(t, 9, l.Instrs)
	assert.InDelta(t, 2, l.Waits, 0.01)
	_, err = ks[0].LoopAt(0x20)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reduce2 has no loop back to 0x20")
	_, err = ks[2].LoopAt(0)
	require.Error(t, err)
}

func TestParseRefusesWhatIsNotADump(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"empty":              {"", "no \"Function :\" line"},
		"text":               {"hello\nworld\n", "no \"Function :\" line"},
		"orphan instruction": {"        /*0000*/   LDG.E R4, desc[UR4][R2.64] ;\n", "line 1: an instruction before any"},
		"empty function":     {"\t\tFunction : a\n\t\tFunction : b\n        /*0000*/ EXIT ;\n", "line 2: function a has no instructions"},
		"last empty":         {"\t\tFunction : a\n        /*0000*/ EXIT ;\n\t\tFunction : b\n", "function b has no instructions"},
		"long line":          {"\t\tFunction : a\n" + strings.Repeat("x", maxLine+1) + "\n", "line 2"},
	} {
		_, err := Parse(strings.NewReader(c.in))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(twoWaits)
	f.Add("\t\tFunction : a\n        /*0000*/ @!P0 BRA 0x0 ;\n")
	f.Add(sides)
	f.Add("\t\tFunction : a\n        /*0010*/ LDG.E.128 R2147483647, desc[UR4][R99999999999999.64] ;\n        /*0000*/ BRA 0x10 ;\n")
	f.Fuzz(func(t *testing.T, in string) {
		ks, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, k := range ks {
			require.NotEmpty(t, k.Code)
			if l, err := k.MainLoop(); err == nil {
				require.GreaterOrEqual(t, l.Waits, 0.0)
				require.LessOrEqual(t, l.Loads, l.Instrs)
				for _, src := range []Sources{PlainSources, VolatileSources} {
					s, err := k.MainLoopOn(src)
					require.NoError(t, err, "a loop MainLoop finds has every side")
					require.LessOrEqual(t, s.Instrs, l.Instrs, "a side runs no more than the whole loop")
					require.GreaterOrEqual(t, s.Waits, 0.0)
				}
			}
		}
	})
}
