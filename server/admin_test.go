package server

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// waitJob polls a job until it ends.
func (s *testServer) waitJob(id string) Job {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var j Job
		if code := s.do("GET", "/v1/jobs/"+id, nil, &j); code != 200 {
			s.t.Fatalf("GET job %s: %d", id, code)
		}
		if j.State != JobRunning {
			return j
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s still running: %+v", id, j)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runJob starts a job with POST path body and waits for its end.
func (s *testServer) runJob(path string, body any) Job {
	s.t.Helper()
	var j Job
	if code := s.do("POST", path, body, &j); code != http.StatusAccepted || j.ID == "" {
		s.t.Fatalf("POST %s: %d %+v", path, code, j)
	}
	return s.waitJob(j.ID)
}

func rememberN(t *testing.T, s *testServer, session string, n int, when time.Time) []string {
	t.Helper()
	var ids []string
	for i := range n {
		var rem RememberResponse
		req := RememberRequest{Session: session, Text: distinctText(session, i), Time: when}
		if code := s.do("POST", "/v1/remember", req, &rem); code != 200 {
			t.Fatalf("remember: %d", code)
		}
		ids = append(ids, rem.IDs...)
	}
	return ids
}

var testWords = strings.Fields("apple bridge candle dolphin engine forest guitar harbor island jungle kettle lantern meadow needle orchard pepper quartz river saddle tunnel umbrella violin walnut yogurt zebra anchor basket cactus desert ember falcon glacier hammer igloo jacket kayak lemon marble nectar oyster")

// distinctText returns a text no other (session, i) shares enough words
// with to be merged as a near-duplicate.
func distinctText(session string, i int) string {
	w := func(k int) string { return testWords[k%len(testWords)] }
	return fmt.Sprintf("%s %s %s %s %d %s", w(i*3), w(i*3+1), w(i*3+2), w(i*7+5), i, session)
}

func TestAdminStatsFlushCheckCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	emb, _ := lexical.New(lexical.Options{})
	st, err := memory.Open(dir, memory.OpenOptions{Options: memory.Options{Embedder: emb}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := newTestServer(t, Options{Store: st, Admin: AdminOptions{StoreDir: dir}})
	ids := rememberN(t, s, "alice", 20, time.Time{})

	var stats AdminStats
	if code := s.do("GET", "/v1/admin/stats", nil, &stats); code != 200 || stats.Memories != 20 || stats.Dir != dir {
		t.Fatalf("stats: %d %+v", code, stats)
	}
	var flushed struct {
		Flushed bool
		Backend memory.BackendStats
	}
	if code := s.do("POST", "/v1/admin/flush", "", &flushed); code != 200 || !flushed.Flushed || flushed.Backend.Segments < 1 {
		t.Fatalf("flush: %d %+v", code, flushed)
	}
	// A flush with a body that is not JSON is refused by the guard.
	if code := s.rawRequest("POST", "/v1/admin/flush", "x", map[string]string{"Content-Type": "text/plain"}); code != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain flush: %d", code)
	}

	// A second segment plus deletes, so compaction has work.
	rememberN(t, s, "bob", 10, time.Time{})
	s.do("POST", "/v1/admin/flush", "{}", nil)
	s.do("POST", "/v1/forget", ForgetRequest{IDs: ids[:10]}, nil)
	j := s.runJob("/v1/admin/compact", struct{}{})
	// Progress in records: every record of the merged segments, deleted ones included.
	if j.State != JobDone || j.Kind != "compact" || j.Unit != "records" || j.Done != j.Total || j.Total < 20 {
		t.Fatalf("compact job: %+v", j)
	}
	var cr CompactResult
	if err := json.Unmarshal(j.Result, &cr); err != nil || cr.Before.Segments < 2 || cr.After.Segments != 1 {
		t.Fatalf("compact result %s (%v)", j.Result, err)
	}

	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600)
	j = s.runJob("/v1/admin/check", "")
	var chk CheckResult
	if err := json.Unmarshal(j.Result, &chk); err != nil || j.State != JobDone || !chk.OK || len(chk.Unknown) != 1 || chk.Unknown[0] != "notes.txt" ||
		j.Unit != "records" || j.Done != j.Total || j.Total < 10 {
		t.Fatalf("check: %+v %s", j, j.Result)
	}

	var list struct{ Jobs []Job }
	if s.do("GET", "/v1/jobs", nil, &list); len(list.Jobs) != 2 || list.Jobs[0].Kind != "check" || list.Jobs[1].Kind != "compact" {
		t.Fatalf("jobs list (newest first) = %+v", list.Jobs)
	}
	if code := s.do("GET", "/v1/jobs/nope", nil, nil); code != 404 {
		t.Fatalf("unknown job: %d", code)
	}
}

// A second job is refused while one runs; a cancel stops the running one; a
// job runs on after its client has gone.
func TestJobsOneAtATimeCancelAndDisconnect(t *testing.T) {
	s := newTestServer(t, Options{})
	h := s.handler
	release := make(chan struct{})
	started, err := h.jobs.start("test", func(ctx context.Context, p *progress) (any, error) {
		p.Set(1, 3)
		select {
		case <-release:
			return map[string]int{"n": 1}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]string
	if code := s.do("POST", "/v1/admin/compact", "{}", &e); code != http.StatusConflict || !strings.Contains(e["error"], started.ID) {
		t.Fatalf("second job: %d %v", code, e)
	}
	if code := s.do("POST", "/v1/admin/import", `{"id":"a","text":"x","session":"s","importance":0.5,"created":"2024-01-01T00:00:00Z","updated":"2024-01-01T00:00:00Z"}`, nil); code != http.StatusConflict {
		t.Fatalf("import during a job: %d", code)
	}
	var j Job
	if s.do("GET", "/v1/jobs/"+started.ID, nil, &j); j.State != JobRunning || j.Done != 1 || j.Total != 3 {
		t.Fatalf("running job = %+v", j)
	}
	if code := s.do("POST", "/v1/jobs/"+started.ID+"/cancel", "", &j); code != http.StatusAccepted || !j.CancelRequested {
		t.Fatalf("cancel: %d %+v", code, j)
	}
	if j = s.waitJob(started.ID); j.State != JobCancelled {
		t.Fatalf("after cancel: %+v", j)
	}

	// Disconnect: reembed through HTTP with an embedder that blocks until
	// released; the client cancels its request right after the 202.
	gate := make(chan struct{})
	h.opts.Admin.NewEmbedder = func(spec string) (memory.Embedder, error) {
		if spec != "gated" {
			return nil, errors.New("unknown embedder")
		}
		e, _ := lexical.New(lexical.Options{Dim: 128})
		return gatedEmbedder{e, gate}, nil
	}
	rememberN(t, s, "carol", 5, time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/admin/reembed", strings.NewReader(`{"to":"gated"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&j)
	resp.Body.Close()
	cancel()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusAccepted || j.Kind != "reembed" {
		t.Fatalf("reembed: %d %+v", resp.StatusCode, j)
	}
	time.Sleep(50 * time.Millisecond)
	close(gate)
	if j = s.waitJob(j.ID); j.State != JobDone || j.Done != 5 || j.Total != 5 {
		t.Fatalf("reembed after the client left: %+v", j)
	}
	if s.store.Embedder().Dim() != 128 {
		t.Fatalf("store not switched: dim %d", s.store.Embedder().Dim())
	}
	if code := s.do("POST", "/v1/admin/reembed", ReembedRequest{To: "nope"}, &e); code != 400 {
		t.Fatalf("unknown embedder: %d %v", code, e)
	}
}

type gatedEmbedder struct {
	memory.Embedder
	gate chan struct{}
}

func (g gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Embedder.Embed(ctx, texts)
}

func TestJobsShutdownCancelsRunningJob(t *testing.T) {
	s := newTestServer(t, Options{})
	var wg sync.WaitGroup
	wg.Add(1)
	j, err := s.handler.jobs.start("test", func(ctx context.Context, _ *progress) (any, error) {
		defer wg.Done()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.handler.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if jb, _ := s.handler.jobs.get(j.ID); jb.snapshot().State != JobCancelled {
		t.Fatalf("after Close: %+v", jb.snapshot())
	}
	if _, err := s.handler.jobs.start("late", func(context.Context, *progress) (any, error) { return nil, nil }); err == nil {
		t.Fatal("a job started after Close")
	}
}

func TestBackupUnderRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(root, "escape"))
	s := newTestServer(t, Options{Admin: AdminOptions{BackupRoot: root}})
	rememberN(t, s, "alice", 7, time.Time{})

	for _, bad := range []string{"", "..", "../x", "/etc/engram", outside + "/b", "escape/b", "escape", "a/../../x", "."} {
		var e map[string]string
		code := s.do("POST", "/v1/admin/backup", BackupRequest{Dir: bad}, &e)
		if code != 400 && code != 403 {
			t.Errorf("backup to %q: %d %v, want 400 or 403", bad, code, e)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("a refused backup wrote outside the root: %v", entries)
	}
	j := s.runJob("/v1/admin/backup", BackupRequest{Dir: "nightly/1"})
	// Progress in bytes: at the end, the bytes written into the backup.
	if j.State != JobDone || j.Unit != "bytes" || j.Done != j.Total || j.Total < 1000 {
		t.Fatalf("backup: %+v", j)
	}
	// The same name again: the target holds a store now.
	if j = s.runJob("/v1/admin/backup", BackupRequest{Dir: "nightly/1"}); j.State != JobFailed {
		t.Fatalf("backup over a backup: %+v", j)
	}
	b, err := memory.Open(filepath.Join(root, "nightly", "1"), memory.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, _ := b.Count(context.Background(), nil); n != 7 {
		t.Fatalf("backup holds %d memories, want 7", n)
	}
	fi, _ := os.Stat(filepath.Join(root, "nightly"))
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("backup parent mode %v", fi.Mode().Perm())
	}

	// Without a root, server-side backups are off.
	s2 := newTestServer(t, Options{})
	if code := s2.do("POST", "/v1/admin/backup", BackupRequest{Dir: "x"}, nil); code != 403 {
		t.Fatalf("backup without a root: %d", code)
	}
}

func TestBackupDownload(t *testing.T) {
	s := newTestServer(t, Options{})
	rememberN(t, s, "alice", 9, time.Time{})
	resp, err := http.Post(s.url+"/v1/admin/backup.tar", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-tar" {
		t.Fatalf("download: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	dir := filepath.Join(t.TempDir(), "restored")
	os.Mkdir(dir, 0o700)
	tr := tar.NewReader(resp.Body)
	names := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[hdr.Name] = true
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o700)
			continue
		}
		data, _ := io.ReadAll(tr)
		os.WriteFile(p, data, 0o600)
	}
	if !names["CURRENT"] || !names["MANIFEST-000001"] || names["LOCK"] {
		t.Fatalf("tar members %v: want CURRENT and its manifest, no LOCK", names)
	}
	b, err := memory.Open(dir, memory.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, _ := b.Count(context.Background(), nil); n != 9 {
		t.Fatalf("downloaded backup holds %d memories, want 9", n)
	}
	var list struct{ Jobs []Job }
	if s.do("GET", "/v1/jobs", nil, &list); len(list.Jobs) != 1 || list.Jobs[0].Kind != "backup-download" || list.Jobs[0].State != JobDone ||
		list.Jobs[0].Done == 0 || list.Jobs[0].Done != list.Jobs[0].Total {
		t.Fatalf("jobs after download: %+v (done should reach the tar's size exactly)", list.Jobs)
	}
}

func TestExportImport(t *testing.T) {
	src := newTestServer(t, Options{})
	rememberN(t, src, "alice", 30, time.Time{})
	rememberN(t, src, "bob", 5, time.Time{})
	get := func(path string) (string, http.Header) {
		resp, err := http.Get(src.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return string(body), resp.Trailer
	}
	all, trailer := get("/v1/admin/export?vectors=true")
	if n := strings.Count(all, "\n"); n != 36 || trailer.Get("Engram-Export-Count") != "35" || trailer.Get("Engram-Export-Error") != "" {
		t.Fatalf("export: %d lines, trailer %v", n, trailer)
	}
	if !strings.Contains(all, `"vector":[`) {
		t.Fatal("export?vectors=true has no vectors")
	}
	bob, _ := get("/v1/admin/export?session=bob")
	if strings.Count(bob, "\n") != 6 || strings.Contains(bob, `"vector"`) || strings.Contains(bob, `"session":"alice"`) {
		t.Fatalf("session export:\n%s", bob)
	}
	if code := src.do("GET", "/v1/admin/export?vectors=maybe", nil, nil); code != 400 {
		t.Fatalf("bad vectors flag: %d", code)
	}

	dst := newTestServer(t, Options{})
	// A bad line anywhere fails the upload and writes nothing.
	for _, bad := range []string{"", all + "{not json}\n", all + `{"id":"","text":"x"}` + "\n", all + `{"id":"q","text":"x","extra":1}` + "\n"} {
		if code := dst.do("POST", "/v1/admin/import", bad, nil); code != 400 {
			t.Fatalf("bad import: %d", code)
		}
	}
	if dst.count() != 0 {
		t.Fatalf("a refused import wrote %d memories", dst.count())
	}
	j := dst.runJob("/v1/admin/import", all)
	if j.State != JobDone || j.Done != 35 || j.Total != 35 || string(j.Result) != `{"imported":35,"records":0}` {
		t.Fatalf("import: %+v %s", j, j.Result)
	}
	// Vectors are normalized again on import (last-digit changes), so
	// compare everything else.
	plain, _ := get("/v1/admin/export")
	again, _ := func() (string, http.Header) {
		resp, err := http.Get(dst.url + "/v1/admin/export")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.Trailer
	}()
	if a, b := sortedLines(again), sortedLines(plain); a != b {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("export of the imported store differs from the source's at %d:\n%s\n%s", i, a[max(0, i-100):min(len(a), i+200)], b[max(0, i-100):min(len(b), i+200)])
			}
		}
		t.Fatal("export of the imported store differs from the source's")
	}

	// An upload past the limit is refused with 413.
	small := newTestServer(t, Options{Admin: AdminOptions{MaxImportBytes: 1024}})
	if code := small.do("POST", "/v1/admin/import", all, nil); code != http.StatusRequestEntityTooLarge || small.count() != 0 {
		t.Fatalf("oversized import: %d, %d written", code, small.count())
	}
}

// sortedLines sorts an export's lines, its header (with the time it was
// written) left out.
func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")[1:]
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestCleanupArchiveRestore(t *testing.T) {
	st, err := memory.Open(filepath.Join(t.TempDir(), "store"), memory.OpenOptions{Options: memory.Options{DedupThreshold: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := newTestServer(t, Options{Store: st})
	old := time.Now().Add(-400 * 24 * time.Hour)
	stale := rememberN(t, s, "alice", 4, old)
	rememberN(t, s, "alice", 3, time.Time{})
	rememberN(t, s, "bob", 2, old)

	alice := "alice"
	j := s.runJob("/v1/admin/cleanup", CleanupRequest{DryRun: true, Session: &alice})
	var cr CleanupResult
	if err := json.Unmarshal(j.Result, &cr); err != nil || !cr.DryRun || len(cr.Memories) != 4 || cr.Batch != "" || s.count() != 9 {
		t.Fatalf("dry run: %+v %s, %d live", j, j.Result, s.count())
	}
	if code := s.do("POST", "/v1/admin/cleanup", CleanupRequest{OlderThan: "soon"}, nil); code != 400 {
		t.Fatalf("bad age: %d", code)
	}
	j = s.runJob("/v1/admin/cleanup", CleanupRequest{OlderThan: "365d"})
	if err := json.Unmarshal(j.Result, &cr); err != nil || cr.DryRun || len(cr.Memories) != 6 || cr.Batch == "" || s.count() != 3 ||
		j.Unit != "memories" || j.Done != 6 || j.Total != 6 {
		t.Fatalf("cleanup: %+v %s, %d live", j, j.Result, s.count())
	}
	var arch struct{ Memories []MemoryJSON }
	if code := s.do("GET", "/v1/admin/archive", nil, &arch); code != 200 || len(arch.Memories) != 6 {
		t.Fatalf("archive: %d %d", code, len(arch.Memories))
	}
	if code := s.do("POST", "/v1/admin/archive/restore", RestoreRequest{}, nil); code != 400 {
		t.Fatalf("restore without ids or all: %d", code)
	}
	j = s.runJob("/v1/admin/archive/restore", RestoreRequest{IDs: stale[:2]})
	if j.State != JobDone || string(j.Result) != `{"restored":2}` || s.count() != 5 {
		t.Fatalf("restore two: %+v %s, %d live", j, j.Result, s.count())
	}
	j = s.runJob("/v1/admin/archive/restore", RestoreRequest{All: true})
	if j.State != JobDone || string(j.Result) != `{"restored":4}` || j.Done != 4 || s.count() != 9 {
		t.Fatalf("restore all: %+v %s, %d live", j, j.Result, s.count())
	}
}

func TestSeries(t *testing.T) {
	s := newTestServer(t, Options{Admin: AdminOptions{SampleEvery: 20 * time.Millisecond, SamplesKept: 100000}})
	rememberN(t, s, "alice", 3, time.Time{})
	for range 4 {
		s.do("POST", "/v1/recall", RecallRequest{Query: "fact", Session: "alice"}, nil)
	}
	var d struct {
		Interval float64 `json:"interval_seconds"`
		Points   []SeriesPoint
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.do("GET", "/v1/admin/series", nil, &d)
		recalls := 0
		for _, p := range d.Points {
			recalls += p.Recalls
		}
		last := SeriesPoint{}
		if len(d.Points) > 0 {
			last = d.Points[len(d.Points)-1]
		}
		if recalls == 4 && last.Memories == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series never showed 4 recalls and 3 memories: %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range d.Points {
		if p.Recalls > 0 && (p.P50Ms <= 0 || p.P95Ms < p.P50Ms || p.MaxMs < p.P95Ms) {
			t.Fatalf("bad latency figures %+v", p)
		}
	}
	if d.Interval != 0.02 {
		t.Fatalf("interval %v", d.Interval)
	}

	// The series keeps its last SamplesKept points, oldest first.
	few := newSeries(s.store, time.Hour, 3)
	for range 5 {
		few.sample(context.Background())
	}
	pts := few.snapshot()
	if len(pts) != 3 || !pts[0].T.Before(pts[2].T) && !pts[0].T.Equal(pts[2].T) {
		t.Fatalf("kept %d points (%+v), want the last 3", len(pts), pts)
	}
}

func TestDecodeOptional(t *testing.T) {
	for body, wantErr := range map[string]bool{"": false, "  \n": false, "{}": false, ` {"dry_run":true}`: false, "[]": true, "{} {}": true, `{"x":1}`: true} {
		r, _ := http.NewRequest("POST", "/", bytes.NewReader([]byte(body)))
		var v CleanupRequest
		if err := decodeOptional(r, &v); (err != nil) != wantErr {
			t.Errorf("decodeOptional(%q) = %v", body, err)
		}
	}
}

// The dashboard's files need no token (a browser cannot send one when it
// navigates), the API still does, and the guard still applies to both.
func TestDashboardBehindGuardAndToken(t *testing.T) {
	s := newTestServer(t, Options{Token: "sekrit"})
	for path, want := range map[string]int{"/": 200, "/ui/app.js": 200, "/v1/stats": 401, "/v1/admin/stats": 401, "/v1/jobs": 401, "/metrics": 401} {
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without token: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if code := s.rawRequest("GET", "/", "", map[string]string{"Host": "evil.example"}); code != http.StatusMisdirectedRequest {
		t.Errorf("dashboard with a foreign Host: %d", code)
	}
	if code := s.rawRequest("GET", "/v1/admin/series", "", map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("series from a foreign Origin: %d", code)
	}
	if code := s.rawRequest("POST", "/", "{}", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer wrong"}); code != 401 {
		t.Errorf("POST / without token: %d, want 401", code)
	}
}
