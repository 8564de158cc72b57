package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test runs the test binary itself as a child process
// (TestCrashChild) that appends from several goroutines in Always mode and
// prints each acknowledged LSN and payload hash; the parent kills it with
// SIGKILL at a random moment, reopens the log and checks every
// acknowledgement. ENGRAM_CRASH_CYCLES sets the number of cycles (default
// 20, 5 with -short; 500 for a long run).
const (
	crashDirEnv  = "ENGRAM_WAL_CRASH_DIR"
	crashSeedEnv = "ENGRAM_WAL_CRASH_SEED"
)

// crashPayload builds a self-checking payload: 8 bytes of FNV-64a of the
// rest, so a half-written record is recognizable on replay.
func crashPayload(r *rand.Rand) []byte {
	n := 12 + r.IntN(3000) // hash + at least 4 bytes of seed
	if r.IntN(10) == 0 {
		n = 12 + r.IntN(100000) // spans pages
	}
	p := make([]byte, n)
	if r.IntN(2) == 0 {
		for i := 8; i < n; i++ {
			p[i] = "engram remembers 记忆 "[i%24]
		}
		binary.LittleEndian.PutUint32(p[8:], r.Uint32())
	} else {
		for i := 8; i < n; i++ {
			p[i] = byte(r.Uint32())
		}
	}
	binary.LittleEndian.PutUint64(p, hash64(p[8:]))
	return p
}

func hash64(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestCrash")
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	l, err := Open(dir, Options{SegmentSize: 256 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				p := crashPayload(r)
				lsn, err := l.Append(p)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					os.Exit(4)
				}
				mu.Lock()
				// One write call per line, so what the parent reads was acked.
				os.Stdout.WriteString(fmt.Sprintf("%d %x\n", lsn, binary.LittleEndian.Uint64(p)))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrash(t *testing.T) {
	cycles := 20
	if testing.Short() {
		cycles = 5
	}
	if s := os.Getenv("ENGRAM_CRASH_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("ENGRAM_CRASH_CYCLES=%q", s)
		}
		cycles = n
	}
	dir := filepath.Join(t.TempDir(), "wal")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	acked := map[LSN]uint64{}
	var total int
	for c := 0; c < cycles; c++ {
		lines := runAndKill(t, dir, rng, c)
		total += len(lines)
		for lsn, h := range lines {
			acked[lsn] = h
		}
		l, err := Open(dir, Options{SegmentSize: 256 << 10})
		if err != nil {
			t.Fatalf("cycle %d: reopen after kill: %v", c, err)
		}
		var prev LSN
		found := 0
		err = l.Replay(0, func(lsn LSN, p []byte) error {
			if lsn <= prev {
				return fmt.Errorf("LSN %v after %v", lsn, prev)
			}
			prev = lsn
			if len(p) < 8 || binary.LittleEndian.Uint64(p) != hash64(p[8:]) {
				return fmt.Errorf("record %v is not a whole payload (%d bytes)", lsn, len(p))
			}
			if h, ok := acked[lsn]; ok {
				if h != binary.LittleEndian.Uint64(p) {
					return fmt.Errorf("record %v: hash differs from the acknowledged one", lsn)
				}
				found++
			}
			return nil
		})
		if err != nil {
			t.Fatalf("cycle %d: replay: %v", c, err)
		}
		if found != len(acked) {
			t.Fatalf("cycle %d: %d of %d acknowledged records replayed", c, found, len(acked))
		}
		if c%5 == 4 { // keep the log short, as checkpoints would
			if err := l.TruncateBefore(l.LastLSN()); err != nil {
				t.Fatal(err)
			}
			names, _ := os.ReadDir(dir)
			first, _ := parseSegmentName(names[0].Name())
			for lsn := range acked {
				if lsn.Segment() < first {
					delete(acked, lsn)
				}
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d cycles, %d acknowledged appends checked", cycles, total)
	if total == 0 {
		t.Fatal("the child never acknowledged an append")
	}
}

// runAndKill runs the child until a random moment, kills it with SIGKILL
// and returns the acknowledgements it printed.
func runAndKill(t *testing.T, dir string, rng *rand.Rand, cycle int) map[LSN]uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashSeedEnv+"="+strconv.FormatUint(rng.Uint64(), 10))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := map[LSN]uint64{}
	firstAck := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// Lines are written with one call of under PIPE_BUF bytes, so
			// the kill cannot cut one.
			var lsn, h uint64
			if _, err := fmt.Sscanf(sc.Text(), "%d %x", &lsn, &h); err != nil {
				done <- fmt.Errorf("child printed %q: %v", sc.Text(), err)
				return
			}
			if len(got) == 0 {
				close(firstAck)
			}
			got[LSN(lsn)] = h
		}
		done <- sc.Err()
	}()
	if cycle%5 != 0 { // every fifth kill may land during Open's recovery
		select {
		case <-firstAck:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child acknowledged nothing in 20s; stderr: %s", stderr.String())
		}
	}
	time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err = <-done
	werr := cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	// Only our SIGKILL may end the child: a panic or an error exit is a bug.
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended on its own (%v): %s", werr, stderr.String())
	}
	return got
}
