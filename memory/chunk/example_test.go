package chunk_test

import (
	"fmt"

	"github.com/engramdb/engram/memory/chunk"
)

func ExampleSplit() {
	text := "Engram keeps memories local. Nothing leaves the machine!\n\n记忆保存在本地。检索只需一毫秒。"
	chunks, _ := chunk.Split(text, chunk.Options{MaxChars: 40})
	for _, c := range chunks {
		fmt.Printf("%q\n", c)
	}
	// Output:
	// "Engram keeps memories local."
	// "Nothing leaves the machine!"
	// "记忆保存在本地。检索只需一毫秒。"
}
