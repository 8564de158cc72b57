package keyword_test

import (
	"fmt"

	"github.com/engramdb/engram/keyword"
)

func ExampleTokens() {
	fmt.Println(keyword.Tokens("The engines are running: 记忆库！"))
	// Output: [engin run 记 记忆 忆 忆库 库]
}

// A collection split into a mutable index and a flushed segment ranks as one.
func ExampleSearch() {
	mutable := keyword.NewIndex()
	_ = mutable.Add(10, "Alice prefers green tea in the morning")
	_ = mutable.Add(11, "The build server runs on Fridays")

	flushed := keyword.NewIndex()
	_ = flushed.Add(0, "Bob drinks black coffee")
	_ = flushed.Add(1, "Green tea is Alice's favourite drink")
	data, _ := flushed.MarshalBinary() // the engine writes this into a segment file
	seg, err := keyword.Open(data)
	if err != nil {
		panic(err)
	}

	parts := []keyword.Part{mutable, seg}
	deleted := func(part int, doc uint32) bool { return !(part == 1 && doc == 0) }
	hits, _ := keyword.Search(parts, "green tea", 5, deleted)
	for _, h := range hits {
		fmt.Printf("part %d doc %d\n", h.Part, h.Doc)
	}
	// Output:
	// part 0 doc 10
	// part 1 doc 1
}
