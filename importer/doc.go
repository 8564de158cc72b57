// Package importer brings memories into an engram store from where they live today: a Chroma
// persist directory (package importer/chroma) or a mem0 get_all dump (package importer/mem0).
// The readers turn a source's records into memory.Memory values and a Report; Write puts them
// into a store through a Target, resumably. docs/format/import.md lists the field mappings.
//
// # What this package shares between the readers
//
//   - ID derives a memory's ID from the source's own: the first 16 bytes of SHA-256 over the
//     source kind, a scope (Chroma's collection ID; "" for mem0) and the record's ID, in hex,
//     the shape of engram's random IDs. The same record always gets the same ID, so a second
//     run finds what the first one wrote. The source's ID is also kept in the memory's
//     metadata (chroma_id, mem0_id), so a memory leads back to its record.
//   - MapMetadata sorts a record's metadata onto engram's fields by name: "source" (a string)
//     to Source, "tags" (a list of strings or one comma-separated string) to Tags,
//     "importance" (a number in (0, 1]) to Importance, "created"/"created_at" and
//     "updated"/"updated_at" (RFC 3339 strings) to the times; a key whose value does not fit
//     its field, and every other key, goes into Metadata as it is (strings, numbers,
//     booleans). What cannot go anywhere (null values, lists and objects other than tags, a
//     string over memory.MaxMetadataValue, keys past memory.MaxMetadataKeys or
//     memory.MaxMetadataBytes) is left out and counted, per key and reason, in
//     Report.Unmapped.
//   - Report counts what was read, mapped, left out, embedded again and written, for the
//     summary memctl prints at the end.
//
// # Writing: resumable and idempotent
//
// Write goes through the memories in batches. Before a batch it asks the Target which of its
// IDs the store already holds and imports only the others; a memory already there (from an
// earlier run, complete or interrupted) is left as it is and counted in Report.Existing. A
// batch is written by one Target.Import call: the engine acknowledges it durably, so an
// interrupted import (a cancelled context, a killed process) leaves whole batches behind,
// and running the same import again writes each record that is still missing exactly once.
// The IDs are the only state: there is no watermark to lose or to disagree with the store.
//
// # Vectors
//
// A source's vectors are used only when they are the store's model's: the dimension must be
// the store's, and (VectorsAuto) the source must name its model and the name must match the
// store's embedder. Otherwise the texts are embedded again by the store (memory.Store.Import
// embeds every memory whose vector is missing or of another dimension). VectorsKeep trusts
// the caller that the models are the same when only the dimensions can be compared;
// VectorsReembed always embeds again.
package importer
