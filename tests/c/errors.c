/* With MPI_ERRORS_RETURN, bad arguments and truncation come back as error classes. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errors = 0;

static void expect(int rc, int cls, const char *what) {
    int got;
    MPI_Error_class(rc, &got);
    if (got != cls) {
        char s[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, s, &len);
        printf("%s: expected class %d, got %d (%s)\n", what, cls, got, s);
        errors++;
    }
}

int main(int argc, char **argv) {
    int rank, size;
    char big[100], small[10];
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    expect(MPI_Send(big, 1, MPI_CHAR, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "send to rank size");
    expect(MPI_Send(big, 1, MPI_CHAR, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG, "negative tag");
    expect(MPI_Send(big, -1, MPI_CHAR, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "negative count");
    expect(MPI_Send(big, 1, (MPI_Datatype)0x7777, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "bad datatype");
    expect(MPI_Send(big, 1, MPI_CHAR, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_COMM_NULL");
    expect(MPI_Send(NULL, 5, MPI_CHAR, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, "NULL buffer");

    if (size >= 2 && rank == 0) {
        memset(big, 'x', sizeof big);
        MPI_Send(big, 100, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
    } else if (size >= 2 && rank == 1) {
        int rc = MPI_Recv(small, 10, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &st);
        expect(rc, MPI_ERR_TRUNCATE, "truncated receive");
    }
    /* PROC_NULL: completes at once with source MPI_PROC_NULL and count 0. */
    {
        int count = -1;
        expect(MPI_Recv(small, 10, MPI_CHAR, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st), MPI_SUCCESS, "recv from PROC_NULL");
        MPI_Get_count(&st, MPI_CHAR, &count);
        if (st.MPI_SOURCE != MPI_PROC_NULL || count != 0) {
            printf("PROC_NULL status: source %d count %d\n", st.MPI_SOURCE, count);
            errors++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (errors == 0 && rank == 0) printf("errors: OK\n");
    MPI_Finalize();
    return errors ? 1 : 0;
}
