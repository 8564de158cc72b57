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
// every page without reading it), pread (no mapping is read: each read is
// a pread of -size bytes at the same offsets, the kernel copying from the
// page cache, as rescoring reads float vectors; two passes over the same
// offsets), copy (the bytes are
// copied with 1 MiB preads into anonymous memory advised for huge pages,
// and the reads go there). A cold recall's cost on a machine is the none
// figure per page it touches; the gap between populate and touch is what
// mapping alone does not buy (on a virtual machine, the hypervisor's own
// first-touch work); pread and copy say what reading around the mapping
// costs instead.
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
	mode := flag.String("mode", "none", "none, touch, populate, pread or copy")
	reads := flag.Int("reads", 200_000, "random one-byte reads to time")
	size := flag.Int("size", 1024, "bytes a read copies in -mode pread (a 1024-d int8 code)")
	flag.Parse()
	if err := run(*file, *limit, *mode, *reads, *size); err != nil {
		fmt.Fprintln(os.Stderr, "firsttouch:", err)
		os.Exit(1)
	}
}

func run(path string, limit int64, mode string, reads, size int) error {
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
	if size < 1 || int64(size) > n {
		return fmt.Errorf("-size %d: want 1 to %d", size, n)
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
	case "pread":
		// Twice over the same offsets: a cost that a first read alone pays
		// shows as a faster second pass.
		for _, pass := range []string{"first", "again"} {
			if err := timePreads(f, n, reads, size, pass); err != nil {
				return err
			}
		}
		return nil
	case "copy":
		c, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		defer unix.Munmap(c)
		_ = unix.Madvise(c, unix.MADV_HUGEPAGE) // no THP: small pages
		for off := 0; off < len(c); off += 1 << 20 {
			if _, err := f.ReadAt(c[off:min(off+1<<20, len(c))], int64(off)); err != nil {
				return err
			}
		}
		b = c
	default:
		return fmt.Errorf("mode %q: want none, touch, populate, pread or copy", mode)
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

// timePreads times reads random preads of size bytes within the first n
// bytes of f, at the offsets the mapped reads use.
func timePreads(f *os.File, n int64, reads, size int, pass string) error {
	buf := make([]byte, size)
	t, f0 := time.Now(), minorFaults()
	s := uint64(0x9E3779B97F4A7C15)
	for range reads {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		off := min(int64(s%uint64(n)), n-int64(size))
		if _, err := f.ReadAt(buf, off); err != nil {
			return err
		}
	}
	d := time.Since(t)
	fmt.Printf("%s pass, %d random preads of %d bytes: %v (%v a read), %d minor faults\n", pass, reads, size, d.Round(time.Microsecond), d/time.Duration(reads), minorFaults()-f0)
	return nil
}

func minorFaults() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}
