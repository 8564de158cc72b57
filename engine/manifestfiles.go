package engine

import (
	"errors"
	"fmt"
	"github.com/engramdb/engram/internal/crypt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Numbered manifests. A flush or compaction writes MANIFEST-NNNNNN with the
// next number (write, fsync, rename, fsync the directory: the commit
// point), then CURRENT naming it, then removes every manifest but the new
// one and the one it supersedes. Open uses the newest manifest that
// decodes; the previous one is a complete fallback because the files it
// names and the WAL from its checkpoint on are kept until a newer manifest
// supersedes it too. CURRENT says which manifest was written last, so a
// deleted newest manifest is noticed (Check) rather than silently skipped.
// The first release wrote a single MANIFEST; it reads as number 0.

const (
	currentName        = "CURRENT"
	manifestPrefix     = "MANIFEST-"
	legacyManifestName = "MANIFEST"
	manifestDigits     = 6
)

func manifestFileName(num uint64) string {
	if num == 0 {
		return legacyManifestName
	}
	return fmt.Sprintf("%s%0*d", manifestPrefix, manifestDigits, num)
}

// parseManifestName returns the number of a manifest file name: 0 for the
// legacy MANIFEST, N for MANIFEST-N (at least six digits, N > 0).
func parseManifestName(name string) (uint64, bool) {
	if name == legacyManifestName {
		return 0, true
	}
	digits, ok := strings.CutPrefix(name, manifestPrefix)
	if !ok || len(digits) < manifestDigits || len(digits) > 20 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n == 0 || manifestFileName(n) != name {
		return 0, false
	}
	return n, true
}

// manifestState is what loadManifests found in a store directory.
type manifestState struct {
	m   *manifest // the newest manifest that decodes; nil when none does
	num uint64    // its number
	// maxNum is the highest manifest number present, readable or not;
	// the next manifest gets a larger one.
	maxNum uint64
	// found: some manifest file or CURRENT exists.
	found bool
	// readable holds every manifest that decodes, by number.
	readable map[uint64]*manifest
	// problems are damaged manifests and a CURRENT that is damaged or
	// names a manifest that is missing or damaged, each a *CorruptionError.
	problems []error
}

// keepFiles returns the segment files named by any readable manifest.
func (st *manifestState) keepFiles() map[uint64]bool {
	keep := map[uint64]bool{}
	for _, m := range st.readable {
		for f := range m.files() {
			keep[f] = true
		}
	}
	return keep
}

// oldestCheckpoint is the smallest checkpoint of the readable manifests:
// the WAL after it is what a fallback to any of them replays.
func (st *manifestState) oldestCheckpoint() uint64 {
	if st.m == nil {
		return 0
	}
	oldest := st.m.checkpoint
	for _, m := range st.readable {
		oldest = min(oldest, m.checkpoint)
	}
	return oldest
}

// files returns the segment files m names.
func (m *manifest) files() map[uint64]bool {
	out := map[uint64]bool{}
	for _, c := range m.colls {
		for _, s := range c.segs {
			out[s.file] = true
		}
	}
	return out
}

// loadManifests reads every manifest in dir and CURRENT. Only an I/O
// error or a manifest of a newer format version is returned as an error;
// damage is listed in problems.
func loadManifests(fsys FS, dir string) (*manifestState, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	st := &manifestState{readable: map[uint64]*manifest{}}
	var nums []uint64
	hasCurrent := false
	for _, n := range names {
		if num, ok := parseManifestName(n); ok {
			nums = append(nums, num)
			st.maxNum = max(st.maxNum, num)
		} else if n == currentName {
			hasCurrent = true
		}
	}
	st.found = hasCurrent || len(nums) > 0
	sort.Slice(nums, func(i, j int) bool { return nums[i] > nums[j] })
	damaged := map[uint64]bool{}
	for _, num := range nums {
		m, err := readManifestFile(fsys, filepath.Join(dir, manifestFileName(num)))
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				if errors.Is(err, ErrVersion) && st.m == nil {
					return nil, err // written by a newer build: touch nothing
				}
				if !errors.Is(err, ErrVersion) {
					return nil, err
				}
			}
			damaged[num] = true
			st.problems = append(st.problems, err)
			continue
		}
		st.readable[num] = m
		if st.m == nil {
			st.m, st.num = m, num
		}
	}
	curPath := filepath.Join(dir, currentName)
	switch {
	case hasCurrent:
		b, err := readFile(fsys, curPath, 256)
		if err != nil && !errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("engine: %w", err)
		}
		name, ok := strings.CutSuffix(string(b), "\n")
		num, valid := parseManifestName(name)
		switch {
		case err != nil || !ok || !valid || num == 0:
			st.problems = append(st.problems, &CorruptionError{File: curPath, Err: fmt.Errorf("does not name a manifest: %q", clip(b, 40))})
		case damaged[num]:
			// Already reported as a damaged manifest.
		case st.readable[num] == nil:
			st.problems = append(st.problems, &CorruptionError{File: filepath.Join(dir, name), Err: errors.New("named by CURRENT, but missing")})
		}
	case len(nums) > 0 && !(len(nums) == 1 && nums[0] == 0):
		// Numbered manifests without CURRENT (a legacy store has neither).
		st.problems = append(st.problems, &CorruptionError{File: curPath, Err: errors.New("missing")})
	}
	return st, nil
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

