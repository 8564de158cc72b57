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

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server"
)

// adminOps is what the admin commands do to a store: localOps on a store
// this process opened, remoteOps through the API of the server holding it.
// Both give the commands the same values, so their output is the same.
type adminOps interface {
	sessions(ctx context.Context) ([]memory.SessionInfo, error)
	// stats returns the figures and the store's directory.
	stats(ctx context.Context) (memory.Stats, string, error)
	check(ctx context.Context, prog func(done, total int64)) (server.CheckResult, error)
	compact(ctx context.Context, prog func(done, total int64)) (server.CompactResult, error)
	cleanup(ctx context.Context, p memory.CleanupPolicy, session *string, prog func(done, total int64)) (server.CleanupResult, error)
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
	return &localOps{a: a, s: s}, nil
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

// checkOutcome is what `memctl check` found: the result a server gives
// too, and, on a store this process read itself, what opening it for
// writing would do (engine.CheckReport.Actions) and notes on what was not
// checked.
type checkOutcome struct {
	server.CheckResult
	Actions []string
	Notes   []string
}

// check checks the store without writing to it: a local store through
// engine.CheckDir (read-only, like fsck -n) and then its conversation and
// task records through a read-only memory.Store; a store a server holds
// (or --server, or a Weaviate --dir) through that server or backend.
func (a *app) check(ctx context.Context, prog func(done, total int64)) (checkOutcome, error) {
	a.readOnly = true // whatever opens the store below must not write to it
	if a.server == "" && !isRemote(a.dir) {
		out, err := a.checkLocal(ctx, prog)
		if !errors.Is(err, engine.ErrLocked) {
			return out, err
		}
	}
	ops, err := a.adminOps(ctx)
	if err != nil {
		return checkOutcome{}, err
	}
	res, err := ops.check(ctx, prog)
	return checkOutcome{CheckResult: res}, err
}

// checkLocal checks the store in a.dir, which this process can lock.
func (a *app) checkLocal(ctx context.Context, prog func(done, total int64)) (checkOutcome, error) {
	if err := a.checkStoreDir(); err != nil {
		return checkOutcome{}, err
	}
	eo := a.engineOpts
	if eo.Logger == nil {
		eo.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
	}
	if eo.Key == nil {
		var err error
		if eo.Key, err = a.storeKey(); err != nil {
			return checkOutcome{}, err
		}
	}
	rep, err := engine.CheckDir(a.dir, eo, prog)
	out := checkOutcome{Actions: rep.Actions}
	var unreachable *engine.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		out.CheckResult = server.CheckResult{Problem: "unreachable", Error: err.Error(), Unreachable: unreachable}
		return out, nil
	case errors.Is(err, engine.ErrCorrupt):
		out.CheckResult = server.CheckResult{Problem: "corrupt", Error: err.Error()}
		return out, nil
	case err != nil:
		return out, err
	}
	// The records the memory layer keeps (conversations, tasks) must decode.
	s, err := a.openStore()
	switch {
	case errors.Is(err, engine.ErrReadOnly):
		out.Notes = append(out.Notes, "conversations and tasks were not decoded: the memory layer has upkeep to write "+
			"(forgotten memories past their purge time, an upgrade or an unfinished re-embed), which the next command that writes does")
	case errors.Is(err, engine.ErrCorrupt):
		out.CheckResult = server.CheckResult{Problem: "corrupt", Error: err.Error()}
		return out, nil
	case err != nil:
		return out, err
	default:
		if err := s.Conversations(ctx, func(memory.Conversation) error { return nil }); err != nil {
			out.CheckResult = server.CheckResult{Problem: "corrupt", Error: err.Error()}
			return out, nil
		}
		if _, err := s.Tasks(ctx); err != nil {
			out.CheckResult = server.CheckResult{Problem: "corrupt", Error: err.Error()}
			return out, nil
		}
	}
	out.CheckResult = server.CheckResult{OK: true, Unknown: rep.Unknown}
	return out, nil
}

// ---- local ----

type localOps struct {
	a *app
	s *memory.Store
}

func (l *localOps) sessions(ctx context.Context) ([]memory.SessionInfo, error) {
	return l.s.Sessions(ctx)
}

func (l *localOps) stats(ctx context.Context) (memory.Stats, string, error) {
	st, err := l.s.Stats(ctx)
	return st, l.a.dir, err
}

