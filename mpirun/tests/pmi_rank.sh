#!/usr/bin/env bash
# A rank that speaks PMI-1 over the socket mpirun hands it (PMI_FD), for mpirun's tests.
# Usage: pmi_rank.sh MODE
#   hello          init, put, barrier, get the next rank's key, finalize
#   abort R CODE   rank R calls abort; the others wait in a barrier until killed
#   no-finalize    init, then exit 0
#   exit-after-init CODE
#   odd            unknown command, missing key, split and batched writes
#   garbage        malformed and over-long requests, then a normal conversation
#   flood          puts until the KVS refuses, then a normal conversation
#   close-early    init, close the PMI socket, go on running
set -u
fd=$PMI_FD
rank=$PMI_RANK
size=$PMI_SIZE

send() { printf '%s\n' "$*" >&"$fd"; }
recv() {
    if ! IFS= read -r -t 10 -u "$fd" reply; then
        echo "rank $rank: no reply from mpirun" >&2
        exit 90
    fi
}
expect() {
    recv
    if [ "$reply" != "$1" ]; then
        echo "rank $rank: expected '$1', got '$reply'" >&2
        exit 91
    fi
}
init() {
    send "cmd=init pmi_version=1 pmi_subversion=1"
    expect "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"
}
finalize() {
    send "cmd=finalize"
    expect "cmd=finalize_ack rc=0"
}

case "$1" in
hello)
    init
    send "cmd=get_maxes"
    expect "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0"
    send "cmd=get_universe_size"
    expect "cmd=universe_size size=$size rc=0"
    send "cmd=get_appnum"
    expect "cmd=appnum appnum=0 rc=0"
    send "cmd=get_my_kvsname"
    recv
    kvs=${reply#cmd=my_kvsname kvsname=}
    kvs=${kvs% rc=0}
    send "cmd=put kvsname=$kvs key=addr-$rank value=v$rank"
    expect "cmd=put_result rc=0 msg=success"
    send "cmd=barrier_in"
    expect "cmd=barrier_out"
    next=$(( (rank + 1) % size ))
    send "cmd=get kvsname=$kvs key=addr-$next"
    expect "cmd=get_result rc=0 msg=success value=v$next"
    send "cmd=get kvsname=$kvs key=PMI_process_mapping"
    expect "cmd=get_result rc=0 msg=success value=(vector,(0,1,$size))"
    echo "rank $rank of $size in $kvs got v$next"
    finalize
    ;;
abort)
    init
    if [ "$rank" = "$2" ]; then
        send "cmd=abort exitcode=$3 message=giving up now"
        exec sleep 30
    fi
    send "cmd=barrier_in"
    recv
    echo "rank $rank: barrier released despite abort: $reply" >&2
    exit 92
    ;;
no-finalize)
    init
    exit 0
    ;;
exit-after-init)
    init
    exit "$2"
    ;;
odd)
    init
    send "cmd=frobnicate x=1"
    expect "cmd=frobnicate_result rc=-1 msg=unknown_command"
    send "cmd=get key=nobody-put-this"
    expect "cmd=get_result rc=-1 msg=key_nobody-put-this_not_found"
    # One request split over two writes, then two requests in one write.
    printf 'cmd=put key=k%s' "$rank" >&"$fd"
    sleep 0.1
    printf ' value=%s\ncmd=get key=k%s\n' "$rank" "$rank" >&"$fd"
    expect "cmd=put_result rc=0 msg=success"
    expect "cmd=get_result rc=0 msg=success value=$rank"
    finalize
    echo "rank $rank odd ok"
    ;;
garbage)
    init
    send "no command here"
    expect "cmd=error rc=-1 msg=missing_cmd"
    send "no command here either"
    expect "cmd=error rc=-1 msg=missing_cmd"
    head -c 200000 /dev/zero | tr '\0' 'x' >&"$fd"
    printf '\n' >&"$fd"
    expect "cmd=error rc=-1 msg=line_too_long"
    send "cmd=frobnicate"
    expect "cmd=frobnicate_result rc=-1 msg=unknown_command"
    send "cmd=put key=k$rank value=$rank"
    expect "cmd=put_result rc=0 msg=success"
    send "cmd=barrier_in"
    expect "cmd=barrier_out"
    finalize
    echo "rank $rank garbage ok"
    ;;
flood)
    init
    i=0
    while :; do
        send "cmd=put key=f$i value=$(printf '%01000d' "$i")"
        recv
        case "$reply" in
        "cmd=put_result rc=0 msg=success") i=$((i + 1)) ;;
        "cmd=put_result rc=-1 msg=kvs_full") break ;;
        *) echo "rank $rank: unexpected '$reply'" >&2; exit 93 ;;
        esac
    done
    send "cmd=get key=f3"
    expect "cmd=get_result rc=0 msg=success value=$(printf '%01000d' 3)"
    finalize
    echo "rank $rank flood refused after $i puts"
    ;;
close-early)
    init
    exec {fd}>&-
    exec sleep 30
    ;;
*)
    echo "unknown mode $1" >&2
    exit 99
    ;;
esac
