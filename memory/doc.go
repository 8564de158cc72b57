// Package memory is engram's product API: long-term memories that an AI application writes
// (Remember) and reads back (Recall), short-term conversation buffers, and working memory for
// multi-step tasks, over a pluggable index backend.
//
// # Long-term memory
//
// Remember chunks a text (package memory/chunk: paragraphs, then sentences, at most
// Options.ChunkChars characters), embeds the chunks in batches through an Embedder, and writes
// them to a session as one durable batch (several for a long text with wide vectors: once the
// write has begun it is finished whatever the context does, and a batch that fails reports the
// IDs the batches before it stored, PartialWriteError). A chunk whose cosine similarity to an existing memory
// of the same session reaches Options.DedupThreshold (0.85) is merged instead of inserted: the
// existing memory takes the new text, vector, time and importance and keeps its ID, Created
// time and access statistics; RememberResult.Merged says which chunks merged. Vectors are
// L2-normalized before they are stored, so cosine similarity is a dot product. A merge never
// loses a fact silently (facts.go): the version it replaces goes into the memory's History; a
// near-duplicate that negates the memory or changes a number or date supersedes it, marked
// (ChangeSupersede, RememberResult.Superseded); one that replaces a name (another person or
// place) is stored as a memory of its own; and one written with a Time before the memory's last
// update leaves the newer text in place (ChangeOlder, RememberResult.Older), so Updated never
// moves back and never precedes Created.
//
// # Current facts
//
// Most changed facts are not near-duplicates ("Marta reshuffled her schedule, so my sessions are
// now Wednesdays at 5:45 pm" for "Physio with Marta is every Monday at 8:00 am"). Remember looks
// for them among the session's memories that a keyword, a vector and an attribute search with
// the new chunk find, and compares sketches (sketch.go: salient terms, the kinds of personal
// fact stated, typed values, who the text is about, change cues, English and Chinese, no model):
// a chunk that announces a change and shares the fact's subject, or changes one of its values,
// supersedes it (supersede.go has the rules). Both memories stay: the older is marked
// (Memory.SupersededBy, SupersededAt; RememberResult.Supersedes), and its previous version goes
// to its History as ChangeSupersede with Version.By naming the newer. Only facts take part: not
// documents (over 400 characters), questions, chat messages and conversation turns (a Context).
// RememberOptions.NoSupersede and Options.NoSupersede turn detection off. On
// shared/datasets/text/assistant-dev it finds 23 of the 24 annotated changes and nothing else
// (bench/results/memory-semantics.md).
//
// Recall puts the current fact first (current.go): a superseded candidate is multiplied by
// StalePenalty (Score.Current) and marked (Result.Stale, Newer), and its successor, read by ID
// when the query did not find it, takes its relevance when that is higher (unless the change is
// about another attribute than the query asks about), so the newer ranks above it even when it
// shares no word with the question; where two of the best candidates conflict and nothing was
// recorded, the newer ranks just above the older when they are about as relevant, and nothing
// happens to an old memory that nothing contradicts. RecallOptions.Superseded hides stale
// memories or keeps the first release's ranking. RecallOptions.AsOf answers from what was true at
// a past time: memories created after it are left out, memories superseded after it are current,
// and a memory rewritten in place after it comes back with its text of then, from its History.
// BuildPrompt labels entries "outdated: see [n]" and "newer than [m]".
//
// # Get, list, update, delete, history
//
// Lookup reads one memory by ID; List pages through the memories a Filter matches, newest
// first, with an opaque cursor; Update replaces a memory's text (re-embedded) or metadata;
// Delete deletes by ID and refuses, changing nothing, when an ID is unknown (a *NotFoundError
// names them); History returns the earlier versions, Revert brings one back. The history lives
// in a collection of its own, bounded per memory by Options.HistoryVersions
// (docs/format/history.md). Memories carry user Metadata (strings, numbers, booleans), and every
// field, metadata included, can be filtered by a Filter, which ParseFilter reads from the JSON
// filter language every door takes (docs/format/filter.md). MemoryJSON is the one JSON form of
// a memory, and Export and ReadExport write and read the versioned export format
// (docs/format/export.md).
//
// # Conversations
//
// A conversation turn often answers in words its neighbours hold ("Yes! It was amazing" after
// "How was the concert?"). RememberConversation remembers each turn as a memory of its own whose
// Context is the two turns on each side (RememberOptions.Context sets one directly); the
// backend's keyword index holds it after keyword.ContextSeparator, where its words count a third
// of the turn's own (BM25F), and Recall returns the turn's text alone. A recall for a chat loop
// passes the recent conversation as RecallOptions.Turns, with or without a query (a query of
// three lines or more is read as such a dialogue): the latest turns with content count, the
// newest most, small talk not at all. Queries lose question words (keyword.IsQueryStopword),
// in BM25 and in the lexical embedder's query vector (QueryEmbedder). What these are worth on
// locomo-dev (LoCoMo conversations) is measured in bench/results/retrieval.md.
//
// # Conversations into memories
//
// Turns become long-term memories through a Distiller (distill.go, docs/distill.md): AddTurn
// distills the turns that compression pushes out of the short-term window, Distill the turns
// still in it, and RememberMessages with MessagesOptions.Infer the messages it is given (without
// Infer it stores each message verbatim, mem0's infer=False). What the user states about
// themselves, their plans, preferences and corrections becomes memories of the session, with
// source "conversation" (DistillSource), the time of its turn and the turn before it as Context;
// small talk, questions and the assistant's turns do not. The default RuleDistiller needs no
// model (English and Chinese first-person statements, corrections and continuations, kept
// verbatim); ollama.Distiller asks a local model for add, update, delete or none against the
// session's memories most related to the turns (DistillInput.Existing). The store checks every
// proposal (events, IDs among those shown, texts, turns) and, when the distiller fails or
// proposes anything invalid, lets RuleDistiller distill the same turns instead
// (DistillResult.Fallback says why). A per-session watermark, Conversation.Distilled, kept in the
// conversation's own record and written with it, makes distilling the same turns twice store
// nothing new, across restarts too.
//
// Recall runs, for one query, a vector search and a BM25 keyword search (package keyword: NFKC,
// CJK unigrams and bigrams, stemmed English words), each fetching RecallOptions.Candidates
// candidates (default max(10×K, 50)) under the session filter (the query's embedding comes from
// a bounded LRU keyed by the embedder's fingerprint and the text, Options.QueryCache, so a
// repeated query skips the embedder), unless AllSessions is set. The
// session filter is built by Recall itself and always ANDed with the caller's Filter, so no
// option combination can leak another session's memories. A candidate whose cosine or BM25
// score is not positive shares nothing with the query and is dropped from its list. The two
// lists are fused by a weighted sum of the cosine and the max-normalized BM25 score (default) or
// by reciprocal rank fusion (k = 60), with weights from RecallOptions or else the store's
// Options (0.5/0.5). Weighted fusion has a vector gate per embedder (FusionWeighted): with the
// built-in lexical embedder (LexicalVectorGate, 0.8) a cosine counts only for memories whose
// BM25 score is at least 0.8 of the query's best, rising to full weight at the best, because
// those vectors carry the words BM25 already scores, without IDF: ungated they lower
// conversational recall below BM25 alone, gated hybrid recall is at least BM25 on every set of
// bench/results/retrieval.md. A semantic embedder (BGE-M3) runs ungated: its list finds what
// shares no word with the query, which a gate would throw away. A question about the user's own
// facts ("Where do I work now?", 我现在住在哪里？) also runs a keyword search with the words of the
// kinds of fact it asks about (attributeLexicon: where one lives, work, a relationship, diet
// ...), which adds RecallOptions.AttributeWeight (0.4) × the memory's score there (Score.Attribute)
// of what Fused lacks to 1, and loses the words that only ask for the present (now, these days,
// 现在); statements (a claim searched for evidence) and questions not in the first person do
// not. Then
// each candidate is reranked by
//
//	Final  = min(1, Fused × Decay × Weight × Current)          (every part but Weight in [0, 1])
//	Decay  = Floor + (1 − Floor) × ((1 − Slow) × (1 − PerDay)^age_days + Slow × 0.5^(age / SlowHalfLife))
//	         (defaults: Floor 0.5, PerDay 0.10, Slow 0.2, SlowHalfLife 365 days; HalfLife replaces PerDay)
//	Weight = SourceWeights[source] × (1 + ImportanceWeight × (importance − 0.5))
//	Current = 1, or StalePenalty (0.5) for a memory a newer one changes
//
// where age runs from the last write of the memory's text (default: a recall does not make a
// memory young again) or, with DecayLastAccess, from the later of the last write and the last
// access. The floor is the ranking policy against burying strong matches: decay alone can at
// most halve a memory's score, so an old memory that matches the query outranks a fresh one
// that shares little with it (memorytest's OldExactMatchOutranksFreshUnrelated); the slow part
// keeps ordering memories older than a month, which the fast part leaves at the floor. A result
// must reach RecallOptions.MinScore (DefaultMinScore, 0.05) and MinRelative (DefaultMinRelative,
// 0.2) of the best result's Final; negative values turn these floors off. Every Result carries
// these parts in Score, so a caller can see why a memory came back. Unless NoTouch is set, the returned memories' access counts and last-access
// times are updated durably in one backend call (Collection.Touch: one WAL record in the engine),
// best effort: if that write fails (a full disk) the recall still answers; the failure is counted
// (Store.TouchFailures) and logged once per burst (Options.Logger).
// Time comes from Options.Clock, so tests inject a fixed clock instead of sleeping.
//
// Delete, Forget and ForgetWhere delete for good, with the history, unless
// Options.ForgetRetention is set: then they move the memories to a trash collection per model
// ("forgotten-" and the archive's hash) for that long, history kept, and Unforget brings them back
// under their IDs; Purge, PurgeWhere and PurgeForgotten always delete for good, from the trash and
// the archive too, and expired trash is purged at Open and by the next forget, restore or cleanup
// (docs/format/trash.md). Cleanup moves stale memories (default: not written for 180 days
// and never recalled) into a cold archive: a collection of its own per embedding model
// ("archive-" and a hash of the model's fingerprint and dimension, listed under the KV key
// "memory/archives"), so archived memories sit in the backend's segments, compressed, read on
// demand and restored by ID, and the engine's manifest does not grow with them
// (docs/format/archive.md). New moves the archive parts of first-release stores out of the KV
// namespace into these collections. Cleanup writes the archive durably before it deletes, so a
// crash between the two leaves the memories both live and archived, never lost, and Restore
// skips live copies. Restore is idempotent and re-embeds archived memories when the store has
// changed models since.
//
// BuildPrompt renders recalled memories between PromptOpen and PromptClose within a token
// budget, estimated by EstimateTokens (one token per CJK character, one per four other
// characters).
//
// # Model lock and re-embedding
//
// A collection records the fingerprint and dimension of the embedder that filled it. New fails
// with a *ModelMismatchError (matching ErrModelMismatch) naming both fingerprints when they
// differ. Reembed migrates: it re-embeds every memory's stored text into a new collection
// (collection names base, base.1, base.2, ...), keeps IDs, metadata and statistics, then switches
// by one durable KV write of the live collection's name, and drops the old collection. Its state
// is kept in the KV namespace, so after a crash a second Reembed with the same model resumes
// and embeds only what is missing; after a crash past the switch, New finishes the cleanup.
//
// A store can also record how to rebuild its embedder (RecordEmbedder: a kind and a location,
// such as onnx and a model directory, with the model's fingerprint and dimension; KV key
// "memory/embedder"), so a tool opens it with the right model without being told:
// OpenOptions.EmbedderFrom receives the recorded spec. memctl records it at every open and after
// reembed. The collection's fingerprint stays the lock: a recorded model whose files changed
// fails with a *ModelMismatchError.
//
// # Short-term and working memory
//
// AddTurn appends to a session's conversation buffer; past Options.ShortTermTokens the oldest
// turns go through a Summarizer (ExtractiveSummarizer by default; model-backed ones live with the
// service) into a running summary of at most half the budget, and Context returns summary plus
// recent turns. The extractive summary keeps the sentences of the compressed turns with names,
// numbers, dates, decisions, preferences and negations (English and Chinese cues; of an
// assistant's turn, its one most factual sentence), drops small talk, boilerplate and sentences
// near-identical to one it holds, splits sentences where a reader would (not at Ms., U.S. or
// 3.5; at 。！？；) and merges the kept sentences of one role into lines of at most 400
// characters; over its budget every line is shortened, and only then are the oldest folded
// into one "earlier: ..." line of their salient words, so the summary never exceeds half the
// budget (summary.go, sentences.go, talk.go). Before compressing, AddTurn distills the turns
// it compresses into long-term memories (see Conversations into memories). Tasks
// (StartTask, UpdateStep, FinishTask, Task, Tasks, DeleteTask) keep steps with status, JSON
// results, the next step and timestamps. A task ID is unique within its session only
// (StartSessionTask, SessionTask and the other Session* forms name both; the short forms find a
// task by ID while one session has it, else *AmbiguousTaskError), so one session's tasks reveal
// nothing about another's. Both are keyed records in the collection
// RecordsCollection ("records"; docs/format/records.md): one record per conversation or task,
// its JSON payload as the text, rewritten by one durable upsert on every change, so after a crash
// they read back exactly as last acknowledged. A records collection is an ordinary Collection,
// so every backend holds it with no special case, segments and backups and migration included;
// its records carry a two-dimensional vector derived from the ID, which nothing searches
// (a vectorless collection kind would have meant a second storage path in every backend for
// data that only needs get, put, delete and scan by key). The KV namespace, which the engine
// writes whole into every manifest, keeps only small state (the live collection's name, an
// unfinished Reembed, the archive list, the recorded embedder). New moves the conversations and
// tasks of first-release stores out of the KV namespace into the records collection.
//
// # Backends
//
// Backend and Collection are the index store's contract: upsert with vectors and metadata,
// get, delete (by ID and by Filter), vector and keyword candidates under a Filter, Touch for
// access statistics, Scan and Count, plus a durable KV namespace. Two implementations:
//
//   - NewEngineBackend (what Open uses): package engine in one directory. A memory is an engine
//     record whose metadata holds session, source, tags (a string list), importance, and copies
//     of created/updated, so every filter on those runs inside the engine (session equality on
//     its per-session postings); filters on last access or access count (kept by the engine
//     outside metadata) select a superset there and are completed here by Filter.Match, with
//     the search fetching more candidates until k pass. Every hit is checked with Match anyway.
//     It also implements Maintainer, behind Store.Flush, Compact, Check, Backup and Stats, and
//     CandidateSearcher: Recall's over-fetched candidates come without their texts (the engine
//     keeps texts zstd-compressed in blocks), and only the K results read theirs.
//   - NewMemBackend: everything in process memory, exact search, BM25 through package keyword;
//     for tests and ephemeral stores. The test suite runs against both.
//
// Import and Scan move memories in and out as they are (export/import, migration).
//
// # Caveats
//
//   - A memory's Context lives in the backend's text after U+001E, so Remember refuses texts
//     containing U+001E. The JSON form (export, history, archive) keeps it; the Weaviate backend
//     does not index or keep it, so a turn migrated there ranks by its own words.
//   - Writes to long-term memory (Remember, Forget, Cleanup, Restore, Reembed) are serialized by
//     one lock per Store; recalls run concurrently with them and with each other.
//   - The session "" is a session like any other; RecallOptions{} recalls from it.
//   - A Store does not own a Backend passed to New.
//   - Sessions and Stats scan every memory; they are for administration, not hot paths.
//   - A conversation or task is one record of at most 1 MiB of JSON (the engine's limit on a
//     record's text): a task with all its steps and results, or a conversation under a very large
//     ShortTermTokens, fails with ErrInvalidInput past that. KV values are bounded likewise, and
//     the engine's whole namespace by engine.MaxKVBytes.
//   - The lexical default embedder matches spelling, not meaning (see package memory/lexical);
//     bench/results/retrieval.md reports what it achieves. Plug a semantic Embedder for paraphrases.
package memory
