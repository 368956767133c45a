#!/usr/bin/env bash
# MPICH's test suite (test/mpi of github.com/pmodels/mpich) on rmpi, Open MPI or MPICH.
#
# Usage: scripts/mpich-tests.sh CHECKOUT [--mpi rmpi|openmpi|mpich] [--dirs "pt2pt coll ..."]
#                               [--out DIR] [--timeout S] [--dtpools]
#   CHECKOUT      an MPICH source tree (fetched by you; this script fetches nothing): it needs
#                 test/mpi, confdb/ and maint/version.m4; it is only read
#   --mpi         whose mpicc builds the tests and whose launcher runs them (default rmpi:
#                 target/<profile>/mpicc and mpirun, profile as scripts/mpi4py.sh picks it)
#   --dirs        test directories (default: the 13 of issue 14, part = the MPI-4 partitioned tests,
#                 errors = the bad-argument tests of issue 15); a subdirectory (threads/pt2pt)
#                 is a row of its own, where its parent (threads) is one row for all of them
#   --out DIR     per-entry logs and results (default target/mpich-tests/results)
#   --timeout S   limit of each entry, unless its testlist timeLimit= is longer (default 60)
#   --dtpools     also the generated datatype-pool tests (thousands of entries; off by default)
#   --prefix P    rmpi installed under P (scripts/install.sh) rather than the target directory's
#   --launch-args "A B"  more arguments for the launcher, split at spaces (across hosts, e.g.
#                 "--host node1:2,node2:2" with RMPI_MCA_plm_rsh_agent naming the agent; add
#                 "--bind-to none" for scripts/netns.sh hosts: they share this machine's cores,
#                 and each host binds its first rank to core 0, so the RMA tests crawl)
# Environment: RMPI_MPICH_TESTS_DIR (default target/mpich-tests): the sources after autogen and one
# configured build tree per MPI (build-<mpi>), both kept between runs.
#
# MPICH's own machinery configures and builds: autogen.sh once on a copy of the checkout's test/mpi,
# then configure (C only, --enable-strictmpi: no MPIX extensions, I/O only with --dirs io) per MPI; each test
# directory's programs are built with its Makefile. scripts/mpich_tests.py reads the testlists
# and judges each entry as MPICH's runtests does (exit 0 and " No Errors"); every entry runs
# oversubscribed with the np its testlist gives, bounded by `mpirun --timeout` (rmpi) or
# timeout(1) (the others). Prints the per-directory table; `scripts/mpich_tests.py table OUT`
# prints it again, side by side when OUT holds several MPIs' results.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

[ $# -ge 1 ] && [ "${1#-}" = "$1" ] || { sed -n '2,28p' "$0"; exit 2; }
CHECKOUT=$(realpath "$1"); shift
MPI=rmpi
DIRS="pt2pt coll comm group datatype rma topo info attr errhan init spawn part errors"
WORK=${RMPI_MPICH_TESTS_DIR:-$ROOT/target/mpich-tests}
OUT=$WORK/results
TIMEOUT=60
DTPOOLS=--disable-dtpools
PREFIX=""
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --mpi) MPI="$2"; shift 2 ;;
        --dirs) DIRS="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --dtpools) DTPOOLS=""; shift ;;
        --prefix) PREFIX=$(realpath "$2"); shift 2 ;;
        --launch-args) read -ra EXTRA <<< "$2"; shift 2 ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        *) echo "mpich-tests.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
# Absolute, as Open MPI needs its TMPDIR (below) to be.
OUT=$(realpath -m "$OUT")
for f in test/mpi/configure.ac test/mpi/runtests confdb maint/version.m4; do
    [ -e "$CHECKOUT/$f" ] || { echo "mpich-tests.sh: $CHECKOUT/$f missing: not an MPICH checkout" >&2; exit 2; }
done

deps=(autoconf automake libtool perl python3 make gcc libhwloc-dev)
case "$MPI" in
    openmpi) deps+=(openmpi-bin libopenmpi-dev) ;;
    mpich) deps+=(mpich libmpich-dev) ;;
esac
scripts/deps.sh "${deps[@]}"

