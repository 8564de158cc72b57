package engine

import "path/filepath"

// Stats describes the store.
type Stats struct {
	Collections []CollectionStats
	WALBytes    int64
	// MemBytes estimates the mutable parts' size (the flush threshold).
	MemBytes int64
	// BackgroundError is the error of the last background flush or
	// compaction; nil once one succeeds (after a full disk cleared, say).
	BackgroundError error
}

// CollectionStats describes one collection.
type CollectionStats struct {
	Name        string
	Records     int   // live records
	Mutable     int   // live records not yet flushed
	Segments    int   // segment files
	Deleted     int   // deleted or overwritten records still in segments
	DiskBytes   int64 // segment file bytes
	Overrides   int   // access statistics held in the manifest
	Broken      error
	Fingerprint string
}

// Stats reports counts and sizes.
func (d *DB) Stats() Stats {
	var st Stats
	colls := d.collections()
	for _, c := range colls {
		c.mu.RLock()
		cs := CollectionStats{Name: c.cfg.Name, Broken: c.broken, Fingerprint: c.cfg.Fingerprint, Overrides: len(c.overrides)}
		if !c.dropped {
			cs.Mutable = c.mem.live
			cs.Records = c.mem.live
			for _, s := range c.segs {
				cs.Segments++
				cs.Records += s.live()
				cs.Deleted += s.ndel
				cs.DiskBytes += int64(len(s.sf.data))
			}
		}
		c.mu.RUnlock()
		st.Collections = append(st.Collections, cs)
	}
	walDir := filepath.Join(d.dir, "wal")
	if names, err := d.opts.FS.ReadDir(walDir); err == nil {
		for _, n := range names {
			if info, err := d.opts.FS.Stat(filepath.Join(walDir, n)); err == nil && !info.IsDir() {
				st.WALBytes += info.Size()
			}
		}
	}
	d.writeMu.Lock()
	st.MemBytes = d.memBytes
	d.writeMu.Unlock()
	if p := d.bgErr.Load(); p != nil {
		st.BackgroundError = *p
	}
	return st
}
