package server

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/server/dashboard"
)

// AdminOptions configure the admin routes (/v1/admin/..., /v1/jobs).
type AdminOptions struct {
	// StoreDir is the store's directory, for the check's report of files
	// engram did not write; empty leaves that part out.
	StoreDir string
	// BackupRoot is the server-side directory POST /v1/admin/backup writes
	// into; a backup names a new directory under it and paths outside it
	// are refused. Empty disables server-side backups (the streamed download
	// POST /v1/admin/backup.tar works without it).
	BackupRoot string
	// NewEmbedder builds the embedder POST /v1/admin/reembed migrates to from
	// its spec (lexical, onnx:DIR, ollama:MODEL); nil disables reembed.
	NewEmbedder func(spec string) (memory.Embedder, error)
	// Reembedded, if set, is called after a reembed job switched the store
	// to the embedder spec (memctl records it in the store).
	Reembedded func(spec string)
	// MaxImportBytes bounds an import upload (DefaultMaxImportBytes).
	MaxImportBytes int64
	// SampleEvery is how often the time series of GET /v1/admin/series takes
	// a point (DefaultSampleEvery); SamplesKept how many it keeps
	// (DefaultSamplesKept).
	SampleEvery time.Duration
	SamplesKept int
}

// Defaults for AdminOptions' zero values.
const (
	DefaultMaxImportBytes = 256 << 20
	DefaultSampleEvery    = 10 * time.Second
	DefaultSamplesKept    = 360
)

// Sentinels the admin routes answer with (statusOf maps them).
var (
	errNotFound  = errors.New("not found")
	errForbidden = ErrForbidden
)

func (h *Handler) adminRoutes() {
	a := h.opts.Admin
	if a.MaxImportBytes <= 0 {
		h.opts.Admin.MaxImportBytes = DefaultMaxImportBytes
	}
	// Every admin route is store-wide: the admin right (an admin key always
	// has scope "*"; the open loopback mode has every right).
	for _, r := range []struct {
		pattern string
		fn      func(http.ResponseWriter, *http.Request) error
	}{
		{"GET /v1/admin/stats", h.adminStats},
		{"POST /v1/admin/flush", h.adminFlush},
		{"POST /v1/admin/check", h.adminCheck},
		{"POST /v1/admin/compact", h.adminCompact},
		{"POST /v1/admin/cleanup", h.adminCleanup},
		{"GET /v1/admin/archive", h.adminArchive},
		{"POST /v1/admin/archive/restore", h.adminRestore},
		{"POST /v1/admin/backup", h.adminBackup},
		{"POST /v1/admin/reembed", h.adminReembed},
		{"GET /v1/admin/series", h.adminSeries},
		{"GET /v1/jobs", h.listJobs},
		{"GET /v1/jobs/{id}", h.getJob},
		{"POST /v1/jobs/{id}/cancel", h.cancelJob},
	} {
		h.route(r.pattern, accessAdmin, r.fn)
	}
	// A backup download is a POST: it starts a job (the copy is taken under the store's write
	// lock), and no GET may have such an effect (a page's <img> can send a GET).
	h.streamRoute("POST /v1/admin/backup.tar", 0, h.adminBackupTar)
	h.streamRoute("GET /v1/admin/export", 0, h.adminExport)
	h.streamRoute("POST /v1/admin/import", h.opts.Admin.MaxImportBytes, h.adminImport)
}

var dashboardFiles = dashboard.Handler()

// streamRoute registers an admin route like route, but without the request
// timeout (streams run as long as the data takes) and with maxBody as the
// body limit (0: the default limit).
func (h *Handler) streamRoute(pattern string, maxBody int64, fn func(http.ResponseWriter, *http.Request) error) {
	if maxBody <= 0 {
		maxBody = h.opts.MaxBodyBytes
	}
	h.routes = append(h.routes, routeInfo{Pattern: pattern, Access: accessAdmin})
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		// The server's read timeout is sized for ordinary requests; an upload
		// or a download of a large store may take longer.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(time.Hour))
		_ = rc.SetWriteDeadline(time.Time{})
		sw := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		status := http.StatusOK
		err := authorize(r, accessAdmin)
		if err == nil {
			err = fn(sw, r)
		}
		if err != nil {
			status = statusOf(err)
			if status >= 500 {
				h.opts.Logger.Error("request failed", "route", pattern, "err", err)
			}
			if !sw.wrote {
				writeError(sw, status, explain(err))
			}
		}
		if sw.wrote {
			status = sw.status
		}
		h.metrics.observe(pattern, CallerFrom(r.Context()).Name, status, time.Since(start))
	})
}

