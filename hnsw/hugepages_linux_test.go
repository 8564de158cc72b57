package hnsw

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestAdviseHuge checks that a large node array is advised for huge pages
// (the "hg" flag of its mapping in /proc/self/smaps).
func TestAdviseHuge(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages in this kernel")
	}
	big := grown([]uint32(nil), 4<<20) // 16 MiB
	mid := uintptr(unsafe.Pointer(&big[len(big)/2]))
	if !vmaFlag(t, mid, "hg") {
		t.Error("a 16 MiB node array is not advised for huge pages")
	}
	// A slice under two huge pages is never advised (it would only split
	// the mapping).
	var tiny [64]uint32
	adviseHuge(tiny[:])
}

// vmaFlag reports whether the mapping holding addr has flag in VmFlags.
func vmaFlag(t *testing.T, addr uintptr, flag string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && !strings.HasPrefix(line, "VmFlags") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Contains(" "+strings.TrimPrefix(line, "VmFlags:")+" ", " "+flag+" ")
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return false
}
