package dashboard

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestServesFilesWithCSP(t *testing.T) {
	h := Handler()
	for path, want := range map[string]string{"/": "text/html", "/ui/app.js": "javascript", "/ui/style.css": "text/css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Header().Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
	for _, path := range []string{"/ui/", "/ui/missing.js", "/index.html"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code == 200 {
			t.Errorf("GET %s: 200, want an error", path)
		}
	}
}

func TestIsAsset(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/", true}, {"HEAD", "/", true}, {"GET", "/ui/app.js", true},
		{"POST", "/", false}, {"GET", "/v1/stats", false}, {"GET", "/uix", false}, {"GET", "/metrics", false},
	} {
		r, _ := http.NewRequest(tc.method, "http://127.0.0.1"+tc.path, nil)
		if got := IsAsset(r); got != tc.want {
			t.Errorf("IsAsset(%s %s) = %v", tc.method, tc.path, got)
		}
	}
}

// The page must never turn stored text into markup: no innerHTML and
// friends, no eval, no inline handlers or scripts in the HTML.
func TestNoMarkupSinks(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*['"]on`)
	err := fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, _ := static.Open(path)
		b, _ := io.ReadAll(f)
		f.Close()
		if m := sinks.Find(b); m != nil {
			t.Errorf("%s uses %q", path, m)
		}
		if strings.HasSuffix(path, ".html") && regexp.MustCompile(`(?i)<script>|\son[a-z]+=`).Match(b) {
			t.Errorf("%s has an inline script or handler (the CSP forbids them)", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
