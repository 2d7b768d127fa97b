#!/usr/bin/env bash
# Makes the portable bundle for a rented GPU machine (docs/gpu.md):
#   tools/bundle.sh [BUILD_DIR [OUT_DIR]]      (defaults: ./build and BUILD_DIR)
# writes OUT_DIR/daybreak-<version>-linux-<arch>.tar.gz holding
#   daybreak, bench_train       launchers (sh): find lib/ next to themselves, through symlinks
#   bin/daybreak, bin/bench_train
#   lib/                        every shared library the two need, found with ldd, except the C
#                               library's own (the files of Debian's libc6 package) and drivers
#   lib/gcc/                    libstdc++ and libgcc_s: used only where the system's libstdc++
#                               lacks a symbol version the bundle needs
#   README.md                   what to copy and run, the minimum glibc (from symbol versions)
#   MANIFEST.txt                every file with its sha256 and the Debian package it came from
# Prints the tarball's path, size and the glibc requirement. Needs ldd, objdump, dpkg-query.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build}
programs=(daybreak bench_train)

die() { echo "bundle: $*" >&2; exit 1; }
for p in "${programs[@]}"; do [ -x "$build/$p" ] || die "$build/$p is missing: build first (cmake --build $build)"; done
for t in ldd objdump dpkg-query sha256sum tar; do command -v "$t" >/dev/null || die "$t not found"; done

version=$("$build/daybreak" --version | awk '{print $NF}')
[ -n "$version" ] || die "cannot read the version from $build/daybreak --version"
name=daybreak-$version-linux-$(uname -m)
stage=$(mktemp -d "${TMPDIR:-/tmp}/dbk-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
dir=$stage/$name
mkdir -p "$dir/bin" "$dir/lib/gcc"

# The C library is whatever the libc6 package installs (libc, libm, ld-linux, libpthread, ...):
# the target machine has its own, and a copied one would not match its loader.
mapfile -t libc_files < <(dpkg-query -L libc6 | grep -E '\.so(\.[0-9]+)*$' | xargs -n1 basename | sort -u)
is_libc() { local b; b=$(basename "$1"); for f in "${libc_files[@]}"; do [ "$f" = "$b" ] && return 0; done; return 1; }
gcc_runtime='^lib(stdc\+\+|gcc_s)\.so'

for p in "${programs[@]}"; do cp "$build/$p" "$dir/bin/"; done
declare -A seen=()
for p in "${programs[@]}"; do
  # ldd resolves the whole dependency tree (OpenBLAS -> gfortran -> quadmath, CLBlast -> libstdc++).
  # "<needed name> => <path> (address)": the file is stored under the name the loader asks for.
  while read -r b lib; do
    [ -n "$lib" ] || continue
    is_libc "$lib" && continue
    [ -n "${seen[$b]:-}" ] && continue
    seen[$b]=$lib
    if [[ $b =~ $gcc_runtime ]]; then dest=$dir/lib/gcc; else dest=$dir/lib; fi
    cp -L "$lib" "$dest/$b"
  done < <(ldd "$build/$p" | awk '/=>/ && $3 ~ /^\// {print $1, $3}')
done
[ ${#seen[@]} -gt 0 ] || die "ldd found no libraries to bundle"
unresolved=$(ldd "$build/daybreak" "$build/bench_train" | grep 'not found' || true)
[ -z "$unresolved" ] || die "unresolved libraries: $unresolved"

# Highest symbol version of a family (GLIBC, GLIBCXX, CXXABI) that the files given need.
max_version() {
  local family=$1; shift
  objdump -T "$@" 2>/dev/null | grep -oE "\(${family}_[0-9.]+\)" | tr -d '()' | sed "s/^${family}_//" | sort -uV | tail -1
}
glibc=$(max_version GLIBC "$dir"/bin/* "$dir"/lib/*.so*)
glibc_gcc=$(max_version GLIBC "$dir"/lib/gcc/*.so*)
glibcxx=$(max_version GLIBCXX "$dir"/bin/* "$dir"/lib/*.so*)
cxxabi=$(max_version CXXABI "$dir"/bin/* "$dir"/lib/*.so*)
[ -n "$glibc" ] && [ -n "$glibcxx" ] && [ -n "$cxxabi" ] || die "no GLIBC/GLIBCXX/CXXABI symbol versions found (objdump failed?)"
[ -n "$glibc_gcc" ] || glibc_gcc=$glibc
# The bundled libstdc++ (used only on systems whose own is too old) may need a newer glibc.
glibc_gcc=$(printf '%s\n%s\n' "$glibc" "$glibc_gcc" | sort -V | tail -1)

launcher() {
  sed -e "s/@PROGRAM@/$1/g" -e "s/@GLIBC@/$glibc/g" -e "s/@GLIBC_GCC@/$glibc_gcc/g" -e "s/@GLIBCXX@/$glibcxx/g" -e "s/@CXXABI@/$cxxabi/g" \
    "$root/tools/bundle/launcher.sh" >"$dir/$1"
  chmod 755 "$dir/$1"
}
for p in "${programs[@]}"; do launcher "$p"; done

libs_list=$(cd "$dir/lib" && ls *.so* gcc/*.so* | sed 's/^/- `/; s/$/`/')
sed -e "s/@VERSION@/$version/g" -e "s/@NAME@/$name/g" -e "s/@GLIBC@/$glibc/g" -e "s/@GLIBC_GCC@/$glibc_gcc/g" -e "s/@GLIBCXX@/$glibcxx/g" \
    -e "s/@BUILT_GLIBC@/$(ldd --version | head -1 | awk '{print $NF}')/g" -e "s/@DATE@/$(date -u +%Y-%m-%d)/g" \
    "$root/tools/bundle/README.md" | awk -v libs="$libs_list" '{ if ($0 == "@LIBS@") print libs; else print }' \
    >"$dir/README.md"

# The Debian package owning a library (usrmerge: dpkg may know it under /usr or without).
owner() {
  local real; real=$(readlink -f "$1")
  for p in "$1" "$real" "/usr$real" "${real#/usr}"; do
    dpkg-query -S "$p" 2>/dev/null | head -1 | cut -d: -f1-2 && return
  done
}
{
  echo "# $name: file, sha256, Debian package it was copied from (built $(date -u +%Y-%m-%dT%H:%M:%SZ))"
  (cd "$dir" && find . -type f | sort | while read -r f; do
     src=""
     case $f in ./lib/*) src=$(owner "${seen[$(basename "$f")]}");; esac
     [ -n "$src" ] && src="$src $(dpkg-query -W -f='${Version}' "${src%%:*}" 2>/dev/null || true)"
     echo "${f#./} $(sha256sum "$f" | cut -c1-64) ${src:-daybreak}"
   done)
} >"$dir/MANIFEST.txt"

mkdir -p "$out"
tarball=$out/$name.tar.gz
tar -C "$stage" -czf "$tarball.tmp" "$name"
mv "$tarball.tmp" "$tarball"
echo "bundle: $tarball ($(du -k "$tarball" | cut -f1) KiB, ${#seen[@]} libraries; needs glibc >= $glibc, >= $glibc_gcc where the system's libstdc++ lacks GLIBCXX_$glibcxx)"
