//go:build !linux

package quant

import "time"

// threadCPU is unavailable here; the CPU-time metrics are then omitted.
func threadCPU() time.Duration { return 0 }
