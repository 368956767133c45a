#!/usr/bin/env bash
# Intel MPI Benchmarks on rmpi: build IMB-MPI1 from an unmodified checkout of
# github.com/intel/mpi-benchmarks (C++, its own makefile) with our mpicxx/mpicc, then run
# PingPong, Sendrecv and Allreduce under our mpirun.
#
# Usage: scripts/imb.sh DIR [--np N] [--timeout S] [--no-build] [-- IMB-ARGS...]
#   DIR           the checkout (outside the project tree); the build writes its objects and
#                 IMB-MPI1 there (make's own layout; cleaned first, so no other MPI's objects stay)
#   --np N        ranks (default 2)
#   --timeout S   mpirun --timeout (default 600)
#   --no-build    run DIR/IMB-MPI1 as it is
#   IMB-ARGS      instead of the default "PingPong Sendrecv Allreduce"
# Environment: RMPI_IMB_PROFILE=debug|release picks target/<profile>'s wrappers and mpirun
# (default: release if built, else debug; built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

[ $# -ge 1 ] || { sed -n '2,15p' "$0"; exit 2; }
case "$1" in -h|--help) sed -n '2,15p' "$0"; exit 0 ;; esac
SRC=$(cd "$1" && pwd); shift
NP=2
TIMEOUT=600
BUILD=1
ARGS=(PingPong Sendrecv Allreduce)
while [ $# -gt 0 ]; do
    case "$1" in
        --np) NP="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --) shift; ARGS=("$@"); break ;;
        *) echo "imb.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -f "$SRC/src_cpp/Makefile" ] || { echo "imb.sh: $SRC is not an intel/mpi-benchmarks checkout" >&2; exit 2; }

scripts/deps.sh g++ make binutils

PROFILE=${RMPI_IMB_PROFILE:-}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "$PROFILE" ]; then
    if [ -x "$TARGET/release/mpicxx" ] || [ ! -x "$TARGET/debug/mpicxx" ]; then PROFILE=release; else PROFILE=debug; fi
fi
if [ ! -x "$TARGET/$PROFILE/mpicxx" ] || [ ! -x "$TARGET/$PROFILE/mpirun" ] || [ ! -e "$TARGET/$PROFILE/libmpi_abi.so" ]; then
    flag=(); [ "$PROFILE" = release ] && flag=(--release)
    cargo build "${flag[@]}" -p libmpi -p libmpi-abi -p mpirun
fi
BIN=$TARGET/$PROFILE

if [ $BUILD = 1 ]; then
    # The makefile picks Intel's compilers unless CC and CXX are given; it builds with -Werror.
    make -C "$SRC/src_cpp" -f Makefile TARGET=MPI1 clean >/dev/null
    rm -f "$SRC/IMB-MPI1"
    echo "== building IMB-MPI1 in $SRC with $BIN/mpicxx" >&2
    make -C "$SRC" IMB-MPI1 CXX="$BIN/mpicxx" CC="$BIN/mpicc" >"$SRC/imb-build.log" 2>&1 ||
        { tail -30 "$SRC/imb-build.log" >&2; echo "imb.sh: build failed (log: $SRC/imb-build.log)" >&2; exit 1; }
fi
readelf -d "$SRC/IMB-MPI1" | grep -q 'NEEDED.*libmpi_abi\.so\.1' ||
    { echo "imb.sh: $SRC/IMB-MPI1 does not link rmpi's libmpi_abi.so.1" >&2; exit 1; }

launcher=("$BIN/mpirun" --timeout "$TIMEOUT" -np "$NP")
[ "$NP" -gt "$(nproc)" ] && launcher+=(--oversubscribe)
echo "== ${launcher[*]} $SRC/IMB-MPI1 ${ARGS[*]}" >&2
exec "${launcher[@]}" "$SRC/IMB-MPI1" "${ARGS[@]}"