func (l *localOps) check(ctx context.Context, prog func(done, total int64)) (server.CheckResult, error) {
	err := l.s.CheckProgress(ctx, prog)
	var unreachable *engine.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		return server.CheckResult{Problem: "unreachable", Error: err.Error(), Unreachable: unreachable}, nil
	case err != nil:
		return server.CheckResult{Problem: "corrupt", Error: err.Error()}, nil
	}
	unknown, err := engine.UnknownFiles(l.a.dir)
	if err != nil {
		return server.CheckResult{}, err
	}
	return server.CheckResult{OK: true, Unknown: unknown}, nil
}

func (l *localOps) compact(ctx context.Context, prog func(done, total int64)) (server.CompactResult, error) {
	before, err := l.s.Stats(ctx)
	if err != nil {
		return server.CompactResult{}, err
	}
	if err := l.s.Flush(ctx); err != nil {
		return server.CompactResult{}, err
	}
	if err := l.s.CompactProgress(ctx, prog); err != nil {
		return server.CompactResult{}, err
	}
	after, err := l.s.Stats(ctx)
	if err != nil {
		return server.CompactResult{}, err
	}
	return server.CompactResult{Before: before.Backend, After: after.Backend}, nil
}

func (l *localOps) cleanup(ctx context.Context, p memory.CleanupPolicy, session *string, prog func(done, total int64)) (server.CleanupResult, error) {
	p.Progress = prog
	if session != nil {
		p.Filter = memory.AllOf(p.Filter, memory.Eq(memory.FieldSession, *session))
	}
	res, err := l.s.Cleanup(ctx, p)
	if err != nil {
		return server.CleanupResult{}, err
	}
	return server.CleanupResult{DryRun: p.DryRun, Batch: res.Batch, Memories: toMemoryJSON(res.Memories)}, nil
}

func (l *localOps) archived(ctx context.Context) ([]memoryJSON, error) {
	ms, err := l.s.Archived(ctx)
	if err != nil {
		return nil, err
	}
	return toMemoryJSON(ms), nil
}

func (l *localOps) restore(ctx context.Context, ids []string, _ func(done, total int64)) (int, error) {
	return l.s.Restore(ctx, ids...)
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
	err = l.s.Reembed(ctx, target, func(done, total int) { prog(int64(done), int64(total)) })
	if err != nil {
		return "", err
	}
	l.a.recordEmbedder(l.s, spec)
	return target.Fingerprint(), nil
}

// ---- remote ----

type remoteOps struct{ c *client }

func (r *remoteOps) sessions(ctx context.Context) ([]memory.SessionInfo, error) {
	var d struct{ Sessions []server.SessionJSON }
	if err := r.c.do(ctx, http.MethodGet, "/v1/sessions", nil, &d); err != nil {
		return nil, err
	}
	out := make([]memory.SessionInfo, 0, len(d.Sessions))
	for _, s := range d.Sessions {
		out = append(out, memory.SessionInfo{Name: s.Name, Memories: s.Memories, Newest: s.Newest})
	}
	return out, nil
}

func (r *remoteOps) stats(ctx context.Context) (memory.Stats, string, error) {
	var st server.AdminStats
	err := r.c.do(ctx, http.MethodGet, "/v1/admin/stats", nil, &st)
	return st.Stats, st.Dir, err
}

func (r *remoteOps) check(ctx context.Context, prog func(done, total int64)) (server.CheckResult, error) {
	j, err := r.c.job(ctx, "/v1/admin/check", nil, prog)
	if err != nil {
		return server.CheckResult{}, err
	}
	return jobResult[server.CheckResult](j)
}

func (r *remoteOps) compact(ctx context.Context, prog func(done, total int64)) (server.CompactResult, error) {
	j, err := r.c.job(ctx, "/v1/admin/compact", nil, prog)
	if err != nil {
		return server.CompactResult{}, err
	}
	return jobResult[server.CompactResult](j)
}

func (r *remoteOps) cleanup(ctx context.Context, p memory.CleanupPolicy, session *string, prog func(done, total int64)) (server.CleanupResult, error) {
	req := server.CleanupRequest{DryRun: p.DryRun, IncludeRecalled: p.IncludeRecalled, Session: session, Filter: p.Filter}
	if p.OlderThan > 0 {
		req.OlderThan = p.OlderThan.String()
	}
	j, err := r.c.job(ctx, "/v1/admin/cleanup", req, prog)
	if err != nil {
		return server.CleanupResult{}, err
	}
	return jobResult[server.CleanupResult](j)
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
	j, err := r.c.job(ctx, "/v1/admin/archive/restore", server.RestoreRequest{IDs: ids, All: len(ids) == 0}, prog)
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
	j, err := r.c.job(ctx, "/v1/admin/reembed", server.ReembedRequest{To: spec}, prog)
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
