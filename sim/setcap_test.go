package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SetCap changes a flow's cap from that instant: the bytes it moved at
// the old rate count, the rest go at the new one; a finished flow, or a
// record reused by another flow, is left alone.
func TestSetCap(t *testing.T) {
	e, n, ids, _ := newNet(t, 100*GBps)
	var got *Flow
	var id FlowID
	var done Time
	require.NoError(t, n.Launch(FlowSpec{Label: "r", Route: route(ids[0]), Bytes: 1000_000, Cap: 1 * GBps,
		Started: func(f *Flow) { got, id = f, f.ID }, Done: func() { done = e.Now() }}))
	require.NotNil(t, got)
	// after 500 µs at 1 GB/s (500 kB), 500 kB more at 10 GB/s: 50 µs
	e.After(500*Microsecond, func() {
		ok, err := n.SetCap(got, id, 10*GBps)
		require.NoError(t, err)
		assert.True(t, ok)
	})
	require.NoError(t, e.Run())
	assert.Equal(t, Time(550*Microsecond), done)
	ok, err := n.SetCap(got, id, 5*GBps)
	require.NoError(t, err)
	assert.False(t, ok, "a finished flow")

	_, n2, ids2, _ := newNet(t, 100*GBps)
	var f2 *Flow
	require.NoError(t, n2.Launch(FlowSpec{Label: "x", Route: route(ids2[0]), Bytes: 1, Started: func(f *Flow) { f2 = f }}))
	_, err = n2.SetCap(f2, f2.ID, -1)
	assert.Error(t, err)
}
