package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/wal"
)

// within reports whether path is root or lies under it, comparing absolute
// paths with symbolic links resolved (path need not exist yet: its nearest
// existing ancestor is resolved).
func within(path, root string) (bool, error) {
	r, err := resolve(root)
	if err != nil {
		return false, err
	}
	p, err := resolve(path)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(r, p)
	if err != nil {
		return false, nil
	}
	return rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)), nil
}

// resolve returns path absolute, with the symbolic links of its longest
// existing prefix resolved.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// UnknownFiles lists the entries of the store directory dir, seg/ and wal/
// that the engine does not write, relative to dir and sorted: other names,
// and files that only look like the store's by name (NNNNNNNN.seg that no
// manifest names and that is not a segment file; a WAL segment name on
// something else, wal.ListSegments, which Open sets aside as
// NNNNNNNN.foreign). Open and Repair never read them as the store's and
// never remove them; `memctl check` reports them. It reads the OS file
// system (a store path, open or not, like ReadLock).
func UnknownFiles(dir string) ([]string, error) { return unknownFiles(vfs.OS, dir) }

// unknownFiles is UnknownFiles on fsys.
func unknownFiles(fsys FS, dir string) ([]string, error) {
	named := map[uint64]bool{}
	if st, err := loadManifests(fsys, dir); err == nil {
		named = st.keepFiles()
	}
	_, foreignWAL, err := wal.ListSegments(fsys, filepath.Join(dir, "wal"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("engine: %w", err)
	}
	var out []string
	for _, sub := range []string{"", "seg", "wal"} {
		names, err := fsys.ReadDir(filepath.Join(dir, sub))
		if errors.Is(err, fs.ErrNotExist) && sub != "" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		for _, name := range names {
			path := filepath.Join(dir, sub, name)
			fi, err := fsys.Stat(path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("engine: %w", err)
			}
			// A dangling link counts as a file.
			isDir := err == nil && fi.IsDir()
			known := knownName(sub, name, isDir)
			switch {
			case !known:
			case sub == "wal":
				known = !slices.Contains(foreignWAL, name)
			case sub == "seg" && isSegName(name):
				file, _ := segFileNumber(name)
				known = named[file] || hasSegMagic(fsys, path)
			}
			if !known {
				out = append(out, filepath.Join(sub, name))
			}
		}
	}
	return out, nil
}

// hasSegMagic reports whether the file at path starts or ends as a
// segment file does (the segment magic opens the header and closes the
// trailer). The engine renames a segment file into place only once it is
// whole, so an NNNNNNNN.seg with neither was not written by it; one of
// ours keeps at least one unless damage hit both ends.
func hasSegMagic(fsys FS, path string) bool {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < int64(len(segMagic)) {
		return false
	}
	b := make([]byte, len(segMagic))
	for _, off := range []int64{0, st.Size() - int64(len(segMagic))} {
		if n, _ := f.ReadAt(b, off); n == len(b) && string(b) == segMagic {
			return true
		}
	}
	return isSealedSegment(f) // an encrypted store's (sealedseg.go)
}

// knownName reports whether the entry name (a directory if isDir) of the
// store subdirectory sub ("" for the root) is one the engine writes.
func knownName(sub, name string, isDir bool) bool {
	switch sub {
	case "":
		switch name {
		case "seg", "wal":
			return isDir
		case "LOCK", keysName:
			return !isDir
		}
		base := strings.TrimSuffix(name, ".tmp")
		_, isManifest := parseManifestName(base)
		return !isDir && (isManifest || base == currentName)
	case "seg":
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, ".tmp"), quarantineSuffix), lostSuffix)
		return !isDir && isSegName(base)
	default: // wal
		base := strings.TrimSuffix(name, ".tmp") // (.tmp: a segment being created, or bytes being kept)
		return !isDir && (wal.IsSegmentName(base) || wal.IsLostName(base))
	}
}
