package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// The side-data cost measurements: a store holding n archived memories (1024-d vectors of the
// default lexical embedder), or n conversations and n tasks, against one that holds neither, in
// the same run. Each store is filled with background flushes and compaction off (one flush at the
// end, so the side data is one segment, as after a compaction), then measured in five rounds,
// alternating between the two stores (the machine is shared; medians are reported), each round
// reopening with the default options (fsync on): 20 (Remember + Flush) cycles, then Close, Open,
// the first Recall and the first Context read. They fail when the targets of the side-data work are
// missed: cycles at most 1.5x, reopen + first recall at most 3x + 20 ms, MANIFEST under 1 MiB.
// They are measurements, not part of the default run:
//
//	ENGRAM_ARCHIVE_BENCH=100000 go test -run TestArchiveFlushCost -v -timeout 60m ./memory
//	ENGRAM_RECORDS_BENCH=20000 go test -run TestRecordsFlushCost -v -timeout 60m ./memory

type sideCost struct {
	fill, cycles, reopen time.Duration
	manifest, disk       int64
}

// sideStore is a filled store to measure.
type sideStore struct {
	dir   string
	opts  OpenOptions
	fill  time.Duration
	round int
}

func newSideStore(t *testing.T, fill func(ctx context.Context, s *Store)) *sideStore {
	t.Helper()
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	ctx := context.Background()
	s, err := Open(dir, OpenOptions{Options: Options{Clock: clock, DedupThreshold: -1},
		Engine: engine.Options{UnsafeNoSync: true, FlushBytes: -1, CompactInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fill(ctx, s)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return &sideStore{dir: dir, opts: OpenOptions{Options: Options{Clock: clock, DedupThreshold: -1}}, fill: d}
}

// measure runs one round: 20 (Remember + Flush) cycles, then Close, Open, first Recall, first
// Context.
func (ss *sideStore) measure(t *testing.T) sideCost {
	t.Helper()
	ctx := context.Background()
	c := sideCost{fill: ss.fill}
	s, err := Open(ss.dir, ss.opts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 20 {
		if _, err := s.Remember(ctx, "s", fmt.Sprintf("fresh note number %d.%d on the garden", ss.round, i), RememberOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.cycles = time.Since(start)
	ss.round++
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if s, err = Open(ss.dir, ss.opts); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Recall(ctx, "garden note", RecallOptions{Session: "s"}); err != nil || len(rs) == 0 {
		t.Fatalf("first recall: %d, %v", len(rs), err)
	}
	if _, err := s.Context(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	c.reopen = time.Since(start)
	if st, err := s.Stats(ctx); err == nil {
		c.disk = st.Backend.DiskBytes
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(ss.dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	c.manifest = fi.Size()
	return c
}

// compare measures both stores in alternating rounds (the machine is shared: one round each is
// noise) and reports the medians.
func compare(t *testing.T, what string, base, side *sideStore) {
	const rounds = 5
	var bs, ss []sideCost
	for range rounds {
		bs = append(bs, base.measure(t))
		ss = append(ss, side.measure(t))
	}
	med := func(cs []sideCost, f func(sideCost) time.Duration) time.Duration {
		ds := make([]time.Duration, len(cs))
		for i, c := range cs {
			ds[i] = f(c)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	cyc := func(c sideCost) time.Duration { return c.cycles }
	reo := func(c sideCost) time.Duration { return c.reopen }
	b := sideCost{cycles: med(bs, cyc), reopen: med(bs, reo), manifest: bs[rounds-1].manifest}
	s := sideCost{fill: side.fill, cycles: med(ss, cyc), reopen: med(ss, reo), manifest: ss[rounds-1].manifest, disk: ss[rounds-1].disk}
	reportSideCost(t, what, b, s)
}

func benchCount(t *testing.T, env string) int {
	n, err := strconv.Atoi(os.Getenv(env))
	if err != nil || n <= 0 {
		t.Skipf("set %s to the number of records", env)
	}
	return n
}

func reportSideCost(t *testing.T, what string, base, side sideCost) {
	t.Logf("%s: filled in %v, disk %d bytes, MANIFEST %d bytes (empty store: %d)", what, side.fill, side.disk, side.manifest, base.manifest)
	t.Logf("20 x (remember + flush), median of 5 alternating rounds: %v vs %v on an empty store (%.2fx)", side.cycles, base.cycles, float64(side.cycles)/float64(base.cycles))
	t.Logf("reopen + first recall + first context, median of 5: %v vs %v (%.2fx)", side.reopen, base.reopen, float64(side.reopen)/float64(base.reopen))
	if side.cycles > base.cycles*3/2 {
		t.Errorf("cycles over 1.5x the empty store's")
	}
	if side.reopen > 3*base.reopen+20*time.Millisecond {
		t.Errorf("reopen + first recall over 3x + 20 ms the empty store's")
	}
	if side.manifest >= 1<<20 {
		t.Errorf("MANIFEST of %d bytes, target under 1 MiB", side.manifest)
	}
}

// TestArchiveFlushCost: n archived memories (ENGRAM_ARCHIVE_BENCH=n), written into the archive
// collection as Cleanup leaves them.
func TestArchiveFlushCost(t *testing.T) {
	n := benchCount(t, "ENGRAM_ARCHIVE_BENCH")
	base := newSideStore(t, func(context.Context, *Store) {})
	side := newSideStore(t, func(ctx context.Context, s *Store) {
		_, emb, _ := s.current()
		ac, err := s.archiveFor(ctx, emb.Fingerprint(), emb.Dim(), true)
		if err != nil {
			t.Fatal(err)
		}
		now := s.opts.Clock().Add(-400 * 24 * time.Hour)
		for i := 0; i < n; i += 500 {
			var texts []string
			for j := i; j < min(i+500, n); j++ {
				texts = append(texts, fmt.Sprintf("old memory %d about topic %d and item %d", j, j%97, j%13))
			}
			vecs, err := emb.Embed(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			ms := make([]Memory, len(texts))
			for j := range texts {
				ms[j] = Memory{ID: fmt.Sprintf("m%07d", i+j), Session: "s", Text: texts[j], Vector: vecs[j], Importance: 0.5, Created: now, Updated: now}
			}
			if err := upsert(ctx, ac, ms); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.archivedCount(ctx); err != nil || got != n {
			t.Fatalf("archived %d, %v", got, err)
		}
	})
	compare(t, fmt.Sprintf("%d archived memories (%d-d)", n, 1024), base, side)
}

// TestRecordsFlushCost: n conversations of 3 turns and n tasks of 2 steps
// (ENGRAM_RECORDS_BENCH=n), written as AddTurn and UpdateStep leave them.
func TestRecordsFlushCost(t *testing.T) {
	n := benchCount(t, "ENGRAM_RECORDS_BENCH")
	base := newSideStore(t, func(context.Context, *Store) {})
	side := newSideStore(t, func(ctx context.Context, s *Store) {
		c, err := s.records(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		now := s.opts.Clock()
		for i := 0; i < n; i += 250 {
			var ms []Memory
			for j := i; j < min(i+250, n); j++ {
				session := fmt.Sprintf("session-%06d", j)
				conv := Conversation{Session: session, Turns: []Turn{
					{Role: "user", Text: fmt.Sprintf("My flight %d leaves on Friday at %d:15 from gate B%d.", j, j%24, j%40), Time: now},
					{Role: "assistant", Text: "Noted. Do you want a reminder the evening before?", Time: now},
					{Role: "user", Text: fmt.Sprintf("Yes, and I prefer an aisle seat, row %d or later.", j%30), Time: now},
				}}
				m, err := recordOf(kindConversation, session, session, now, now, conv)
				if err != nil {
					t.Fatal(err)
				}
				id := fmt.Sprintf("task-%06d", j)
				task := Task{ID: id, Goal: fmt.Sprintf("import batch %d", j), Session: session, Status: TaskActive, Next: "load",
					Steps: []Step{{Name: "fetch", Status: StepDone, Result: []byte(fmt.Sprintf(`{"rows":%d}`, j)), Started: now, Updated: now},
						{Name: "parse", Status: StepRunning, Started: now, Updated: now}}, Created: now, Updated: now}
				tm, err := recordOf(kindTask, id, session, now, now, task)
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, m, tm)
			}
			if err := upsert(ctx, c, ms); err != nil {
				t.Fatal(err)
			}
		}
	})
	compare(t, fmt.Sprintf("%d conversations and %d tasks", n, n), base, side)
}
