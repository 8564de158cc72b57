package engine

import (
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/internal/vfs"
)

// The power-loss loop: the crash loop of crash_test.go, on a vfs.MemFS
// instead of kill -9. A power loss keeps only what was made durable: file
// data by Sync, directory entries (creations, renames, removals) by
// SyncDir, so a missing fsync of a directory, which kill -9 never shows,
// loses the file here. The loss can strike at any file system operation,
// inside a flush, a compaction, a manifest write or a reopen's recovery.
//
// Replay one seed with -powerloss.seed=N (-v logs each seed's ops);
// -powerloss.seeds (or ENGRAM_POWERLOSS_SEEDS) runs more.

var (
	plSeed  = flag.Uint64("powerloss.seed", 0, "run only this TestPowerLoss seed (0: all)")
	plSeeds = flag.Int("powerloss.seeds", 0, "number of TestPowerLoss seeds (0: default)")
)

// plFS is a MemFS that counts the operations that change it and, at
// operation number crashAt, takes the image a power loss would leave just
// before that operation. skip, when set, drops the SyncDir calls it
// selects, as if the engine had not made them (TestPowerLossCatchesMissingSync).
type plFS struct {
	*vfs.MemFS
	skip func(phase, dir, lastRenamed string) bool

	mu         sync.Mutex
	n, crashAt int
	image      *vfs.MemFS
	phase      string            // the workload operation running
	lostIn     string            // the phase the loss struck in ("end": after the last op)
	lastRename map[string]string // dir -> base name of the file last renamed (or "name/": directory made) in it, unless a removal came after
	skipped    int               // SyncDir calls dropped
}

func newPLFS(mem *vfs.MemFS, crashAt int, skip func(phase, dir, lastRenamed string) bool) *plFS {
	return &plFS{MemFS: mem, crashAt: crashAt, skip: skip, lastRename: map[string]string{}}
}

// tick counts one operation; the crash image is taken before the
// crashAt-th.
func (p *plFS) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.n == p.crashAt && p.image == nil {
		p.image, p.lostIn = p.MemFS.Crash(), p.phase
	}
}

// crashNow takes the image now if the loss has not struck yet.
func (p *plFS) crashNow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.image == nil {
		p.image, p.lostIn = p.MemFS.Crash(), "end"
	}
}

func (p *plFS) crashed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.image != nil
}

func (p *plFS) setPhase(s string) {
	p.mu.Lock()
	p.phase = s
	p.mu.Unlock()
}

func (p *plFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		p.tick()
	}
	f, err := p.MemFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &plFile{File: f, fs: p}, nil
}

// MkdirAll records each directory it creates as the last event of its
// parent (the name with a trailing slash), for skip.
func (p *plFS) MkdirAll(dir string, perm fs.FileMode) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := p.MemFS.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		created = append(created, d)
	}
	if err := p.MemFS.MkdirAll(dir, perm); err != nil {
		return err
	}
	p.mu.Lock()
	for _, d := range created {
		p.lastRename[filepath.Dir(d)] = filepath.Base(d) + "/"
	}
	p.mu.Unlock()
	return nil
}

func (p *plFS) Remove(name string) error {
	p.tick()
	err := p.MemFS.Remove(name)
	if err == nil {
		p.mu.Lock()
		delete(p.lastRename, filepath.Dir(filepath.Clean(name))) // the next SyncDir there is a removal's
		p.mu.Unlock()
	}
	return err
}

func (p *plFS) Rename(oldname, newname string) error {
	p.tick()
	err := p.MemFS.Rename(oldname, newname)
	if err == nil {
		p.mu.Lock()
		p.lastRename[filepath.Dir(filepath.Clean(newname))] = filepath.Base(newname)
		p.mu.Unlock()
	}
	return err
}

func (p *plFS) SyncDir(dir string) error {
	p.tick()
	dir = filepath.Clean(dir)
	p.mu.Lock()
	drop := p.skip != nil && p.skip(p.phase, dir, p.lastRename[dir])
	if drop {
		p.skipped++
	}
	p.mu.Unlock()
	if drop {
		return nil
	}
	return p.MemFS.SyncDir(dir)
}

type plFile struct {
	vfs.File
	fs *plFS
}

