//go:build pmix && !race

package pmix

// rssSlackKiB bounds what 580 jobs may add to the resident memory: the C
// allocator's own (0.5 MiB here). A namespace never deregistered keeps
// 50 KiB, a shared-memory store's lock segment 10 KiB (Start).
const rssSlackKiB = 2 << 10
