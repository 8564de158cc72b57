//go:build !linux

package hnsw

// adviseHuge is a no-op where transparent huge pages cannot be asked for.
func adviseHuge[T any](s []T) {}
