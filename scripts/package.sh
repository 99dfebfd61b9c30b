#!/bin/sh
# Builds the portable release det-VERSION-linux-x86_64.tar.gz from a built tree:
#   scripts/package.sh [BUILD_DIR] [OUT_DIR]        (defaults: build/, and OUT_DIR = BUILD_DIR)
# Its folder det-VERSION/ runs on an x86_64 Linux that has glibc and nothing else of det's:
#   bin/         det-node, det-worker, det (stripped; RUNPATH $ORIGIN/../lib)
#   lib/         every shared library they and PostgreSQL need beyond glibc and libstdc++,
#                found with ldd
#   pgsql/       the embedded PostgreSQL 15: initdb, pg_ctl, postgres, their modules and share/
#   share/det/   the web UI and the Python clients (det_core.py, `determined`), where det-node
#                looks for them beside bin/ as in the build tree
#   src/         what scripts/torch-trials-sources.txt lists: a GPU node builds the torch
#                trials from it against its own LibTorch (scripts/ has how, when present)
#   README       how to start a cluster from it, and the oldest glibc and libstdc++ it needs
# The archive's path goes to stdout; its size, those versions and the time taken to stderr.
# shellcheck disable=SC2016  # $ORIGIN in single quotes is the dynamic loader's, not the shell's
set -eu
started=$(date +%s%N)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
OUT=${2:-$BUILD}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PG_HOME=/usr/lib/postgresql/15
PG_SHARE=/usr/share/postgresql/15
LIMIT_MB=60

die() { echo "det: $*" >&2; exit 1; }

command -v patchelf >/dev/null ||
  die "patchelf is needed to point the archive's binaries at its lib/ (apt-get install patchelf)."

VERSION=$(sed -n 's/^project(det VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[ -n "$VERSION" ] || die "$ROOT/CMakeLists.txt has no project(det VERSION x.y.z) to take the version from."
NAME=det-$VERSION
ARCHIVE=$OUT/$NAME-linux-x86_64.tar.gz

WORK=$(mktemp -d "${TMPDIR:-/tmp}/det-package.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
STAGE=$WORK/$NAME
# PostgreSQL finds its share/ and its modules relative to its own binaries by the tail its build
# gave them (Debian's: /usr/lib/postgresql/15/bin, /usr/share/postgresql/15), so pgsql/ mirrors
# /usr below it, and pgsql/bin (what det-node looks for) links to the binaries. The tail must
# match after symlinks are resolved, which PostgreSQL does first.
PG_BIN=$STAGE/pgsql/lib/postgresql/15/bin
PG_LIB=$STAGE/pgsql/lib/postgresql/15/lib
# From PG_BIN or PG_LIB, five levels up is det-VERSION/.
PG_RPATH='$ORIGIN/../../../../../lib'
umask 022
mkdir -p "$STAGE/bin" "$STAGE/lib" "$PG_BIN" "$PG_LIB" "$STAGE/pgsql/share/postgresql" "$STAGE/share/det"
ln -s lib/postgresql/15/bin "$STAGE/pgsql/bin"

# glibc's libraries and the C++ runtime come from the machine the archive runs on; every other
# one travels. (Carrying GCC 12's libstdc++ and libgcc_s would raise the glibc it needs from 2.34
# to 2.36: they call arc4random and _dl_find_object.)
HOST_LIBS=" linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 "
HOST_LIBS="$HOST_LIBS librt.so.1 libresolv.so.2 libutil.so.1 libanl.so.1 libstdc++.so.6 libgcc_s.so.1 "
from_host() { case "$HOST_LIBS" in *" $1 "*) return 0 ;; esac; return 1; }

# ldd's view of FILE as "NAME PATH" lines (PATH is "not" when it was not found), in a file so
# that the loops reading it run in this shell.
ldd_pairs() {
  ldd "$1" >"$WORK/ldd.out" 2>&1 || die "ldd could not read $1: $(cat "$WORK/ldd.out")"
  awk '$2 == "=>" { print $1, $3 }' "$WORK/ldd.out" >"$WORK/ldd.pairs"
}

# Copies every library FILE needs (ldd's closure) into lib/, stripped, with RUNPATH $ORIGIN.
# The node's GPU stack and LibTorch must stay out: they are dlopened at run time where present.
bundle_dependencies() {
  ldd_pairs "$1"
  while read -r lib path; do
    case "$lib" in
      libcuda.so* | libcudart.so* | libnccl.so* | libnvidia-ml.so* | libtorch* | libc10*)
        die "$1 links $lib: the archive carries no CUDA, NCCL, NVML or LibTorch, which belong to the GPU node and must be loaded at run time (dlopen), not linked." ;;
    esac
    from_host "$lib" && continue
    [ "$path" != not ] || die "$1 needs $lib, which ldd does not find on this machine."
    [ -e "$STAGE/lib/$lib" ] && continue
    cp -L "$path" "$STAGE/lib/$lib"
    chmod 644 "$STAGE/lib/$lib"
    strip --strip-unneeded "$STAGE/lib/$lib"
    patchelf --set-rpath '$ORIGIN' "$STAGE/lib/$lib"
  done <"$WORK/ldd.pairs"
}

