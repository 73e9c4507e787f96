/* MPI start-up under a prsh PMI server: init, a barrier, an allreduce of
 * the ranks, finalize. Prints one line per rank; exits 0 only if the sum
 * is right. With the argument "abort", rank 0 calls MPI_Abort(7) instead
 * and the others wait in a barrier until they are killed. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, sum = -1;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "abort") == 0 && rank == 0)
        MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = sum == size * (size - 1) / 2;
    printf("hello rank %d of %d: sum %d %s\n", rank, size, sum, ok ? "OK" : "WRONG");
    fflush(stdout);
    MPI_Finalize();
    return ok ? 0 : 1;
}
