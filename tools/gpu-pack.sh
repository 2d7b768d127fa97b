#!/usr/bin/env bash
# gpu-pack.sh — assembles .gpu-in/, the one git-ignored folder a GPU lease carries (docs/gpu.md):
#
#   tools/gpu-pack.sh [--build DIR] [--jpeg-tar FILE] [--shaders] [--limit-mib N] [--out DIR]
#
# (--out DIR writes the folder elsewhere than .gpu-in, for the kit's rehearsal in the tests; the
# limit is still checked against the tree and that folder.)
#   .gpu-in/daybreak-<version>-linux-<arch>.tar.gz   the bundle (tools/bundle.sh of DIR, default ./build)
#   .gpu-in/cifar10-jpeg.tar.gz                      CIFAR-10's 60,000 source JPEGs (19.4 MB; default
#                                                    $DAYBREAK_DATA/cifar10-jpeg.tar.gz), rebuilt there into
#                                                    the .bin files by tools/cifar10_from_jpeg.py
#   .gpu-in/COMMIT                                   the commit the bundle was built from, "+dirty" when the
#                                                    tree had uncommitted changes, and the date
#   .gpu-in/shaders/*.spv                            with --shaders: DIR's compiled shaders, for
#                                                    DBK_SHADER_DIR (a shader fix tried without a new bundle)
#
# What travels is the working tree (tracked files and untracked files git does not ignore) plus
# this folder: the script refuses (exit 1, nothing half-made left) when the two together pass
# --limit-mib (default 60 MiB, under the device's 64 MiB). The folder is made anew under a
# temporary name and renamed when complete. Prints one line per file and the total.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
tar_src=${DAYBREAK_DATA:+$DAYBREAK_DATA/cifar10-jpeg.tar.gz}
shaders=0
limit_mib=60
out=
usage() { echo "usage: tools/gpu-pack.sh [--build DIR] [--jpeg-tar FILE] [--shaders] [--limit-mib N] [--out DIR]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --build) [ $# -ge 2 ] || usage; build=$2; shift ;;
    --jpeg-tar) [ $# -ge 2 ] || usage; tar_src=$2; shift ;;
    --shaders) shaders=1 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
    --limit-mib) [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] || usage; limit_mib=$2; shift ;;
    *) usage ;;
  esac
  shift
done
die() { echo "gpu-pack: $*" >&2; exit 1; }
[ -n "$tar_src" ] || die "no source-JPEG tar: set DAYBREAK_DATA (its cifar10-jpeg.tar.gz) or pass --jpeg-tar FILE"
[ -f "$tar_src" ] || die "$tar_src: no such file (the data README's cifar10-jpeg.tar.gz)"
[ -x "$build/daybreak" ] || die "$build/daybreak is missing: build first (tools/run.sh test, or cmake --build $build)"
cd "$root"
if [ -z "$out" ]; then
  git check-ignore -q .gpu-in/x || die ".gpu-in/ is not ignored by git: it would travel twice (add it to .gitignore)"
  out=$root/.gpu-in
fi
mkdir -p "$(dirname "$out")" || die "cannot create $(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
stage=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf "$stage"' EXIT
"$root/tools/bundle.sh" "$build" "$stage" >"$stage/bundle.log" 2>&1 || { cat "$stage/bundle.log" >&2; die "tools/bundle.sh failed"; }
rm -f "$stage/bundle.log"
cp "$tar_src" "$stage/cifar10-jpeg.tar.gz"
dirty=$([ -n "$(git status --porcelain --untracked-files=no)" ] && echo "+dirty" || true)
printf '%s%s %s\n' "$(git rev-parse HEAD)" "$dirty" "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" >"$stage/COMMIT"
if [ $shaders = 1 ]; then
  ls "$build"/gen/shaders/*.spv >/dev/null 2>&1 || die "$build/gen/shaders has no .spv files (a build without Vulkan?)"
  mkdir "$stage/shaders"
  cp "$build"/gen/shaders/*.spv "$stage/shaders/"
fi

# Bytes that travel: the tree (what git lists, not ignored) and the staged folder.
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s -- 2>/dev/null |
             awk '{ s += $1 } END { print s + 0 }')
pack_bytes=$(du -sb "$stage" | awk '{ print $1 }')
total=$((tree_bytes + pack_bytes))
limit=$((limit_mib * 1048576))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
if [ "$total" -gt "$limit" ]; then
  die "the tree ($(mib "$tree_bytes")) and $(basename "$out") ($(mib "$pack_bytes")) together are $(mib "$total"), over the $limit_mib MiB limit; nothing written"
fi
rm -rf "$out"
mv "$stage" "$out"
trap - EXIT
(cd "$out" && find . -type f | sort | while read -r f; do printf '  %-52s %s\n' "${f#./}" "$(mib "$(stat -c %s "$f")")"; done)
echo "gpu-pack: $out $(mib "$pack_bytes") + tree $(mib "$tree_bytes") = $(mib "$total") of the $limit_mib MiB limit ($(cut -d' ' -f1 "$out/COMMIT"))"
