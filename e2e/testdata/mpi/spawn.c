// MPI_Comm_spawn: a parent job starts children of this same program and
// talks to them.
//   spawn NP            the parents start NP children together; parent
//                       rank 0 sends each child its rank over the
//                       intercommunicator, each child answers; then both
//                       sides merge it (MPI_Intercomm_merge) and sum their
//                       merged ranks with MPI_Allreduce.
//   spawn NP nested     the same, and child 0 then starts one child of
//                       its own, a grandchild, which answers it.
//   spawn NP die        the children exit with 4 before MPI_Init, while
//                       the parents wait in MPI_Comm_spawn's connect.
//   spawn NP child KEY=VALUE...
//                       as spawn NP, with these info keys (host=H,H;
//                       add-host=H:S,H:S: on hosts the job may not have).
//   spawn multiple N M  MPI_Comm_spawn_multiple of this program N times
//                       ("multiple-a") and M times ("multiple-b").
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void talk_as_parent(MPI_Comm inter, int rank, const char *who) {
    int remote, merged_rank, size, sum, total;
    MPI_Comm_remote_size(inter, &remote);
    if (rank == 0) {
        for (int c = 0; c < remote; c++) {
            int got;
            MPI_Send(&c, 1, MPI_INT, c, 1, inter);
            MPI_Recv(&got, 1, MPI_INT, c, 2, inter, MPI_STATUS_IGNORE);
            printf("%s 0: child %d answered %d\n", who, c, got);
        }
    }
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, 0, &merged);
    MPI_Comm_rank(merged, &merged_rank);
    MPI_Comm_size(merged, &size);
    MPI_Allreduce(&merged_rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    total = size * (size - 1) / 2;
    if (rank == 0)
        printf("%s 0: merged %d ranks, sum %d (want %d)\n", who, size, sum, total);
    MPI_Comm_free(&merged);
}

static void talk_as_child(MPI_Comm parent, int rank, const char *name) {
    int got, merged_rank, sum;
    MPI_Recv(&got, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE);
    int answer = got * 10 + 7;
    MPI_Send(&answer, 1, MPI_INT, 0, 2, parent);
    MPI_Comm merged;
    MPI_Intercomm_merge(parent, 1, &merged);
    MPI_Comm_rank(merged, &merged_rank);
    MPI_Allreduce(&merged_rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    printf("%s %d: got %d, merged rank %d\n", name, rank, got, merged_rank);
    MPI_Comm_free(&merged);
}

int main(int argc, char **argv) {
    int rank;
    MPI_Comm parent;
    if (argc > 1 && strcmp(argv[1], "die") == 0)
        return 4; /* a child that dies while its parent waits to connect */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        const char *kind = argc > 1 ? argv[1] : "child";
        talk_as_child(parent, rank, kind);
        if (strcmp(kind, "nested") == 0 && rank == 0) {
            MPI_Comm inter;
            char *args[] = {"grandchild", NULL};
            MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE);
            talk_as_parent(inter, 0, "child");
            MPI_Comm_disconnect(&inter);
        }
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    int np = argc > 1 ? atoi(argv[1]) : 2;
    MPI_Comm inter;
    if (argc > 2 && strcmp(argv[2], "multiple") == 0) {
        int n[2] = {atoi(argv[3]), atoi(argv[4])};
        char *cmds[2] = {argv[0], argv[0]};
        char *a[] = {"multiple-a", NULL}, *b[] = {"multiple-b", NULL};
        char **args[2] = {a, b};
        MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
        MPI_Comm_spawn_multiple(2, cmds, args, n, infos, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
    } else {
        char *args[] = {argc > 2 ? argv[2] : "child", NULL};
        MPI_Info info = MPI_INFO_NULL;
        for (int i = 3; i < argc; i++) { /* KEY=VALUE: host, add-host */
            char key[32] = "";
            const char *eq = strchr(argv[i], '=');
            if (eq == NULL || eq - argv[i] >= (long)sizeof key)
                continue;
            memcpy(key, argv[i], eq - argv[i]);
            if (info == MPI_INFO_NULL)
                MPI_Info_create(&info);
            MPI_Info_set(info, key, eq + 1);
        }
        MPI_Comm_spawn(argv[0], args, np, info, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
    }
    talk_as_parent(inter, rank, "parent");
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
