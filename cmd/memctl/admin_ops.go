package main

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

// adminOps is what the admin commands do to a store: localOps on a store
// this process opened, remoteOps through the API of the server holding it.
// Both give the commands the same values, so their output is the same.
//
// The operations defined by the request layer (stats, check, compact,
// cleanup, the archive, reembed) run it here (api.Local) and through its
// server's routes there; export, import and backup move files and streams.
type adminOps interface {
	// stats returns the figures and the store's directory.
	stats(ctx context.Context) (memory.Stats, string, error)
	check(ctx context.Context, prog func(done, total int64)) (api.CheckResult, error)
	compact(ctx context.Context, prog func(done, total int64)) (api.CompactResult, error)
	cleanup(ctx context.Context, req api.CleanupRequest, prog func(done, total int64)) (api.CleanupResult, error)
	archived(ctx context.Context) ([]memoryJSON, error)
	// restore restores ids (nil: every archived memory).
	restore(ctx context.Context, ids []string, prog func(done, total int64)) (int, error)
	// export writes the memories, then the conversations and tasks, and
	// returns how many of each.
	export(ctx context.Context, w io.Writer, session *string, filter *memory.Filter, vectors bool) (memories, convs, tasks int, err error)
	// importMemories writes the memories, then the conversation and task lines.
	importMemories(ctx context.Context, ms []memory.Memory, recs []memory.RecordLine, prog func(done, total int64)) error
	backup(ctx context.Context, dir string, prog func(done, total int64)) error
	// reembed migrates to the embedder spec and returns its fingerprint.
	reembed(ctx context.Context, spec string, prog func(done, total int64)) (string, error)
}

// adminOps opens the store here, or finds the server that holds it.
func (a *app) adminOps(ctx context.Context) (adminOps, error) {
	s, c, err := a.openOrRemote(ctx)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return &remoteOps{c: c}, nil
	}
	return &localOps{a: a, s: s, ops: a.local(s)}, nil
}

// lazyBar is a progress bar made on the first report, when the total is
// known.
type lazyBar struct {
	make func(total int64) *progressbar.ProgressBar
	bar  *progressbar.ProgressBar
	max  int64
}

func (a *app) lazyProgress(what string) *lazyBar {
	return &lazyBar{make: func(total int64) *progressbar.ProgressBar { return a.progress(total, what) }}
}

func (a *app) lazyBytes(what string) *lazyBar {
	return &lazyBar{make: func(total int64) *progressbar.ProgressBar { return a.byteProgress(total, what) }}
}

func (b *lazyBar) set(done, total int64) {
	if total <= 0 {
		return
	}
	if b.bar == nil {
		b.bar, b.max = b.make(total), total
	} else if total != b.max {
		b.bar.ChangeMax64(total)
		b.max = total
	}
	_ = b.bar.Set64(done)
}

// check checks the store without writing to it: a local store through
// engine.CheckDir (read-only, like fsck -n) and then its conversation and
// task records through a read-only memory.Store, which also says what
// opening it for writing would do (Actions) and what was not checked
// (Notes); a store a server holds (or --server, or a Weaviate --dir)
// through that server or backend.
func (a *app) check(ctx context.Context, prog func(done, total int64)) (api.CheckResult, error) {
	a.readOnly = true // whatever opens the store below must not write to it
	if a.server == "" && !isRemote(a.dir) {
		out, err := a.checkLocal(ctx, prog)
		if !errors.Is(err, engine.ErrLocked) {
			return out, err
		}
	}
	ops, err := a.adminOps(ctx)
	if err != nil {
		return api.CheckResult{}, err
	}
	return ops.check(ctx, prog)
}

