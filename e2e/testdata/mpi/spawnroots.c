/* Spawns that are not rank 0's alone.
 *   spawnroots root   MPI_Comm_spawn over MPI_COMM_WORLD with the last
 *                     rank as root: 2 children; parents and children
 *                     merge and sum their ranks.
 *   spawnroots self   every rank spawns 1 child on MPI_COMM_SELF at the
 *                     same time (several child jobs at once); each child
 *                     answers its parent's rank + 100.
 *   spawnroots abort  as root, but the children's rank 1 calls MPI_Abort
 *                     with 7 while the others wait in the merge.
 * Children print nothing; parents print one line each. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void child(MPI_Comm parent, const char *mode)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (strcmp(mode, "abort") == 0 && me == 1)
        MPI_Abort(MPI_COMM_WORLD, 7);
    if (strcmp(mode, "self") == 0) {
        int n;
        MPI_Recv(&n, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
        n += 100;
        MPI_Send(&n, 1, MPI_INT, 0, 0, parent);
    } else {
        MPI_Comm all;
        int rank, sum;
        MPI_Intercomm_merge(parent, 1, &all);
        MPI_Comm_rank(all, &rank);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, all);
        MPI_Comm_free(&all);
    }
    MPI_Comm_disconnect(&parent);
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    const char *mode = argc > 1 ? argv[1] : "root";
    if (parent != MPI_COMM_NULL) {
        child(parent, mode);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *args[] = {(char *)mode, NULL};
    if (strcmp(mode, "self") == 0) {
        int answer;
        MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE);
        MPI_Send(&rank, 1, MPI_INT, 0, 0, inter);
        MPI_Recv(&answer, 1, MPI_INT, 0, 0, inter, MPI_STATUS_IGNORE);
        printf("parent %d: its child answered %d\n", rank, answer);
    } else {
        MPI_Comm all;
        int mine, sum, total;
        MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, size - 1, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
        MPI_Intercomm_merge(inter, 0, &all);
        MPI_Comm_rank(all, &mine);
        MPI_Comm_size(all, &total);
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, all);
        printf("parent %d: merged %d ranks, sum %d\n", rank, total, sum);
        MPI_Comm_free(&all);
    }
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
