package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// chatServer answers every /api/chat with answer, after checking the request
// with check (which may be nil).
func chatServer(t *testing.T, answer string, check func(msgs []Message, opts map[string]any) error) *Client {
	return newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []Message      `json:"messages"`
			Options  map[string]any `json:"options"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad json"}`, 400)
			return
		}
		if check != nil {
			if err := check(req.Messages, req.Options); err != nil {
				http.Error(w, fmt.Sprintf(`{"error":%q}`, err.Error()), 400)
				return
			}
		}
		fmt.Fprintf(w, `{"message":{"role":"assistant","content":%q},"done":false}`+"\n", answer)
		fmt.Fprint(w, `{"done":true}`+"\n")
	})
}

func TestSummarizer(t *testing.T) {
	c := chatServer(t, "  Alice likes tea; she moves to Berlin in May.  ", func(msgs []Message, opts map[string]any) error {
		if len(msgs) != 2 || !strings.Contains(msgs[1].Content, "Summary so far:\nAlice likes tea.") ||
			!strings.Contains(msgs[1].Content, "user: I move to Berlin in May") {
			return fmt.Errorf("unexpected prompt %q", msgs)
		}
		if opts["temperature"] != float64(0) {
			return fmt.Errorf("summaries must be deterministic, options %v", opts)
		}
		return nil
	})
	var s memory.Summarizer = &Summarizer{Client: c}
	got, err := s.Summarize(context.Background(), "Alice likes tea.", []memory.Turn{
		{Role: "user", Text: "I move to Berlin in May", Time: time.Unix(0, 0)},
		{Role: "assistant", Text: "Noted!"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != "Alice likes tea; she moves to Berlin in May." {
		t.Fatalf("summary = %q", got)
	}
	if _, err := (&Summarizer{}).Summarize(context.Background(), "", nil); err == nil {
		t.Fatal("summarizer without client accepted")
	}
}

func TestExtractor(t *testing.T) {
	c := chatServer(t, "Here you go:\n```json\n[\"用户喜欢喝茶\", \" \", \"The user lives in Berlin\"]\n```", nil)
	facts, err := (&Extractor{Client: c}).Extract(context.Background(), "我喜欢喝茶, I live in Berlin", "好的")
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 2 || facts[0] != "用户喜欢喝茶" || facts[1] != "The user lives in Berlin" {
		t.Fatalf("facts = %q", facts)
	}
}

func TestParseFactsRejectsNonArrays(t *testing.T) {
	for _, in := range []string{"", "nothing", "{\"a\":1}", "[1, 2]", "] [", "[\"unterminated"} {
		if _, err := parseFacts(in); err == nil {
			t.Errorf("parseFacts(%q) accepted", in)
		}
	}
	if facts, err := parseFacts("[]"); err != nil || len(facts) != 0 {
		t.Fatalf("empty array: %v %v", facts, err)
	}
}
