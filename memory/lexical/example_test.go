package lexical_test

import (
	"context"
	"fmt"

	"github.com/engramdb/engram/memory/lexical"
)

func ExampleEmbedder() {
	e, _ := lexical.New(lexical.Options{})
	vs, _ := e.Embed(context.Background(), []string{
		"Which tea does Alice like?",
		"Alice likes green tea",
		"The build server runs on Fridays",
	})
	cos := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	fmt.Println(e.Dim(), cos(vs[0], vs[1]) > cos(vs[0], vs[2]))
	// Output: 1024 true
}
