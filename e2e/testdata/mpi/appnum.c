#include <mpi.h>
#include <stdio.h>
// Prints the rank's MPI_APPNUM and the world it shares with the other
// programs of an MPMD launch: the sum of every rank's app number.
int main(int argc, char **argv) {
    int rank, size, flag, *appnum, mine = -1, sum;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    if (flag) {
        mine = *appnum;
    }
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("%s: rank %d of %d appnum %d sum %d\n", argv[1], rank, size, mine, sum);
    MPI_Finalize();
    return 0;
}
