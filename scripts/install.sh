#!/usr/bin/env bash
# Build rmpi and install it under PREFIX, laid out as an MPI installation is:
#
#   PREFIX/bin/{mpirun, mpiexec -> mpirun, mpicc, mpicxx, mpic++ -> mpicxx}
#   PREFIX/lib/libmpi_abi.so.1.0.0, libmpi_abi.so.1 -> .1.0.0, libmpi_abi.so -> .1 (the MPI 5.0
#       standard ABI's library name), libmemhook_preload.so (memhook's ldpreload provider)
#   PREFIX/lib/pkgconfig/{mpi,mpi-c,mpi-cxx,rmpi}.pc
#   PREFIX/include/mpi.h
#   PREFIX/share/doc/rmpi/, PREFIX/share/rmpi/examples/
#
# The tree is relocatable: the wrappers and mpirun find everything from their own location and
# the .pc files from theirs (${pcfiledir}), so PREFIX can be moved or packed after installing.
#
# Usage: scripts/install.sh PREFIX [--debug] [--no-build] [cargo build options, e.g. --features
#        memory-manager/ptmalloc or --no-default-features]
set -euo pipefail
usage() { echo "usage: scripts/install.sh PREFIX [--debug] [--no-build] [cargo build options]" >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -*) usage ;; esac
prefix=$1
shift
profile=release
build=1
cargo_args=()
for a in "$@"; do
    case "$a" in
        --debug) profile=debug ;;
        --no-build) build=0 ;;
        *) cargo_args+=("$a") ;;
    esac
done
cd "$(dirname "$0")/.."
root=$PWD

if [ $build = 1 ]; then
    # gcc: the wrappers' default compiler; the rest for btl-ib's verbs provider (rdma-sys).
    scripts/deps.sh gcc pkg-config libibverbs-dev librdmacm-dev libclang-dev libhwloc-dev
    flags=()
    [ $profile = release ] && flags+=(--release)
    cargo build "${flags[@]}" -p mpirun -p libmpi -p libmpi-abi -p memhook-preload --lib --bins \
        ${cargo_args[@]+"${cargo_args[@]}"}
fi
target=${CARGO_TARGET_DIR:-$root/target}/$profile
for f in mpirun mpicc mpicxx libmpi_abi.so libmemhook_preload.so; do
    [ -f "$target/$f" ] || { echo "install.sh: $target/$f is missing (build first, or drop --no-build)" >&2; exit 1; }
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
abi_file=libmpi_abi.so.1.0.0   # ABI 1.0

mkdir -p "$prefix"/{bin,lib/pkgconfig,include,share/doc/rmpi,share/rmpi/examples}
prefix=$(cd "$prefix" && pwd)

# Replace, never write into, files a running program may have mapped (install does that).
install -m 755 "$target/mpirun" "$target/mpicc" "$target/mpicxx" "$prefix/bin/"
ln -sfn mpirun "$prefix/bin/mpiexec"
ln -sfn mpicxx "$prefix/bin/mpic++"
install -m 755 "$target/libmpi_abi.so" "$prefix/lib/$abi_file"
ln -sfn "$abi_file" "$prefix/lib/libmpi_abi.so.1"
ln -sfn libmpi_abi.so.1 "$prefix/lib/libmpi_abi.so"
install -m 755 "$target/libmemhook_preload.so" "$prefix/lib/"
install -m 644 libmpi/include/mpi.h "$prefix/include/"

for pc in mpi mpi-c mpi-cxx rmpi; do
    cat > "$prefix/lib/pkgconfig/$pc.pc" <<EOF
# rmpi $version: MPI 5.0, standard ABI 1.0. Relocatable: the prefix is found from this file.
prefix=\${pcfiledir}/../..
exec_prefix=\${prefix}
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: rmpi
Description: rmpi, an MPI implementation in Rust (MPI 5.0 standard ABI, libmpi_abi.so.1)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lmpi_abi
EOF
done

install -m 644 README.md docs/DESIGN.md "$prefix/share/doc/rmpi/"
install -m 644 examples/c/*.c "$prefix/share/rmpi/examples/"

echo "rmpi $version installed in $prefix"
echo "  $prefix/bin/mpicc -o hello $prefix/share/rmpi/examples/hello.c && $prefix/bin/mpirun -np 2 ./hello"
