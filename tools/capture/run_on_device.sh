#!/bin/bash
# Run by the device tool from the repository root:  bash tools/capture/run_on_device.sh [capture args…]
# Works in /tmp/arsim_capture, stops the capture itself before the tool's limit (CAPTURE_TIMEOUT_S,
# default 540 s), then packs everything into at most 4 files under $OUT:
#   measurements.jsonl (merged, valid v1 records), raw.tar.gz (raw jsonl + errors), system.tar.gz, run.log
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-./out}
W=/tmp/arsim_capture
rm -rf "$W"; mkdir -p "$W" "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
date -u +%Y-%m-%dT%H:%M:%SZ > "$W/started_utc.txt"
echo "args: $*" >> "$W/started_utc.txt"
timeout -s INT -k 20 "${CAPTURE_TIMEOUT_S:-540}" python3 "$HERE/capture.py" --out "$W" "$@" 2>&1 | tee "$OUT/run.log"
echo "capture exit: ${PIPESTATUS[0]}" | tee -a "$OUT/run.log"
# merge again (a timed-out run still has its flushed raw records)
SYSID=$(printf '%s\n' "$@" | grep -A1 -x -- --system-id | tail -1)
python3 "$HERE/capture.py" --out "$W" ${SYSID:+--system-id "$SYSID"} merge 2>&1 | tail -3 | tee -a "$OUT/run.log"
cp "$W/measurements.jsonl" "$OUT/" 2>/dev/null
mkdir -p "$W/system"; cp -r "$W/nccl_logs" "$W/system/" 2>/dev/null; cp "$W/started_utc.txt" "$W/system/"
(cd "$W" && tar czf "$OUT/system.tar.gz" system)
(cd "$W" && tar czf "$OUT/raw.tar.gz" $(ls *.jsonl | grep -v '^measurements.jsonl$'))
ls -la "$OUT"
for f in "$W"/*.errors.jsonl; do [ -s "$f" ] && { echo "== $f"; cut -c1-300 "$f" | head -20; }; done
python3 "$HERE/validate.py" "$OUT/measurements.jsonl"
