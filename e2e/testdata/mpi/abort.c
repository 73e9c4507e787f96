/* Rank 2 (or 0 in a smaller world) aborts with status 7; the others wait. */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == (size > 2 ? 2 : 0))
        MPI_Abort(MPI_COMM_WORLD, 7);
    sleep(120);
    MPI_Finalize();
    return 0;
}