func (f *plFile) Write(b []byte) (int, error) {
	f.fs.tick()
	return f.File.Write(b)
}

func (f *plFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.tick()
	return f.File.WriteAt(b, off)
}

func (f *plFile) Sync() error {
	f.fs.tick()
	return f.File.Sync()
}

func (f *plFile) Truncate(size int64) error {
	f.fs.tick()
	return f.File.Truncate(size)
}

// Map keeps the MemFS mapping (vfs.Map would otherwise copy via ReadAt).
func (f *plFile) Map() ([]byte, func() error, error) { return vfs.Map(f.File) }

// plRun is one seed's run: cycles of (open, random operations until the
// power fails, reopen the image and compare with the model).
type plRun struct {
	seed    uint64
	cycles  int
	crashAt int // FS op the first cycle's loss strikes before (0: random)
	skip    func(phase, dir, lastRenamed string) bool
	logf    func(string, ...any)
	// Filled by run.
	crashes, acked int
	skipped        int
	lostIn         map[string]int // power losses by the operation they struck
	firstLostIn    string
	backups        []plBackup // acknowledged backups, checked after every loss
	seenBackups    int        // backups started, for unique target names
	// faults makes one random operation of each cycle fail (ENOSPC or
	// EIO) before the power is lost; an op that fails ends the cycle with
	// the power loss, pending.
	faults  bool
	faulted int    // ops that failed
	fault   string // the last cycle's injected fault
}

// injectFault arms one failure of a random kind of operation on a random
// kind of file, after a random number of matching successes.
func (pr *plRun) injectFault(rng *rand.Rand, mem *vfs.MemFS) {
	ops := []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpOpen, vfs.OpTruncate, vfs.OpRename, vfs.OpRemove, vfs.OpSyncDir}
	paths := []string{"/wal/", "/seg/", "MANIFEST", "CURRENT", "/backup", ""}
	errs := []error{syscall.ENOSPC, syscall.EIO}
	op, path, after, err := ops[rng.IntN(len(ops))], paths[rng.IntN(len(paths))], rng.IntN(40), errs[rng.IntN(len(errs))]
	mem.InjectError(op, path, after, err)
	pr.fault = fmt.Sprintf("%s on %q after %d: %v", op, path, after, err)
}

// plBackup is an acknowledged Backup and the state it must hold.
type plBackup struct {
	dir   string
	model map[string]int
	kv    map[string]string
}

const plDir = "/pl/store"

// plWALSegment keeps the preallocated WAL segments small: MemFS copies
// them on every crash image, and small ones roll often, which the loop
// should cut through too.
const plWALSegment = 64 << 10

// run returns the first broken guarantee, nil when every cycle held.
func (pr *plRun) run() error {
	rng := rand.New(rand.NewPCG(pr.seed, 0x5eed))
	pr.lostIn = map[string]int{}
	mem := vfs.NewMem()
	mem.RequireDirSync() // a directory the engine makes must be synced into its parent too
	model := map[string]int{}
	kv := map[string]string{}
	ver := 0
	for cycle := range pr.cycles {
		at := 1 + rng.IntN(400)
		if cycle == 0 && pr.crashAt > 0 {
			at = pr.crashAt
		}
		fsys := newPLFS(mem, at, pr.skip)
		opts := Options{FS: fsys, FlushBytes: -1, CompactInterval: -1, walSegSize: plWALSegment}
		pending, ops, err := pr.workload(rng, fsys, opts, model, kv, &ver)
		pr.skipped += fsys.skipped
		if err != nil {
			return fmt.Errorf("seed %d cycle %d: %w", pr.seed, cycle, err)
		}
		pr.crashes++
		pr.acked += len(ops)
		pr.lostIn[fsys.lostIn]++
		if cycle == 0 {
			pr.firstLostIn = fsys.lostIn
		}
		for _, op := range ops {
			applyCrashOp(model, kv, op)
		}
		mem = fsys.image
		withPending, err := plVerify(mem, model, kv, pending)
		if err != nil {
			return fmt.Errorf("seed %d cycle %d (power lost at FS op %d, %d ops acknowledged, pending %q, fault %q): %w",
				pr.seed, cycle, fsys.crashAt, len(ops), pending, pr.fault, err)
		}
		if withPending {
			applyCrashOp(model, kv, pending)
		}
		for _, b := range pr.backups {
			if err := plMatchesAt(mem, b.dir, b.model, b.kv); err != nil {
				return fmt.Errorf("seed %d cycle %d (power lost at FS op %d): backup %s: %w", pr.seed, cycle, fsys.crashAt, b.dir, err)
			}
		}
	}
	return nil
}

