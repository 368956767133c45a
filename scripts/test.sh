#!/usr/bin/env bash
# Build everything and run every test: unit tests, and integration tests that start the real
# mpirun with real Rust and C rank processes (each job bounded by mpirun --timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
# gcc for mpicc; mpich for the foreign-launcher (Hydra) test.
scripts/deps.sh gcc pkg-config mpich
cargo build --workspace --all-targets
cargo test --workspace
