package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the store into dir, which must not
// exist or be empty: it flushes, then copies the segment files and writes a
// manifest for them (with an empty WAL). Writers wait while it runs;
// readers do not.
//
// A backup of an encrypted store holds its sealed files without KEYS: it
// opens only once the store's KEYS file is copied into it, and a session
// purged since (its key destroyed) stays unreadable in it
// (docs/format/encryption.md, "Backups"). BackupWithKeys copies KEYS too.
func (d *DB) Backup(dir string) error { return d.backup(dir, false) }

// BackupWithKeys is Backup that also copies an encrypted store's KEYS
// (as it is now), so the backup opens on its own with the store's
// passphrase or key file, purged sessions' keys and all as of now.
func (d *DB) BackupWithKeys(dir string) error { return d.backup(dir, true) }

func (d *DB) backup(dir string, withKeys bool) error {
	if inside, err := within(dir, d.dir); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	} else if inside {
		return fmt.Errorf("%w: backup target %s is inside the store %s", ErrInvalid, dir, d.dir)
	}
	if fresh, err := inspectDir(d.opts.FS, dir); err != nil {
		return err
	} else if !fresh {
		return fmt.Errorf("%w: backup target %s already holds a store", ErrExists, dir)
	}
	if entries, err := d.opts.FS.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: backup target %s is not empty", ErrExists, dir)
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if err := d.flushLocked(nil); err != nil {
		return err
	}
	fsys := d.opts.FS
	if err := mkdirDurable(fsys, filepath.Join(dir, "seg")); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	}
	m := d.manifestLocked(nil, nil)
	m.checkpoint = 0 // the copy starts a new WAL
	for _, mc := range m.colls {
		for _, ms := range mc.segs {
			if err := copyFile(fsys, d.segPath(ms.file), filepath.Join(dir, "seg"), segName(ms.file)); err != nil {
				return fmt.Errorf("engine: backup: %w", err)
			}
		}
	}
	if d.keys != nil && withKeys {
		if err := copyFile(fsys, filepath.Join(d.dir, keysName), dir, keysName); err != nil {
			return fmt.Errorf("engine: backup: %w", err)
		}
	}
	if err := fsys.SyncDir(filepath.Join(dir, "seg")); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	}
	if err, curErr := writeManifest(fsys, dir, 1, m); err != nil || curErr != nil {
		return fmt.Errorf("engine: backup: %w", errors.Join(err, curErr))
	}
	return nil
}

func copyFile(fsys FS, src, dir, name string) error {
	f, err := fsys.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return writeAtomic(fsys, dir, name, func(w io.Writer) error {
		_, err := io.Copy(w, io.NewSectionReader(f, 0, st.Size()))
		return err
	})
}
