/* MPI_Publish_name, MPI_Lookup_name and MPI_Unpublish_name (which MPICH
 * sends to the PMI server): rank 0 publishes, every rank looks the name
 * up; rank 0 publishes it again (taken), rank 1 tries to withdraw it (not
 * its own), rank 0 withdraws it, and every rank looks it up again. Each
 * call's outcome is one line: ok, or the MPI error class it returned. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void report(int rank, const char *call, int rc)
{
    int class;
    if (rc == MPI_SUCCESS) {
        printf("rank %d %s: ok\n", rank, call);
        return;
    }
    MPI_Error_class(rc, &class);
    printf("rank %d %s: %s\n", rank, call,
           class == MPI_ERR_NAME ? "MPI_ERR_NAME" : class == MPI_ERR_SERVICE ? "MPI_ERR_SERVICE" : "other error");
}

int main(int argc, char **argv)
{
    char port[MPI_MAX_PORT_NAME] = "";
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0)
        report(rank, "publish", MPI_Publish_name("prsh-e2e", MPI_INFO_NULL, "port-of-rank-0"));
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = MPI_Lookup_name("prsh-e2e", MPI_INFO_NULL, port);
    report(rank, "lookup", rc == MPI_SUCCESS && strcmp(port, "port-of-rank-0") != 0 ? MPI_ERR_OTHER : rc);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        report(rank, "publish again", MPI_Publish_name("prsh-e2e", MPI_INFO_NULL, "another-port"));
    if (rank == 1)
        report(rank, "unpublish", MPI_Unpublish_name("prsh-e2e", MPI_INFO_NULL, "port-of-rank-0"));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        report(rank, "unpublish", MPI_Unpublish_name("prsh-e2e", MPI_INFO_NULL, "port-of-rank-0"));
    MPI_Barrier(MPI_COMM_WORLD);
    report(rank, "lookup after", MPI_Lookup_name("prsh-e2e", MPI_INFO_NULL, port));
    MPI_Finalize();
    return 0;
}
