#!/usr/bin/env bash
# A real Slurm on this machine for the tests: slurmctld here, one slurmd per test node in the
# network namespaces of scripts/netns.sh (hosts node1..N, 2 CPUs each), munge for authentication,
# Debian's packages (installed when missing). Needs root.
#
#   scripts/slurm.sh up PREFIX N   start it; prints the SLURM_CONF to export
#   scripts/slurm.sh down PREFIX   stop every daemon it started, remove the nodes and its files
#
# Then e.g.: SLURM_CONF=... srun --mpi=pmi2 -N 2 -n 4 ./app, or salloc -N 2 -n 4 mpirun ./app.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cmd=${1:-}
prefix=${2:-}
[ -n "$prefix" ] || { sed -n 2,9p "$0" >&2; exit 2; }
dir="/tmp/rmpi-slurm-$prefix"

down() {
    for f in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid; do
        [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    # The jobs' step daemons die with their namespaces' processes (netns.sh down).
    "$root/scripts/netns.sh" down "$prefix"
    [ -e "$dir/munged.pid" ] && kill "$(cat "$dir/munged.pid")" 2>/dev/null || true
    rm -rf "$dir"
}

case "$cmd" in
up)
    n=${3:?number of nodes}
    "$root/scripts/deps.sh" munge slurmd slurmctld slurm-client iproute2
    down
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    "$root/scripts/netns.sh" up "$prefix" "$n" >/dev/null
    br_ip=$(ip -4 -br addr show "${prefix}br" | awk '{print $3}' | cut -d/ -f1)
    net=${br_ip%.1}
    # munge: one daemon per machine; start it only when none answers.
    if ! munge -n </dev/null >/dev/null 2>&1; then
        mkdir -p /run/munge /var/log/munge /var/lib/munge
        chown munge:munge /run/munge /var/log/munge /var/lib/munge
        [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null; }
        chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
        runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
        cp /run/munge/munged.pid "$dir/munged.pid"
    fi
    host=$(hostname -s)
    {
        echo "ClusterName=rmpi$prefix"
        echo "SlurmctldHost=$host($br_ip)"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        # No cgroups: the test nodes share the machine's.
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "MpiDefault=none"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "StateSaveLocation=$dir/state"
        echo "SlurmdSpoolDir=$dir/spool/%n"
        echo "SlurmctldPidFile=$dir/slurmctld.pid"
        echo "SlurmdPidFile=$dir/slurmd-%n.pid"
        echo "SlurmctldLogFile=$dir/log/slurmctld.log"
        echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
        echo "ReturnToService=2"
        echo "SchedulerType=sched/builtin"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        for ((i = 1; i <= n; i++)); do
            echo "NodeName=node$i NodeAddr=$net.$((10 + i)) CPUs=2 State=UNKNOWN"
        done
        echo "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE"
    } >"$dir/slurm.conf"
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld
    for ((i = 1; i <= n; i++)); do
        RMPI_NETNS_PREFIX=$prefix "$root/scripts/netns.sh" exec "node$i" env SLURM_CONF="$SLURM_CONF" slurmd
    done
    for _ in $(seq 100); do
        idle=$(sinfo -h -t idle -o %D 2>/dev/null | head -1)
        [ "${idle:-0}" = "$n" ] && break
        sleep 0.2
    done
    if [ "${idle:-0}" != "$n" ]; then
        echo "slurm.sh: the $n nodes did not come up; logs:" >&2
        tail -n 5 "$dir"/log/* >&2 || true
        down
        exit 1
    fi
    echo "$SLURM_CONF"
    ;;
down)
    down
    ;;
*)
    sed -n 2,9p "$0" >&2
    exit 2
    ;;
esac
