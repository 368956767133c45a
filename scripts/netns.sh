#!/usr/bin/env bash
# Test "nodes" on one machine: network namespaces joined by veth pairs to a bridge, each with its
# own address and (through `exec`, with unshare --uts) its own host name, which resolves there
# (an /etc/hosts of the nodes, bind-mounted in a mount namespace of its own). For mpirun's multi-host
# tests and benchmarks, as the launch agent: `mpirun --launch-agent "scripts/netns.sh exec"`.
#
#   scripts/netns.sh up PREFIX N     create namespaces PREFIX-node1..N (10.RR.0.11..) and the
#                                    bridge; prints the host names (node1,...)
#   scripts/netns.sh exec HOST CMD.. run CMD in HOST's namespace, host name HOST (PREFIX from
#                                    $RMPI_NETNS_PREFIX); as ssh, CMD's words are joined and run
#                                    by a shell
#   scripts/netns.sh HOST CMD...     the same as exec, as rsh is called (MPICH's -launcher-exec)
#   scripts/netns.sh down PREFIX     kill what runs in them, remove namespaces, veths and bridge
#
# PREFIX is at most 8 characters (interface names are 15 at most). The subnet is 10.RR.0.0/24,
# RR from the prefix, so two prefixes can live side by side. Needs root and iproute2.
set -euo pipefail

subnet() { # PREFIX -> second octet, 100..227
    local sum=0 c i
    for ((i = 0; i < ${#1}; i++)); do
        printf -v c '%d' "'${1:i:1}"
        sum=$(((sum * 31 + c) % 128))
    done
    echo $((100 + sum))
}

cmd=${1:-}
case "$cmd" in
up)
    prefix=$2 n=$3
    [ ${#prefix} -le 8 ] || { echo "netns.sh: prefix $prefix is longer than 8" >&2; exit 2; }
    rr=$(subnet "$prefix")
    br="${prefix}br"
    ip link add "$br" type bridge
    ip addr add "10.$rr.0.1/24" dev "$br"
    ip link set "$br" up
    hosts=()
    for ((i = 1; i <= n; i++)); do
        ns="$prefix-node$i"
        ip netns add "$ns"
        ip link add "${prefix}v$i" type veth peer name eth0 netns "$ns"
        ip link set "${prefix}v$i" master "$br" up
        ip -n "$ns" addr add "10.$rr.0.$((10 + i))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        hosts+=("node$i")
    done
    # Host names resolve inside the nodes (MPICH's spawn/join looks its own up), as on a cluster.
    mkdir -p "/run/rmpi-netns/$prefix"
    {
        echo "127.0.0.1 localhost"
        echo "::1 localhost"
        for ((i = 1; i <= n; i++)); do echo "10.$rr.0.$((10 + i)) node$i"; done
    } > "/run/rmpi-netns/$prefix/hosts"
    (IFS=,; echo "${hosts[*]}")
    ;;
exec)
    host=$2
    shift 2
    prefix=${RMPI_NETNS_PREFIX:?set RMPI_NETNS_PREFIX to the prefix given to up}
    # Like ssh: the words are joined and the node's shell runs them (Open MPI's daemon command
    # is shell syntax). nsenter, not `ip netns exec`: that one remounts /sys, which hides the
    # cgroup file systems a Slurm daemon needs.
    [ -e "/run/netns/$prefix-$host" ] || { echo "netns.sh: no node $host (namespace $prefix-$host)" >&2; exit 255; }
    # Its own mount namespace only to show the nodes' /etc/hosts.
    hf="/run/rmpi-netns/$prefix/hosts"
    if [ -e "$hf" ]; then
        exec nsenter --net="/run/netns/$prefix-$host" unshare --uts --mount -- \
            sh -c "mount --bind '$hf' /etc/hosts && hostname '$host' && $*"
    fi
    exec nsenter --net="/run/netns/$prefix-$host" unshare --uts -- sh -c "hostname '$host' && $*"
    ;;
down)
    prefix=$2
    for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix-node" || true); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done
    # A veth goes with its peer's namespace, but a namespace lives on while sockets hold it
    # (connections that could not close, e.g. after a link was taken down): delete our ends.
    for v in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^${prefix}v[0-9]+$" || true); do
        ip link del "$v" 2>/dev/null || true
    done
    ip link del "${prefix}br" 2>/dev/null || true
    rm -rf "/run/rmpi-netns/$prefix"
    ;;
*)
    # `netns.sh HOST CMD...`, as rsh is called (MPICH's Hydra: -launcher-exec netns.sh).
    if [ -n "$cmd" ] && [ -e "/run/netns/${RMPI_NETNS_PREFIX:-}-$cmd" ]; then
        exec "$0" exec "$@"
    fi
    sed -n 2,17p "$0" >&2
    exit 2
    ;;
esac
