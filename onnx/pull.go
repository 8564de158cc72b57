package onnx

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// DefaultHubURL is the Hugging Face hub. Nothing is downloaded unless a
// caller calls Pull.
const DefaultHubURL = "https://huggingface.co"

// HubFile is one file of a hub repository.
type HubFile struct {
	// Name is the path inside the repository ("onnx/model.onnx"); the file
	// is stored under the same relative path in the destination directory.
	Name string
	// SHA256 is the expected hex digest. When empty, the hub's X-Linked-Etag
	// (on the redirect to its CDN, or on the response) or ETag header is used
	// if it is a sha256 (as it is for LFS files);
	// otherwise the file is downloaded unverified (PulledFile.Verified false).
	SHA256 string
}

// BGEM3 lists the ONNX export of BAAI/bge-m3 on the hub: the graph, its
// external weights (model.onnx_data and one constant stored apart) and the
// tokenizer.
var BGEM3 = PullOptions{
	Repo: "BAAI/bge-m3",
	Files: []HubFile{
		{Name: "onnx/model.onnx"},
		{Name: "onnx/model.onnx_data"},
		{Name: "onnx/Constant_7_attr__value"},
		{Name: "onnx/tokenizer.json"},
	},
}

// BGEM3Int8 lists a published int8 export of BGE-M3 (the fp32 graph with its MatMul
// weights dynamically quantized by ONNX Runtime's quantize_dynamic, one 570 MB file) and
// the tokenizer. It is a model of its own: its file hash gives it another fingerprint, so a
// store built with the fp32 model refuses it (memctl reembed moves a store over).
var BGEM3Int8 = PullOptions{
	Repo: "Xenova/bge-m3",
	Files: []HubFile{
		{Name: "onnx/model_quantized.onnx"},
		{Name: "tokenizer.json"},
	},
}

// PullOptions says what Pull downloads and where.
type PullOptions struct {
	BaseURL  string // default DefaultHubURL
	Repo     string // "owner/name"
	Revision string // branch, tag or commit; default "main"
	Files    []HubFile
	Dir      string       // destination; created 0700, files 0600
	Client   *http.Client // default http.DefaultClient
	// Progress, if set, is called as bytes arrive (from the goroutine that
	// called Pull). Done counts bytes already on disk from an earlier,
	// interrupted Pull; Total is -1 when the server does not say.
	Progress func(PullProgress)
}

// PullProgress reports one file's download.
type PullProgress struct {
	File        string
	Done, Total int64
}

// PulledFile describes a file Pull put in place.
type PulledFile struct {
	Name, Path, SHA256 string
	Size               int64
	Verified           bool // SHA256 matched an expected digest
	Resumed            bool // the download continued a partial one
}

