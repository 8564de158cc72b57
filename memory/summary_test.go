package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory/lexical"
)

// TestExtractiveGolden: each compressed turn keeps the sentences later turns may need (names,
// numbers, dates, decisions, preferences, negations) and drops small talk; an assistant's turn
// keeps its one most factual sentence; the kept turns of one role share a line.
func TestExtractiveGolden(t *testing.T) {
	turns := []Turn{
		{Role: "user", Text: "Hi there! How are you today? My sister Maria lands in Lisbon on 3 May at 10:40."},
		{Role: "assistant", Text: "Great question. Let me think. I booked seat 12A for 240 EUR."},
		{Role: "user", Text: "Thanks, that sounds good. I prefer window seats and I am not eating meat."},
		{Role: "assistant", Text: "Sure thing."},
		{Role: "user", Text: "你好呀。我们决定下周二下午三点开会。我不喝咖啡，只喝绿茶。"},
		{Role: "assistant", Text: "好的，明白了。预算是五千元。"},
	}
	got, err := ExtractiveSummarizer{}.Summarize(context.Background(), "", turns)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"user: My sister Maria lands in Lisbon on 3 May at 10:40. I prefer window seats and I am not eating meat. 我们决定下周二下午三点开会。我不喝咖啡，只喝绿茶。",
		"assistant: I booked seat 12A for 240 EUR. 预算是五千元。",
	}, "\n")
	if got != want {
		t.Fatalf("summary\n%s\nwant\n%s", got, want)
	}
}

// fillerTurn is a long turn: one fact among small talk.
func fillerTurn(fact string, zh bool) string {
	if zh {
		return "嗯嗯，好呀。让我想一想这个问题。" + fact + "这个话题挺有意思的呀。谢谢你的耐心等待哦。"
	}
	return "Okay, let me think about that for a moment. " + fact + " That is an interesting point to consider. Thanks for bearing with me here."
}

// TestSixtyTurnsKeepEveryFact posts 60 long turns (the default budget of 2000 tokens) in English
// and in Chinese: every compressed turn keeps its fact in the summary (with the first release,
// turns 0-20 were gone and the rest cut to 160 characters), the small talk is gone, the summary
// stays within half the budget, and nothing is dropped unaccounted.
func TestSixtyTurnsKeepEveryFact(t *testing.T) {
	names := []string{"Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jun"}
	for _, zh := range []bool{false, true} {
		t.Run(map[bool]string{false: "en", true: "zh"}[zh], func(t *testing.T) {
			now := time.Unix(1_800_000_000, 0)
			s, err := New(context.Background(), NewMemBackend(), Options{Embedder: lexicalEmbedder(t), Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var conv Conversation
			facts := make([]string, 60)
			for i := range 60 {
				now = now.Add(time.Minute)
				if zh {
					facts[i] = fmt.Sprintf("%s的房间号是%d。", names[i%10], 100+i)
				} else {
					facts[i] = fmt.Sprintf("%s will meet us in room %d on Friday.", names[i%10], 100+i)
				}
				role := []string{"user", "assistant"}[i%2]
				if conv, err = s.AddTurn(ctx, "s", Turn{Role: role, Text: fillerTurn(facts[i], zh)}); err != nil {
					t.Fatal(err)
				}
			}
			if conv.Compressed+len(conv.Turns) != 60 || conv.Compressed < 20 {
				t.Fatalf("%d compressed + %d recent", conv.Compressed, len(conv.Turns))
			}
			t.Logf("%d compressed, %d recent, summary %d tokens; first lines:\n%s", conv.Compressed, len(conv.Turns), EstimateTokens(conv.Summary), strings.Join(strings.SplitN(conv.Summary, "\n", 4)[:3], "\n"))
			if n := EstimateTokens(conv.Summary); n > DefaultShortTermTokens/2 {
				t.Fatalf("summary of %d tokens, budget %d", n, DefaultShortTermTokens/2)
			}
			for i := range conv.Compressed {
				if !strings.Contains(conv.Summary, fmt.Sprint(100+i)) {
					t.Fatalf("the summary lost turn %d (%q):\n%s", i, facts[i], conv.Summary)
				}
			}
			for _, small := range []string{"interesting point", "bearing with me", "挺有意思", "耐心等待", "想一想"} {
				if strings.Contains(conv.Summary, small) {
					t.Fatalf("small talk %q kept:\n%s", small, conv.Summary)
				}
			}
			if len(conv.Turns) == 0 || !strings.Contains(conv.Turns[len(conv.Turns)-1].Text, facts[59]) {
				t.Fatal("the newest turn is not kept verbatim")
			}
		})
	}
}

// TestFitSummaryNeverDropsSilently: squeezed far below its lines, a summary shortens every line,
// then folds the oldest into an "earlier: ..." line of their salient words, never over budget.
func TestFitSummaryNeverDropsSilently(t *testing.T) {
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("user: Okay then. The code for locker %d is %d and Sam agreed to it.", i, 5000+i))
	}
	for _, budget := range []int{400, 200, 80, 30} {
		got := fitSummary(lines, budget)
		if n := EstimateTokens(got); n > budget {
			t.Fatalf("budget %d: %d tokens", budget, n)
		}
		out := strings.Split(got, "\n")
		if len(out) < 40 && !strings.HasPrefix(out[0], foldPrefix) {
			t.Fatalf("budget %d: %d of 40 lines and no fold line:\n%s", budget, len(out), got)
		}
		if !strings.Contains(got, "5039") {
			t.Fatalf("budget %d: the newest line's number is gone:\n%s", budget, got)
		}
		if budget == 400 && (!strings.Contains(got, "5000") || !strings.Contains(got, "Sam")) {
			t.Fatalf("budget 400: the oldest line's facts are gone:\n%s", got)
		}
	}
	// A legacy fold line ("earlier (N turns): ...") folds again with its words.
	got := fold([]string{"earlier (12 turns): Lisbon 3 May…", "user: Sam booked room 12."}, 100)
	if got != "earlier: Lisbon 3 May booked 12" {
		t.Fatalf("fold = %q", got)
	}
}

func lexicalEmbedder(t *testing.T) Embedder {
	t.Helper()
	e, err := lexical.New(lexical.Options{Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
