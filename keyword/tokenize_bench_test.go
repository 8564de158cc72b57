package keyword

import (
	"strings"
	"testing"
)

// BenchmarkTokens: go test ./keyword -run '^$' -bench Tokens
func BenchmarkTokens(b *testing.B) {
	for name, text := range map[string]string{
		"lang=en": strings.Repeat("The user prefers green tea over coffee and usually drinks it in the morning. ", 20),
		"lang=zh": strings.Repeat("用户喜欢喝绿茶，不喜欢咖啡，通常在上班前的早上喝。", 20),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				Tokens(text)
			}
		})
	}
}
