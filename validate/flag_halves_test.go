package validate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/arsim/arsim/trace"
)

// A record's flags cross the chip's halves where its recorded SMs lie in
// both (h200HalfRuns: SMs 124–131 and 0 in one half, 2–7 in the other):
// flag_sms's two SMs, block_sms's first pair of a one-pair ping-pong, a
// one-group barrier's blocks; SMs not recorded, or host memory, do not.
func TestFlagCrossesHalves(t *testing.T) {
	rec := func(kind trace.Kind, target string, extra map[string]any) trace.Record {
		r := trace.Record{Kind: kind, Target: target, Pairs: 1, Loop: "group_barrier", World: 3, Groups: 1, Extra: map[string]json.RawMessage{}}
		if kind == trace.KindBlockPingpong {
			r.Loop = ""
		}
		for k, v := range extra {
			b, err := json.Marshal(v)
			assert.NoError(t, err)
			r.Extra[k] = b
		}
		return r
	}
	pp, gb := trace.KindBlockPingpong, trace.KindLoop
	assert.Equal(t, 0, h200Half(128))
	assert.Equal(t, 1, h200Half(2))
	assert.True(t, flagCrossesHalves(rec(pp, "local", map[string]any{"sm_a": 128, "sm_b": 2})))
	assert.False(t, flagCrossesHalves(rec(pp, "local", map[string]any{"sm_a": 128, "sm_b": 0})))
	assert.False(t, flagCrossesHalves(rec(pp, "host", map[string]any{"sm_a": 128, "sm_b": 2})), "host flags")
	assert.True(t, flagCrossesHalves(rec(pp, "local", map[string]any{"block_sms": []int{124, 4}})))
	assert.False(t, flagCrossesHalves(rec(pp, "local", map[string]any{"block_sms": []int{124, 126}})))
	assert.False(t, flagCrossesHalves(rec(pp, "local", nil)), "no SMs recorded")
	assert.True(t, flagCrossesHalves(rec(gb, "local", map[string]any{"block_sms": []int{124, 126, 5}})))
	assert.False(t, flagCrossesHalves(rec(gb, "local", map[string]any{"block_sms": []int{124, 126, 128}})))
	assert.False(t, flagCrossesHalves(rec(gb, "local", map[string]any{"block_sms": []int{124, 5}})), "fewer SMs than ranks")
	assert.False(t, flagCrossesHalves(rec(pp, "local", map[string]any{"sm_a": 128, "sm_b": 999})), "an SM the chip lacks")
}
