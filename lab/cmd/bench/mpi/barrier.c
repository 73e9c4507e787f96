/* The smallest MPI job: every rank initialises, meets the others once and
 * finalises, so its time is the launch plus the MPI library's wire-up.
 * With an argument N it fails unless the world has N ranks: a launcher
 * whose PMI the library does not speak starts N singletons, which would
 * pass for a quick launch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && size != atoi(argv[1])) {
        fprintf(stderr, "rank %d: a world of %d ranks, want %s\n", rank, size, argv[1]);
        MPI_Finalize();
        return 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
