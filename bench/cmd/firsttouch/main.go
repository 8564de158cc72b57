//go:build linux

// Command firsttouch measures what the first reads of a freshly mapped
// file cost on this machine, apart from any engine code: it maps -bytes of
// -file (a segment, say) read-only, prepares the mapping one way (-mode),
// then times -reads random one-byte reads over it and counts the minor
// faults they took.
//
//	go run ./bench/cmd/firsttouch -file STORE/seg/00000039.seg -bytes 1200000000 -mode none
//
// Modes: none (the reads fault the pages in, as a cold search does),
// touch (read one byte of every page first, as the engine's warm-up does
// when it checksums them), populate (MADV_POPULATE_READ: the kernel maps
// every page without reading it). A cold recall's cost on a machine is
// the none figure per page it touches; the gap between populate and touch
// is what mapping alone does not buy (on a virtual machine, the
// hypervisor's own first-touch work).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	file := flag.String("file", "", "file to map (read-only)")
	limit := flag.Int64("bytes", 0, "bytes of the file to map (0: all)")
	mode := flag.String("mode", "none", "none, touch or populate")
	reads := flag.Int("reads", 200_000, "random one-byte reads to time")
	flag.Parse()
	if err := run(*file, *limit, *mode, *reads); err != nil {
		fmt.Fprintln(os.Stderr, "firsttouch:", err)
		os.Exit(1)
	}
}

func run(path string, limit int64, mode string, reads int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	n := st.Size()
	if limit > 0 && limit < n {
		n = limit
	}
	if n < 1 || reads < 1 {
		return fmt.Errorf("nothing to read: %d bytes, %d reads", n, reads)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(b)

	t, f0 := time.Now(), minorFaults()
	switch mode {
	case "none":
	case "touch":
		var x byte
		for i := 0; i < len(b); i += 4096 {
			x += b[i]
		}
		runtime.KeepAlive(x) // the reads stay
	case "populate":
		if err := unix.Madvise(b, unix.MADV_POPULATE_READ); err != nil {
			return fmt.Errorf("MADV_POPULATE_READ: %w", err)
		}
	default:
		return fmt.Errorf("mode %q: want none, touch or populate", mode)
	}
	fmt.Printf("%s of %d MiB: %v, %d minor faults\n", mode, n>>20, time.Since(t).Round(time.Microsecond), minorFaults()-f0)

	t, f0 = time.Now(), minorFaults()
	var x byte
	s := uint64(0x9E3779B97F4A7C15)
	for range reads {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		x += b[s%uint64(n)]
	}
	runtime.KeepAlive(x)
	d := time.Since(t)
	fmt.Printf("%d random reads: %v (%v a read), %d minor faults\n", reads, d.Round(time.Microsecond), d/time.Duration(reads), minorFaults()-f0)
	return nil
}

func minorFaults() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}