# install_elf SOURCE DEST_DIR STRIP_OPTION RUNPATH: a stripped copy that finds lib/ by RUNPATH.
# (strip first: strip run after patchelf can break the layout patchelf rewrote.)
install_elf() {
  [ -f "$1" ] || die "$1 is missing."
  bundle_dependencies "$1"
  cp -L "$1" "$2/"
  strip "$3" "$2/$(basename "$1")"
  patchelf --set-rpath "$4" "$2/$(basename "$1")"
}

for b in det-node det-worker det; do
  [ -x "$BUILD/bin/$b" ] || die "$BUILD/bin/$b is missing: build det first (scripts/build.sh)."
  install_elf "$BUILD/bin/$b" "$STAGE/bin" --strip-all '$ORIGIN/../lib'
done

# Debian's libarchive calls arc4random_buf, which glibc has only from 2.36 and which alone would
# set the release's glibc floor there (Ubuntu 22.04 has 2.35, RHEL 9 2.34): its reference loses
# its version and libarchive needs scripts/glibc_compat.c, which serves where glibc has none.
if [ -f "$STAGE/lib/libarchive.so.13" ] && objdump -T "$STAGE/lib/libarchive.so.13" | grep -q "GLIBC_2.36.*arc4random_buf"; then
  cc -shared -fPIC -O2 -Wl,-soname,libdet_glibc_compat.so.1 -o "$STAGE/lib/libdet_glibc_compat.so.1" \
    "$ROOT/scripts/glibc_compat.c" || die "scripts/glibc_compat.c does not compile (a C compiler is needed)."
  strip --strip-unneeded "$STAGE/lib/libdet_glibc_compat.so.1"
  patchelf --clear-symbol-version arc4random_buf "$STAGE/lib/libarchive.so.13"
  patchelf --add-needed libdet_glibc_compat.so.1 "$STAGE/lib/libarchive.so.13"
fi

# PostgreSQL: what storage/embedded_postgres.cpp runs (initdb, pg_ctl) and what they start
# (postgres); the modules its cluster loads (PL/pgSQL, the snowball dictionaries initdb creates,
# the encoding conversions a client's client_encoding may ask for); not the LLVM JIT
# (llvmjit.so and its bitcode, 26 MB), which is off unless configured.
if [ ! -d "$PG_HOME/bin" ] || [ ! -d "$PG_SHARE" ]; then
  die "PostgreSQL 15 is not in $PG_HOME and $PG_SHARE: install the postgresql-15 package."
fi
for b in initdb pg_ctl postgres; do
  install_elf "$PG_HOME/bin/$b" "$PG_BIN" --strip-all "$PG_RPATH"
