//go:build !linux

package beir

import "time"

// threadCPU is unavailable on this system.
func threadCPU() time.Duration { return 0 }
