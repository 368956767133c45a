#!/usr/bin/env bash
# The long soak (issue 15 item 5); the test command runs the short forms (tests/tests/soak.rs).
#
# Usage: scripts/soak.sh [--seconds S] [--jobs N] [--np N] [-- extra mpirun args, e.g. --mca btl ib,self]
#   --seconds S   how long the random-traffic soak runs (default 600)
#   --jobs N      short jobs started back to back afterwards (default 500)
#   --np N        ranks of the soak (default 16, oversubscribed)
# Builds release, runs target/release/soak under mpirun (every byte, status and order checked),
# then N one-round soak jobs at np 2-5, then checks that no rank process and no /dev/shm file
# of ours is left. Exits non-zero at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=600
JOBS=500
NP=16
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECONDS_="$2"; shift 2 ;;
        --jobs) JOBS="$2"; shift 2 ;;
        --np) NP="$2"; shift 2 ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "soak.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
scripts/deps.sh gcc pkg-config libibverbs-dev librdmacm-dev libclang-dev libhwloc-dev
cargo build --release -p mpirun -p benchmarks --bin mpirun --bin soak
M=target/release/mpirun
label="rmpi-soak-$$"
shm_before=$(ls /dev/shm | grep -c '^rmpi' || true)

echo "== soak: $NP ranks for $SECONDS_ s"
"$M" -np "$NP" --oversubscribe --timeout $((SECONDS_ + 300)) "${EXTRA[@]}" \
    target/release/soak --seconds "$SECONDS_" --label "$label"

echo "== $JOBS jobs back to back"
start=$(date +%s)
for i in $(seq 0 $((JOBS - 1))); do
    np=$((2 + i % 4))
    if ! out=$("$M" -np "$np" --oversubscribe --timeout 120 "${EXTRA[@]}" target/release/soak \
        --seconds 0 --max-bytes 1048576 --seed "$i" --label "$label" 2>&1); then
        echo "job $i (np $np) failed:"; echo "$out"; exit 1
    fi
done
echo "$JOBS jobs in $(( $(date +%s) - start )) s, all passed"

left=$(pgrep -f -- "$label" || true)
shm_after=$(ls /dev/shm | grep -c '^rmpi' || true)
if [ -n "$left" ]; then echo "processes left behind: $left"; exit 1; fi
if [ "$shm_after" -gt "$shm_before" ]; then echo "/dev/shm files left behind:"; ls /dev/shm; exit 1; fi
echo "nothing left behind (no process, no /dev/shm file)"
