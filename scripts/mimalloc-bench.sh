#!/usr/bin/env bash
# mimalloc-bench's bench/ tests with glibc, jemalloc, mimalloc, tcmalloc and ours (librmalloc.so),
# each allocator by LD_PRELOAD, interleaved (every round runs each test with each allocator in
# turn), medians of N rounds; prints issue 21's table (wall seconds; larsonN in operations/s,
# glibc-thread in iterations and rptestN in memory ops per CPU second, all three higher-is-better,
# xmalloc-testN in its rtime) and one of peak RSS (MiB, /usr/bin/time -v's maximum resident set).
#
# Usage: scripts/mimalloc-bench.sh DIR [--rounds N] [--tests "cfrac larsonN ..."]
#                                      [--allocs "glibc ours ..."] [--ours NAME=LIB.so ...]
#                                      [--results FILE.tsv]
# DIR is a checkout of github.com/daanx/mimalloc-bench (only bench/ is used; sh6bench/sh8bench,
# which need a download, are left out). The build goes to target/mimalloc-bench/build; raw
# figures to target/mimalloc-bench/results.tsv. Installs cmake, g++, time and the three peer
# allocators' Debian packages when missing. --ours adds another allocator (e.g. an older
# librmalloc.so) under NAME, or replaces ours with --ours ours=LIB.so. Figures from a
# shared or loaded machine are rough.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 1 ] && [ -d "$1/bench" ] || { sed -n 2,16p "$0" >&2; exit 2; }
src="$(cd "$1" && pwd)/bench"; shift
rounds=3
tests="cfrac espresso barnes alloc-test1 alloc-testN glibc-simple glibc-thread malloc-large larsonN xmalloc-testN rptestN cache-scratchN mstressN mleak10"
allocs="glibc jemalloc mimalloc tcmalloc ours"
declare -A lib=(
    [glibc]=""
    [jemalloc]=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
    [mimalloc]=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
    [tcmalloc]=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
    [ours]="$root/target/rmalloc/librmalloc.so"
)
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --tests) tests="$2"; shift 2 ;;
        --allocs) allocs="$2"; shift 2 ;;
        --ours)
            n="${2%%=*}"; lib[$n]="${2#*=}"
            case " $allocs " in *" $n "*) ;; *) allocs="$allocs $n" ;; esac
            shift 2 ;;
        --results) res="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
"$root/scripts/deps.sh" cmake make g++ time libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
out="$root/target/mimalloc-bench"
mkdir -p "$out/build"
nice -n 19 cargo build --profile rmalloc -q -p memhook-rmalloc --manifest-path "$root/Cargo.toml"

# The bench/ sources, less the two shbench programs whose sources are a separate download.
rm -rf "$out/src" && cp -r "$src" "$out/src"
sed -i '/sh[68]bench/d' "$out/src/CMakeLists.txt"
(cd "$out/build" && cmake -S "$out/src" -B . -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    nice -n 19 make -s -j2 >/dev/null 2>&1) || { echo "mimalloc-bench build failed" >&2; exit 1; }

procs=2
cmd_of() {
    case "$1" in
        cfrac) echo "./cfrac 17545186520507317056371138836327483792789528" ;;
        espresso) echo "./espresso $out/src/espresso/largest.espresso" ;;
        barnes) echo "./barnes" ;;
        alloc-test1) echo "./alloc-test 1" ;;
        alloc-testN) echo "./alloc-test $procs" ;;
        glibc-simple) echo "./glibc-simple" ;;
        glibc-thread) echo "./glibc-thread $procs" ;;
        malloc-large) echo "./malloc-large" ;;
        larsonN) echo "./larson 5 8 1000 5000 100 4141 $procs" ;;
        xmalloc-testN) echo "./xmalloc-test -w $procs -t 5 -s 64" ;;
        rptestN) echo "./rptest $procs 0 1 2 500 1000 100 8 16000" ;;
        cache-scratchN) echo "./cache-scratch $procs 1000 1 2000000 $procs" ;;
        mstressN) echo "./mstress $procs 50 25" ;;
        mleak10) echo "./mleak 5" ;;
        *) echo "unknown test $1" >&2; return 1 ;;
    esac
}

