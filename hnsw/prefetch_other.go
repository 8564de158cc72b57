//go:build !amd64 || purego

package hnsw

import "unsafe"

// prefetchU32 is a no-op where there is no assembly prefetch.
func prefetchU32(p *uint32) {}

// prefetchF32 is a no-op where there is no assembly prefetch.
func prefetchF32(p *float32) {}

// prefetchSpan is a no-op where there is no assembly prefetch.
func prefetchSpan(p unsafe.Pointer, n int) {}

// prefetchRows is a no-op where there is no assembly prefetch.
func prefetchRows(base unsafe.Pointer, ids []uint32, stride int) {}
