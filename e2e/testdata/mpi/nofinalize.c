/* Rank 1 returns from main without MPI_Finalize, with status 0. */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        return 0;
    sleep(120);
    MPI_Finalize();
    return 0;
}