// workload opens the store and runs random operations until the power
// fails (or up to 40 operations, then cuts it). It returns the operations
// acknowledged before the loss, in crash_test.go's notation, and the one
// in progress.
func (pr *plRun) workload(rng *rand.Rand, fsys *plFS, opts Options, model map[string]int, kv map[string]string, ver *int) (pending string, acked []string, err error) {
	// Everything acknowledged is in the model only once the ops are applied
	// by the caller; ids to overwrite or delete come from both.
	live := cloneMap(model)
	if pr.faults {
		pr.injectFault(rng, fsys.MemFS)
	}
	pending = "open"
	fsys.setPhase("open")
	db, err := Open(plDir, opts)
	if err != nil && pr.faults {
		fsys.crashNow() // the injected error, then the power
	}
	if fsys.crashed() {
		if db != nil {
			db.Close()
		}
		return pending, nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("open: %w", err)
	}
	defer func() {
		fsys.crashNow()
		if db != nil {
			db.Close() // on the live FS, after the image: it changes nothing checked
		}
	}()
	c, err := db.CreateCollection(crashCfg)
	if err != nil && pr.faults {
		fsys.crashNow()
	}
	if fsys.crashed() {
		return pending, nil, nil // the collection is empty either way
	}
	if err != nil {
		return "", nil, fmt.Errorf("create collection: %w", err)
	}
	pending = ""
	pool := func() string { return fmt.Sprintf("m%02d", rng.IntN(48)) }
	for range 40 {
		var op func() error
		switch k := rng.IntN(21); {
		case k < 9:
			var recs []Record
			var parts []string
			seen := map[string]bool{}
			for range 1 + rng.IntN(6) {
				id := pool()
				if seen[id] {
					continue
				}
				seen[id] = true
				*ver++
				recs = append(recs, Record{ID: id, Vector: crashVec(id, *ver), Text: fmt.Sprintf("%s v%d", id, *ver),
					Meta: Metadata{"session": String("s" + strconv.Itoa(*ver%3))}})
				parts = append(parts, fmt.Sprintf("%s:%d", id, *ver))
				live[id] = *ver
			}
			pending = "U " + strings.Join(parts, ",")
			fsys.setPhase("upsert")
			op = func() error { return c.Upsert(ctx, recs) }
		case k < 12:
			ids := []string{pool(), pool()}
			if ids[0] == ids[1] {
				ids = ids[:1]
			}
			for _, id := range ids {
				delete(live, id)
			}
			pending = "D " + strings.Join(ids, ",")
			fsys.setPhase("delete")
			op = func() error { _, err := c.Delete(ids...); return err }
		case k < 13:
			*ver++
			key, val := fmt.Sprintf("key%d", rng.IntN(4)), fmt.Sprintf("val%d", *ver)
			pending = "K " + key + ":" + val
			fsys.setPhase("kv")
			op = func() error { return db.KV().Put(key, []byte(val)) }
		case k < 16:
			pending = "F"
			fsys.setPhase("flush")
			op = db.Flush
		case k < 18:
			pending = "C"
			fsys.setPhase("compact")
			op = db.Compact
		case k < 19:
			b := plBackup{dir: fmt.Sprintf("/pl/backup%d", pr.seenBackups), model: cloneMap(model), kv: cloneMap(kv)}
			pr.seenBackups++
			for _, a := range acked {
				applyCrashOp(b.model, b.kv, a)
			}
			pending = "B " + b.dir
			fsys.setPhase("backup")
			op = func() error {
				err := db.Backup(b.dir)
				if err == nil && !fsys.crashed() {
					pr.backups = append(pr.backups, b)
				}
				return err
			}
		default:
			pending = "R"
			fsys.setPhase("reopen")
			op = func() error {
				err := db.Close()
				db = nil
				if err != nil {
					return err
				}
				if db, err = Open(plDir, opts); err != nil {
					return err
				}
				c, err = db.Collection(crashCfg.Name)
				return err
			}
		}
		err := op()
		if err != nil && pr.faults {
			pr.faulted++
			fsys.crashNow() // the injected error, then the power: the op is pending
		}
		if fsys.crashed() {
			return pending, acked, nil
		}
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", pending, err)
		}
		if pr.logf != nil {
			pr.logf("acked %s", pending)
		}
		acked = append(acked, pending)
		pending = ""
	}
	return "", acked, nil
}

