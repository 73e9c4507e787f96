#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* The parent (one rank) times MPI_Comm_spawn of argv[1] children and
 * the merge and barrier over parent and children. */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent, inter, all;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        MPI_Intercomm_merge(parent, 1, &all);
        MPI_Barrier(all);
        MPI_Comm_free(&all);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    int n = argc > 1 ? atoi(argv[1]) : 4;
    double t0 = MPI_Wtime();
    MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, n, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE);
    double t1 = MPI_Wtime();
    MPI_Intercomm_merge(inter, 0, &all);
    MPI_Barrier(all);
    double t2 = MPI_Wtime();
    int size;
    MPI_Comm_size(all, &size);
    printf("spawned %d: spawn %.4f s, merge+barrier %.4f s, size %d\n", n, t1 - t0, t2 - t1, size);
    MPI_Comm_free(&all);
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
