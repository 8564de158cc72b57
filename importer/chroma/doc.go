// Package chroma reads a Chroma persist directory (the chromadb Python package 0.4 to 0.6,
// and Chroma 1.x's Rust local mode) for memctl import --from chroma.
//
// # What it reads
//
// chroma.sqlite3, opened read-only through modernc.org/sqlite (pure Go): with SQLite's
// immutable flag when no -wal or -journal file sits beside it, so nothing in the directory is
// written, not even a lock; otherwise a copy of the database and its log in a temporary
// directory, so the log's last transactions are read and the source still is not touched.
// The schema is read from sqlite_master and PRAGMA table_info, so every layout Chroma's
// migrations produce is read (chromadb/migrations and rust/sqlite/migrations: sysdb 1-10,
// metadb 1-6, embeddings_queue 1-2):
//
//   - collections (id, name; dimension from sysdb 3; the queue topic in sysdb 1-4; the
//     database and tenant from sysdb 4; config_json_str from sysdb 7) and collection_metadata;
//   - segments: each collection's METADATA segment holds its records, its VECTOR segment
//     names the directory of its hnswlib files;
//   - embeddings (a record's ID, embedding_id, and created_at) and embedding_metadata (key,
//     string_value / int_value / float_value / bool_value from metadb 2; before that a
//     boolean is an integer). The document is the string under "chroma:document". From
//     metadb 6 (Chroma 1.x), embedding_metadata_array holds list values, one row per element;
//   - embeddings_queue: every write in order (seq_id; operation 0 add, 1 update, 2 upsert, 3
//     delete; topic "persistent://TENANT/NAMESPACE/COLLECTION-ID" or the collection's topic
//     column; vector as little-endian FLOAT32 or INT32 bytes). The latest write of a record
//     gives its Updated time and, when vectors are used, its vector.
//
// Vectors come from the queue when it still holds the record's last write (Chroma purges
// what its segments have consumed), else from the hnswlib files of the collection's vector
// segment (hnsw.go): data_level0.bin, with the labels mapped to record IDs by
// index_metadata.pickle (pickle.go; a PersistentData object from Python Chroma, a dict from
// the Rust one). A cosine collection's stored vectors are normalized; they are scaled back
// by the norms in length.bin.
//
// # Mapping
//
// One memory per record of each selected collection (Options.Collections; the only one when
// there is one, an error naming them when there are several). The document is the text;
// the ID is importer.ID("chroma", collection ID, record ID), and the record ID is kept as
// metadata chroma_id; the session is Options.Session, else the record's Options.SessionKey
// metadata value, else the collection's name; created_at is Created, the record's latest
// write in the queue (when newer) Updated. The other metadata goes through importer.Mapping.
// A record without a document is left out (counted in Report.Dropped). Collection metadata
// and configuration are not copied onto memories.
package chroma
