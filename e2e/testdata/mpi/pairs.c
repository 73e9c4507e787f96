/* Every pair of ranks exchanges a buffer both ways and checks it: the
 * business cards really travelled through the modex. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT (1 << 16)

int main(int argc, char **argv) {
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *out = malloc(COUNT * sizeof(int)), *in = malloc(COUNT * sizeof(int));
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank)
            continue;
        for (int i = 0; i < COUNT; i++)
            out[i] = rank * 1000003 + peer + i;
        MPI_Sendrecv(out, COUNT, MPI_INT, peer, 0, in, COUNT, MPI_INT, peer, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < COUNT; i++)
            if (in[i] != peer * 1000003 + rank + i)
                bad++;
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d: %d bad words in the job\n", rank, size, total);
    MPI_Finalize();
    return total != 0;
}
