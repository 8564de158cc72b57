//go:build race

package hnsw

// raceEnabled: the race detector is on. It makes sync.Pool drop items, so
// tests skip allocation counts; and it does not see the loads that
// assembly makes, so expandKeys repeats them in Go (see there).
const raceEnabled = true
