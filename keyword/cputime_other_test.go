//go:build !linux

package keyword

import "time"

// threadCPU is unavailable here; benchmarks then report wall time only.
func threadCPU() time.Duration { return 0 }
