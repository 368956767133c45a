#!/usr/bin/env bash
# Build everything and run every test: unit tests, and integration tests that start the real
# mpirun with real Rust and C rank processes (each job bounded by mpirun --timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
# gcc for mpicc; mpich for the foreign-launcher (Hydra) test.
scripts/deps.sh gcc pkg-config mpich
cargo build --workspace --all-targets
cargo test --workspace
# memhook: the suite above ran with the default provider (hooks on x86-64 Linux); the memhook tests
# (every release path must raise an event, the allocator under load) run again once per other
# provider, which is all a provider changes.
for provider in none ldpreload ptmalloc; do
    echo "== memhook tests, provider $provider"
    cargo test -p memhook --features "$provider"
done
