//go:build !race

package hnsw

// raceEnabled: the race detector is off (race_on.go).
const raceEnabled = false
