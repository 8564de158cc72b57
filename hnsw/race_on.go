//go:build race

package hnsw

// raceEnabled: the race detector is on. It does not see the loads that
// assembly makes, so expandKeys repeats them in Go (see there).
const raceEnabled = true
