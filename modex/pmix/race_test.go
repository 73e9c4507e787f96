//go:build pmix && race

package pmix

// rssSlackKiB: the race detector's own memory grows with the calls it
// watches (6 MiB over TestServer's jobs).
const rssSlackKiB = 16 << 10
