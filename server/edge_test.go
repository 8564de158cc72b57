package server

import (
	"bytes"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEdgeTexts reproduces "500 zero query vector in a cosine collection"
// for texts without words: each is stored and recalled by itself.
func TestEdgeTexts(t *testing.T) {
	s := newTestServer(t, Options{MaxBodyBytes: 1 << 20})
	for _, text := range []string{"🎉", "+", "...", "the of and", strings.Repeat("x", 200<<10), strings.Repeat("ab", 100<<10)} {
		var rem RememberResponse
		if code := s.do("POST", "/v1/remember", RememberRequest{Session: "edge", Text: text}, &rem); code != 200 || len(rem.IDs) == 0 {
			t.Fatalf("remember %.12q: %d %+v", text, code, rem)
		}
		var rec RecallResponse
		if code := s.do("POST", "/v1/recall", RecallRequest{Session: "edge", Query: text, K: 20}, &rec); code != 200 {
			t.Fatalf("recall %.12q: %d", text, code)
		}
		found := false
		for _, r := range rec.Results {
			found = found || r.ID == rem.IDs[0]
		}
		if !found {
			t.Errorf("recall %.12q does not find the memory %s: %d results", text, rem.IDs[0], len(rec.Results))
		}
	}
}

// TestNumbersOutOfRange: values that are valid JSON numbers but no sane
// request are refused with 400 and write nothing.
func TestNumbersOutOfRange(t *testing.T) {
	s := newTestServer(t, Options{})
	s.do("POST", "/v1/remember", RememberRequest{Session: "e", Text: "green tea"}, nil)
	for _, tc := range []struct{ path, body string }{
		{"/v1/recall", `{"session":"e","query":"tea","fusion":"weighted","vector_weight":1e308,"keyword_weight":1e308}`},
		{"/v1/recall", `{"session":"e","query":"tea","vector_weight":-1}`},
		{"/v1/recall", `{"session":"e","query":"tea","keyword_weight":1001}`},
		{"/v1/recall", `{"session":"e","query":"tea","k":-1}`},
		{"/v1/recall", `{"session":"e","query":"tea","k":1000000000}`},
		{"/v1/recall", `{"session":"e","query":"tea","k":1e400}`},
		{"/v1/recall", `{"session":"e","query":"tea","min_score":1e308}`},
		{"/v1/recall", `{"session":"e","query":"tea","min_score":-0.5}`},
		{"/v1/recall", `{"session":"e","query":"tea","prompt_tokens":-5}`},
		{"/v1/recall", `{"session":"e","query":"tea","prompt_tokens":2000000000}`},
		{"/v1/recall", `{"session":"e","query":"tea","source_weights":{"chat":1e308}}`},
		{"/v1/remember", `{"session":"e","text":"y","importance":1e308}`},
		{"/v1/remember", `{"session":"e","text":"y","importance":-1}`},
		{"/v1/remember", `{"session":"e","text":"y","time":"9999-12-31T23:59:59Z"}`},
		{"/v1/remember", `{"session":"e","text":"y","time":"0001-01-01T00:00:01Z"}`},
	} {
		var out map[string]string
		if code := s.do("POST", tc.path, tc.body, &out); code != 400 || out["error"] == "" {
			t.Errorf("%s %s: %d %v, want 400", tc.path, tc.body, code, out)
		}
	}
	if n := s.count(); n != 1 {
		t.Fatalf("%d memories after refused requests, want 1", n)
	}
}

// TestEncodeFailureIs500: a response that cannot be encoded is a logged 500
// with a JSON error, never a 200 with an empty body.
func TestEncodeFailureIs500(t *testing.T) {
	var logs bytes.Buffer
	h, err := New(Options{Store: newStore(t), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h.route("GET /test/inf", accessDoc, func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, map[string]float64{"score": math.Inf(1)})
		return nil
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/test/inf")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "could not be encoded") || !strings.Contains(logs.String(), "/test/inf") {
		t.Fatalf("not logged: %q", logs.String())
	}
}
