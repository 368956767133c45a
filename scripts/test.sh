#!/usr/bin/env bash
# Build everything and run every test: unit tests, and integration tests that start the real
# mpirun with real Rust and C rank processes (each job bounded by mpirun --timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
# gcc for mpicc; mpich for the foreign-launcher (Hydra) test; MPICH's and Open MPI's compilers and
# Open MPI's mpirun for the foreign-binaries test (libmpich-dev is only recommended by mpich);
# libibverbs, librdmacm and libclang for btl-ib's real verbs provider (rdma-sys and its bindgen);
# python3 and binutils (nm) for the checks that the generated files are current and the C library
# defines all of mpi.h; python3-venv and python3-dev for the mpi4py test (tests/tests/mpi4py.rs);
# cmake, make and g++ for CMake's FindMPI (tests/tests/cmake.rs; make also for rsmpi's libffi);
# iproute2 for the network namespaces of the multi-host tests (scripts/netns.sh, tests/tests/multinode.rs).
scripts/deps.sh gcc pkg-config mpich libmpich-dev openmpi-bin libopenmpi-dev \
    libibverbs-dev librdmacm-dev libclang-dev libhwloc-dev python3 binutils \
    python3-venv python3-dev cmake make g++ iproute2
# One-shot build: incremental state would only add gigabytes to target/ (and to a CI disk).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
df -h . | sed 's/^/disk: /'
cargo build --workspace --all-targets
cargo test --workspace
# Once more per other memhook provider (the suite above used the default: hooks on x86-64 Linux):
# the whole workspace, with the ranks under mpirun built with that provider.
for provider in none ldpreload ptmalloc; do
    echo "== whole suite, memhook provider $provider"
    RMPI_TEST_FEATURES="memory-manager/$provider" cargo test --workspace --features "memory-manager/$provider"
done
# Every integration test once more with every job over btl ib (software verbs provider):
# `--mca btl ib,self --mca btl_ib_device soft`.
echo "== integration tests over btl ib,self (software verbs provider)"
RMPI_TEST_BTL=ib cargo test -p rmpi-tests
# A representative subset once more over btl tcp (`--mca btl tcp,self` on loopback-routed
# sockets; about 2.5 minutes on 2 cores): tcp's own tests, point-to-point (every protocol path,
# streamed rendezvous), collectives (many peers connecting at once) and fault teardown.
echo "== integration subset over btl tcp,self"
RMPI_TEST_BTL=tcp cargo test -p rmpi-tests --test btl_tcp --test point_to_point --test collectives --test faults
df -h . | sed "s/^/disk after: /"; du -sh target 2>/dev/null | sed "s/^/target: /"
