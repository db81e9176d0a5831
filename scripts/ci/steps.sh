# Sourced by the CI check scripts: `step NAME COMMAND...` runs COMMAND with its output in $log and
# prints one line ("$prefix: ok   NAME (Ns)"), the output's tail on failure; `summary` prints the
# counts and fails if any step did. The caller sets `prefix` and `log`.
passed=0
failed=0

step() {
  local name=$1 start=$SECONDS
  shift
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "$prefix: ok   $name ($((SECONDS - start))s)"
  else
    failed=$((failed + 1))
    echo "$prefix: FAIL $name"
    tail -n 20 "$log" | sed "s/^/$prefix:      | /"
  fi
}

summary() {
  echo "$prefix: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