// plVerify opens the image a power loss left and checks it: it opens, Check
// is clean, no file is left that the engine does not know, and it holds
// exactly the acknowledged state, or that plus the pending op applied
// whole (withPending).
func plVerify(mem *vfs.MemFS, model map[string]int, kv map[string]string, pending string) (withPending bool, err error) {
	err = plMatches(mem, model, kv)
	if err == nil || pending == "" {
		return false, err
	}
	after, afterKV := cloneMap(model), cloneMap(kv)
	applyCrashOp(after, afterKV, pending)
	if err2 := plMatches(mem, after, afterKV); err2 != nil {
		return false, fmt.Errorf("%w (and with the pending op: %v)", err, err2)
	}
	return true, nil
}

// plMatches opens the store on a crash of mem (so that it changes nothing
// in mem itself: the next cycle starts from the image as the loss left it)
// and compares it with the model.
func plMatches(mem *vfs.MemFS, model map[string]int, kv map[string]string) error {
	return plMatchesAt(mem, plDir, model, kv)
}

// plMatchesAt is plMatches for the store in dir.
func plMatchesAt(mem *vfs.MemFS, dir string, model map[string]int, kv map[string]string) error {
	fsys := mem.Crash()
	db, err := Open(dir, Options{FS: fsys, FlushBytes: -1, CompactInterval: -1, walSegSize: plWALSegment})
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer db.Close()
	if err := db.Check(); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if err := crashStateMatches(db, model, kv); err != nil {
		return err
	}
	if u, err := unknownFiles(fsys, dir); err != nil || len(u) > 0 {
		return fmt.Errorf("unknown files %v (%v)", u, err)
	}
	return nil
}

