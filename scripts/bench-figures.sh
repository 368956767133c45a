#!/usr/bin/env bash
# Figures for a closing note: the side-by-side tables (rmpi vs the other MPIs found, 2 ranks,
# latency/bw/bibw 0 B - 4 MiB) and one SVG of them (bibw dashed); MPI_Allreduce side by side at 2
# and 4 ranks (8 B - 1 MiB, OSU's collective range; a tenth of OSU's iterations at 4 ranks, which
# oversubscribe a small machine) with an SVG of both; rmpi's own Rust osu-latency and osu-bw JSON
# too, run after (not interleaved, so not in the same plot). `uptime` before, between and after.
# Output in target/bench-figures/. Extra arguments go to bench-compare (e.g. --rounds 3).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace --quiet
R=target/release
F=target/bench-figures
mkdir -p "$F/json" "$F/json-allreduce-2" "$F/json-allreduce-4"
uptime | tee "$F/load.txt"
$R/bench-compare --json-dir "$F/json" "$@" | tee "$F/side-by-side-2ranks.txt"
uptime | tee -a "$F/load.txt"
$R/bench-compare --tests allreduce --np 2 -m 1M --json-dir "$F/json-allreduce-2" "$@" \
    | tee "$F/allreduce-2ranks.txt"
uptime | tee -a "$F/load.txt"
$R/bench-compare --tests allreduce --np 4 -m 1M --divisor 10 --json-dir "$F/json-allreduce-4" "$@" \
    | tee "$F/allreduce-4ranks.txt"
uptime | tee -a "$F/load.txt"
$R/mpirun -np 2 $R/osu-latency --json > "$F/json/osu-latency.json"
$R/mpirun -np 2 $R/osu-bw --json > "$F/json/osu-bw.json"
uptime | tee -a "$F/load.txt"
$R/bench-plot -o "$F/side-by-side-2ranks.svg" "$F"/json/lat-*.json "$F"/json/bw-*.json \
    "$F"/json/bibw-*.json
$R/bench-plot -o "$F/rmpi-rust.svg" "$F/json/osu-latency.json" "$F/json/osu-bw.json"
$R/bench-plot -o "$F/allreduce.svg" "$F"/json-allreduce-2/*.json "$F"/json-allreduce-4/*.json
