package hnsw

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (the caller
// locks its goroutine to the thread). On a machine shared with other work
// it measures the query's own cost where wall time also measures waiting.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is the CPU time of the whole process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runQueueWait is the time all of the process's threads have spent
// runnable but waiting for a CPU (/proc/self/task/*/schedstat, field 2):
// on a shared machine it tells waiting for a core from waiting on a lock.
func runQueueWait() time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}
