#!/bin/bash
# Final device check: pt2pt (default and the ptmalloc provider's libmpi) and collectives at 8/16 ranks,
# beside Open MPI and MPICH, interleaved.
T=$PWD/.devkit; OO=${OUT:-/tmp/out}; O=/tmp/res7; mkdir -p $O $OO; START=$(date +%s)
exec > >(tee $OO/log.txt) 2>&1
late() { [ $(( $(date +%s) - START )) -gt ${LIMIT:-300} ]; }
mkdir -p /opt/peers && tar -C /opt/peers -xJf $T/peers.tar.xz
P=/opt/peers
PL=$P/usr/lib/x86_64-linux-gnu/openmpi/lib:$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu
export OPAL_PREFIX=$P/usr OMPI_MCA_mca_base_component_path=$P/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
chmod +x $T/rmpi/bin/* $T/osu-*/*/* $P/usr/bin/* 2>/dev/null
new() { LD_LIBRARY_PATH=$PL:$T/rmpi/lib timeout 60 $T/rmpi/bin/mpirun "$@"; }
ptm() { LD_LIBRARY_PATH=$PL:$T/rmpi/libptm timeout 60 $T/rmpi/bin/mpirun -x LD_LIBRARY_PATH "$@"; }
ompi() { LD_LIBRARY_PATH=$PL timeout 60 $P/usr/bin/orterun --allow-run-as-root "$@"; }
mpich() { LD_LIBRARY_PATH=$PL timeout 60 $P/usr/bin/mpiexec.hydra -launcher fork "$@"; }
for r in 1 2 3; do
  late && break
  echo "r$r probe $($T/line_probe | tail -1) t=$(( $(date +%s) - START ))"
  for b in latency bw bibw; do
    for m in new ptm; do $m -np 2 $T/osu-rmpi/pt2pt/osu_$b > $O/p2p-$b-rmpi_$m-r$r.txt 2>&1; done
    ompi -np 2 $T/osu-openmpi/pt2pt/osu_$b > $O/p2p-$b-openmpi-r$r.txt 2>&1
    mpich -np 2 $T/osu-mpich/pt2pt/osu_$b > $O/p2p-$b-mpich-r$r.txt 2>&1
  done
  for np in 8 16; do
    for b in allreduce bcast reduce; do
      new -np $np $T/osu-rmpi/collective/osu_$b -i 200 -x 20 > $O/coll-$b-np$np-rmpi_new-r$r.txt 2>&1
      ompi -np $np $T/osu-openmpi/collective/osu_$b -i 200 -x 20 > $O/coll-$b-np$np-openmpi-r$r.txt 2>&1
      mpich -np $np $T/osu-mpich/collective/osu_$b -i 200 -x 20 > $O/coll-$b-np$np-mpich-r$r.txt 2>&1
    done
  done
done
echo "probe $($T/line_probe | tail -1) elapsed $(( $(date +%s) - START )) s"
grep -L "1048576\|4194304" $O/*.txt | head
cd $O && tar -czf $OO/res.tgz *.txt; ls -la $OO
