/* The master-worker pattern: one master spawns one worker N times in
 * turn; each worker gets a number, answers it doubled and disconnects.
 * The master prints each answer and, at the end, how many were right.
 *   spawnloop N [SEC]   each worker stays SEC seconds after it finalised
 *                       (its slot stays taken), and the master says
 *                       each answer as it comes; a spawn that fails is
 *                       said, and ends the loop. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, worker;
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        int n;
        MPI_Recv(&n, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
        n *= 2;
        MPI_Send(&n, 1, MPI_INT, 0, 0, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        if (argc > 1)
            sleep(atoi(argv[1]));
        return 0;
    }
    int times = argc > 1 ? atoi(argv[1]) : 30, right = 0;
    char *hold[] = {argc > 2 ? argv[2] : "0", NULL};
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int i = 0; i < times; i++) {
        int rc = MPI_Comm_spawn(argv[0], hold, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &worker, MPI_ERRCODES_IGNORE);
        if (rc != MPI_SUCCESS) {
            printf("spawn %d failed\n", i);
            times = i;
            break;
        }
        int answer;
        MPI_Send(&i, 1, MPI_INT, 0, 0, worker);
        MPI_Recv(&answer, 1, MPI_INT, 0, 0, worker, MPI_STATUS_IGNORE);
        right += answer == 2 * i;
        MPI_Comm_disconnect(&worker);
        if (argc > 2) { /* workers that stay: say how far the loop got */
            printf("master: worker %d answered\n", i);
            fflush(stdout);
        }
    }
    printf("master: %d of %d workers answered right\n", right, times);
    MPI_Finalize();
    return 0;
}
