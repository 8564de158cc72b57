// Package hnsw is the engine's approximate nearest-neighbour index: a
// hierarchical navigable small world graph (Malkov & Yashunin, 2016) whose
// traversal compares int8 codes (package quant) and whose final candidates
// are rescored with the full-precision vectors.
//
// # API
//
// A mutable *Index takes Insert (dense uint32 ids in insert order), Delete
// and Search. WriteTo serializes it into a layout (docs/format/hnsw.md) that
// a *View searches in place over a byte slice (the engine mmaps segment
// files) with no decoding pass. OpenView validates everything once;
// OpenViewUnverified reads only the header, for opens that must not touch
// the whole file, and View.Verify does the rest later; or a caller that
// checksums the bytes in pieces sets View.SetReadVerifier, and every search
// then has exactly the bytes it read checked before it answers. Both Index
// and View satisfy Searcher.
//
//	ix, _ := hnsw.New(hnsw.Config{Dim: 384, Metric: quant.Cosine})
//	id, _ := ix.Insert(vec)
//	res, _ := ix.Search(q, 10, hnsw.SearchOptions{Ef: 64})
//
// # Layout in memory
//
// Nodes are rows of flat arrays indexed by id, never maps or per-node
// pointers: codes (n×dim int8), vectors (n×dim float32), level-0 adjacency
// (n×(1+2M) uint32, slot 0 holds the count), per-node level and offset into
// one flat upper-level adjacency array ((1+M) uint32 per level), and a flags
// word (present, deleted, unlinked). The serialized layout is the same
// arrays, 64-byte aligned, so a View is a set of unsafe.Slice views on the
// caller's bytes.
//
// # Build
//
// Insert follows the paper: a random level with mult 1/ln(M), greedy descent
// on upper levels, a beam search of width EfConstruction on each level the
// node lives on, and the heuristic neighbour selection (keep a candidate
// only if it is closer to the new node than to every neighbour already
// kept). The new node gets M links per level; a neighbour whose list
// overflows (M on upper levels, 2M on level 0) is re-pruned with the same
// heuristic. Candidates identical to a kept neighbour (exact duplicates)
// may take at most half a list, so a crowd of identical vectors cannot
// crowd the distinct ones out of each other's lists, and candidates at
// equal distances are ranked by a hash of the pair rather than by id, so
// the copies do not all keep the same oldest ones. A node whose descent
// lands on a copy of itself gathers its candidates with a salted walk
// (ties ordered by id XOR a hash of the node), so each copy sees a part of
// the crowd of its own instead of the same oldest copies. The beam search that
// gathers candidates walks int8 codes, like a query; the heuristic and the
// re-pruning compare float32 distances, which
// gave a slightly better graph (recall@10 +0.0025 at ef=200 on GloVe-100)
// for about 25% more build time.
//
// # Quantizer
//
// With Config.Quantizer nil the index trains its own (quant.Train) on the
// vectors inserted so far each time the count reaches a power of two up to
// Config.TrainSize (default 1024), and re-encodes the codes it holds; later
// vectors are encoded with the last one trained. Pass a Quantizer to make
// codes independent of insert order beyond the first vectors, or to share
// one quantizer across segments.
//
// # Search
//
// The query is normalized (Cosine), encoded once, and searched with keys
// packed as uint64 (distance in the high half, id in the low half, so ties
// break by id and nothing is boxed). A walk that may return every node (no
// filter, no tombstones: most queries and build steps) keeps one
// sorted pool of the ef best keys, each marked when expanded; a filtered
// walk keeps a min-heap of candidates and a max-heap of accepted results,
// because nodes it may walk through but not return must not take the
// results' places. Both expand the same nodes. Visited sets are
// epoch-stamped []uint16 arrays, kept with the rest of a search's scratch
// between searches (across garbage collections, unlike a sync.Pool: a
// dropped one cost the next search at 1M nodes hundreds of page faults;
// View.Reserve readies them). On Linux an Index's node arrays are advised
// for transparent huge pages before their first write (MADV_HUGEPAGE): a
// walk's reads land at random across hundreds of MB, and with 4 KiB pages
// most of them also missed the TLB (1M x 100-d, ef 80: 8,000-10,100
// queries per CPU second with small pages, 10,400-10,900 with huge ones).
// A View maps what the engine wrote and keeps the kernel's pages. A walk
// waits on memory (a list, then its
// neighbours' codes) and, as much, on branches it cannot predict: the
// unvisited neighbours' codes are prefetched whole (every cache line each
// touches: a 100-byte code can straddle three) in one call once the list
// is read, and the next candidate's neighbour list while the current one
// is scored (1.37x queries per CPU second on GloVe-100 100k against
// prefetching the first two lines of each), or, when an expansion finds a
// new best key, that key's list. On AVX-512 with VNNI one assembly call
// does an unfiltered walk's expansion (expand_amd64.s): it marks and
// gathers the unvisited neighbours without a branch per neighbour (whether
// one was visited is a coin flip), prefetches their codes, computes the
// distances and keeps only the keys below the pool's worst, again without
// a branch; and a pool insertion is insertion sort's inner loop eight keys
// at a time from the top (pool_amd64.s), where most new keys land, instead
// of a binary search and a memmove. Before them a walk cost as much CPU as
// hnswlib's where everything is in cache, despite reading a quarter of the
// bytes (GloVe-100 10k, ef 120: 1.08x hnswlib's queries per CPU second,
// medians over rounds of alternating processes, scripts/peers/rounds.sh);
// after them 1.90x there, and on GloVe-100 100k 2.09x -> 2.69x at recall
// 0.95 with the locality order below (bench/results/hnsw.md). Elsewhere
// the same steps run in Go (the gathering also without a branch). A
// query's walk expands its three best unexpanded nodes at a time
// (SearchOptions.Width, DefaultWidth), so that their lists, and then all
// their neighbours' codes, load together instead of one expansion's
// waits after another's: 1.22x queries per CPU second at 1M x 100-d and
// 1.17x on GloVe-100 100k against width 1, in one process on the same
// saved graph, recall@10 up by 0.001-0.002 (builds walk one node at a
// time, keeping the graph as it was). Nodes
// numbered in LocalityOrder (a breadth-first walk of level 0, which
// merges and bench/cmd/ann apply) put a node's neighbours at nearby ids,
// so an expansion's codes share cache lines and pages. The ef best results
// by code distance are rescored with float32 distances (the best
// k + max(k, 30) of them: code order departs
// from float order by a few ranks, so rescoring more changed no result in
// our measurements, at k = 10 on GloVe-100 and SIFT and at k = 100 on 1M x
// 1024-d) and the best k returned; SearchOptions.NoRescore skips
// that and returns code distances converted to float units. A View given a
// vector reader (SetVectorReader) rescores from copies it reads instead of
// its bytes: the engine preads segment vectors, because a page fault on a
// mapping maps a whole page-cache folio (up to megabytes), and rescoring's
// scattered reads would otherwise make the whole vectors section resident
// (at 100k x 1024-d: VmRSS 552 MiB after 50 searches, 145 MiB with pread,
// against 111 MiB of codes and graph).
//
// # Filters
//
// A Filter is applied during traversal. When the filter reports how many
// ids it allows (Counter: Bitset does), a planner picks one of three
// strategies per query from that count, the live count and ef (Plan
// reports the choice; SearchOptions.Strategy forces one):
//
//   - scan, when count <= min(ScanFactor·sqrt(live·ef), ScanMax·ef): the
//     allowed ids' int8 distances in batches (quant.CodeDistances), the
//     best rescored as after a walk. Exact over the codes; cost linear in
//     count.
//   - two-hop (twohop.go), when the count is above that and at most
//     TwoHopMax·live: an ACORN-1 style walk whose queue and results hold
//     allowed nodes only; expanding a node scores its allowed neighbours
//     and bridges through up to M disallowed ones to their allowed
//     neighbours (a third hop when two found fewer than eight), with ef
//     doubled below 2% selectivity where the allowed set is sparsest. It
//     starts from the nearest nodes of a short unfiltered walk (beam 32)
//     and 16 allowed seeds spread over the bitset, so an allowed set that
//     lies away from the query, or in islands, is still reached.
//     Distances are computed for allowed nodes only; the rest costs list
//     reads and bit tests.
//   - walk, above TwoHopMax: the plain beam search over every node, only
//     allowed, non-deleted nodes entering the results. Past ~10% most
//     links lead to allowed nodes and the walk is the cheapest.
//
// A walk visits about ef/selectivity nodes to fill its result heap, a scan
// touches each allowed node once, a two-hop walk about as many allowed
// nodes as an unfiltered search plus the lists it bridges through.
// BenchmarkPlannerBands (50k clustered 128-d vectors, ef=64, k=10, a
// session-like filter: 70% of its ids in two clusters, the rest anywhere;
// CPU queries per second / recall@10 against brute force over the allowed
// ids, 2 cores, load 2-4.5 from other work, 18:12 UTC):
//
//	selectivity   scan             two-hop         walk
//	0.1%           77,340 / 1.000    929 / 0.938      47 / 1.000
//	0.5%           74,963 / 1.000    988 / 0.907     249 / 1.000
//	1%             45,427 / 1.000  1,192 / 0.948     396 / 1.000
//	2%             29,389 / 1.000  1,124 / 0.976     551 / 0.996
//	5%             11,565 / 1.000  1,133 / 1.000   1,817 / 0.999
//	10%             4,826 / 1.000  1,431 / 0.999   3,284 / 0.999
//	20%             1,219 / 1.000  2,060 / 1.000   4,640 / 1.000
//	50%               319 / 1.000  4,700 / 1.000  12,950 / 1.000
//
// At 128-d distances are cheap, so the plain walk's extra distances cost
// little and the two-hop walk's list reads dominate. At 1024-d the balance
// moves: on the 100k x 1024-d store of bench/cmd/scale, engine searches
// for one session, wall ms / recall@10 against the exact scan
// (TestStrategiesOnStore in package engine, load about 3):
//
//	session share  scan           two-hop        walk
//	10% (10k ids)  6.63 / 1.000   3.36 / 0.988    9.78 / 0.990
//	5%  (5k)       3.59 / 1.000   2.79 / 0.973   17.34 / 0.993
//	2%  (2k)       0.57 / 1.000   2.62 / 0.968   22.22 / 1.000
//	1%  (1k)       0.31 / 1.000   2.43 / 0.960   38.33 / 0.998
//
// So: the scan wins while it touches a few thousand codes (ScanMax = 64,
// i.e. 4,096 ids at the default ef; the older ScanFactor bound, measured
// against the walk on GloVe, still applies below it on small graphs); the
// two-hop walk beats the plain walk by 3-15x from 1% to 10% at 1024-d
// (and by 3-20x below 2% at 128-d), and the walk wins above TwoHopMax =
// 0.1 at 128-d (at 1024-d two-hop still led at 10%: the bound is on the
// cautious side for the walk's recall). Two-hop recall is lowest where its
// allowed subgraph is sparsest (0.5-1%), which the scan serves on graphs up
// to ~400k nodes. Past that, a larger ef does not help: on the 1M x 1024-d
// store of bench/cmd/scale (TestStrategiesOnStore, idle machine; queries
// are random records of the whole store, so most lie away from the
// session), wall ms / recall@10:
//
//	session share  scan            two-hop        two-hop ef 256   walk
//	10% (100k ids) 47.61 / 1.000   4.75 / 1.000    9.16 / 1.000   14.64 / 1.000
//	5%  (50k)      26.30 / 1.000   3.55 / 0.983   11.87 / 0.983   18.77 / 1.000
//	2%  (20k)      12.83 / 1.000   4.87 / 0.833    9.02 / 0.863   38.60 / 0.995
//	1%  (10k)       7.43 / 1.000   3.93 / 0.657    7.41 / 0.710   63.15 / 0.978
//	0.5% (5k)       4.23 / 1.000   3.64 / 0.485    5.78 / 0.517  108.49 / 0.983
//
// So up to 2% selectivity (twoHopSparse) the scan's cap rises to
// SparseScanMax·ef (20,480 ids at the default ef): those sessions get the
// exact answer at the cost of a scan (about 10 ms for 20k ids at 1024-d),
// and the two-hop walk keeps the denser ones, where it holds recall.
// bench/results/scale.md and scale-1m.md have the bands at store scale.
//
// A filter that cannot count is walked, and the walk estimates the pass
// rate from the nodes it evaluates and switches to the scan (calling Allow
// for every id) when the estimate is under the scan limit.
//
// The scan visits allowed ids in increasing order, so it reads codes in
// sequence when they are a run: Index.Permute renumbers a built index
// (same graph, new ids), and the engine uses it to give each session of a
// compacted segment a run of ids.
//
// # Delete
//
// Delete sets a tombstone: the node is still walked, never returned. When
// tombstones pending repair exceed 5% of the live nodes (at least 64), a
// repair pass runs under the exclusive lock: every live node that links to a
// tombstone gets its list rebuilt from its live neighbours plus the live
// neighbours of its deleted neighbours (a node left with too few is
// re-searched from the entry point), pruned with the heuristic; then the
// tombstones' own lists are cleared, so they drop out of the graph, and the
// graph is reconnected (below). Ids are never reused; the engine's
// compaction rebuilds without them.
//
// # Reachability
//
// A search can only return nodes that a walk from the entry point over
// level-0 lists reaches. The build does not guarantee that: a node every
// neighbour pruned for a closer one has no in-link left. It happens rarely
// on real embeddings, but to a quarter of the nodes under Dot over vectors
// of varied norms (long vectors win every list) and to half of a crowd of
// identical vectors, and deletes racing inserts cut nodes off too. So
// Repair and WriteTo end with a reconnect pass: a breadth-first walk from
// the entry point, then each live node it missed is searched for and
// linked from the nearest reached node with a free slot (or in place of a
// link to a node others link to as well), and the walk is repeated until
// it reaches everything. A written graph therefore reaches every live node
// (the engine's Check verifies it); an in-memory Index between repairs may
// not.
//
// # Concurrency
//
// Insert, Delete and Search may be called from any number of goroutines.
// A read-write mutex guards the arrays' backing storage: operations hold the
// read side, and only growing capacity, retraining the quantizer, a repair
// pass and WriteTo take the write side. Neighbour lists are written under
// striped mutexes and read with atomic loads, so searches never lock a
// node; a search may see a list mid-update, which costs at most a slightly
// different path (as in hnswlib). A single-goroutine build is deterministic
// for a given Seed and insert order; concurrent inserts are not.
//
// # Caveats
//
//   - Vectors are stored as given, except under Cosine where they are stored
//     L2-normalized; Vector returns the stored form.
//   - A View's slices alias the caller's bytes: they must stay mapped and
//     unmodified while the View is used. A byte slice not 4-byte aligned is
//     copied once (and the View then owns the copy).
//   - Serialized indexes are little-endian; OpenView refuses to run on a
//     big-endian host.
//   - Deleted ids keep their storage until the engine compacts.
//   - Between repair passes an Index may hold live nodes that no search
//     reaches (see Reachability); Repair or WriteTo links them.
package hnsw