var errTooLarge = errors.New("file too large")

// readFile reads a whole file of at most limit bytes through fsys.
func readFile(fsys FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, errTooLarge
	}
	b := make([]byte, fi.Size())
	if n, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, err
	}
	return b, nil
}

// readManifestFile reads and decodes one manifest: damage is a
// *CorruptionError, a newer format wraps ErrVersion.
func readManifestFile(fsys FS, path string) (*manifest, error) {
	b, err := readFile(fsys, path, maxManifestSize)
	if errors.Is(err, errTooLarge) {
		return nil, &CorruptionError{File: path, Err: errors.New("manifest larger than 1 GiB")}
	}
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	m, err := decodeManifest(b)
	if err != nil {
		if errors.Is(err, ErrVersion) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, &CorruptionError{File: path, Err: err}
	}
	if keys := segmentKeys(fsys); m.sealed == nil && keys != nil && keys.Flags()&crypt.FlagSealedManifests != 0 {
		return nil, &CorruptionError{File: path, Err: errors.New("a plaintext manifest in a store whose manifests are sealed (forged or damaged)")}
	}
	if m.sealed != nil {
		keys := segmentKeys(fsys)
		if keys == nil {
			return nil, fmt.Errorf("%w: %s is sealed: it belongs to an encrypted store (a backup taken without its keys opens once the store's KEYS file is copied into it)", ErrKeyRequired, path)
		}
		num, _ := parseManifestName(filepath.Base(path))
		if err := m.openSealed(keys, num); err != nil {
			if errors.Is(err, ErrKeyDestroyed) {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return nil, &CorruptionError{File: path, Err: err}
		}
	}
	return m, nil
}

// errNoManifest is the cause when a store has manifests but none decodes.
var errNoManifest = errors.New("no manifest is readable: run `memctl repair`, which rebuilds one from seg/ and wal/")

// writeManifest writes m as manifest number num and then CURRENT naming
// it. Only a failure before the manifest is durable is returned as the
// first error; CURRENT's failure comes second (the manifest is committed
// anyway: Open uses the newest one that decodes).
func writeManifest(fsys FS, dir string, num uint64, m *manifest) (error, error) {
	name := manifestFileName(num)
	b := encodeManifest(m)
	if keys := segmentKeys(fsys); keys != nil {
		var err error
		if b, err = encodeSealedManifest(m, keys, num); err != nil {
			return fmt.Errorf("engine: write manifest: %w", err), nil
		}
	}
	if err := writeFileAtomic(fsys, dir, name, b); err != nil {
		// The rename may have happened with only the directory sync
		// failing: a manifest naming files the caller will remove must
		// not stay visible.
		if rerr := fsys.Remove(filepath.Join(dir, name)); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
			_ = fsys.SyncDir(dir)
		}
		return fmt.Errorf("engine: write manifest: %w", err), nil
	}
	if err := writeFileAtomic(fsys, dir, currentName, []byte(name+"\n")); err != nil {
		return nil, fmt.Errorf("engine: write CURRENT: %w", err)
	}
	return nil, nil
}

// removeManifests removes every manifest in dir but those numbered keep
// (the current and the previous one).
func removeManifests(fsys FS, dir string, keep ...uint64) error {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, n := range names {
		num, ok := parseManifestName(n)
		if !ok || slices.Contains(keep, num) {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed = true
	}
	if removed {
		return fsys.SyncDir(dir)
	}
	return nil
}
