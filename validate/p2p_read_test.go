package validate

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/trace"
)

// NCCL's P2P read on two H200s, predicted before any capture of it: the
// Simple records of nccl_channels.jsonl over NVLink (write, NCCL's
// default on sm90) timed again with NCCL_P2P_READ_ENABLE=1. The model's
// receive loop then pulls the peer's FIFO and its own input in one loop
// and waits its round trip to the peer, where the send loop pushed over
// NVLink with posted stores. Written down (docs/PER_BLOCK.md, "NCCL's
// P2P read"): ring/Simple ×0.866–1.021 of write at 1–8 channels and
// 128 KiB–32 MiB (7.6–13.4 % faster at 8–32 MiB), tree/Simple 1.9–11.1 %
// slower. The bounds below hold the
// written prediction; a change of the model that moves it fails here,
// and the docs must say so before a capture can test it.
func TestP2PReadPredictionOnTwoH200s(t *testing.T) {
	const file = "../testdata/h200x2-arsim/nccl_channels.jsonl"
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var write, read []trace.Record
	for _, r := range recs {
		if r.Transport != "p2p" || r.Proto != "simple" || r.Bytes < 128<<10 {
			continue
		}
		write = append(write, r)
		rd := r
		rd.NCCLEnv = maps.Clone(r.NCCLEnv)
		rd.NCCLEnv["NCCL_P2P_READ_ENABLE"] = "1"
		read = append(read, rd)
	}
	require.Len(t, write, 40, "ring and tree × 4 channel caps × 5 sizes")
	vw, err := Run(write, Options{File: file})
	require.NoError(t, err)
	vr, err := Run(read, Options{File: file})
	require.NoError(t, err)
	require.Len(t, vw.Records, len(write))
	require.Len(t, vr.Records, len(read))
	for i, r := range write {
		w, rd := vw.Records[i], vr.Records[i]
		require.Equal(t, w.Line, rd.Line)
		ratio := rd.Predicted / w.Predicted
		t.Logf("%s/simple, %d channel(s), %9d B: measured (write) %7.1f µs, model write %7.1f (%+5.1f %%), read %7.1f (×%.3f)",
			r.Algo, r.MaxChannels, r.Bytes, w.Measured, w.Predicted, w.ErrorPct, rd.Predicted, ratio)
		switch r.Algo {
		case "ring":
			assert.GreaterOrEqual(t, ratio, 0.86, "line %d", r.Line)
			assert.LessOrEqual(t, ratio, 1.025, "line %d", r.Line)
			if r.Bytes >= 8<<20 {
				assert.Less(t, ratio, 0.93, "line %d: read 7 %% or more faster at 8–32 MiB", r.Line)
			}
		case "tree":
			assert.GreaterOrEqual(t, ratio, 1.015, "line %d", r.Line)
			assert.LessOrEqual(t, ratio, 1.115, "line %d", r.Line)
		default:
			t.Fatalf("line %d: unexpected algorithm %q", r.Line, r.Algo)
		}
	}
}

// A record of a run that set NCCL_P2P_READ_ENABLE=1 but whose NCCL log
// shows no connection reading (tools/capture's p2p_read_logged false) is
// skipped with the reason: what ran is not what it names. One whose log
// shows reading is simulated in read mode, its group saying so.
func TestP2PReadRecordsSayWhetherNCCLRead(t *testing.T) {
	const rec = `{"system": "h200x2-vm", "kind": "allreduce", "clock": "device_events", "launch": "cudagraph", "world": 2, "dtype": "bf16", "bytes": 8388608, "impl": "nccl", "algo": "ring", "proto": "simple", "transport": "p2p", "us": 120.0, "iters": 10, "ops_per_graph": 20, "nccl_env": {"NCCL_MAX_NCHANNELS": "4", "NCCL_P2P_READ_ENABLE": "1"}, "max_channels": 4, "p2p_read_logged": %s}`
	recs, bad, err := trace.ReadJSONL(strings.NewReader(fmt.Sprintf(rec, "false")+"\n"+fmt.Sprintf(rec, "true")+"\n"), "read.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	v, err := Run(recs, Options{File: "read.jsonl"})
	require.NoError(t, err)
	require.Len(t, v.Skipped, 1)
	assert.Equal(t, 1, v.Skipped[0].Line)
	assert.Contains(t, v.Skipped[0].Reason, "no connection in P2P read mode")
	require.Len(t, v.Records, 1)
	assert.Contains(t, v.Records[0].Group, "p2p_read=on")
}
