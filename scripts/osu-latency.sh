#!/usr/bin/env bash
# The main job: build in release mode, then run the OSU-style latency test on 2 ranks.
# Extra arguments go to osu-latency (e.g. -m 0:4096).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh gcc pkg-config libibverbs-dev librdmacm-dev libclang-dev libhwloc-dev
cargo build --release --workspace
exec target/release/mpirun -np 2 --timeout 600 target/release/osu-latency "$@"