done
for m in "$PG_HOME"/lib/plpgsql.so "$PG_HOME"/lib/dict_snowball.so "$PG_HOME"/lib/*_and_*.so; do
  install_elf "$m" "$PG_LIB" --strip-unneeded "$PG_RPATH"
done
# share/ without man pages and without extensions but PL/pgSQL, which initdb installs.
cp -R "$PG_SHARE" "$STAGE/pgsql/share/postgresql/15"
rm -rf "$STAGE/pgsql/share/postgresql/15/man"
find "$STAGE/pgsql/share/postgresql/15/extension" -type f ! -name 'plpgsql*' -exec rm -f {} +

# The web UI and the Python clients, as the build tree lays them out beside bin/.
[ -f "$BUILD/share/det/webui/index.html" ] || die "$BUILD/share/det/webui/index.html is missing: build det first."
if [ ! -f "$BUILD/share/det/python/det_core.py" ] || [ ! -f "$BUILD/share/det/python/determined/__init__.py" ]; then
  die "$BUILD/share/det/python lacks det_core.py or the determined package: build det first."
fi
cp -R "$BUILD/share/det/webui" "$BUILD/share/det/python" "$STAGE/share/det/"
find "$STAGE/share/det" -name __pycache__ -type d -prune -exec rm -rf {} +

# The torch trials' sources, nlohmann-json (GPU nodes have none) and the scripts that use them.
"$ROOT/scripts/package-sources.sh" "$ROOT" "$STAGE"

# Every program and module must find its libraries in lib/ or the host's, not where this
# machine keeps them. (ldd resolves a program's whole closure, each library by its own RUNPATH,
# so the libraries in lib/ are checked through the programs that load them.)
for f in "$STAGE"/bin/* "$PG_BIN"/* "$PG_LIB"/*; do
  ldd_pairs "$f"
  while read -r lib path; do
    from_host "$lib" && continue
    case "$path" in "$STAGE"/*) ;; *) die "${f#"$WORK"/} resolves $lib to $path, outside the archive." ;; esac
  done <"$WORK/ldd.pairs"
done

# The oldest glibc and libstdc++ that run it: the newest GLIBC_x.y and GLIBCXX_x.y.z symbol
# versions any of its ELF files (all under bin/, lib/ and pgsql/lib/) needs.
find "$STAGE/bin" "$STAGE/lib" "$STAGE/pgsql/lib" -type f -exec objdump -T {} + >"$WORK/symbols"
newest() { grep -o "$1_[0-9][0-9.]*[0-9]" "$WORK/symbols" | sed "s/$1_//" | sort -u -V | tail -n 1; }
GLIBC=$(newest GLIBC)
GLIBCXX=$(newest GLIBCXX)
if [ -z "$GLIBC" ] || [ -z "$GLIBCXX" ]; then
  die "objdump -T found no GLIBC_ or no GLIBCXX_ symbol versions in the archive's binaries."
fi
sed -e "s/@VERSION@/$VERSION/g" -e "s/@GLIBC@/$GLIBC/g" -e "s/@GLIBCXX@/$GLIBCXX/g" \
  "$ROOT/scripts/package-README.in" >"$STAGE/README"

chmod -R u+rwX,go+rX,go-w "$STAGE"
tar -C "$WORK" --owner=0 --group=0 --numeric-owner --sort=name \
  --use-compress-program='gzip -9 -n' -cf "$WORK/archive.tar.gz" "$NAME"
bytes=$(stat -c %s "$WORK/archive.tar.gz")
mb=$(awk "BEGIN { printf \"%.1f\", $bytes / 1000000 }")
[ "$bytes" -le $((LIMIT_MB * 1000000)) ] ||
  die "$NAME-linux-x86_64.tar.gz would be $mb MB, over the $LIMIT_MB MB a release may take; not written."
mv "$WORK/archive.tar.gz" "$ARCHIVE"
seconds=$(awk "BEGIN { printf \"%.1f\", ($(date +%s%N) - $started) / 1e9 }")
echo "det: $ARCHIVE: $mb MB (unpacked $(du -sm "$STAGE" | cut -f1) MiB), needs glibc $GLIBC and GLIBCXX_$GLIBCXX (libstdc++) or newer, built in $seconds s" >&2
echo "$ARCHIVE"
