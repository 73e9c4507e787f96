/* PMIX_Ring through Slurm's libpmi2: each rank gives "v<rank>" and prints
 * its position and its neighbours' values. */
#include <pmi2.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    int spawned, size, rank, appnum, ringrank, ringsize;
    char val[64], left[64], right[64];
    if (PMI2_Init(&spawned, &size, &rank, &appnum) != PMI2_SUCCESS) return 1;
    snprintf(val, sizeof val, "v%d", rank);
    if (PMIX_Ring(val, &ringrank, &ringsize, left, right, sizeof left) != PMI2_SUCCESS) { printf("ring failed\n"); return 2; }
    printf("rank %d ring %d of %d left %s right %s\n", rank, ringrank, ringsize, left, right);
    PMI2_Finalize();
    return 0;
}
