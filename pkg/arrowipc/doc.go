// Package arrowipc writes Arrow IPC file bytes that Grafana's frame decoder
// (the SDK's data.UnmarshalArrowFrame, which reads them with arrow-go's
// ipc.FileReader) accepts: the magic, a schema message, one record batch
// (or several) whose body buffers are compressed one by one with a pooled
// codec, and the footer.
//
// An Encoder writes a file in two phases. Prepare (or PrepareRecord, from
// an Arrow record) checks a batch against its fields, compresses its body
// and returns its BodyStats: raw and wire bytes and what became of each
// buffer. AppendFile then appends the whole file, with the schema metadata
// the caller built (which may carry those stats), to a caller's buffer in a
// single contiguous run (file.go says how); AppendFilePieces writes the same
// bytes as pieces, the caller's larger buffers referenced rather than
// copied.
//
// A prepared batch may instead become the next record batch of a File, a
// file of several batches written as they come (AppendBatch), which
// FinishFilePieces completes with the schema metadata known only at the
// end: a table streamed batch by batch is one file, as Grafana's reader
// appends every batch of a file (see File for who owns it and how it keeps
// its batches). A File of one batch, joined, is byte for byte what
// AppendFile writes.
//
// The files of the package:
//   - encoder.go: Options, Encoder and its two phases, Field, KeyValue;
//   - body.go: phase one, the body (Column, BodyStats, compression): the
//     skip (a per-encoder history of what each buffer slot's compression
//     did, so that what cannot pay is not tried) and codec auto's choice
//     of none, lz4 or zstd per batch;
//   - file.go: phase two, the file's framing and body bytes;
//   - join.go: the joiner, which puts a file or a batch together from
//     referenced buffers and written bytes, or splits it into pieces;
//   - multi.go: File, a file of several batches;
//   - metadata.go: every flatbuffer it writes: the schema message, a
//     RecordBatch message and the footer, each built by one method, and
//     under them one builder per table of Schema.fbs, Message.fbs and
//     File.fbs, with named slots;
//   - types.go: the table of column types; record.go: Arrow records as
//     columns.
//
// Package arrowipctest holds Inspect, a diagnostic reader of what it
// writes, for tests.
//
// The column types are the ones Grafana's reader turns into frame fields:
// bool, int8–64, uint8–64, float32/64, utf8, binary and timestamp[ns]. Any
// other type is rejected with an error that names the field and the type;
// converting types (other timestamp units, dictionaries, decimals…) is the
// job of package frame.
//
// arrowipc imports arrow-go's type definitions and bitmap copy, package
// codec and its own internal/format (the format's slots and enums, shared
// with the reader in arrowipctest); never the Grafana SDK and no other
// Quiver package.
package arrowipc
