/* Slurm's libpmi2 against a prsh PMI server: KVS put/fence/get across the
 * ranks, the process mapping (expected value in argv[1]), a node attribute
 * that the other ranks wait for (the test's server holds rank 0's put until
 * they all do), and PMIX_Ring. */
#include <slurm/pmi2.h>
#include <stdio.h>
#include <string.h>

static int rank = -1;

#define CHECK(call)                                                           \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != PMI2_SUCCESS) {                                            \
            fprintf(stderr, "rank %d: %s returned %d\n", rank, #call, rc_);   \
            return 1;                                                         \
        }                                                                     \
    } while (0)

#define EXPECT(cond, ...)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "rank %d: ", rank);                               \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            return 1;                                                         \
        }                                                                     \
    } while (0)

/* the value rank r puts: semicolons and spaces must survive the wire */
static void value_of(int r, char *buf, size_t len)
{
    snprintf(buf, len, "value of %d; with ;; semicolons;", r);
}

int main(int argc, char **argv)
{
    int spawned, size, appnum, found, len;
    char jobid[256], key[64], want[256], got[1024];

    CHECK(PMI2_Init(&spawned, &size, &rank, &appnum));
    CHECK(PMI2_Job_GetId(jobid, sizeof jobid));

    snprintf(key, sizeof key, "key-%d", rank);
    value_of(rank, want, sizeof want);
    CHECK(PMI2_KVS_Put(key, want));
    CHECK(PMI2_KVS_Fence());
    for (int r = 0; r < size; r++) {
        snprintf(key, sizeof key, "key-%d", r);
        value_of(r, want, sizeof want);
        CHECK(PMI2_KVS_Get(jobid, r, key, got, sizeof got, &len));
        EXPECT(strcmp(got, want) == 0, "%s = \"%s\", want \"%s\"", key, got, want);
    }

    CHECK(PMI2_Info_GetJobAttr("PMI_process_mapping", got, sizeof got, &found));
    EXPECT(found && argc > 1 && strcmp(got, argv[1]) == 0, "PMI_process_mapping found=%d \"%s\"", found, got);

    if (rank == 0) {
        CHECK(PMI2_Info_PutNodeAttr("node-secret", "from rank 0"));
    } else {
        CHECK(PMI2_Info_GetNodeAttr("node-secret", got, sizeof got, &found, 1));
        EXPECT(found && strcmp(got, "from rank 0") == 0, "node-secret found=%d \"%s\"", found, got);
    }

    int ring_rank, ring_size;
    char left[64], right[64], mine[64], wl[64], wr[64];
    snprintf(mine, sizeof mine, "ring-%d", rank);
    CHECK(PMIX_Ring(mine, &ring_rank, &ring_size, left, right, sizeof left));
    snprintf(wl, sizeof wl, "ring-%d", (rank + size - 1) % size);
    snprintf(wr, sizeof wr, "ring-%d", (rank + 1) % size);
    EXPECT(ring_rank == rank && ring_size == size && !strcmp(left, wl) && !strcmp(right, wr),
           "ring: rank %d of %d, left \"%s\", right \"%s\"", ring_rank, ring_size, left, right);

    CHECK(PMI2_Finalize());
    printf("pmi2 rank %d of %d: OK\n", rank, size);
    return 0;
}
