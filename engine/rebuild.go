package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
)

// rebuildManifest describes the segment files in seg/ as a manifest, for a
// store that lost every manifest. Each file describes itself (readSegHeader:
// its collection's name, dimension, metric and model fingerprint, its
// record count and dead nodes, and from format version 3 on the files a
// compaction merged into it). Files another file supersedes are left out
// (their records are in it, their deletes were applied by it). A record ID
// live in several files of a collection is kept in the newest (the highest
// file number: flushes number their files when they run, and compaction
// takes its output's number before it reads its inputs, so a file holding
// a newer copy of a record always has the larger number) and marked
// deleted in the others. Files whose description is damaged are moved
// aside (NAME.corrupt); files that are not segment files at all (no
// segment magic at either end: hasSegMagic) are not the store's and stay
// where they are; files of an older collection of the same name with
// another config are left out (it was dropped and created again). The
// manifest has no checkpoint and is marked rebuilt: Open replays the whole
// WAL over it.
func (d *DB) rebuildManifest(rep *RepairReport) (*manifest, error) {
	names, err := d.opts.FS.ReadDir(d.segDir())
	if err != nil {
		return nil, fmt.Errorf("engine: repair: %w", err)
	}
	var hdrs []segHeader
	superseded := map[uint64]bool{}
	m := &manifest{nextFile: 1, kv: map[string][]byte{}, rebuilt: true}
	for _, n := range names {
		file, ok := segFileNumber(n)
		if !ok {
			continue
		}
		m.nextFile = max(m.nextFile, file+1)
		path := filepath.Join(d.segDir(), n)
		if !hasSegMagic(d.opts.FS, path) {
			continue // not a segment file: not the store's (UnknownFiles reports it)
		}
		h, err := readSegHeaderFS(d.opts.FS, path)
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
		h.file = file
		hdrs = append(hdrs, h)
		for _, f := range h.replaces {
			superseded[f] = true
		}
	}
	// Newest first: the newest file of a name fixes its config, and the
	// newest copy of a record wins.
	sort.Slice(hdrs, func(i, j int) bool { return hdrs[i].file > hdrs[j].file })
	colls := map[string]*manifestColl{}
	seen := map[string]map[string]bool{}
	for _, h := range hdrs {
		if superseded[h.file] {
			continue
		}
		mc := colls[h.cfg.Name]
		if mc == nil {
			mc = &manifestColl{cfg: h.cfg, overrides: map[string]access{}}
			colls[h.cfg.Name] = mc
			seen[h.cfg.Name] = map[string]bool{}
		}
		if mc.cfg != h.cfg {
			continue
		}
		ms := manifestSeg{file: h.file, count: h.count, size: h.size, deleted: slices.Clone(h.dead)}
		s, err := openSegment(d.opts.FS, h.path, h.file, h.cfg, h.count, false)
		if err == nil {
			if err = s.need(secIDs); err != nil {
				s.close()
			}
		}
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				return nil, fmt.Errorf("engine: repair: %w", err)
			}
			// The per-segment checks that follow quarantine it.
			mc.segs = append(mc.segs, ms)
			continue
		}
		ids := seen[h.cfg.Name]
		dead := map[uint32]bool{}
		for _, node := range h.dead {
			dead[node] = true
		}
		for node := uint32(0); node < h.count; node++ {
			if dead[node] {
				continue
			}
			id := s.id(node)
			if ids[id] {
				ms.deleted = append(ms.deleted, node) // a newer file holds it
				continue
			}
			ids[id] = true
		}
		s.close()
		slices.Sort(ms.deleted)
		mc.segs = append(mc.segs, ms)
	}
	for _, name := range sortedKeys(colls) {
		mc := colls[name]
		sort.Slice(mc.segs, func(i, j int) bool { return mc.segs[i].file < mc.segs[j].file })
		m.colls = append(m.colls, *mc)
	}
	return m, nil
}
