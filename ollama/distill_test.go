package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// scriptedReply is what the scripted server answers to one /api/chat request.
type scriptedReply struct {
	status  int           // an error status with Ollama's {"error": ...} body; 0 streams
	message string        // the error message of an error status or of a mid-stream error line
	content string        // the answer, streamed in small pieces as Ollama streams tokens
	midErr  bool          // an {"error": ...} line after the first piece
	noDone  bool          // the stream ends without its done line
	delay   time.Duration // wait before answering (or until the client gives up)
}

// seenChat is a request as the scripted server decoded it.
type seenChat struct {
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Stream   *bool           `json:"stream"`
	Format   json.RawMessage `json:"format"`
	Options  map[string]any  `json:"options"`
}

// scriptedOllama is a local HTTP server that speaks Ollama's chat API (POST /api/chat, a JSON
// request, an NDJSON stream of {"model", "created_at", "message", "done"} objects ending with
// done true, done_reason and the counts; errors as a status with {"error": "..."}) and answers
// each request with the next scripted reply.
type scriptedOllama struct {
	t       *testing.T
	mu      sync.Mutex
	replies []scriptedReply
	seen    []seenChat
}

func newScriptedOllama(t *testing.T, replies ...scriptedReply) (*scriptedOllama, *Client) {
	o := &scriptedOllama{t: t, replies: replies}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, Timeout: 5 * time.Second, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return o, c
}