// decodeOptional is decode for bodies that may be empty (an empty body
// leaves v as it is).
func decodeOptional(r *http.Request, v any) error {
	br := bufio.NewReader(r.Body)
	for {
		b, err := br.Peek(1)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return err
			}
			return nil // empty (or all-space) body
		}
		if b[0] != ' ' && b[0] != '\n' && b[0] != '\r' && b[0] != '\t' {
			break
		}
		_, _ = br.ReadByte()
	}
	r.Body = io.NopCloser(br)
	return decode(r, v)
}

// AdminStats answers GET /v1/admin/stats: the store's Stats and where it lives.
type AdminStats struct {
	memory.Stats
	Dir string `json:"dir,omitempty"`
}

func (h *Handler) adminStats(w http.ResponseWriter, r *http.Request) error {
	st, err := h.store.Stats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, AdminStats{Stats: st, Dir: h.opts.Admin.StoreDir})
	return nil
}

func (h *Handler) adminFlush(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	if err := h.store.Flush(r.Context()); err != nil {
		return err
	}
	st, err := h.store.Stats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"flushed": true, "backend": st.Backend})
	return nil
}

// CheckResult is the result of a check job. OK is false when the store's
// files are damaged (Problem "corrupt") or the vector graph misses records
// (Problem "unreachable", with Unreachable); Error says what was found.
type CheckResult struct {
	OK          bool                     `json:"ok"`
	Problem     string                   `json:"problem,omitempty"`
	Error       string                   `json:"error,omitempty"`
	Unreachable *engine.UnreachableError `json:"unreachable,omitempty"`
	// Unknown lists files in the store directory engram did not write
	// (ignored, never removed).
	Unknown []string `json:"unknown,omitempty"`
}

func (h *Handler) adminCheck(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	return h.startJob(w, "check", func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit("records")
		var res CheckResult
		err := h.store.CheckProgress(ctx, p.Func())
		var unreachable *engine.UnreachableError
		switch {
		case errors.As(err, &unreachable):
			res.Problem, res.Error, res.Unreachable = "unreachable", err.Error(), unreachable
		case errors.Is(err, memory.ErrUnsupported):
			return nil, err
		case err != nil:
			res.Problem, res.Error = "corrupt", err.Error()
		default:
			res.OK = true
		}
		if dir := h.opts.Admin.StoreDir; dir != "" && res.OK {
			unknown, err := engine.UnknownFiles(dir)
			if err != nil {
				return nil, err
			}
			res.Unknown = unknown
		}
		if t := p.total.Load(); t > 0 {
			p.Set(t, t)
		} else {
			p.Set(1, 1) // nothing in segments yet: one step, done
		}
		return res, nil
	})
}

// CompactResult is the result of a compact job: storage figures before and after.
type CompactResult struct {
	Before memory.BackendStats `json:"before"`
	After  memory.BackendStats `json:"after"`
}

func (h *Handler) adminCompact(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	return h.startJob(w, "compact", func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit("records")
		before, err := h.store.Stats(ctx)
		if err != nil {
			return nil, err
		}
		if err := h.store.Flush(ctx); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := h.store.CompactProgress(ctx, p.Func()); err != nil {
			return nil, err
		}
		if t := p.total.Load(); t > 0 {
			p.Set(t, t)
		} else {
			p.Set(1, 1) // nothing to merge
		}
		after, err := h.store.Stats(ctx)
		if err != nil {
			return nil, err
		}
		return CompactResult{Before: before.Backend, After: after.Backend}, nil
	})
}

// MemoryJSON is a memory as every route writes it: the one JSON form of a memory
// (docs/format/export.md), which `memctl export` writes too.
type MemoryJSON = memory.MemoryJSON

// FromMemory converts m, with its vector when withVector is set.
func FromMemory(m memory.Memory, withVector bool) MemoryJSON { return memory.ToJSON(&m, withVector) }

func memoriesJSON(ms []memory.Memory) []MemoryJSON {
	out := make([]MemoryJSON, 0, len(ms))
	for _, m := range ms {
		out = append(out, FromMemory(m, false))
	}
	return out
}

