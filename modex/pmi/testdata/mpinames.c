/* MPI_Publish_name, MPI_Lookup_name and MPI_Unpublish_name of an MPICH
 * program (Debian's: PMI-1, no spawn), which go to the PMI server: rank 0
 * publishes, every rank looks the name up after a barrier, rank 0 then
 * withdraws it, and nobody finds it any more. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define PORT "tag#0$description#vm$port#40000$"

int main(int argc, char **argv)
{
    char port[MPI_MAX_PORT_NAME] = "";
    int rank, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0 && MPI_Publish_name("ocean", MPI_INFO_NULL, PORT) != MPI_SUCCESS)
        bad = printf("rank 0: publish failed\n");
    if (rank == 0 && MPI_Publish_name("ocean", MPI_INFO_NULL, "other") == MPI_SUCCESS)
        bad = printf("rank 0: a second publish succeeded\n");
    MPI_Barrier(MPI_COMM_WORLD);
    if (MPI_Lookup_name("ocean", MPI_INFO_NULL, port) != MPI_SUCCESS || strcmp(port, PORT) != 0)
        bad = printf("rank %d: looked up \"%s\"\n", rank, port);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && MPI_Unpublish_name("ocean", MPI_INFO_NULL, PORT) != MPI_SUCCESS)
        bad = printf("rank 0: unpublish failed\n");
    MPI_Barrier(MPI_COMM_WORLD);
    if (MPI_Lookup_name("ocean", MPI_INFO_NULL, port) == MPI_SUCCESS)
        bad = printf("rank %d: found an unpublished name\n", rank);
    MPI_Finalize();
    if (!bad)
        printf("names rank %d: OK\n", rank);
    return bad != 0;
}
