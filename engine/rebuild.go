package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/engramdb/engram/quant"
)

// rebuildManifest describes the segment files in seg/ as a manifest, for a
// store that lost every manifest. Each file names its collection (name,
// dimension, metric, model fingerprint) in its info section. A record ID
// live in several files of a collection is kept in the newest (the highest
// file number: flushes and compactions number their output after every
// file they read) and marked deleted in the others. Files whose own
// description is damaged are moved aside (NAME.corrupt); files of an older
// collection of the same name with another config are left out (the
// collection was dropped and created again). The manifest has no
// checkpoint and is marked rebuilt: Open replays the whole WAL over it.
func (d *DB) rebuildManifest(rep *RepairReport) (*manifest, error) {
	names, err := d.opts.FS.ReadDir(d.segDir())
	if err != nil {
		return nil, fmt.Errorf("engine: repair: %w", err)
	}
	type found struct {
		file  uint64
		cfg   CollectionConfig
		count uint32
	}
	var files []found
	m := &manifest{nextFile: 1, kv: map[string][]byte{}, rebuilt: true}
	for _, n := range names {
		if !isSegName(n) {
			continue
		}
		file, err := strconv.ParseUint(strings.TrimSuffix(n, ".seg"), 10, 64)
		if err != nil {
			continue
		}
		m.nextFile = max(m.nextFile, file+1)
		path := filepath.Join(d.segDir(), n)
		cfg, count, err := describeSegment(path)
		var ce *CorruptionError
		if errors.As(err, &ce) || errors.Is(err, ErrVersion) {
			if rerr := d.opts.FS.Rename(path, path+quarantineSuffix); rerr != nil {
				return nil, fmt.Errorf("engine: repair: quarantine %s: %w", path, rerr)
			}
			rep.QuarantinedSegments = append(rep.QuarantinedSegments, path)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("engine: repair: %w", err)
		}
		files = append(files, found{file, cfg, count})
	}
	// Newest first: the newest file of a name fixes its config, and the
	// newest copy of a record wins.
	sort.Slice(files, func(i, j int) bool { return files[i].file > files[j].file })
	colls := map[string]*manifestColl{}
	seen := map[string]map[string]bool{}
	for _, f := range files {
		mc := colls[f.cfg.Name]
		if mc == nil {
			mc = &manifestColl{cfg: f.cfg, overrides: map[string]access{}}
			colls[f.cfg.Name] = mc
			seen[f.cfg.Name] = map[string]bool{}
		}
		if mc.cfg != f.cfg {
			continue
		}
		path := d.segPath(f.file)
		s, err := openSegment(path, f.file, f.cfg, f.count, false)
		if err == nil {
			err = s.need(secIDs)
		}
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				return nil, fmt.Errorf("engine: repair: %w", err)
			}
			if s != nil {
				s.close()
			}
			// The per-segment checks that follow quarantine it.
			mc.segs = append(mc.segs, manifestSeg{file: f.file, count: f.count})
			continue
		}
		ms := manifestSeg{file: f.file, count: f.count, size: uint64(len(s.sf.data))}
		ids := seen[f.cfg.Name]
		for node := uint32(0); node < f.count; node++ {
			id := s.id(node)
			if got, ok := s.find(id); !ok || got != node || ids[id] {
				ms.deleted = append(ms.deleted, node) // dead in the file, or newer elsewhere
				continue
			}
			ids[id] = true
		}
		s.close()
		mc.segs = append(mc.segs, ms)
	}
	for _, name := range sortedKeys(colls) {
		mc := colls[name]
		sort.Slice(mc.segs, func(i, j int) bool { return mc.segs[i].file < mc.segs[j].file })
		m.colls = append(m.colls, *mc)
	}
	return m, nil
}

// describeSegment reads the collection config and record count a segment
// file's info section holds (its checksum verified).
func describeSegment(path string) (CollectionConfig, uint32, error) {
	sf, err := openSegFile(path)
	if err != nil {
		return CollectionConfig{}, 0, err
	}
	defer sf.close()
	info, ok := sf.sections[secInfo]
	if !ok {
		return CollectionConfig{}, 0, &CorruptionError{File: path, Err: errors.New("no info section")}
	}
	for _, e := range sf.entries {
		if e.kind == secInfo && crc(info) != e.crc {
			return CollectionConfig{}, 0, &CorruptionError{File: path, Err: errors.New("info section checksum mismatch")}
		}
	}
	dc := dec{b: info}
	cfg := CollectionConfig{Name: dc.str(), Dim: int(dc.uvarint()), Metric: quant.Metric(dc.u8())}
	n := dc.uvarint()
	cfg.Fingerprint = dc.str()
	if dc.err != nil || n > 1<<32-1 {
		return CollectionConfig{}, 0, &CorruptionError{File: path, Err: errors.New("info section does not decode")}
	}
	if err := cfg.validate(); err != nil {
		return CollectionConfig{}, 0, &CorruptionError{File: path, Err: fmt.Errorf("info section: %v", err)}
	}
	return cfg, uint32(n), nil
}
