/* MPI_Init_thread asking for MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d thread level %d\n", rank, size, provided == MPI_THREAD_MULTIPLE);
    MPI_Finalize();
    return 0;
}