// CleanupRequest is the body of POST /v1/admin/cleanup.
type CleanupRequest struct {
	DryRun          bool    `json:"dry_run,omitempty"`
	OlderThan       string  `json:"older_than,omitempty"` // e.g. 180d, 72h; default 180d
	IncludeRecalled bool    `json:"include_recalled,omitempty"`
	Session         *string `json:"session,omitempty"`
	// Filter further restricts the selection (docs/format/filter.md).
	Filter *memory.Filter `json:"filter,omitempty"`
}

// policy returns the cleanup policy req asks for.
func (req *CleanupRequest) policy() (memory.CleanupPolicy, error) {
	p := memory.CleanupPolicy{DryRun: req.DryRun, IncludeRecalled: req.IncludeRecalled, Filter: req.Filter}
	if req.OlderThan != "" {
		d, err := memory.ParseAge(req.OlderThan)
		if err != nil {
			return p, fmt.Errorf("%w: %v", errBadRequest, err)
		}
		p.OlderThan = d
	}
	if req.Session != nil {
		p.Filter = memory.AllOf(p.Filter, memory.Eq(memory.FieldSession, *req.Session))
	}
	return p, nil
}

// CleanupResult is the result of a cleanup (POST /v1/cleanup, the cleanup job): the IDs of the
// memories it moved (or, in a dry run, would move) and their count, and the memories themselves
// for a caller with the read right (absent for a key without it).
type CleanupResult struct {
	DryRun   bool         `json:"dry_run"`
	Batch    string       `json:"batch"`
	IDs      []string     `json:"ids"`
	Count    int          `json:"count"`
	Memories []MemoryJSON `json:"memories,omitzero"`
}

func (h *Handler) adminCleanup(w http.ResponseWriter, r *http.Request) error {
	var req CleanupRequest
	if err := decodeOptional(r, &req); err != nil {
		return err
	}
	p, err := req.policy()
	if err != nil {
		return err
	}
	return h.startJob(w, "cleanup", func(ctx context.Context, pr *progress) (any, error) {
		pr.SetUnit("memories")
		p.Progress = pr.Func()
		res, err := h.store.Cleanup(ctx, p)
		if err != nil {
			return nil, err
		}
		if pr.total.Load() == 0 {
			pr.Set(1, 1) // nothing selected (or a dry run)
		}
		return cleanupAnswer(LocalCaller, req.DryRun, res), nil // an admin job: the admin sees every session
	})
}

func (h *Handler) adminArchive(w http.ResponseWriter, r *http.Request) error {
	ms, err := h.store.Archived(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"memories": memoriesJSON(ms)})
	return nil
}

// RestoreRequest is the body of POST /v1/admin/archive/restore: the IDs to
// restore, or All.
type RestoreRequest struct {
	IDs []string `json:"ids,omitempty"`
	All bool     `json:"all,omitempty"`
}

// restoreStep is how many archived memories a restore job moves between
// progress reports and cancellation points.
const restoreStep = 256

func (h *Handler) adminRestore(w http.ResponseWriter, r *http.Request) error {
	var req RestoreRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.IDs) > 0 == req.All {
		return fmt.Errorf("%w: give ids, or all=true", errBadRequest)
	}
	for _, id := range req.IDs {
		if id == "" {
			return fmt.Errorf("%w: empty memory ID", errBadRequest)
		}
	}
	return h.startJob(w, "restore", func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit("memories")
		ids := req.IDs
		if req.All {
			ms, err := h.store.Archived(ctx)
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				ids = append(ids, m.ID)
			}
		}
		p.Set(0, int64(len(ids)))
		restored := 0
		for i := 0; i < len(ids); i += restoreStep {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("restored %d memories, then: %w", restored, err)
			}
			n, err := h.store.Restore(ctx, ids[i:min(i+restoreStep, len(ids))]...)
			restored += n
			if err != nil {
				return nil, fmt.Errorf("restored %d memories, then: %w", restored, err)
			}
			p.Set(int64(min(i+restoreStep, len(ids))), 0)
		}
		return map[string]int{"restored": restored}, nil
	})
}

// BackupRequest is the body of POST /v1/admin/backup: a new directory
// under the configured backup root.
type BackupRequest struct {
	Dir string `json:"dir"`
}

