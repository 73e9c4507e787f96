// connect: two jobs meet through a published name and talk.
//   connect accept SERVICE   MPI_Open_port, MPI_Publish_name, MPI_Comm_accept
//   connect connect SERVICE  MPI_Lookup_name (until published), MPI_Comm_connect
// Both then exchange messages over the intercommunicator and over the
// communicator that merges it, and disconnect.
//   connect lookup SERVICE   one MPI_Lookup_name: prints what it found
//   connect wait SERVICE     MPI_Open_port, MPI_Publish_name, MPI_Comm_accept,
//                            with no one to connect: waits
//   connect abort SERVICE    looks SERVICE up, then MPI_Abort(3)
//   connect die SERVICE      as connect, but rank 1 exits with status 1 instead,
//                            once rank 0 is in the connect: once Open MPI's
//                            exchange published "PORT:connect"
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void talk(MPI_Comm inter, int accepting) {
    int rank, rsize, value, sum, mrank, msize, msum;
    MPI_Comm merged;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    value = rank + 1;
    MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, inter); // the other side's values
    printf("%s rank %d: remote size %d sum %d\n", accepting ? "accept" : "connect", rank, rsize, sum);
    if (rank == 0) {
        char out[64], in[64];
        snprintf(out, sizeof(out), "hello from %s rank 0", accepting ? "accept" : "connect");
        MPI_Sendrecv(out, sizeof(out), MPI_CHAR, 0, 7, in, sizeof(in), MPI_CHAR, 0, 7, inter, MPI_STATUS_IGNORE);
        printf("%s rank 0: got \"%s\"\n", accepting ? "accept" : "connect", in);
    }
    MPI_Intercomm_merge(inter, !accepting, &merged);
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    MPI_Allreduce(&mrank, &msum, 1, MPI_INT, MPI_SUM, merged);
    printf("%s rank %d: merged rank %d of %d sum %d\n", accepting ? "accept" : "connect", rank, mrank, msize, msum);
    MPI_Comm_free(&merged);
}

static void say_error(const char *what, int rc) {
    char why[MPI_MAX_ERROR_STRING];
    int len, class;
    MPI_Error_class(rc, &class);
    MPI_Error_string(class, why, &len);
    printf("%s: %s\n", what, why);
}

static int lookup(const char *service, char *port, int say) {
    int rc = MPI_Lookup_name(service, MPI_INFO_NULL, port);
    if (rc != MPI_SUCCESS && say) {
        char what[256];
        snprintf(what, sizeof(what), "lookup %s", service);
        say_error(what, rc);
    }
    return rc;
}

int main(int argc, char **argv) {
    char port[MPI_MAX_PORT_NAME] = "";
    int rank;
    MPI_Comm inter;
    if (argc != 3) {
        fprintf(stderr, "usage: connect accept|connect|lookup|wait SERVICE\n");
        return 2;
    }
    const char *mode = argv[1], *service = argv[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (strcmp(mode, "lookup") == 0) {
        if (rank == 0 && lookup(service, port, 1) == MPI_SUCCESS) {
            printf("found %s\n", service);
        }
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "die") == 0 && rank == 1) {
        char key[MPI_MAX_PORT_NAME + 16], seen[MPI_MAX_PORT_NAME];
        while (lookup(service, port, 0) != MPI_SUCCESS) {
            usleep(20000);
        }
        snprintf(key, sizeof(key), "%s:connect", port);
        while (lookup(key, seen, 0) != MPI_SUCCESS) {
            usleep(20000);
        }
        _exit(1);
    }
    int accepting = strcmp(mode, "accept") == 0 || strcmp(mode, "wait") == 0;
    int rc;
    if (accepting) {
        if (rank == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            MPI_Publish_name(service, MPI_INFO_NULL, port);
            printf("published %s\n", service);
            fflush(stdout);
        }
        rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
    } else {
        if (rank == 0) {
            while (lookup(service, port, 0) != MPI_SUCCESS) {
                usleep(20000);
            }
        }
        if (strcmp(mode, "abort") == 0 && rank == 0) {
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
    }
    if (rc != MPI_SUCCESS) {
        char what[64];
        snprintf(what, sizeof(what), "%s rank %d", accepting ? "accept" : "connect", rank);
        say_error(what, rc);
        MPI_Finalize();
        return 0;
    }
    talk(inter, accepting);
    MPI_Comm_disconnect(&inter);
    if (accepting && rank == 0) {
        MPI_Unpublish_name(service, MPI_INFO_NULL, port);
        MPI_Close_port(port);
    }
    MPI_Finalize();
    return 0;
}