// checkLocal checks the store in a.dir, which this process can lock.
func (a *app) checkLocal(ctx context.Context, prog func(done, total int64)) (api.CheckResult, error) {
	if err := a.checkStoreDir(); err != nil {
		return api.CheckResult{}, err
	}
	eo := a.engineOpts
	if eo.Logger == nil {
		eo.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
	}
	if eo.Key == nil {
		var err error
		if eo.Key, err = a.storeKey(); err != nil {
			return api.CheckResult{}, err
		}
	}
	rep, err := engine.CheckDir(a.dir, eo, prog)
	var notes []string
	found := func(problem string, err error) api.CheckResult {
		return api.CheckResult{Problem: problem, Error: err.Error(), Actions: rep.Actions, Notes: notes}
	}
	var unreachable *engine.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		res := found("unreachable", err)
		res.Unreachable = unreachable
		return res, nil
	case errors.Is(err, engine.ErrCorrupt):
		return found("corrupt", err), nil
	case err != nil:
		return api.CheckResult{Actions: rep.Actions}, err
	}
	// The records the memory layer keeps (conversations, tasks) must decode.
	s, err := a.openStore()
	switch {
	case errors.Is(err, engine.ErrReadOnly):
		notes = append(notes, "conversations and tasks were not decoded: the memory layer has upkeep to write "+
			"(forgotten memories past their purge time, an upgrade or an unfinished re-embed), which the next command that writes does")
	case errors.Is(err, engine.ErrCorrupt):
		return found("corrupt", err), nil
	case err != nil:
		return api.CheckResult{Actions: rep.Actions}, err
	default:
		if err := s.Conversations(ctx, func(memory.Conversation) error { return nil }); err != nil {
			return found("corrupt", err), nil
		}
		if _, err := s.Tasks(ctx); err != nil {
			return found("corrupt", err), nil
		}
	}
	return api.CheckResult{OK: true, Unknown: rep.Unknown, Actions: rep.Actions, Notes: notes}, nil
}

// ---- local ----

type localOps struct {
	a   *app
	s   *memory.Store
	ops *api.Local
}

func (l *localOps) stats(ctx context.Context) (memory.Stats, string, error) {
	st, err := l.ops.Stats(ctx)
	return st.Stats, l.a.dir, err
}

func (l *localOps) check(ctx context.Context, prog func(done, total int64)) (api.CheckResult, error) {
	return l.ops.Check(ctx, prog)
}

func (l *localOps) compact(ctx context.Context, prog func(done, total int64)) (api.CompactResult, error) {
	return l.ops.Compact(ctx, prog)
}

func (l *localOps) cleanup(ctx context.Context, req api.CleanupRequest, prog func(done, total int64)) (api.CleanupResult, error) {
	return l.ops.AdminCleanup(ctx, req, prog)
}

func (l *localOps) archived(ctx context.Context) ([]memoryJSON, error) {
	resp, err := l.ops.Archived(ctx)
	return resp.Memories, err
}

func (l *localOps) restore(ctx context.Context, ids []string, prog func(done, total int64)) (int, error) {
	resp, err := l.ops.RestoreArchived(ctx, api.RestoreRequest{IDs: ids, All: len(ids) == 0}, prog)
	return resp.Restored, err
}

func (l *localOps) export(ctx context.Context, w io.Writer, session *string, filter *memory.Filter, vectors bool) (int, int, int, error) {
	records := filter == nil // conversations and tasks go with a whole store's or session's export
	if session != nil {
		filter = memory.AllOf(filter, memory.Eq(memory.FieldSession, *session))
	}
	if !records { // a filter selects memories only
		n, err := l.s.Export(ctx, w, memory.ExportOptions{Filter: filter, Vectors: vectors})
		return n, 0, 0, err
	}
	return l.s.WriteExport(ctx, w, filter, session, vectors)
}