case "$MPI" in
    rmpi)
      if [ -n "$PREFIX" ]; then
        CC=$PREFIX/bin/mpicc
        LAUNCH=("$PREFIX/bin/mpirun" --timeout @TIMEOUT@ --oversubscribe -np @NP@)
      else
        PROFILE=${RMPI_MPI4PY_PROFILE:-}
        TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
        if [ -z "$PROFILE" ]; then
            if [ -x "$TARGET/debug/mpicc" ] || [ ! -x "$TARGET/release/mpicc" ]; then PROFILE=debug; else PROFILE=release; fi
        fi
        if [ ! -x "$TARGET/$PROFILE/mpicc" ] || [ ! -x "$TARGET/$PROFILE/mpirun" ] || [ ! -e "$TARGET/$PROFILE/libmpi_abi.so" ]; then
            flag=(); [ "$PROFILE" = release ] && flag=(--release)
            nice -n 19 cargo build "${flag[@]}" -p libmpi -p libmpi-abi -p mpirun
        fi
        CC=$TARGET/$PROFILE/mpicc
        LAUNCH=("$TARGET/$PROFILE/mpirun" --timeout @TIMEOUT@ --oversubscribe -np @NP@)
      fi ;;
    openmpi)
        CC=$(command -v mpicc.openmpi)
        LAUNCH=(timeout -k 5 @TIMEOUT@ mpirun.openmpi --oversubscribe -np @NP@)
        [ "$(id -u)" = 0 ] && LAUNCH+=(--allow-run-as-root) ;;
    mpich)
        CC=$(command -v mpicc.mpich)
        LAUNCH=(timeout -k 5 @TIMEOUT@ mpirun.mpich -n @NP@) ;;
    *) echo "mpich-tests.sh: --mpi rmpi|openmpi|mpich" >&2; exit 2 ;;
esac
LAUNCH+=("${EXTRA[@]}")

# The sources: a copy of test/mpi with the checkout's confdb, autogen'd once (autogen writes into
# the tree, and the checkout stays untouched).
SRC=$WORK/src
stamp="$CHECKOUT $(git -C "$CHECKOUT" rev-parse HEAD 2>/dev/null || stat -c %Y "$CHECKOUT/test/mpi/configure.ac")"
if [ ! -f "$SRC/.stamp" ] || [ "$(cat "$SRC/.stamp")" != "$stamp" ]; then
    echo "== autogen of $CHECKOUT/test/mpi into $SRC" >&2
    rm -rf "$SRC" "$WORK"/build-*; mkdir -p "$SRC"
    cp -a "$CHECKOUT/test/mpi/." "$SRC/"
    rm -rf "$SRC/confdb" "$SRC/dtpools/confdb"
    cp -a "$CHECKOUT/confdb" "$SRC/confdb"; cp -a "$CHECKOUT/confdb" "$SRC/dtpools/confdb"
    cp "$CHECKOUT/maint/version.m4" "$SRC/version.m4"
    (cd "$SRC" && MPICH_CONFDB=$SRC/confdb nice -n 19 ./autogen.sh) >"$WORK/autogen.log" 2>&1 ||
        { tail -20 "$WORK/autogen.log" >&2; echo "mpich-tests.sh: autogen failed ($WORK/autogen.log)" >&2; exit 1; }
    echo "$stamp" >"$SRC/.stamp"
fi

# One configured tree per MPI, reconfigured when the compiler or the options change.
BUILD=$WORK/build-$MPI
# MPI-IO's directory (io) is configured only when asked for, in a tree of its own, so the other
# runs keep theirs.
IO=--disable-romio
case " $DIRS " in *" io "*) IO=--enable-romio; BUILD=$BUILD-io ;; esac
CONF=(CC="$CC" MPICC="$CC" --disable-fortran --disable-cxx --enable-strictmpi $IO
      --disable-perftest --disable-ft-tests $DTPOOLS)
cstamp="${CONF[*]} $({ "$CC" -show || "$CC" --showme; } 2>/dev/null | sha256sum | cut -c1-16)"
if [ ! -f "$BUILD/.stamp" ] || [ "$(cat "$BUILD/.stamp")" != "$cstamp" ]; then
    echo "== configure for $MPI in $BUILD" >&2
    rm -rf "$BUILD"; mkdir -p "$BUILD"
    (cd "$BUILD" && nice -n 19 "$SRC/configure" "${CONF[@]}") >"$WORK/configure-$MPI.log" 2>&1 ||
        { tail -20 "$WORK/configure-$MPI.log" >&2; echo "mpich-tests.sh: configure failed ($WORK/configure-$MPI.log)" >&2; exit 1; }
    echo "$cstamp" >"$BUILD/.stamp"
fi
# A rebuilt libmpi needs no relink (the tests load it at run time); make's dependency tracking
# recompiles what a changed mpi.h touches.

# Open MPI's session directories and shared-memory files in a directory of this run's own (a
# killed job leaves them behind).
mkdir -p "$OUT/$MPI.tmp"
TMPDIR=$OUT/$MPI.tmp OMPI_MCA_btl_vader_backing_directory=$OUT/$MPI.tmp \
    OMPI_MCA_btl_vader_single_copy_mechanism=none \
    nice -n 19 python3 scripts/mpich_tests.py run --build "$BUILD" --src "$SRC" --mpi "$MPI" \
    --out "$OUT" --dirs "$DIRS" --timeout "$TIMEOUT" -- "${LAUNCH[@]}"
rm -rf "$OUT/$MPI.tmp"