func (o *scriptedOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	var req seenChat
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		o.t.Errorf("bad chat request: %v %+v", err, req)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid request"}`)
		return
	}
	o.mu.Lock()
	o.seen = append(o.seen, req)
	if len(o.replies) == 0 {
		o.mu.Unlock()
		o.t.Errorf("unscripted request %d", len(o.seen))
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":"unscripted"}`)
		return
	}
	rep := o.replies[0]
	o.replies = o.replies[1:]
	o.mu.Unlock()
	if rep.delay > 0 {
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.status != 0 {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(rep.status)
		json.NewEncoder(w).Encode(map[string]string{"error": rep.message})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	created := "2026-03-02T18:00:00.123456789Z"
	pieces := splitPieces(rep.content, 7)
	for i, p := range pieces {
		enc.Encode(map[string]any{"model": req.Model, "created_at": created,
			"message": map[string]string{"role": "assistant", "content": p}, "done": false})
		if rep.midErr && i == 0 {
			enc.Encode(map[string]string{"error": rep.message})
			return
		}
		w.(http.Flusher).Flush()
	}
	if rep.noDone {
		return
	}
	enc.Encode(map[string]any{"model": req.Model, "created_at": created,
		"message": map[string]string{"role": "assistant", "content": ""}, "done_reason": "stop", "done": true,
		"total_duration": 812345678, "load_duration": 12345678, "prompt_eval_count": 412, "prompt_eval_duration": 300000000,
		"eval_count": 57, "eval_duration": 500000000})
}

// splitPieces cuts s into pieces of n runes, as a model streams tokens.
func splitPieces(s string, n int) []string {
	r := []rune(s)
	var out []string
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

func distillStore(t *testing.T, d memory.Distiller, shortTerm int) (*memory.Store, string) {
	t.Helper()
	emb, err := lexical.New(lexical.Options{Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil)) // the fallback's warnings
	s, err := memory.New(context.Background(), memory.NewMemBackend(), memory.Options{Embedder: emb, Distiller: d, ShortTermTokens: shortTerm, Logger: quiet,
		Clock: func() time.Time { return time.Date(2026, 3, 2, 18, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Remember(context.Background(), "u", "I live in Boston and work at a bakery.", memory.RememberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, r.IDs[0]
}

var distillMessages = []memory.Turn{
	{Role: "user", Text: "Big news: I moved from Boston to Denver last week!"},
	{Role: "assistant", Text: "Congratulations! I'll remember that."},
	{Role: "user", Text: "I'm a night nurse at Denver Health now, so no more bakery shifts."},
}

// TestDistillerAgainstOllama: the model's update and add (in a code fence, mem0's capitals, a
// number for an ID) are carried out against the memory it was shown, and the request is what
// docs/distill.md says: the instructions, the existing memories under short IDs, the numbered
// turns, the answer's JSON schema as the format, greedy decoding.
func TestDistillerAgainstOllama(t *testing.T) {
	answer := "```json\n" + `{"actions": [
		{"event": "UPDATE", "id": 0, "text": "I live in Denver and work as a night nurse at Denver Health.", "turn": 2},
		{"event": "add", "id": "", "text": "I moved from Boston to Denver in late February 2026.", "turn": 0},
		{"event": "none", "id": "0"}]}` + "\n```"
	o, c := newScriptedOllama(t, scriptedReply{content: answer})
	s, id := distillStore(t, &Distiller{Client: c}, 0)
	res, err := s.RememberMessages(context.Background(), "u", distillMessages, memory.MessagesOptions{Infer: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Fallback != "" || len(res.Events) != 2 {
		t.Fatalf("result %+v", res)
	}
	if e := res.Events[0]; e.Event != memory.EventUpdate || e.ID != id || !strings.Contains(e.Text, "Denver Health") || e.Previous != "I live in Boston and work at a bakery." {
		t.Fatalf("update %+v", e)
	}
	if e := res.Events[1]; e.Event != memory.EventAdd || e.Text != "I moved from Boston to Denver in late February 2026." {
		t.Fatalf("add %+v", e)
	}
	if h, err := s.History(context.Background(), id); err != nil || len(h) != 1 {
		t.Fatalf("the update left no history: %v %v", h, err)
	}

	if len(o.seen) != 1 {
		t.Fatalf("%d requests", len(o.seen))
	}
	req := o.seen[0]
	if req.Model != DefaultChatModel || req.Stream == nil || !*req.Stream || req.Options["temperature"] != float64(0) {
		t.Fatalf("request %+v", req)
	}
	if string(req.Format) != string(distillSchema) {
		t.Fatalf("format %s", req.Format)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != distillInstructions || req.Messages[1].Role != "user" {
		t.Fatalf("messages %+v", req.Messages)
	}
	for _, want := range []string{`[{"id":"0","text":"I live in Boston and work at a bakery."}]`,
		"[0] user: Big news: I moved from Boston to Denver last week!", "[1] assistant: Congratulations!", "[2] user: I'm a night nurse"} {
		if !strings.Contains(req.Messages[1].Content, want) {
			t.Errorf("prompt lacks %q:\n%s", want, req.Messages[1].Content)
		}
	}
}

// TestDistillerFallsBack: whatever goes wrong with the model (a 500, a missing model, an error
// in the stream, a stream cut short, a timeout, prose, the wrong schema, an unknown action, an
// ID it was not shown, a missing text, a turn out of range), the existing memory is left alone,
// the built-in distiller's memories are written instead, and the result says why.
func TestDistillerFallsBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply scriptedReply
		why   string
	}{
		{"500", scriptedReply{status: 500, message: "llama runner process has terminated: exit status 2"}, "runner process"},
		{"model missing", scriptedReply{status: 404, message: `model "qwen2.5:7b" not found, try pulling it first`}, "not found"},
		{"stream error", scriptedReply{content: `{"actions": [`, midErr: true, message: "out of memory"}, "out of memory"},
		{"stream cut", scriptedReply{content: `{"actions": []}`, noDone: true}, "stream ended"},
		{"timeout", scriptedReply{content: `{"actions": []}`, delay: 3 * time.Second}, "deadline"},
		{"prose", scriptedReply{content: "Sure! The user moved to Denver and is a nurse."}, "no JSON object"},
		{"not JSON", scriptedReply{content: `{"actions": [{"event": "add", "text": "x",}]}`}, "not JSON"},
		{"wrong schema", scriptedReply{content: `{"facts": ["The user moved to Denver."]}`}, `no "actions"`},
		{"actions not a list", scriptedReply{content: `{"actions": {"event": "add"}}`}, "not JSON"},
		{"unknown event", scriptedReply{content: `{"actions": [{"event": "merge", "id": "0", "text": "x"}]}`}, `event "merge"`},
		{"unknown ID", scriptedReply{content: `{"actions": [{"event": "delete", "id": "7"}]}`}, `id "7"`},
		{"real ID", scriptedReply{content: `{"actions": [{"event": "delete", "id": "4f9c2a7e0d1b4c3a9e8f7a6b5c4d3e2f"}]}`}, "not one of the 1 memories"},
		{"no ID", scriptedReply{content: `{"actions": [{"event": "update", "text": "I live in Denver."}]}`}, "no id"},
		{"no text", scriptedReply{content: `{"actions": [{"event": "add", "turn": 0}]}`}, "without a text"},
		{"turn out of range", scriptedReply{content: `{"actions": [{"event": "add", "text": "I live in Denver.", "turn": 9}]}`}, "turn 9"},
		{"same memory twice", scriptedReply{content: `{"actions": [{"event": "delete", "id": "0"}, {"event": "update", "id": "0", "text": "x"}]}`}, "changed twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cl := newScriptedOllama(t, c.reply)
			s, id := distillStore(t, &Distiller{Client: cl, Timeout: 300 * time.Millisecond}, 0)
			res, err := s.RememberMessages(context.Background(), "u", distillMessages, memory.MessagesOptions{Infer: true})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Fallback, c.why) {
				t.Errorf("fallback %q does not say %q", res.Fallback, c.why)
			}
			var texts []string
			for _, e := range res.Events {
				texts = append(texts, e.Text)
			}
			want := []string{"I moved from Boston to Denver last week!", "I'm a night nurse at Denver Health now, so no more bakery shifts."}
			if strings.Join(texts, "|") != strings.Join(want, "|") {
				t.Errorf("built-in memories %q, want %q", texts, want)
			}
			if ms, _ := s.Get(context.Background(), id); len(ms) != 1 || ms[0].Text != "I live in Boston and work at a bakery." {
				t.Errorf("the existing memory changed: %+v", ms)
			}
		})
	}
}

// TestDistillerAsTurnsLeaveTheWindow: with a small short-term budget, the turns AddTurn compresses
// go through the model, and Distill sends the rest; nothing is sent twice.
func TestDistillerAsTurnsLeaveTheWindow(t *testing.T) {
	o, c := newScriptedOllama(t,
		scriptedReply{content: `{"actions": [{"event": "update", "id": "0", "text": "I live in Denver.", "turn": 0}]}`},
		scriptedReply{content: `{"actions": [{"event": "add", "text": "I work night shifts at Denver Health.", "turn": 0}]}`})
	s, id := distillStore(t, &Distiller{Client: c}, 40)
	ctx := context.Background()
	var conv memory.Conversation
	var err error
	for _, turn := range distillMessages {
		if conv, err = s.AddTurn(ctx, "u", turn); err != nil {
			t.Fatal(err)
		}
	}
	if conv.Compressed == 0 || len(o.seen) != 1 {
		t.Fatalf("%d turns compressed, %d requests", conv.Compressed, len(o.seen))
	}
	if ms, _ := s.Get(ctx, id); len(ms) != 1 || ms[0].Text != "I live in Denver." {
		t.Fatalf("memory after the first distillation: %+v", ms)
	}
	res, err := s.Distill(ctx, "u")
	if err != nil || res.Fallback != "" || len(res.Events) != 1 || res.Events[0].Text != "I work night shifts at Denver Health." {
		t.Fatalf("Distill: %+v %v", res, err)
	}
	if p := o.seen[1].Messages[1].Content; !strings.Contains(p, `[{"id":"0","text":"I live in Denver."}]`) || !strings.Contains(p, "[0] user: I'm a night nurse") || strings.Contains(p, "[1]") {
		t.Fatalf("second prompt:\n%s", o.seen[1].Messages[1].Content)
	}
	if res, err := s.Distill(ctx, "u"); err != nil || res.Turns != 0 || len(o.seen) != 2 {
		t.Fatalf("second Distill: %+v %v, %d requests", res, err, len(o.seen))
	}
}

// TestParseActions checks the answer reader on its own: what it tolerates and what it refuses.
func TestParseActions(t *testing.T) {
	in := memory.DistillInput{Turns: make([]memory.Turn, 2), Existing: []memory.Memory{{ID: "a"}, {ID: "b"}}}
	got, err := parseActions(`Here: {"actions": [{"event": " Delete ", "id": "1", "turn": 1}, {"event": "add", "text": " I swim. "}], "note": "x"}`, in)
	if err != nil || len(got) != 2 || got[0] != (memory.Proposal{Event: memory.EventDelete, ID: "b", Turn: 1}) ||
		got[1] != (memory.Proposal{Event: memory.EventAdd, Text: "I swim.", Turn: -1}) {
		t.Fatalf("%+v %v", got, err)
	}
	if got, err := parseActions(`{"actions": []}`, in); err != nil || len(got) != 0 {
		t.Fatalf("empty: %+v %v", got, err)
	}
	for _, bad := range []string{"", "[]", `{"actions": null}`, `{"actions": [1]}`, `{"actions": [{"event": "add", "text": "x", "turn": 1.5}]}`,
		`{"actions": [{"event": "none", "id": -1}]}`, `{"actions": [{"event": "none", "id": true}]}`} {
		if _, err := parseActions(bad, in); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("parseActions(%q) = %v", bad, err)
		}
	}
	if _, err := (&Distiller{}).Distill(context.Background(), in); err == nil {
		t.Fatal("distiller without client accepted")
	}
}

// FuzzParseActions: any answer is read without panicking, and what is accepted names only the
// memories shown, with texts for add and update and turns in range.
func FuzzParseActions(f *testing.F) {
	for _, s := range []string{`{"actions": [{"event": "update", "id": "1", "text": "x", "turn": 0}]}`, `{"actions": [{"event": "add", "text": "y"}]}`,
		"```json\n{\"actions\": []}\n```", `{"actions": [{"event": "none", "id": 0}]}`, `}{`, `{"actions": [{"turn": 1e99}]}`} {
		f.Add(s)
	}
	in := memory.DistillInput{Turns: make([]memory.Turn, 2), Existing: []memory.Memory{{ID: "a"}, {ID: "b"}}}
	f.Fuzz(func(t *testing.T, answer string) {
		props, err := parseActions(answer, in)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error %v is not ErrBadAnswer", err)
			}
			return
		}
		for _, p := range props {
			switch {
			case p.Turn < -1 || p.Turn >= 2:
				t.Fatalf("turn %d", p.Turn)
			case p.Event == memory.EventAdd && p.ID != "":
				t.Fatalf("add with ID %q", p.ID)
			case p.Event != memory.EventAdd && p.ID != "a" && p.ID != "b":
				t.Fatalf("%s of %q", p.Event, p.ID)
			case (p.Event == memory.EventAdd || p.Event == memory.EventUpdate) && p.Text == "":
				t.Fatalf("%s without text", p.Event)
			}
		}
	})
}
