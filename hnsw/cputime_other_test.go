//go:build !linux

package hnsw

import "time"

func threadCPU() time.Duration    { return 0 }
func processCPU() time.Duration   { return 0 }
func runQueueWait() time.Duration { return 0 }
