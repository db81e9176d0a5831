# Sourced by the capture scripts (scripts/gpu/dist/capture.sh, scripts/gpu/stories/capture.sh):
# `record NAME SECONDS CMD...` runs CMD in $o/NAME while `gpumon record` ($bin) records at 1 s,
# stopped with SIGINT after SECONDS; the job's processes left behind (matching $leftovers: a
# launcher stopped by the timeout) are ended before the next run; the recording stops 3 s after
# the job; then the script's own `after_record NAME` reads what was captured.
record() {
  local name=$1 limit=$2; shift 2
  mkdir -p "$o/$name"
  "$bin" record "$o/$name/recording.ndjson" --interval 1s >"$o/$name/record.out" 2>&1 &
  local rec=$!
  sleep 2
  local t0=$SECONDS
  (cd "$o/$name" && timeout -s INT "$limit" "$@"); echo "exit $? after $((SECONDS - t0))s" >"$o/$name/status.txt"
  pkill -9 -f "$leftovers" 2>/dev/null
  sleep 3
  kill -INT $rec; wait $rec
  after_record "$name"
}
