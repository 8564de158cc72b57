package engine

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// The crash loop: a child process (this test binary, re-executed) writes,
// flushes and compacts, announcing each operation before it starts ("P ...")
// and after it is acknowledged ("A"). The parent kill -9's it at a random
// moment, reopens the store and checks that every acknowledged write is
// there and nothing else is (the one announced but unacknowledged op may or
// may not have happened), and that Check is clean.

const crashDim = 8

var crashCfg = CollectionConfig{Name: "c", Dim: crashDim, Metric: quant.L2, Fingerprint: "crash"}

func crashVec(id string, ver int) []float32 {
	r := rand.New(rand.NewPCG(uint64(len(id))*7919+uint64(ver), uint64(id[len(id)-1])))
	return randVec(r, crashDim)
}

func TestCrashLoop(t *testing.T) {
	if dir := os.Getenv("ENGRAM_CRASH_CHILD"); dir != "" {
		seed, _ := strconv.ParseUint(os.Getenv("ENGRAM_CRASH_SEED"), 10, 64)
		crashChild(dir, seed)
		return
	}
	cycles := 20
	if testing.Short() {
		cycles = 5
	}
	if s := os.Getenv("ENGRAM_CRASH_CYCLES"); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	dir := filepath.Join(t.TempDir(), "store")
	model := map[string]int{} // id -> version
	kv := map[string]string{}
	r := rand.New(rand.NewPCG(42, uint64(time.Now().UnixNano())))
	for cycle := 0; cycle < cycles; cycle++ {
		pending, acked := runCrashChild(t, dir, cycle, r)
		for _, op := range acked {
			applyCrashOp(model, kv, op)
		}
		db, err := Open(dir, Options{CompactInterval: -1, FlushBytes: -1})
		if err != nil {
			t.Fatalf("cycle %d: reopen: %v", cycle, err)
		}
		if err := db.Check(); err != nil {
			t.Fatalf("cycle %d: Check: %v", cycle, err)
		}
		// The unacknowledged op happened or not: take whichever matches.
		if pending != "" {
			after := cloneMap(model)
			afterKV := cloneMap(kv)
			applyCrashOp(after, afterKV, pending)
			if crashStateMatches(db, after, afterKV) == nil {
				model, kv = after, afterKV
			}
		}
		if err := crashStateMatches(db, model, kv); err != nil {
			t.Fatalf("cycle %d (%d acked ops, pending %q): %v", cycle, len(acked), pending, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func cloneMap[V any](m map[string]V) map[string]V {
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func applyCrashOp(model map[string]int, kv map[string]string, op string) {
	kind, arg, _ := strings.Cut(op, " ")
	switch kind {
	case "U":
		for _, p := range strings.Split(arg, ",") {
			id, v, _ := strings.Cut(p, ":")
			model[id], _ = strconv.Atoi(v)
		}
	case "D":
		for _, id := range strings.Split(arg, ",") {
			delete(model, id)
		}
	case "K":
		k, v, _ := strings.Cut(arg, ":")
		kv[k] = v
	}
}

func crashStateMatches(db *DB, model map[string]int, kv map[string]string) error {
	c, err := db.Collection("c")
	if err != nil {
		if len(model) == 0 {
			return nil
		}
		return err
	}
	n, err := c.Count(nil)
	if err != nil {
		return err
	}
	if n != len(model) {
		return fmt.Errorf("store has %d records, model %d", n, len(model))
	}
	for id, ver := range model {
		rec, err := c.Get(id)
		if err != nil {
			return fmt.Errorf("acked record %s: %v", id, err)
		}
		if rec.Text != fmt.Sprintf("%s v%d", id, ver) {
			return fmt.Errorf("record %s: text %q, want version %d", id, rec.Text, ver)
		}
		want := crashVec(id, ver)
		for i := range want {
			if rec.Vector[i] != want[i] {
				return fmt.Errorf("record %s: vector differs", id)
			}
		}
	}
	for k, v := range kv {
		got, err := db.KV().Get(k)
		if err != nil || string(got) != v {
			return fmt.Errorf("KV %s = %q, %v; want %q", k, got, err, v)
		}
	}
	return nil
}

// runCrashChild starts a child, kills it at a random moment and returns
// the acknowledged ops and the announced-but-unacknowledged one.
func runCrashChild(t *testing.T, dir string, cycle int, r *rand.Rand) (pending string, acked []string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLoop$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ENGRAM_CRASH_CHILD="+dir, fmt.Sprintf("ENGRAM_CRASH_SEED=%d", cycle*1000+r.IntN(1000)))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var deadline <-chan time.Time
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("cycle %d: child exited early", cycle)
			}
			switch {
			case line == "READY":
				deadline = time.After(time.Duration(20+r.IntN(400)) * time.Millisecond)
			case strings.HasPrefix(line, "P "):
				pending = line[2:]
			case line == "A":
				acked = append(acked, pending)
				pending = ""
			case strings.HasPrefix(line, "ERR "):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("cycle %d: child: %s", cycle, line)
			}
		case <-deadline:
			cmd.Process.Signal(syscall.SIGKILL)
			// Lines the child wrote before dying are acknowledged too. Read them
			// all before Wait, which closes the pipe and would drop unread ones.
			for line := range lines {
				switch {
				case strings.HasPrefix(line, "P "):
					pending = line[2:]
				case line == "A":
					acked = append(acked, pending)
					pending = ""
				}
			}
			cmd.Wait()
			return pending, acked
		}
	}
}

func crashChild(dir string, seed uint64) {
	w := bufio.NewWriter(os.Stdout)
	say := func(s string) { w.WriteString(s + "\n"); w.Flush() }
	fail := func(err error) {
		say("ERR " + err.Error())
		os.Exit(1)
	}
	db, err := Open(dir, Options{CompactInterval: -1, FlushBytes: -1})
	if err != nil {
		fail(err)
	}
	c, err := db.CreateCollection(crashCfg)
	if err != nil {
		fail(err)
	}
	var ids []string
	c.Scan(nil, false, func(rec Record) bool { ids = append(ids, rec.ID); return true })
	r := rand.New(rand.NewPCG(seed, 7))
	say("READY")
	for i := 0; ; i++ {
		switch op := r.IntN(20); {
		case op < 12:
			var recs []Record
			var parts []string
			seen := map[string]bool{}
			for range 1 + r.IntN(8) {
				id := fmt.Sprintf("k%d-%d", seed, i*10+len(recs))
				if len(ids) > 0 && r.IntN(3) == 0 {
					id = ids[r.IntN(len(ids))]
				}
				if seen[id] {
					continue
				}
				seen[id] = true
				ver := r.IntN(1000)
				recs = append(recs, Record{ID: id, Vector: crashVec(id, ver), Text: fmt.Sprintf("%s v%d", id, ver),
					Meta: Metadata{"session": String("s")}})
				parts = append(parts, fmt.Sprintf("%s:%d", id, ver))
				ids = append(ids, id)
			}
			say("P U " + strings.Join(parts, ","))
			if err := c.Upsert(ctx, recs); err != nil {
				fail(err)
			}
		case op < 15 && len(ids) > 0:
			del := []string{ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]}
			if del[0] == del[1] {
				del = del[:1]
			}
			say("P D " + strings.Join(del, ","))
			if _, err := c.Delete(del...); err != nil {
				fail(err)
			}
		case op < 16:
			kvk, kvv := fmt.Sprintf("key%d", r.IntN(5)), fmt.Sprintf("val%d-%d", seed, i)
			say("P K " + kvk + ":" + kvv)
			if err := db.KV().Put(kvk, []byte(kvv)); err != nil {
				fail(err)
			}
		case op < 18:
			say("P F")
			if err := db.Flush(); err != nil {
				fail(err)
			}
		default:
			say("P C")
			if err := db.Compact(); err != nil {
				fail(err)
			}
		}
		say("A")
	}
}
