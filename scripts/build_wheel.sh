#!/usr/bin/env bash
# Builds the gpumon wheel (the binary plus python/gpumon) for manylinux2014 (glibc 2.17+) on this
# machine's architecture, linking with zig so the binary runs on older distributions than the one
# it was built on. Usage: scripts/build_wheel.sh [OUT_DIR]   (default target/wheels)
# Checks that Cargo.toml's version, the wheel's (file name and METADATA) and the packaged binary's
# `gpumon --version` agree, and fails if not. Progress goes to stderr; the last line on stdout is
# the wheel's path. maturin and zig come from PyPI into target/wheel-tools (GPUMON_WHEEL_TOOLS).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/wheels}
tools=${GPUMON_WHEEL_TOOLS:-target/wheel-tools}
# Absolute: zig is called by C build scripts (ring's, for TLS) from their own directories.
case $tools in /*) ;; *) tools=$PWD/$tools ;; esac
say() { echo "build_wheel: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

if ! "$tools/bin/python" -c 'import ziglang' 2>/dev/null || [ ! -x "$tools/bin/maturin" ]; then
  say "installing maturin and zig from PyPI into $tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check maturin==1.16.0 ziglang==0.17.1
fi

cargo_version=$(cargo metadata --no-deps --format-version 1 --offline | "$tools/bin/python" -c \
  'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "gpumon"))')
# The wheel carries the PEP 440 spelling of Cargo's version (0.2.0-rc.1 -> 0.2.0rc1).
python_version=$("$tools/bin/python" -c \
  'import sys; from pip._vendor.packaging.version import Version; print(Version(sys.argv[1]))' "$cargo_version")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "building gpumon $cargo_version (cargo build --release through maturin, zig linker)"
PATH="$tools/bin:$PATH" maturin build --release --locked --zig --compatibility manylinux2014 \
  --out "$work/dist" >&2
wheels=("$work"/dist/*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] || die "expected one wheel, got: ${wheels[*]}"
wheel=${wheels[0]}
name=$(basename "$wheel")

file_version=$(echo "$name" | cut -d- -f2)
dist=$(echo "$name" | cut -d- -f1)  # gpumon_tui: the distribution gpumon-tui, normalised
meta_version=$(unzip -p "$wheel" "$dist-$file_version.dist-info/METADATA" | sed -n 's/^Version: //p')
unzip -q -d "$work/unpacked" "$wheel" "$dist-$file_version.data/scripts/gpumon"
binary="$work/unpacked/$dist-$file_version.data/scripts/gpumon"
chmod +x "$binary"
binary_version=$("$binary" --version)

say "versions: Cargo.toml $cargo_version, wheel file $file_version, METADATA $meta_version, binary '$binary_version'"
[ "$file_version" = "$python_version" ] || die "wheel file name version $file_version != Cargo.toml $cargo_version ($python_version)"
[ "$meta_version" = "$python_version" ] || die "METADATA version $meta_version != Cargo.toml $cargo_version ($python_version)"
[ "$binary_version" = "gpumon $cargo_version" ] || die "binary says '$binary_version', Cargo.toml $cargo_version"

mkdir -p "$out"
mv -f "$wheel" "$out/$name"
say "built $out/$name"
echo "$out/$name"
