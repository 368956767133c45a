/* A non-blocking collective started on one rank before a blocking collective and on the others
 * after it (mpi4py's ULFM Iagree test does this with MPI_Iallreduce and MPI_Barrier). MPI asks
 * for one order on every rank, but MPICH and Open MPI keep blocking and non-blocking collectives
 * apart, so programs rely on it: each root in turn starts MPI_Iallreduce (which cannot complete
 * while the others are held in the barrier), then MPI_Barrier / MPI_Allreduce; the others call
 * the blocking collective first. Argument "multiple": MPI_THREAD_MULTIPLE, where MPI_Barrier
 * runs as a schedule. */
#include "coll_util.h"

int main(int argc, char **argv) {
    int want = argc > 1 && strcmp(argv[1], "multiple") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    int provided;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int blocking_allreduce = 0; blocking_allreduce < 2; blocking_allreduce++) {
        for (int root = 0; root < size; root++) {
            int in = rank == root ? 0xB : 0xD, out = -1, flag = 0, sum = -1, one = 1;
            MPI_Request req;
            MPI_Barrier(comm);
            if (rank == root) {
                MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_BAND, comm, &req);
                MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                CHECK(size == 1 || !flag, "root %d: MPI_Iallreduce done before the others started", root);
                if (blocking_allreduce)
                    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
                else
                    MPI_Barrier(comm);
            } else {
                if (blocking_allreduce)
                    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
                else
                    MPI_Barrier(comm);
                MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_BAND, comm, &req);
            }
            if (!flag)
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK(out == (size == 1 ? 0xB : 0x9), "root %d: agreed 0x%x, expected 0x9", root, out);
            CHECK(!blocking_allreduce || sum == size, "root %d: allreduce sum %d", root, sum);
        }
    }
    MPI_Comm_free(&comm);
    return finish();
}
