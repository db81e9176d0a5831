#!/usr/bin/env bash
# CI: the release artifacts besides the wheel (issue 20), each built and then installed or
# unpacked into a scratch root and run from there:
#   - the glibc-2.17 binary the wheel script builds with zig (scripts/build_wheel.sh; cargo's cache
#     makes this second call cheap), taken out of the wheel;
#   - gpumon_VERSION-1_amd64.deb by cargo-deb (Cargo.toml [package.metadata.deb]): the binary, the
#     man pages (gpumon.1 and one per subcommand) and shell completions gpumon writes, the
#     systemd unit for `serve`, README;
#   - gpumon-VERSION-x86_64-linux.tar.gz with the same files (the man pages under man/);
#   - `cargo package --locked`: the crate builds from what it ships, no test fixtures in it.
# Everything is written under target/ (release-packages/ or RELEASE_OUT, pkg-stage/, package/,
# release-tools/ for cargo-deb); nothing into the checkout.
# One line per step, then `release: N passed, M failed`; exits 1 if any step failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${RELEASE_OUT:-target/release-packages}
tools=${GPUMON_RELEASE_TOOLS:-target/release-tools}
log=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" "$log"' EXIT

prefix=release
# shellcheck source=scripts/ci/steps.sh
source scripts/ci/steps.sh

version=$(cargo metadata --no-deps --format-version 1 --offline |
  python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "gpumon"))')
stage=target/pkg-stage   # Cargo.toml's [package.metadata.deb] assets are read from here
rm -rf "$out" "$stage"
mkdir -p "$out" "$stage/completions" "$stage/man"

binary() {
  local wheel
  wheel=$(scripts/build_wheel.sh "$out/wheel" | tail -n 1) || return 1
  unzip -q -o -d "$scratch/wheel" "$wheel" '*.data/scripts/gpumon' &&
    install -m 755 "$scratch"/wheel/*.data/scripts/gpumon "$stage/gpumon" &&
    rm -rf "$out/wheel"
  # The newest glibc symbol it needs is 2.17's at most (manylinux2014).
  local newest
  newest=$(objdump -T "$stage/gpumon" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
  echo "newest glibc symbol: $newest"
  [ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -n 1)" = GLIBC_2.17 ] || return 1
  # No packed relative relocations (build.rs asks for them only for the build machine's own
  # glibc, 2.36 or newer): an older glibc's loader refuses them.
  if readelf -d "$stage/gpumon" | grep -q '(RELR)'; then echo "packed relocations (DT_RELR)"; return 1; fi
  # zig's linker took build.rs's script: the functions the screen runs open the code (.text.hot).
  local hot
  hot=$(objdump -h "$stage/gpumon" | awk '$2 == ".text.hot" {print $3}')
  echo "packed functions (.text.hot): $((16#${hot:-0})) bytes"
  [ "$((16#${hot:-0}))" -gt 500000 ]
}
step "the glibc-2.17 binary of the wheel build (zig)" binary
[ -x "$stage/gpumon" ] || { summary; exit 1; }

files() {
  # Every page, gpumon.1 and one per subcommand; each subcommand's must be there.
  "$stage/gpumon" man "$stage/man" && gzip -9nf "$stage"/man/*.1 && chmod 644 "$stage"/man/*.1.gz &&
    for page in gpumon gpumon-explain gpumon-diff gpumon-serve gpumon-probe-env; do
      [ -s "$stage/man/$page.1.gz" ] || { echo "no man page $page.1"; return 1; }
    done &&
    "$stage/gpumon" completions bash >"$stage/completions/gpumon.bash" &&
    "$stage/gpumon" completions zsh >"$stage/completions/_gpumon" &&
    "$stage/gpumon" completions fish >"$stage/completions/gpumon.fish" &&
    # Packaged, the binary is /usr/bin/gpumon; the unit in assets/ names /usr/local/bin's.
    sed 's|/usr/local/bin/gpumon|/usr/bin/gpumon|g' assets/systemd/gpumon-serve.service \
      >"$stage/gpumon-serve.service" &&
    grep -q '^ExecStart=/usr/bin/gpumon serve ' "$stage/gpumon-serve.service" &&
    [ -s "$stage/completions/gpumon.bash" ] && zcat "$stage/man/gpumon.1.gz" | grep '^\.TH gpumon' >/dev/null &&
    zcat "$stage/man/gpumon.1.gz" | grep -q '^\.SH KEYS' &&
    zcat "$stage/man/gpumon-explain.1.gz" | grep -q '^\.SH "EXIT STATUS"'
}
step "man pages, bash/zsh/fish completions and the packaged systemd unit" files

cargo_deb() {
  if [ ! -x "$tools/bin/cargo-deb" ]; then
    cargo install cargo-deb --version 3.8.0 --locked --root "$tools" || return 1
  fi
  "$tools/bin/cargo-deb" --no-build --no-strip --locked --offline --output "$out/gpumon_${version}-1_amd64.deb"
}
step "cargo-deb builds gpumon_${version}-1_amd64.deb" cargo_deb
deb=$out/gpumon_${version}-1_amd64.deb

deb_installs() {
  local root=$scratch/deb-root
  dpkg-deb --info "$deb" && dpkg-deb --contents "$deb" || return 1
  dpkg -x "$deb" "$root" || return 1
  for f in usr/bin/gpumon lib/systemd/system/gpumon-serve.service \
    usr/share/bash-completion/completions/gpumon usr/share/zsh/vendor-completions/_gpumon \
    usr/share/fish/vendor_completions.d/gpumon.fish usr/share/doc/gpumon/README.md; do
    [ -f "$root/$f" ] || { echo "missing from the package: $f"; return 1; }
  done
  for page in "$stage"/man/*.1.gz; do
    [ -f "$root/usr/share/man/man1/${page##*/}" ] || { echo "missing from the package: ${page##*/}"; return 1; }
  done
  [ "$("$root/usr/bin/gpumon" --version)" = "gpumon $version" ] &&
    "$root/usr/bin/gpumon" snapshot --replay assets/demo.ndjson --format text | grep -E '^0 +NVIDIA H100' >/dev/null
}
step "the .deb unpacks into a scratch root (dpkg -x) and its gpumon runs" deb_installs