// ErrChecksum is returned (wrapped) when a downloaded file's sha256 is not
// the expected one; the partial file is removed so the next Pull starts over.
var ErrChecksum = errors.New("onnx: sha256 mismatch")

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Pull downloads opts.Files from the hub into opts.Dir. A file is first
// written as NAME.part; an interrupted download is resumed from there with an
// HTTP Range request by the next Pull, and renamed into place only once its
// size and sha256 are checked. Files already in place are kept when their
// digest matches the expected one (or when none is known).
func Pull(ctx context.Context, opts PullOptions) ([]PulledFile, error) {
	if opts.Repo == "" || strings.Contains(opts.Repo, "..") {
		return nil, fmt.Errorf("onnx: pull: bad repository %q", opts.Repo)
	}
	if opts.Dir == "" {
		return nil, errors.New("onnx: pull: no destination directory")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultHubURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("onnx: pull: bad base URL %q", base)
	}
	rev := opts.Revision
	if rev == "" {
		rev = "main"
	}
	for _, f := range opts.Files {
		if !validName(f.Name) {
			return nil, fmt.Errorf("onnx: pull: bad file name %q", f.Name)
		}
		if f.SHA256 != "" && !sha256Hex.MatchString(f.SHA256) {
			return nil, fmt.Errorf("onnx: pull: %s: bad sha256 %q", f.Name, f.SHA256)
		}
	}
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	var out []PulledFile
	for _, f := range opts.Files {
		u := strings.TrimRight(base, "/") + "/" + opts.Repo + "/resolve/" + url.PathEscape(rev) + "/" + f.Name
		p, err := pullFile(ctx, client, u, f, filepath.Join(opts.Dir, filepath.FromSlash(f.Name)), opts.Progress)
		if err != nil {
			return out, fmt.Errorf("onnx: pull %s: %w", f.Name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// validName accepts clean relative slash paths that stay inside the directory.
func validName(n string) bool {
	return n != "" && !strings.HasPrefix(n, "/") && path.Clean(n) == n && n != "." &&
		!strings.HasPrefix(n, "../") && n != ".." && !strings.Contains(n, "\\")
}

func pullFile(ctx context.Context, client *http.Client, u string, f HubFile, dst string,
	progress func(PullProgress)) (PulledFile, error) {
	res := PulledFile{Name: f.Name, Path: dst}
	if _, err := os.Stat(dst); err == nil {
		sum, size, err := hashPath(dst)
		if err != nil {
			return res, err
		}
		if f.SHA256 == "" || sum == f.SHA256 {
			res.SHA256, res.Size, res.Verified = sum, size, f.SHA256 != ""
			return res, nil
		}
		// In place but not what is expected: download it again.
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return res, err
	}
	part := dst + ".part"
	pf, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return res, err
	}
	defer pf.Close()
	h := sha256.New()
	have, err := io.Copy(h, pf) // hash what an earlier Pull left
	if err != nil {
		return res, err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return res, err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	// The hub answers an LFS file with a redirect to a CDN and puts the
	// sha256 on the redirect (X-Linked-Etag): keep it from there.
	var linked string
	c := *client
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if d := hubDigest(r.Response.Header); d != "" && linked == "" {
			linked = d
		}
		if client.CheckRedirect != nil {
			return client.CheckRedirect(r, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := c.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	total := int64(-1)
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return res, fmt.Errorf("GET %s: unexpected Content-Range %q for a resume at %d", u, resp.Header.Get("Content-Range"), have)
		}
		total = size
		res.Resumed = true
	case resp.StatusCode == http.StatusOK:
		// A fresh download, or a server that ignores Range: start over.
		if err := restart(pf, &have, h); err != nil {
			return res, err
		}
		total = resp.ContentLength
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		// The part is as long as the file or longer; throw it away and let
		// the next Pull start clean rather than trust it.
		pf.Close()
		os.Remove(part)
		return res, fmt.Errorf("GET %s: partial file rejected by the server (%s); removed, pull again", u, resp.Status)
	default:
		return res, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	want := cmp.Or(f.SHA256, linked, hubDigest(resp.Header))

	w := &progressWriter{w: pf, file: f.Name, done: have, total: total, fn: progress}
	if progress != nil {
		progress(PullProgress{File: f.Name, Done: have, Total: total})
	}
	if _, err := io.Copy(io.MultiWriter(w, h), resp.Body); err != nil {
		return res, fmt.Errorf("GET %s: %w (the partial file is kept; pull again to resume)", u, err)
	}
	if total >= 0 && w.done != total {
		return res, fmt.Errorf("GET %s: got %d bytes of %d (pull again to resume)", u, w.done, total)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if want != "" && sum != want {
		pf.Close()
		os.Remove(part)
		return res, fmt.Errorf("%w: got %s, want %s (download removed)", ErrChecksum, sum, want)
	}
	if err := pf.Sync(); err != nil {
		return res, err
	}
	if err := pf.Close(); err != nil {
		return res, err
	}
	if err := os.Rename(part, dst); err != nil {
		return res, err
	}
	syncDir(filepath.Dir(dst))
	res.SHA256, res.Size, res.Verified = sum, w.done, want != ""
	return res, nil
}

func restart(f *os.File, have *int64, h hash.Hash) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	*have = 0
	h.Reset()
	return nil
}

// hubDigest returns the sha256 the hub gives for an LFS file, if any.
func hubDigest(hd http.Header) string {
	for _, k := range []string{"X-Linked-Etag", "Etag"} {
		v := strings.ToLower(strings.Trim(strings.TrimPrefix(hd.Get(k), "W/"), `"`))
		if sha256Hex.MatchString(v) {
			return v
		}
	}
	return ""
}

// parseContentRange reads "bytes START-END/SIZE"; size is -1 for "*".
func parseContentRange(s string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	if sz == "*" {
		return start, -1, true
	}
	size, err = strconv.ParseInt(sz, 10, 64)
	if err != nil || size < start {
		return 0, 0, false
	}
	return start, size, true
}

func hashPath(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

type progressWriter struct {
	w           io.Writer
	file        string
	done, total int64
	fn          func(PullProgress)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.fn != nil && n > 0 {
		p.fn(PullProgress{File: p.file, Done: p.done, Total: p.total})
	}
	return n, err
}
