#!/usr/bin/env bash
# Our mapping and binding beside Open MPI's, for the same options on the same synthetic
# topologies (hwloc XML written by lstopo): each case runs `mpirun --display-map --do-not-launch`
# and Open MPI's `mpirun --display-devel-map --do-not-launch` (with HWLOC_XMLFILE and a hostfile
# giving one slot per core), and compares every rank's binding picture ([BB/../..][..]).
# Nothing is launched. Exit status 1 if any case differs (the differences are printed).
#
#   scripts/bindings-vs-openmpi.sh [--verbose]
set -euo pipefail
cd "$(dirname "$0")/.."
VERBOSE=0
[ "${1:-}" = "--verbose" ] && VERBOSE=1
scripts/deps.sh openmpi-bin libopenmpi-dev hwloc-nox libhwloc-dev gcc
cargo build --quiet -p mpirun
OURS=$PWD/target/debug/mpirun
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' >"$WORK/hello.c"
mpicc.openmpi -o "$WORK/hello" "$WORK/hello.c"

declare -A SHAPE=(
  [big]="pack:2 numa:2 l3:2 core:16 pu:2"    # 2 packages, 4 NUMA nodes, 8 L3, 128 cores, 256 PUs
  [small]="pack:2 l3:2 core:4 pu:1"          # one NUMA node, 16 cores without SMT
  [epyc]="pack:2 numa:4 l3:2 core:8 pu:2"    # 2 packages, 8 NUMA nodes, 16 L3 (chiplets), 128 cores
)
for t in "${!SHAPE[@]}"; do
  lstopo-no-graphics -i "${SHAPE[$t]}" --of xml "$WORK/$t.xml" 2>/dev/null
  cores=$(lstopo-no-graphics -i "$WORK/$t.xml" --only core 2>/dev/null | wc -l)
  echo "localhost slots=$cores" >"$WORK/$t.hosts"
done

# topology np options (Open MPI 4.1 spells package "socket"; we take both)
CASES=(
  "big 1" "big 2" "big 3" "big 5" "big 6 --map-by l3cache" "big 6 --map-by l3cache --bind-to core"
  "big 4 --map-by numa" "big 4 --map-by numa --bind-to hwthread" "big 8 --map-by numa --bind-to hwthread"
  "big 4 --map-by core --bind-to hwthread" "big 4 --map-by hwthread" "big 4 --map-by hwthread --bind-to core"
  "big 3 --bind-to l3cache" "big 4 --map-by slot" "big 4 --map-by slot --bind-to core"
  "big 4 --map-by l3cache:PE=4" "big 6 --map-by l3cache --rank-by core"
  "big 4 --bind-to core:overload-allowed" "big 4 --map-by ppr:2:l3cache --bind-to core"
  "big 4 --map-by socket --bind-to core" "big 5 --map-by socket" "big 3 --bind-to socket"
  "big 6 --map-by socket --rank-by core --bind-to core" "big 2 --map-by ppr:1:socket"
  "big 20 --map-by l3cache --bind-to core" "big 10 --map-by numa --bind-to l3cache"
  "big 128" "big 64 --map-by socket --bind-to core" "big 3 --bind-to none"
  "small 4" "small 8" "small 4 --map-by l3cache --bind-to core" "small 4 --map-by numa --bind-to core"
  "small 5 --map-by socket:PE=2" "small 2" "small 6 --map-by l3cache"
  "epyc 2" "epyc 16" "epyc 16 --map-by l3cache" "epyc 32 --map-by l3cache --bind-to core"
  "epyc 8 --map-by numa --bind-to core" "epyc 8 --map-by socket" "epyc 24 --map-by ppr:3:l3cache --bind-to core"
  "epyc 16 --map-by l3cache --rank-by core --bind-to core"
)

norm() { sed -e 's/^ *//' -e 's/UNBOUND/none/' -e 's/^$/none/'; }

same=0
differ=0
for c in "${CASES[@]}"; do
  read -r t np opts <<<"$c"
  # shellcheck disable=SC2086
  ompi=$(HWLOC_XMLFILE=$WORK/$t.xml HWLOC_THISSYSTEM=1 timeout 60 mpirun.openmpi --allow-run-as-root \
      --hostfile "$WORK/$t.hosts" --display-devel-map --do-not-launch -np "$np" $opts "$WORK/hello" 2>&1 \
      | awk '/Data for proc/ { split($4, a, ","); sub(/\]/, "", a[3]); r = a[3] } /Binding:/ { print r, $2 }' \
      | sort -n | cut -d' ' -f2- | norm || true)
  # shellcheck disable=SC2086
  ours=$(timeout 60 "$OURS" --mca hwloc_base_topo_file "$WORK/$t.xml" --display-map --do-not-launch \
      -np "$np" $opts true 2>&1 | awk '/^  rank/ { print ($3 == "not" ? "none" : $5) }' | norm || true)
  if [ -n "$ompi" ] && [ "$ompi" = "$ours" ]; then
    same=$((same + 1))
    [ $VERBOSE = 1 ] && echo "same     $t -np $np $opts"
  else
    differ=$((differ + 1))
    echo "DIFFERS  $t -np $np $opts"
    diff <(echo "$ompi") <(echo "$ours") | head -8 | cut -c1-120 || true
  fi
done
echo "bindings: $same cases the same as Open MPI $(mpirun.openmpi --version 2>/dev/null | head -1 | awk '{print $NF}'), $differ differ"
[ $differ = 0 ]