archive_name=gpumon-${version}-x86_64-linux
archive() {
  local dir=$scratch/$archive_name
  mkdir -p "$dir/completions" "$dir/systemd" "$dir/man" &&
    cp "$stage/gpumon" README.md "$dir/" &&
    cp "$stage"/man/*.1.gz "$dir/man/" &&
    cp "$stage"/completions/* "$dir/completions/" &&
    cp assets/systemd/gpumon-serve.service "$dir/systemd/" &&
    tar -C "$scratch" --owner=0 --group=0 --sort=name -czf "$out/$archive_name.tar.gz" "$archive_name"
}
step "$archive_name.tar.gz" archive

archive_runs() {
  local root=$scratch/unpacked
  mkdir -p "$root" && tar -C "$root" -xzf "$out/$archive_name.tar.gz" || return 1
  for f in gpumon man/gpumon.1.gz man/gpumon-explain.1.gz README.md completions/gpumon.bash \
    completions/_gpumon completions/gpumon.fish systemd/gpumon-serve.service; do
    [ -f "$root/$archive_name/$f" ] || { echo "missing from the archive: $f"; return 1; }
  done
  [ "$("$root/$archive_name/gpumon" --version)" = "gpumon $version" ]
}
step "the archive unpacks and its gpumon runs" archive_runs

crate() {
  local listing
  # --allow-dirty: a developer's uncommitted changes are what is being checked (CI's clone is
  # clean, and .ci/run checks that the tree stays so).
  cargo package --locked --allow-dirty &&
    listing=$(cargo package --locked --allow-dirty --list) || return 1
  echo "$listing"
  ! grep -qE '^(tests|benches|scripts|docs)/' <<<"$listing" && grep -qx assets/demo.ndjson.zst <<<"$listing" &&
    grep -qx assets/hot-text.ld <<<"$listing" && grep -qx build.rs <<<"$listing"
}
step "cargo package --locked: the crate builds from what it ships (no tests or fixtures)" crate

ls -l "$out"/*.deb "$out"/*.tar.gz 2>/dev/null | sed 's/^/release: /'
summary