func plSeedList(n int) []uint64 {
	if *plSeed != 0 {
		return []uint64{*plSeed}
	}
	if *plSeeds > 0 {
		n = *plSeeds
	} else if s := os.Getenv("ENGRAM_POWERLOSS_SEEDS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// TestPowerLoss: for each seed, cycles of random upserts (new ids and
// overwrites), deletes, KV puts, flushes, compactions and clean reopens,
// with the power cut at a random file system operation; after each cut
// the store must open, Check clean, and hold every acknowledged write with
// its exact content (the op in progress: whole or not at all).
func TestPowerLoss(t *testing.T) {
	seeds, cycles := plSeedList(40), 6
	if testing.Short() {
		seeds = plSeedList(12)
	}
	start := time.Now()
	var crashes, acked, backups int
	lostIn := map[string]int{}
	for _, seed := range seeds {
		pr := &plRun{seed: seed, cycles: cycles}
		if *plSeed != 0 && testing.Verbose() {
			pr.logf = t.Logf
		}
		if err := pr.run(); err != nil {
			t.Fatalf("%v\nreplay: go test ./engine -run 'TestPowerLoss$' -powerloss.seed=%d -v", err, seed)
		}
		crashes += pr.crashes
		acked += pr.acked
		backups += len(pr.backups)
		for k, v := range pr.lostIn {
			lostIn[k] += v
		}
	}
	t.Logf("%d seeds, %d power losses (by op: %v), %d acknowledged ops (%d backups) checked in %v",
		len(seeds), crashes, lostIn, acked, backups, time.Since(start).Round(time.Millisecond))
}

// TestPowerLossAfterIOError is TestPowerLoss with one operation of each
// cycle failing first (ENOSPC or EIO on a write, sync, open, truncate,
// rename, remove or directory sync of the WAL, a segment, a manifest,
// CURRENT or a backup): the failed op and the power loss right after it
// must cost no acknowledged write and leave a store that opens clean.
func TestPowerLossAfterIOError(t *testing.T) {
	seeds := plSeedList(40)
	if testing.Short() {
		seeds = plSeedList(12)
	}
	faulted, crashes := 0, 0
	for _, seed := range seeds {
		pr := &plRun{seed: seed, cycles: 6, faults: true}
		if err := pr.run(); err != nil {
			t.Fatalf("%v\nreplay: go test ./engine -run 'TestPowerLossAfterIOError$' -powerloss.seed=%d", err, seed)
		}
		faulted += pr.faulted
		crashes += pr.crashes
	}
	if faulted == 0 {
		t.Fatal("no injected error reached an operation")
	}
	t.Logf("%d seeds, %d power losses, %d after a failed op", len(seeds), crashes, faulted)
}

// TestPowerLossEveryPoint cuts the power before each file system operation
// in turn of one seed's first cycle (the store's creation included), not
// at random ones: every crash point of a creation, upserts, deletes,
// flushes, compactions and a reopen, checked the same way.
func TestPowerLossEveryPoint(t *testing.T) {
	seed := uint64(3)
	if *plSeed != 0 {
		seed = *plSeed
	}
	step := 1
	if testing.Short() {
		step = 5
	}
	points := 0
	for at := 1; ; at += step {
		pr := &plRun{seed: seed, cycles: 1, crashAt: at}
		if err := pr.run(); err != nil {
			t.Fatalf("%v\nreplay: go test ./engine -run 'TestPowerLossEveryPoint$' -powerloss.seed=%d", err, seed)
		}
		if pr.firstLostIn == "end" {
			break // the cycle's operations all ran before op at
		}
		points++
	}
	if points*step < 100 {
		t.Fatalf("only %d crash points: the workload is too small to mean much", points)
	}
	t.Logf("seed %d: %d crash points (every %d)", seed, points, step)
}

// TestPowerLossCatchesMissingSync proves the loop has teeth: with one of
// the engine's directory fsyncs dropped (as if the call were deleted), the
// loop must find a broken guarantee within a few seeds. The seeds are
// fixed, so each case fails at the same seed every run.
//
// Manifest writing syncs the store directory twice, after MANIFEST-n and
// after CURRENT, and either sync alone is enough: dropping only the first
// leaves the second to make both renames durable, and dropping only the
// second leaves a stale CURRENT, which Open ignores for the newest manifest
// that decodes (and which is rewritten at the next). So the case drops
// both: the manifest writer without its directory fsync.
func TestPowerLossCatchesMissingSync(t *testing.T) {
	segDir := filepath.Join(plDir, "seg")
	newSeg := func(dir, last string) bool { return dir == segDir && strings.HasSuffix(last, ".seg") }
	isManifest := func(last string) bool { _, ok := parseManifestName(last); return ok }
	for _, tc := range []struct {
		name string
		skip func(phase, dir, last string) bool
	}{
		{"flush segment", func(phase, dir, last string) bool { return phase == "flush" && newSeg(dir, last) }},
		{"compaction segment", func(phase, dir, last string) bool { return phase == "compact" && newSeg(dir, last) }},
		{"manifest writer", func(_, _, last string) bool { return isManifest(last) || last == currentName }},
		{"new store directory", func(_, dir, last string) bool { return last == filepath.Base(plDir)+"/" }},
		{"new wal directory", func(_, dir, last string) bool { return dir == plDir && last == "wal/" }},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			skipped := 0
			// First every crash point of seed 3's first 150 FS ops (the
			// store's creation and first writes), then random seeds.
			for i := 1; i <= 190; i++ {
				pr := &plRun{seed: 3, cycles: 1, crashAt: i, skip: tc.skip}
				if i > 150 {
					pr = &plRun{seed: uint64(i - 150), cycles: 6, skip: tc.skip}
				}
				err := pr.run()
				skipped += pr.skipped
				if err != nil {
					t.Logf("caught at try %d, %d syncs dropped: %v", i, skipped, err)
					return
				}
			}
			t.Errorf("150 crash points and 40 seeds passed with %d such syncs dropped", skipped)
		})
	}
}
