#!/bin/sh
# Launcher of the daybreak bundle (made by tools/bundle.sh; docs/gpu.md): runs bin/@PROGRAM@ with
# the bundle's lib/ on the library path. It finds the bundle through its own real path, so it
# works from any folder and through symlinks. lib/gcc (libstdc++, libgcc_s) is added only when
# the system's libstdc++ lacks GLIBCXX_@GLIBCXX@ or CXXABI_@CXXABI@: a GPU driver built with a
# newer compiler (Mesa's LLVM) then keeps the newer system copy it needs.
PATH=${PATH:-/usr/bin:/bin:/usr/sbin:/sbin}
self=$(readlink -f -- "$0") || { echo "@PROGRAM@: cannot resolve the path of $0" >&2; exit 1; }
here=$(dirname -- "$self")

need=@GLIBC@
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "@PROGRAM@: this bundle needs glibc $need or newer; this system has $have (build daybreak here instead: docs/gpu.md)" >&2
  exit 1
fi

system_libstdcxx() {
  for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib /lib; do
    if [ -e "$d/libstdc++.so.6" ]; then echo "$d/libstdc++.so.6"; return; fi
  done
}
libs=$here/lib
sys=$(system_libstdcxx)
if [ -z "$sys" ] || ! grep -qa 'GLIBCXX_@GLIBCXX@' "$sys" || ! grep -qa 'CXXABI_@CXXABI@' "$sys"; then
  need=@GLIBC_GCC@   # the bundled libstdc++ may need a newer glibc than the rest
  if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    echo "@PROGRAM@: this system's libstdc++ is older than the bundle needs (GLIBCXX_@GLIBCXX@), and the bundled one needs glibc $need (this system has $have): install a newer libstdc++6, or build daybreak here (docs/gpu.md)" >&2
    exit 1
  fi
  libs=$libs:$here/lib/gcc
fi
LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
exec "$here/bin/@PROGRAM@" "$@"