res="${res:-$out/results.tsv}"
printf 'round\ttest\talloc\tvalue\twall_s\trss_kib\tstatus\n' >"$res"
for r in $(seq 1 "$rounds"); do
    for t in $tests; do
        c="$(cmd_of "$t")"
        for a in $allocs; do
            # barnes reads its parameters from stdin.
            input=/dev/null; [ "$t" = barnes ] && input="$out/src/barnes/input"
            set +e
            (cd "$out/build" && LD_PRELOAD="${lib[$a]}" /usr/bin/time -f '%e %M' -o "$out/time.txt" \
                timeout 300 $c <"$input" >"$out/stdout.txt" 2>"$out/stderr.txt")
            st=$?
            set -e
            read -r wall rss <"$out/time.txt" || { wall=NA; rss=NA; }
            case "$t" in
                larsonN) v="$(sed -n 's/^Throughput = *\([0-9]*\).*/\1/p' "$out/stdout.txt")" ;;
                xmalloc-testN) v="$(sed -n 's/^rtime: \([0-9.]*\).*/\1/p' "$out/stdout.txt")" ;;
                glibc-thread) v="$(sed -n 's/^\([0-9]*\) iterations.*/\1/p' "$out/stdout.txt")" ;;
                rptestN) v="$(grep -o '[0-9][0-9]* memory ops' "$out/stdout.txt" | head -1 | cut -d' ' -f1)" ;;
                *) v="$wall" ;;
            esac
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$t" "$a" "${v:-NA}" "$wall" "$rss" "$st" >>"$res"
            echo "round $r $t $a: ${v:-NA} (wall $wall s, peak RSS $((${rss:-0} / 1024)) MiB, exit $st)" >&2
        done
    done
done

python3 - "$res" "$allocs" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
allocs = sys.argv[2].split()
tests = list(dict.fromkeys(r["test"] for r in rows))
def med(t, a, key):
    v = [float(r[key]) for r in rows if r["test"] == t and r["alloc"] == a and r[key] != "NA" and r["status"] == "0"]
    return statistics.median(v) if v else None
higher = {"larsonN", "glibc-thread", "rptestN"}  # fixed-duration tests: operations
def fmt(x, t):
    if x is None: return "fail"
    return f"{x / 1e6:.1f} M" if t in higher else f"{x:.2f}"
peers = [a for a in allocs if a in ("glibc", "jemalloc", "mimalloc", "tcmalloc")]
print("| test | " + " | ".join(allocs) + " | ours / best peer |")
print("|---" * (len(allocs) + 2) + "|")
for t in tests:
    v = {a: med(t, a, "value") for a in allocs}
    p = [v[a] for a in peers if v[a] is not None]
    ratio = ""
    if p and v.get("ours"):
        best = max(p) if t in higher else min(p)
        ratio = f"{v['ours'] / best:.2f}×"
    name = t + (" (ops, higher is better)" if t in higher else " (rtime)" if t.startswith("xmalloc") else "")
    print(f"| {name} | " + " | ".join(fmt(v[a], t) for a in allocs) + f" | {ratio} |")
print()
print("peak RSS (MiB, median)")
print("| test | " + " | ".join(allocs) + " | ours / glibc |")
print("|---" * (len(allocs) + 2) + "|")
for t in tests:
    v = {a: med(t, a, "rss_kib") for a in allocs}
    ratio = f"{v['ours'] / v['glibc']:.2f}×" if v.get("ours") and v.get("glibc") else ""
    print(f"| {t} | " + " | ".join("fail" if v[a] is None else f"{v[a] / 1024:.1f}" for a in allocs) + f" | {ratio} |")
PY
