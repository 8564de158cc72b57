package onnx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hub is an in-process stand-in for the Hugging Face hub: /REPO/resolve/REV/NAME
// with Range support (http.ServeContent) and the sha256 as X-Linked-Etag.
type hub struct {
	files      map[string][]byte
	noRange    bool // ignore Range headers, like some proxies
	noDigest   bool
	redirect   bool // answer with a redirect carrying the digest, like the hub for LFS files
	mu         sync.Mutex
	ranges     []string
	failAfter  int // if > 0, cut the body after this many bytes (once)
	failedOnce bool
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/org/model/resolve/main/")
	data, found := h.files[name]
	if cdn, isCDN := strings.CutPrefix(r.URL.Path, "/cdn/"); isCDN {
		name, ok = cdn, true
		data, found = h.files[name]
	} else if found && h.redirect {
		sum := sha256.Sum256(data)
		w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
		http.Redirect(w, r, "/cdn/"+name, http.StatusFound)
		return
	}
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	cut := h.failAfter > 0 && !h.failedOnce
	h.failedOnce = h.failedOnce || cut
	h.mu.Unlock()
	if !h.noDigest && !h.redirect {
		sum := sha256.Sum256(data)
		w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
	}
	if h.noRange {
		r.Header.Del("Range")
	}
	if cut {
		// Promise the whole file, send part of it, and drop the connection.
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:h.failAfter])
		panic(http.ErrAbortHandler)
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