func (l *localOps) importMemories(ctx context.Context, ms []memory.Memory, recs []memory.RecordLine, prog func(done, total int64)) error {
	for i := 0; i < len(ms); i += importBatch {
		end := min(i+importBatch, len(ms))
		if err := l.s.Import(ctx, ms[i:end]); err != nil {
			return fmt.Errorf("importing memories %d-%d: %w (the ones before were written)", i+1, end, err)
		}
		prog(int64(end), int64(len(ms)))
	}
	if err := l.s.ImportRecords(ctx, recs); err != nil {
		return fmt.Errorf("importing conversations and tasks: %w (the memories were written)", err)
	}
	return nil
}

func (l *localOps) backup(ctx context.Context, dir string, prog func(done, total int64)) error {
	return l.s.BackupProgress(ctx, dir, prog)
}

func (l *localOps) reembed(ctx context.Context, spec string, prog func(done, total int64)) (string, error) {
	target, err := l.a.newEmbedder(spec)
	if err != nil {
		return "", err
	}
	res, err := l.ops.Reembed(ctx, api.ReembedRequest{To: spec}, target, prog)
	return res.Fingerprint, err
}

// ---- remote ----

type remoteOps struct{ c *client }

func (r *remoteOps) stats(ctx context.Context) (memory.Stats, string, error) {
	var st api.StatsResponse
	err := r.c.do(ctx, http.MethodGet, "/v1/admin/stats", nil, &st)
	return st.Stats, st.Dir, err
}

func (r *remoteOps) check(ctx context.Context, prog func(done, total int64)) (api.CheckResult, error) {
	j, err := r.c.job(ctx, "/v1/admin/check", nil, prog)
	if err != nil {
		return api.CheckResult{}, err
	}
	return jobResult[api.CheckResult](j)
}

func (r *remoteOps) compact(ctx context.Context, prog func(done, total int64)) (api.CompactResult, error) {
	j, err := r.c.job(ctx, "/v1/admin/compact", nil, prog)
	if err != nil {
		return api.CompactResult{}, err
	}
	return jobResult[api.CompactResult](j)
}

func (r *remoteOps) cleanup(ctx context.Context, req api.CleanupRequest, prog func(done, total int64)) (api.CleanupResult, error) {
	j, err := r.c.job(ctx, "/v1/admin/cleanup", req, prog)
	if err != nil {
		return api.CleanupResult{}, err
	}
	return jobResult[api.CleanupResult](j)
}

func (r *remoteOps) archived(ctx context.Context) ([]memoryJSON, error) {
	var d struct{ Memories []memoryJSON }
	err := r.c.do(ctx, http.MethodGet, "/v1/admin/archive", nil, &d)
	if d.Memories == nil {
		d.Memories = []memoryJSON{}
	}
	return d.Memories, err
}

func (r *remoteOps) restore(ctx context.Context, ids []string, prog func(done, total int64)) (int, error) {
	j, err := r.c.job(ctx, "/v1/admin/archive/restore", api.RestoreRequest{IDs: ids, All: len(ids) == 0}, prog)
	if err != nil {
		return 0, err
	}
	res, err := jobResult[map[string]int](j)
	return res["restored"], err
}

func (r *remoteOps) export(ctx context.Context, w io.Writer, session *string, filter *memory.Filter, vectors bool) (int, int, int, error) {
	q := url.Values{}
	if filter != nil {
		b, err := filter.MarshalJSON()
		if err != nil {
			return 0, 0, 0, err
		}
		q.Set("where", string(b))
	}
	if session != nil {
		q.Set("session", *session)
	}
	if vectors {
		q.Set("vectors", "true")
	}
	resp, err := r.c.request(ctx, http.MethodGet, "/v1/admin/export?"+q.Encode(), nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("export from %s broke off after %d bytes: %w", r.c.base, n, err)
	}
	if e := resp.Trailer.Get("Engram-Export-Error"); e != "" {
		return 0, 0, 0, fmt.Errorf("export from %s failed part way: %s", r.c.base, e)
	}
	var counts [3]int
	for i, name := range []string{"Engram-Export-Count", "Engram-Export-Conversations", "Engram-Export-Tasks"} {
		if counts[i], err = strconv.Atoi(resp.Trailer.Get(name)); err != nil {
			return 0, 0, 0, fmt.Errorf("export from %s ended without its counts: the stream is incomplete", r.c.base)
		}
	}
	return counts[0], counts[1], counts[2], nil
}

