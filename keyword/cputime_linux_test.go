package keyword

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's CPU time (the machine is shared, so
// wall-clock latency overstates the cost of a query); callers lock the
// goroutine to its thread.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