func newHub(t *testing.T) (*hub, *httptest.Server) {
	rng := rand.New(rand.NewSource(1))
	big := make([]byte, 300_000)
	rng.Read(big)
	h := &hub{files: map[string][]byte{
		"onnx/model.onnx":      big,
		"onnx/tokenizer.json":  []byte(`{"model":{"type":"Unigram"}}`),
		"onnx/model.onnx_data": big[:1000],
	}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func pullOpts(srv *httptest.Server, dir string, names ...string) PullOptions {
	o := PullOptions{BaseURL: srv.URL, Repo: "org/model", Dir: dir}
	for _, n := range names {
		o.Files = append(o.Files, HubFile{Name: n})
	}
	return o
}

func TestPullFreshAndAgain(t *testing.T) {
	h, srv := newHub(t)
	dir := filepath.Join(t.TempDir(), "models", "m")
	opts := pullOpts(srv, dir, "onnx/model.onnx", "onnx/tokenizer.json")
	var calls int
	var last PullProgress
	opts.Progress = func(p PullProgress) { calls++; last = p }
	got, err := Pull(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Verified || got[0].Size != 300_000 {
		t.Fatalf("pulled %+v", got)
	}
	if calls < 2 || last.File != "onnx/tokenizer.json" || last.Done != last.Total {
		t.Errorf("progress: %d calls, last %+v", calls, last)
	}
	for _, name := range []string{"onnx/model.onnx", "onnx/tokenizer.json"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, h.files[name]) {
			t.Fatalf("%s: content differs (%v)", name, err)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", name, st.Mode().Perm())
		}
		if _, err := os.Stat(p + ".part"); !os.IsNotExist(err) {
			t.Errorf("%s.part left behind", name)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "onnx")); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", st.Mode().Perm())
	}
	// Again, with the digests known: nothing is fetched.
	n := len(h.ranges)
	for i := range opts.Files {
		opts.Files[i].SHA256 = got[i].SHA256
	}
	if _, err := Pull(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if len(h.ranges) != n {
		t.Errorf("second pull made %d requests, want 0", len(h.ranges)-n)
	}
}

func TestPullResume(t *testing.T) {
	for _, noRange := range []bool{false, true} {
		t.Run(fmt.Sprintf("noRange=%v", noRange), func(t *testing.T) {
			h, srv := newHub(t)
			h.noRange = noRange
			dir := t.TempDir()
			data := h.files["onnx/model.onnx"]
			p := filepath.Join(dir, "onnx", "model.onnx")
			os.MkdirAll(filepath.Dir(p), 0o700)
			os.WriteFile(p+".part", data[:123_456], 0o600)
			got, err := Pull(context.Background(), pullOpts(srv, dir, "onnx/model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			if h.ranges[0] != "bytes=123456-" {
				t.Errorf("request Range %q, want bytes=123456-", h.ranges[0])
			}
			if got[0].Resumed == noRange || !got[0].Verified {
				t.Errorf("resumed %v verified %v", got[0].Resumed, got[0].Verified)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, data) {
				t.Error("resumed file differs")
			}
		})
	}
}

func TestPullRedirectDigest(t *testing.T) {
	h, srv := newHub(t)
	h.redirect = true
	dir := t.TempDir()
	p := filepath.Join(dir, "onnx", "model.onnx")
	os.MkdirAll(filepath.Dir(p), 0o700)
	os.WriteFile(p+".part", h.files["onnx/model.onnx"][:5000], 0o600)
	got, err := Pull(context.Background(), pullOpts(srv, dir, "onnx/model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Verified || !got[0].Resumed {
		t.Errorf("through a redirect: %+v", got[0])
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, h.files["onnx/model.onnx"]) {
		t.Error("content differs")
	}
	// A wrong partial file is caught by the digest taken from the redirect.
	os.Remove(p)
	os.WriteFile(p+".part", bytes.Repeat([]byte{1}, 5000), 0o600)
	if _, err := Pull(context.Background(), pullOpts(srv, dir, "onnx/model.onnx")); !errors.Is(err, ErrChecksum) {
		t.Errorf("bad part through a redirect: got %v, want ErrChecksum", err)
	}
}

func TestPullInterruptedThenResumed(t *testing.T) {
	h, srv := newHub(t)
	h.failAfter = 100_000
	dir := t.TempDir()
	opts := pullOpts(srv, dir, "onnx/model.onnx")
	if _, err := Pull(context.Background(), opts); err == nil {
		t.Fatal("cut connection: no error")
	}
	part := filepath.Join(dir, "onnx", "model.onnx.part")
	st, err := os.Stat(part)
	if err != nil {
		t.Fatalf("partial file not kept: %v", err)
	}
	got, err := Pull(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// How much arrived before the reset depends on timing; whatever did is reused.
	if got[0].Resumed != (st.Size() > 0) || !got[0].Verified {
		t.Errorf("second pull after %d bytes: %+v", st.Size(), got[0])
	}
}

func TestPullChecksum(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "onnx", "model.onnx")
	os.MkdirAll(filepath.Dir(p), 0o700)
	// A partial file with wrong bytes: the digest catches it and the part goes.
	bad := bytes.Repeat([]byte{7}, 5000)
	os.WriteFile(p+".part", bad, 0o600)
	_, err := Pull(context.Background(), pullOpts(srv, dir, "onnx/model.onnx"))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want ErrChecksum", err)
	}
	if _, err := os.Stat(p + ".part"); !os.IsNotExist(err) {
		t.Error("bad partial file kept")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("bad file put in place")
	}
	if _, err := Pull(context.Background(), pullOpts(srv, dir, "onnx/model.onnx")); err != nil {
		t.Fatalf("clean retry: %v", err)
	}
	// A given digest wins over the server's.
	opts := pullOpts(srv, t.TempDir(), "onnx/tokenizer.json")
	opts.Files[0].SHA256 = strings.Repeat("ab", 32)
	if _, err := Pull(context.Background(), opts); !errors.Is(err, ErrChecksum) {
		t.Errorf("given digest: got %v, want ErrChecksum", err)
	}
	// No digest anywhere: downloaded, reported unverified.
	h.noDigest = true
	got, err := Pull(context.Background(), pullOpts(srv, t.TempDir(), "onnx/model.onnx_data"))
	if err != nil || got[0].Verified {
		t.Errorf("no digest: %+v, %v", got, err)
	}
}

func TestPullBadInput(t *testing.T) {
	_, srv := newHub(t)
	dir := t.TempDir()
	cases := map[string]PullOptions{
		"no repo":        {BaseURL: srv.URL, Dir: dir, Files: []HubFile{{Name: "a"}}},
		"no dir":         {BaseURL: srv.URL, Repo: "org/model", Files: []HubFile{{Name: "a"}}},
		"bad base":       {BaseURL: "ftp://x", Repo: "org/model", Dir: dir, Files: []HubFile{{Name: "a"}}},
		"traversal":      {BaseURL: srv.URL, Repo: "org/model", Dir: dir, Files: []HubFile{{Name: "../escape"}}},
		"absolute":       {BaseURL: srv.URL, Repo: "org/model", Dir: dir, Files: []HubFile{{Name: "/etc/passwd"}}},
		"unclean":        {BaseURL: srv.URL, Repo: "org/model", Dir: dir, Files: []HubFile{{Name: "onnx/../../x"}}},
		"bad digest":     {BaseURL: srv.URL, Repo: "org/model", Dir: dir, Files: []HubFile{{Name: "a", SHA256: "xyz"}}},
		"not found":      pullOpts(srv, dir, "onnx/missing.onnx"),
		"repo traversal": {BaseURL: srv.URL, Repo: "../x", Dir: dir, Files: []HubFile{{Name: "a"}}},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Pull(context.Background(), opts); err == nil {
				t.Fatal("no error")
			} else {
				t.Log(err)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 1 { // "not found" may leave onnx/
		t.Errorf("bad input wrote %d entries", len(entries))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Pull(ctx, pullOpts(srv, t.TempDir(), "onnx/model.onnx")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes 5-9/*", "bytes -1-2/3", "bytes 9-1/4", "", "bytes 1/2", "items 0-1/2",
		"bytes 99999999999999999999-1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, size, ok := parseContentRange(s)
		if ok && (start < 0 || (size != -1 && size < start)) {
			t.Fatalf("%q: start %d size %d accepted", s, start, size)
		}
		h := http.Header{}
		h.Set("Etag", s)
		if d := hubDigest(h); d != "" && !sha256Hex.MatchString(d) {
			t.Fatalf("%q: digest %q", s, d)
		}
	})
}
