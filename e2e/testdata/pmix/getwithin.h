// getWithin gets rank's key, waiting at most a minute: a get that the
// server holds (a namespace it does not know) fails instead of hanging.
static pmix_status_t getWithin(const char *nspace, uint32_t rank, const char *key, pmix_value_t **got) {
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, nspace, rank);
    int seconds = 60;
    pmix_info_t timeout;
    PMIX_INFO_LOAD(&timeout, PMIX_TIMEOUT, &seconds, PMIX_INT);
    return PMIx_Get(&p, key, &timeout, 1, got);
}