func (r *remoteOps) importMemories(ctx context.Context, ms []memory.Memory, recs []memory.RecordLine, prog func(done, total int64)) error {
	// Stream the lines as they are encoded; the server checks them all
	// before its job writes any.
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriter(pw)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		var err error
		for _, m := range ms {
			if err = enc.Encode(server.FromMemory(m, true)); err != nil {
				break
			}
		}
		for i := 0; i < len(recs) && err == nil; i++ {
			err = enc.Encode(recs[i])
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	resp, err := r.c.request(ctx, http.MethodPost, "/v1/admin/import", pr)
	pr.Close()
	if err != nil {
		return err
	}
	var j server.Job
	err = json.NewDecoder(resp.Body).Decode(&j)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("server %s: undecodable answer to the import: %w", r.c.base, err)
	}
	_, err = r.c.follow(ctx, j, prog)
	return err
}

func (r *remoteOps) backup(ctx context.Context, dir string, prog func(done, total int64)) error {
	if err := emptyTarget(dir); err != nil {
		return err
	}
	resp, err := r.c.request(ctx, http.MethodPost, "/v1/admin/backup.tar", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	total, _ := strconv.ParseInt(resp.Header.Get("Engram-Backup-Bytes"), 10, 64)
	if err := extractTar(resp.Body, dir, func(n int64) { prog(n, total) }); err != nil {
		return fmt.Errorf("backup from %s into %s: %w", r.c.base, dir, err)
	}
	return nil
}

// serverBackup writes a backup under the server's backup root and returns
// the directory it wrote.
func (r *remoteOps) serverBackup(ctx context.Context, name string) (string, error) {
	j, err := r.c.job(ctx, "/v1/admin/backup", server.BackupRequest{Dir: name}, nil)
	if err != nil {
		return "", err
	}
	res, err := jobResult[map[string]string](j)
	return res["dir"], err
}

func (r *remoteOps) reembed(ctx context.Context, spec string, prog func(done, total int64)) (string, error) {
	j, err := r.c.job(ctx, "/v1/admin/reembed", api.ReembedRequest{To: spec}, prog)
	if err != nil {
		return "", err
	}
	res, err := jobResult[map[string]string](j)
	return res["fingerprint"], err
}

// emptyTarget refuses a backup destination that exists and is not an empty
// directory (the engine's rule for local backups).
func emptyTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup target %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("backup target %s is not empty", dir)
	}
	return nil
}

// extractTar unpacks a backup stream into dir (created 0700): only
// directories and regular files, with names that stay inside dir. Files are
// synced; on failure dir is removed again if this call created it.
func extractTar(r io.Reader, dir string, prog func(bytes int64)) (err error) {
	created := false
	if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	defer func() {
		if err != nil && created {
			os.RemoveAll(dir)
		}
	}()
	tr := tar.NewReader(r)
	var done int64
	sawManifest := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean(hdr.Name)
		if !filepath.IsLocal(filepath.FromSlash(name)) || strings.Contains(hdr.Name, "\\") {
			return fmt.Errorf("refusing tar member %q: not a path inside the backup", hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			n, err := io.Copy(f, tr)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			done += n
			prog(done)
			if name == "CURRENT" || name == "MANIFEST" { // CURRENT: written last by a backup
				sawManifest = true
			}
		default:
			return fmt.Errorf("refusing tar member %q of type %c: a backup holds only files and directories", hdr.Name, hdr.Typeflag)
		}
	}
	if !sawManifest {
		return errors.New("the stream holds no CURRENT manifest pointer: not a complete backup")
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
