/* MPI_Init time of an MPI program (MPICH or Open MPI): each rank times its
 * own MPI_Init (clock_gettime), and rank 0 prints the slowest, since the
 * job waits for it:  initbench ranks=N init_us=T */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
int main(int argc, char **argv)
{
    struct timespec a, b;
    int rank, size;
    double t, max;
    clock_gettime(CLOCK_MONOTONIC, &a);
    MPI_Init(&argc, &argv);
    clock_gettime(CLOCK_MONOTONIC, &b);
    t = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("initbench ranks=%d init_us=%.0f\n", size, max);
    MPI_Finalize();
    return 0;
}
