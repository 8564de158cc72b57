package keyword

// v2Docs are the documents of testdata/format-v2.kw (written by format version 2).
var v2Docs = []string{
	"The quick brown fox jumps over the lazy dog.",
	"A lazy afternoon: the dog sleeps, the fox runs away.",
	"Foxes and dogs are both canids; foxes are smaller.",
	"记忆库 stores memories; 记忆 is memory.",
	"Running, runner, runs: the stemmer folds them to run.",
	"",
	"dog dog dog dog dog dog dog dog",
}
