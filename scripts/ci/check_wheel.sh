#!/usr/bin/env bash
# CI: builds the wheel (scripts/build_wheel.sh), checks its metadata and manylinux tag, installs it
# into a fresh virtual environment without the network, and runs gpumon from there. One line per
# step, then `wheel: N passed, M failed`; exits 1 if any step failed. Tools come from PyPI only.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
tools=${GPUMON_WHEEL_TOOLS:-target/wheel-tools}
export GPUMON_WHEEL_TOOLS=$tools
log=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$work" "$log"' EXIT

prefix=wheel
# shellcheck source=scripts/ci/steps.sh
source scripts/ci/steps.sh

# Debian's own python3 needs python3-venv for `python3 -m venv`; install it where it is missing.
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  echo "wheel: installing python3-venv (python3 -m venv needs ensurepip)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
fi

cargo_version=$(cargo metadata --no-deps --format-version 1 --offline |
  python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "gpumon"))')

build() { scripts/build_wheel.sh "$work/dist"; }
step "build the wheel, versions agree with Cargo.toml $cargo_version" build
wheel=$(ls "$work"/dist/gpumon_tui-*.whl 2>/dev/null)
[ -n "$wheel" ] || { summary; exit 1; }
echo "wheel: built $(basename "$wheel")"

contents() {
  local listing expected
  listing=$(unzip -Z1 "$wheel")
  expected=$(cd python && find gpumon -name '*.py' | sort)
  for f in $expected "gpumon_tui-${wheel_version}.data/scripts/gpumon"; do
    grep -qxF "$f" <<<"$listing" || { echo "missing from the wheel: $f"; return 1; }
  done
  echo "$listing"
}
wheel_version=$(basename "$wheel" | cut -d- -f2)
step "wheel holds the binary and every python/gpumon/**/*.py" contents
# grep reads the whole METADATA (no -q): an early exit would break unzip's pipe under pipefail.
dist_name() { unzip -p "$wheel" "gpumon_tui-${wheel_version}.dist-info/METADATA" | grep -x 'Name: gpumon-tui' >/dev/null; }
step "the distribution is gpumon-tui (PyPI's gpumon is another project)" dist_name

"$tools/bin/pip" install -q --disable-pip-version-check twine==7.0.0 auditwheel==6.8.2 >"$log" 2>&1 ||
  { echo "wheel: FAIL installing twine and auditwheel"; cat "$log"; failed=$((failed + 1)); }
step "twine check --strict" "$tools/bin/twine" check --strict "$wheel"
manylinux() {
  "$tools/bin/auditwheel" show "$wheel" | tee /dev/stderr | tr -s ' \n' ' ' | grep -E 'consistent with the following platform tag: "manylinux_2_17_x86_64"' >/dev/null
}
step "auditwheel show: manylinux_2_17_x86_64 (manylinux2014)" manylinux

venv=$work/venv
fresh_venv() { python3 -m venv "$venv" && "$venv/bin/pip" install --no-index --disable-pip-version-check "$wheel"; }
step "fresh venv (python3 -m venv), pip install --no-index the wheel" fresh_venv

on_path() { [ "$(PATH="$venv/bin:$PATH" command -v gpumon)" = "$venv/bin/gpumon" ]; }
step "gpumon is on the venv's PATH" on_path
version() { [ "$("$venv/bin/gpumon" --version)" = "gpumon $cargo_version" ]; }
step "gpumon --version is gpumon $cargo_version" version
replay() {
  "$venv/bin/gpumon" snapshot --replay assets/demo.ndjson --format text | tee /dev/stderr | grep -E '^0 +NVIDIA H100' >/dev/null
}
step "gpumon snapshot --replay assets/demo.ndjson --format text shows GPU0" replay
py_help() { "$venv/bin/python" -m gpumon --help | grep '^Usage: gpumon' >/dev/null; }
step "python -m gpumon --help" py_help
py_version() { [ "$("$venv/bin/python" -m gpumon --version)" = "gpumon $cargo_version" ]; }
step "python -m gpumon --version" py_version
py_package_version() { [ "$("$venv/bin/python" -c 'import gpumon; print(gpumon.__version__)')" = "$cargo_version" ]; }
step "gpumon.__version__ is $cargo_version" py_package_version
no_nvml() {
  local rc=0 out
  # `script` gives gpumon a terminal, as a user's shell would; the NVML library cannot be found.
  out=$(GPUMON_NVML_LIB=/nonexistent/libnvidia-ml.so.1 script -qec "$(printf %q "$venv/bin/gpumon")" /dev/null </dev/null) || rc=$?
  echo "$out"
  [ "$rc" -eq 2 ] && grep -q 'NVML library not found' <<<"$out" && grep -q 'gpumon --demo' <<<"$out"
}
step "gpumon without NVML: exit 2, no-GPU message naming --demo" no_nvml

summary