// backupTarget resolves name under root: relative names are taken from
// root; the result, with symbolic links resolved as far as it exists, must
// lie strictly inside root.
func backupTarget(root, name string) (string, error) {
	if root == "" {
		return "", fmt.Errorf("%w: server-side backups are off (start the server with --backup-root DIR); POST /v1/admin/backup.tar streams one instead", errForbidden)
	}
	if strings.TrimSpace(name) == "" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: backup needs a directory name", errBadRequest)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("backup root: %w", err)
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return "", err
	}
	target := name
	if !filepath.IsAbs(target) {
		target = filepath.Join(realRoot, target)
	}
	target = filepath.Clean(target)
	// Resolve the deepest existing ancestor: a link inside the root must not
	// lead out of it.
	existing, rest := target, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", err
	}
	resolved = filepath.Join(resolved, rest)
	rel, err := filepath.Rel(realRoot, resolved)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: backup directory %q is not inside the backup root %s", errForbidden, name, root)
	}
	return resolved, nil
}

func (h *Handler) adminBackup(w http.ResponseWriter, r *http.Request) error {
	var req BackupRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	dir, err := backupTarget(h.opts.Admin.BackupRoot, req.Dir)
	if err != nil {
		return err
	}
	return h.startJob(w, "backup", func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit("bytes")
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return nil, err
		}
		if err := h.store.BackupProgress(ctx, dir, p.Func()); err != nil {
			return nil, err
		}
		return map[string]string{"dir": dir}, nil
	})
}

// adminBackupTar streams a consistent backup as an uncompressed tar of the
// store directory (LOCK excluded): the backup is written to a temporary
// directory first (under the backup root when one is set), since the copy
// must be taken under the store's write lock and the client's pace must not
// hold it. It takes the job slot, so it shows in GET /v1/jobs. The body is
// empty or {}.
func (h *Handler) adminBackupTar(w http.ResponseWriter, r *http.Request) error {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	type tarDone struct{ files, bytes int64 }
	var sent tarDone
	j, err := h.jobs.start("backup-download", func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit("bytes")
		tmp, err := os.MkdirTemp(h.opts.Admin.BackupRoot, ".engram-backup-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir := filepath.Join(tmp, "store")
		if err := h.store.Backup(ctx, dir); err != nil {
			return nil, err
		}
		// The tar's size, which the progress counts: a 512-byte header per entry, each file
		// padded to 512 bytes, two zero blocks at the end.
		var total, stored int64
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == dir {
				return nil
			}
			total += 512
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					stored += info.Size()
					total += (info.Size() + 511) / 512 * 512
				}
			}
			return nil
		})
		total += 1024
		p.Set(0, total)
		w.Header().Set("Content-Type", "application/x-tar")
		w.Header().Set("Content-Disposition", `attachment; filename="engram-backup.tar"`)
		w.Header().Set("Engram-Backup-Bytes", strconv.FormatInt(stored, 10))
		w.WriteHeader(http.StatusOK)
		tw := tar.NewWriter(&countingWriter{w: w, p: p})
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil || rel == "." {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			switch {
			case d.IsDir():
				return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel) + "/", Mode: 0o700, ModTime: info.ModTime()})
			case d.Type().IsRegular():
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o600, Size: info.Size(), ModTime: info.ModTime()}); err != nil {
					return err
				}
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				defer f.Close()
				n, err := io.Copy(tw, f)
				sent.files++
				sent.bytes += n
				return err
			}
			return nil
		})
		if err == nil {
			err = tw.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("streaming the backup: %w", err)
		}
		return map[string]int64{"files": sent.files, "bytes": sent.bytes}, nil
	})
	if err != nil {
		return err
	}
	jb, _ := h.jobs.get(j.ID)
	// The job writes the response; if the client goes away, its writes fail
	// and it ends. Waiting here keeps the response open until then.
	select {
	case <-jb.ended:
	case <-r.Context().Done():
		jb.cancel()
		<-jb.ended
	}
	if v := jb.snapshot(); v.State != JobDone {
		return fmt.Errorf("backup: %s", v.Error)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	p *progress
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.Add(int64(n))
	return n, err
}

