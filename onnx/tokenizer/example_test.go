package tokenizer_test

import (
	"fmt"
	"log"

	"github.com/engramdb/engram/onnx/tokenizer"
)

func Example() {
	tok, err := tokenizer.Load("../../testdata/tokenizer/tiny/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	e, err := tok.Encode("Memory, café 记忆")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Tokens)
	fmt.Println(e.IDs)

	short, err := tok.WithTruncation(4)
	if err != nil {
		log.Fatal(err)
	}
	e, _ = short.Encode("Memory, café 记忆")
	fmt.Println(e.Tokens, e.Truncated)
	// Output:
	// [<s> ▁M em ory , ▁c afé ▁ 记 忆 </s>]
	// [0 113 328 656 6 274 2584 4 1603 3 2]
	// [<s> ▁M em </s>] true
}
