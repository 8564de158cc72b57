package memory_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

const crashDirEnv = "ENGRAM_MEMORY_CRASH_DIR"

func openCrashStore(t testing.TB, dir string) *memory.Store {
	t.Helper()
	s, err := memory.Open(dir, memory.OpenOptions{Options: memory.Options{Embedder: memorytest.NewHashEmbedder(64, "h64"), ShortTermTokens: 80, DedupThreshold: -1}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCrashChild is the child half of TestKill9: it writes to the store in dir forever, with the
// engine's default (fsync) durability, and prints "ack N" after the N-th round is acknowledged.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestKill9")
	}
	s := openCrashStore(t, dir)
	out := bufio.NewWriter(os.Stdout)
	// Resume each stream where the previous (killed) child left it; a stream may be one ahead.
	conv, err := s.Context(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	task, err := s.Task(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	turns, steps := conv.Compressed+len(conv.Turns), len(task.Steps)
	mems, err := s.Count(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; ; i++ {
		if turns < i {
			if _, err := s.AddTurn(ctx, "conv", memory.Turn{Role: "user", Text: fmt.Sprintf("turn %d says something memorable", i)}); err != nil {
				t.Fatal(err)
			}
			turns++
		}
		if steps < i {
			res, _ := json.Marshal(map[string]int{"i": i})
			if _, err := s.UpdateStep(ctx, "job", memory.Step{Name: fmt.Sprintf("step-%d", i), Status: memory.StepDone, Result: res}, fmt.Sprintf("step-%d", i+1)); err != nil {
				t.Fatal(err)
			}
			steps++
		}
		if mems < i {
			if _, err := s.Remember(ctx, "s", fmt.Sprintf("fact %d: the code word is w%d", i, i*7919), memory.RememberOptions{}); err != nil {
				t.Fatal(err)
			}
			mems++
		}
		fmt.Fprintf(out, "ack %d\n", i)
		out.Flush()
	}
}

// TestKill9: a child process writes turns, task steps and memories; the parent kills it with
// SIGKILL at a random moment and checks that every acknowledged write reads back exactly.
func TestKill9(t *testing.T) {
	cycles := 3
	if testing.Short() {
		cycles = 1
	}
	dir := t.TempDir()
	{ // the task the child updates
		s := openCrashStore(t, dir)
		if _, err := s.StartTask(ctx, "job", "survive kill -9"); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	acked := 0
	for c := range cycles {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := acked + 12 + 7*c
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "ack "); ok {
				acked, _ = strconv.Atoi(n)
				if acked >= target {
					break
				}
			}
		}
		_ = cmd.Process.Kill() // SIGKILL: no deferred code, no flush
		// The child kept writing until the signal landed: read what it acknowledged
		// meanwhile (the pipe ends when it dies), so acked is its true last ack.
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
				acked, _ = strconv.Atoi(n)
			}
		}
		_ = cmd.Wait()
		if acked < target {
			t.Fatalf("child stopped after %d acks", acked)
		}
		verifyAfterCrash(t, dir, acked)
	}
}

func verifyAfterCrash(t *testing.T, dir string, acked int) {
	t.Helper()
	var s *memory.Store
	// The killed child's lock is released by the kernel; retry briefly for slow process teardown.
	for i := 0; ; i++ {
		var err error
		s, err = memory.Open(dir, memory.OpenOptions{Options: memory.Options{Embedder: memorytest.NewHashEmbedder(64, "h64"), ShortTermTokens: 80, DedupThreshold: -1}})
		if err == nil {
			break
		}
		if i == 50 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer s.Close()
	ctx := context.Background()
	task, err := s.Task(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	// Every acknowledged step is there, in order, with its result; at most one more (written,
	// not yet acknowledged) follows.
	if len(task.Steps) < acked || len(task.Steps) > acked+1 {
		t.Fatalf("%d steps after %d acknowledged", len(task.Steps), acked)
	}
	for i, st := range task.Steps {
		if st.Name != fmt.Sprintf("step-%d", i+1) || string(st.Result) != fmt.Sprintf(`{"i":%d}`, i+1) {
			t.Fatalf("step %d = %+v", i, st)
		}
	}
	if task.Next != fmt.Sprintf("step-%d", len(task.Steps)+1) {
		t.Fatalf("next step %q after %d steps", task.Next, len(task.Steps))
	}
	conv, err := s.Context(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	total := conv.Compressed + len(conv.Turns)
	if total < acked || total > acked+1 {
		t.Fatalf("conversation holds %d turns after %d acknowledged", total, acked)
	}
	// The summary keeps a line per compressed turn, at least its number.
	if acked >= 10 && (conv.Compressed == 0 || !strings.Contains(conv.Summary, fmt.Sprintf(" %d", conv.Compressed))) {
		t.Fatalf("summary lost: %d compressed, summary %q", conv.Compressed, conv.Summary)
	}
	for i, tn := range conv.Turns {
		if tn.Text != fmt.Sprintf("turn %d says something memorable", conv.Compressed+i+1) {
			t.Fatalf("turn %d = %q", conv.Compressed+i, tn.Text)
		}
	}
	n, err := s.Count(ctx, memory.Eq(memory.FieldSession, "s"))
	if err != nil || n < acked || n > acked+1 {
		t.Fatalf("%d memories after %d acknowledged (%v)", n, acked, err)
	}
	rs, err := s.Recall(ctx, fmt.Sprintf("fact %d code word", acked), memory.RecallOptions{Session: "s", K: 1, Mode: memory.ModeKeyword, Decay: memory.Decay{Off: true}, NoTouch: true})
	if err != nil || len(rs) != 1 || !strings.Contains(rs[0].Text, fmt.Sprintf("w%d", acked*7919)) {
		t.Fatalf("last acknowledged memory not recalled: %v %q", err, memorytest.Texts(rs))
	}
}
