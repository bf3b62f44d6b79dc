// Package arrowipc writes Arrow IPC file bytes that Grafana's frame decoder
// (the SDK's data.UnmarshalArrowFrame, which reads them with arrow-go's
// ipc.FileReader) accepts: the magic, a schema message, record batches whose
// body buffers are compressed one by one with a pooled codec, and the footer.
//
// It owns the flatbuffers of the Arrow format it needs (Schema, Field,
// KeyValue, RecordBatch with BodyCompression, Footer), written with the
// flatbuffers builder from the slots of Schema.fbs, Message.fbs and File.fbs,
// and appends one whole file to a caller's buffer in a single contiguous run.
// An Encoder keeps its scratch (flatbuffer builder, body layout, bitmaps) from
// one file to the next.
//
// The column types are the ones Grafana's reader turns into frame fields:
// bool, int8–64, uint8–64, float32/64, utf8, binary and timestamp[ns]. Any
// other type is rejected with an error that names the field and the type;
// converting types (other timestamp units, dictionaries, decimals…) is the
// job of package frame.
//
// arrowipc imports arrow-go's type definitions and package codec; never the
// Grafana SDK and no other Quiver package.
package arrowipc