// adminExport streams every memory (or a session's, ?session=S) as JSON
// Lines, vectors with ?vectors=true, then the conversations and tasks as
// record lines (memory/exportfile.go). The counts and, when the scan fails part way,
// the error come as HTTP trailers (Engram-Export-Count, -Conversations,
// -Tasks, -Error), since the status is sent before the first line.
func (h *Handler) adminExport(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	vectors := false
	if v := q.Get("vectors"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: vectors=%q is not a boolean", errBadRequest, v)
		}
		vectors = b
	}
	var filter *memory.Filter
	if q.Has("session") {
		filter = memory.Eq(memory.FieldSession, q.Get("session"))
	}
	records := true // conversations and tasks go with a whole store's or session's export
	if q.Has("where") {
		f, err := memory.ParseFilter([]byte(q.Get("where")))
		if err != nil {
			return err
		}
		filter, records = memory.AllOf(filter, f), false
	}
	w.Header().Set("Trailer", "Engram-Export-Count, Engram-Export-Conversations, Engram-Export-Tasks, Engram-Export-Error")
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="engram-export.jsonl"`)
	bw := bufio.NewWriterSize(w, 64<<10)
	var only *string
	if q.Has("session") {
		v := q.Get("session")
		only = &v
	}
	var n, convs, tasks int
	var err error
	if records {
		n, convs, tasks, err = h.store.WriteExport(r.Context(), bw, filter, only, vectors)
	} else { // a filter selects memories only
		n, err = h.store.Export(r.Context(), bw, memory.ExportOptions{Filter: filter, Vectors: vectors})
	}
	if err == nil {
		err = bw.Flush()
	}
	w.Header().Set("Engram-Export-Count", strconv.Itoa(n))
	w.Header().Set("Engram-Export-Conversations", strconv.Itoa(convs))
	w.Header().Set("Engram-Export-Tasks", strconv.Itoa(tasks))
	if err != nil {
		w.Header().Set("Engram-Export-Error", strings.ReplaceAll(err.Error(), "\n", " "))
		if n == 0 {
			return err // nothing sent yet: an ordinary error answer
		}
		h.opts.Logger.Error("export failed part way", "lines", n, "err", err)
	}
	return nil
}

// importBatch is how many memories an import job writes at a time.
const importBatch = 256

// adminImport reads an export file (docs/format/export.md; the body is sent
// as application/json, a sequence of JSON objects) and imports it in a job. Every line is parsed and checked before the job starts, so a bad
// line fails the request and writes nothing.
func (h *Handler) adminImport(w http.ResponseWriter, r *http.Request) error {
	if err := h.jobs.conflict(); err != nil {
		return err // refuse before reading a large upload
	}
	ms, recs, err := memory.ReadExportFile(r.Body)
	if err != nil {
		return err
	}
	if len(ms) == 0 && len(recs) == 0 {
		return fmt.Errorf("%w: nothing to import (send export's JSON lines)", errBadRequest)
	}
	return h.startJob(w, "import", func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit("memories")
		p.Set(0, int64(len(ms)))
		for i := 0; i < len(ms); i += importBatch {
			end := min(i+importBatch, len(ms))
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("imported %d memories, then: %w", i, err)
			}
			if err := h.store.Import(ctx, ms[i:end]); err != nil {
				return nil, fmt.Errorf("importing memories %d-%d: %w (the ones before were written)", i+1, end, err)
			}
			p.Set(int64(end), 0)
		}
		if err := h.store.ImportRecords(ctx, recs); err != nil {
			return nil, fmt.Errorf("importing conversations and tasks: %w (the memories were written)", err)
		}
		return map[string]int{"imported": len(ms), "records": len(recs)}, nil
	})
}

// ReembedRequest is the body of POST /v1/admin/reembed.
type ReembedRequest struct {
	To string `json:"to"`
}

func (h *Handler) adminReembed(w http.ResponseWriter, r *http.Request) error {
	var req ReembedRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if h.opts.Admin.NewEmbedder == nil {
		return fmt.Errorf("%w: this server cannot build embedders (no AdminOptions.NewEmbedder)", errForbidden)
	}
	if req.To == "" {
		return fmt.Errorf("%w: reembed needs \"to\" (lexical, onnx:DIR or ollama:MODEL)", errBadRequest)
	}
	target, err := h.opts.Admin.NewEmbedder(req.To)
	if err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return h.startJob(w, "reembed", func(ctx context.Context, p *progress) (any, error) {
		p.SetUnit("memories")
		err := h.store.Reembed(ctx, target, func(done, total int) { p.Set(int64(done), int64(total)) })
		if err != nil {
			return nil, err
		}
		if f := h.opts.Admin.Reembedded; f != nil {
			f(req.To)
		}
		return map[string]string{"fingerprint": target.Fingerprint(), "to": req.To}, nil
	})
}
