#!/usr/bin/env bash
# rmpi beside Open MPI and MPICH under an external, unmodified OSU micro-benchmarks 5.3 tree: a
# release build, then bench-compare --osu with osu_latency, osu_bw and osu_bibw (0 B - 4 MiB, OSU's
# own iteration counts), 3 interleaved rounds, the line probe before and after every run, tables
# per probe state. Nothing is fetched: give the tree (or set RMPI_OSU_DIR). OSU is built once per
# MPI under $TMPDIR/rmpi-osu and reused while the mpicc and the tree are unchanged.
# Output in target/osu-compare/: the tables (osu-TIME.txt) and every raw run (osu-TIME.json).
# Extra arguments go to bench-compare, e.g. --rounds 5, --osu-tests osu_bw,
# --rmpi-args "--mca btl_sm_single_copy cma".
#
#   scripts/osu-compare.sh OSU_DIR [bench-compare arguments]
set -euo pipefail
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  OSU_DIR=$1
  shift
else
  OSU_DIR=${RMPI_OSU_DIR:-}
fi
if [ -z "$OSU_DIR" ] || [ ! -x "$OSU_DIR/configure" ]; then
  echo "usage: $0 OSU_DIR [bench-compare arguments]   (OSU_DIR: an OSU micro-benchmarks 5.3" >&2
  echo "       source tree with its configure script; or set RMPI_OSU_DIR)" >&2
  exit 2
fi
OSU_DIR=$(cd "$OSU_DIR" && pwd)
cd "$(dirname "$0")/.."
scripts/deps.sh gcc make pkg-config libibverbs-dev librdmacm-dev libclang-dev libhwloc-dev
cargo build --release -p benchmarks -p mpirun -p libmpi -p libmpi-abi --quiet
OUT=target/osu-compare
mkdir -p "$OUT"
STAMP=$(date +%Y%m%d-%H%M%S)
uptime
target/release/bench-compare --osu "$OSU_DIR" --rounds 3 -m 4M \
    --osu-tests osu_latency,osu_bw,osu_bibw --json "$OUT/osu-$STAMP.json" "$@" \
    | tee "$OUT/osu-$STAMP.txt"
uptime
echo "tables: $OUT/osu-$STAMP.txt"
echo "raw runs (JSON): $OUT/osu-$STAMP.json"
