//go:build !linux

package engine

// dropMapped is a no-op where pages cannot be dropped from a mapping.
func dropMapped(b []byte) {}
