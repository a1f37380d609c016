package sass

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A two-source copy that picks each source's loads by a flag, as
// tools/capture's pb_copy_U_S does (P0 the first source's, P1 the
// second's). On the plain side the second source's first load reuses the
// register of a load issued before it, which waits; on the volatile side
// all four loads are in flight at once. Hand-written in cuobjdump's form.
const sides = `
		Function : copy2_flags
        /*0000*/                   ISETP.NE.AND P0, PT, RZ, UR8, PT ;
        /*0010*/               @P0 LDG.E.128.STRONG.SYS R4, desc[UR4][R2.64] ;
        /*0020*/               @P0 LDG.E.128.STRONG.SYS R8, desc[UR4][R2.64+0x200] ;
        /*0030*/               @P1 LDG.E.128.STRONG.SYS R12, desc[UR4][R20.64] ;
        /*0040*/               @P1 LDG.E.128.STRONG.SYS R16, desc[UR4][R20.64+0x200] ;
        /*0050*/              @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0060*/              @!P0 LDG.E.128 R8, desc[UR4][R2.64+0x200] ;
        /*0070*/              @!P1 IADD3 R24, R4, 0x1, RZ ;
        /*0080*/              @!P1 LDG.E.128 R12, desc[UR4][R24.64] ;
        /*0090*/              @!P1 LDG.E.128 R16, desc[UR4][R20.64+0x200] ;
        /*00a0*/                   IADD3 R4, R4, R12, RZ ;
        /*00b0*/                   IADD3 R8, R8, R16, RZ ;
        /*00c0*/                   STG.E.128 desc[UR4][R22.64], R4 ;
        /*00d0*/                   STG.E.128 desc[UR4][R22.64+0x200], R8 ;
        /*00e0*/                   ISETP.LE.AND P1, PT, R0, UR4, PT ;
        /*00f0*/              @!P1 BRA 0x0 ;
        /*0100*/                   EXIT ;
`

func TestMainLoopOnASide(t *testing.T) {
	ks, err := Parse(strings.NewReader(sides))
	require.NoError(t, err)
	k := ks[0]
	assert.Equal(t, "P0", k.Code[1].Guard)
	assert.Equal(t, "!P1", k.Code[7].Guard)
	assert.Equal(t, "", k.Code[10].Guard)
	assert.Equal(t, "IADD3", k.Code[7].Op, "the guard is not part of the opcode")

	all, err := k.MainLoop()
	require.NoError(t, err)
	assert.Equal(t, 8, all.Loads, "MainLoop counts both sides' loads")

	plain, err := k.MainLoopOn(PlainSources)
	require.NoError(t, err)
	assert.Equal(t, 4, plain.Loads)
	assert.Equal(t, 2, plain.Stores16)
	assert.InDelta(t, 2, plain.Waits, 0.01, "the plain side's reused register waits for the first source")

	vol, err := k.MainLoopOn(VolatileSources)
	require.NoError(t, err)
	assert.Equal(t, 4, vol.Loads)
	assert.InDelta(t, 1, vol.Waits, 0.01, "the volatile side's loads are in flight together")
	assert.Equal(t, all, mustLoop(t, k, AnySources))

	// the first source volatile, the second plain (a copy from host
	// memory): the second source's load still waits
	mixed, err := k.MainLoopGuarded(map[string]bool{"P0": true, "P1": false})
	require.NoError(t, err)
	assert.Equal(t, 4, mixed.Loads)
	assert.InDelta(t, 2, mixed.Waits, 0.01)

	// a loop without guarded loads is the same on every side
	plainCopy, err := Parse(strings.NewReader(twoWaits))
	require.NoError(t, err)
	assert.Equal(t, mustLoop(t, plainCopy[0], AnySources), mustLoop(t, plainCopy[0], VolatileSources))
	assert.Equal(t, "volatile", VolatileSources.String())
	assert.Equal(t, "plain", PlainSources.String())
	assert.Equal(t, "any", AnySources.String())

	_, err = ks[0].MainLoopGuarded(nil)
	require.NoError(t, err)
	straight, err := Parse(strings.NewReader("Function : f\n /*0000*/ EXIT ;\n"))
	require.NoError(t, err)
	_, err = straight[0].MainLoopOn(PlainSources)
	require.Error(t, err)
	_, err = straight[0].MainLoopGuarded(nil)
	require.Error(t, err)
}

// A predicate that guards loads of both kinds with the same sign takes
// neither value: its instructions count on either side.
func TestMainLoopOnAmbiguousGuard(t *testing.T) {
	const dump = `
		Function : both
        /*0000*/               @P2 LDG.E.128.STRONG.SYS R4, desc[UR4][R2.64] ;
        /*0010*/               @P2 LDG.E.128 R8, desc[UR4][R2.64+0x200] ;
        /*0020*/                   STG.E.128 desc[UR4][R22.64], R4 ;
        /*0030*/                   BRA 0x0 ;
`
	ks, err := Parse(strings.NewReader(dump))
	require.NoError(t, err)
	for _, src := range []Sources{PlainSources, VolatileSources} {
		l := mustLoop(t, ks[0], src)
		assert.Equal(t, 2, l.Loads, src.String())
	}
}

func mustLoop(t *testing.T, k Kernel, src Sources) Loop {
	t.Helper()
	l, err := k.MainLoopOn(src)
	require.NoError(t, err)
	return l
}
