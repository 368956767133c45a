#!/usr/bin/env bash
# Across two test hosts on this machine (network namespaces, scripts/netns.sh), side by side with
# Open MPI and MPICH started the same way (Open MPI's plm_rsh_agent and Hydra's rsh launcher are
# the same namespace command) and held to the network (Open MPI: btl tcp,self; MPICH's UCX:
# UCX_TLS=tcp,self, else it finds the other namespace's process on this machine and uses shared
# memory): unmodified
# OSU 5.3 osu_latency and osu_bw between the hosts (bench-compare --osu, interleaved rounds,
# medians), then job start for 2 hosts x 2 ranks (launch to exit of an MPI_Init/MPI_Finalize
# program, median of N). Needs root; run after `cargo build --release --workspace`.
#
# Usage: scripts/bench-netns.sh OSU_DIR [--rounds N] [--starts N] [--osu-args "-i 1000 -x 100"]
#                                       [--mpis rmpi,openmpi,mpich]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 1 ] && [ -d "$1" ] || { sed -n 2,9p "$0" >&2; exit 2; }
osu="$(cd "$1" && pwd)"; shift
rounds=3 starts=10 osu_args="" mpis=rmpi,openmpi,mpich
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --starts) starts=$2; shift 2 ;;
    --osu-args) osu_args=$2; shift 2 ;;
    --mpis) mpis=$2; shift 2 ;;
    *) echo "bench-netns.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
"$root/scripts/deps.sh" iproute2 openmpi-bin libopenmpi-dev mpich libmpich-dev
rel="$root/target/release"
[ -x "$rel/bench-compare" ] && [ -x "$rel/mpirun" ] || { echo "bench-netns.sh: build first (cargo build --release --workspace)" >&2; exit 1; }
prefix="b$(printf %x $$)"
trap '"$root/scripts/netns.sh" down "$prefix"' EXIT
"$root/scripts/netns.sh" up "$prefix" 2 >/dev/null
agent="$root/scripts/netns.sh exec"
export RMPI_NETNS_PREFIX="$prefix" RMPI_MCA_plm_rsh_agent="$agent" OMPI_MCA_plm_rsh_agent="$agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hosts=node1,node2
# The test hosts share this machine's cores: a binding made per host would put one rank of each
# host on the same core (Open MPI's default for 2 ranks, and ours, is --bind-to core).
nobind="--bind-to none"
hydra="-launcher rsh -launcher-exec $root/scripts/netns.sh -iface ${prefix}br -genv UCX_TLS tcp,self"
args=(--osu "$osu" --mpis "$mpis" --rounds "$rounds" --osu-tests osu_latency,osu_bw
      --rmpi-args "--host $hosts $nobind" --openmpi-args "--host $hosts --mca btl tcp,self $nobind"
      --mpich-args "$hydra -hosts $hosts")
[ -n "$osu_args" ] && args+=(--osu-args "$osu_args")
"$rel/bench-compare" "${args[@]}"

# Job start: an MPI_Init + MPI_Finalize program on 2 hosts x 2 ranks, each MPI in turn.
work=$(mktemp -d)
trap '"$root/scripts/netns.sh" down "$prefix"; rm -rf "$work"' EXIT
src="$root/tests/c/hello_plain.c"
"$rel/mpicc" -O2 -o "$work/hello.rmpi" "$src"
mpicc.openmpi -O2 -o "$work/hello.openmpi" "$src"
mpicc.mpich -O2 -o "$work/hello.mpich" "$src"
run() { # MPI
    case $1 in
    rmpi) "$rel/mpirun" --host node1:2,node2:2 $nobind "$work/hello.rmpi" ;;
    openmpi) mpirun.openmpi --host node1:2,node2:2 $nobind --mca btl tcp,self,vader "$work/hello.openmpi" ;;
    # shellcheck disable=SC2086
    mpich) mpiexec.mpich $hydra -hosts node1:2,node2:2 -n 4 "$work/hello.mpich" ;;
    esac >/dev/null
}
declare -A times
for ((i = 0; i < starts; i++)); do
    for m in ${mpis//,/ }; do
        t0=$(date +%s%N)
        run $m
        times[$m]+="$(( ($(date +%s%N) - t0) / 1000000 )) "
    done
done
echo
echo "job start, 2 hosts x 2 ranks (launch to exit of MPI_Init + MPI_Finalize), median of $starts, ms:"
for m in ${mpis//,/ }; do
    med=$(echo ${times[$m]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "  $m: $med   (all: ${times[$m]})"
done
