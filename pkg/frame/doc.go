// Package frame owns Grafana's frame contract on the wire: the schema
// metadata (name, refId, meta) and field metadata (tstype, labels, config)
// that the SDK's decoder reads, exactly as the SDK writes them, and the
// table of column types a Grafana frame can hold.
//
// Its Encoder writes a frame as one Arrow IPC file through package arrowipc,
// with one call per frame (Append), from either of two inputs, and produces
// byte-identical output for the same data:
//   - a *data.Frame, whose field vectors are read in place (no arrow.Table
//     copy, no boxing per value);
//   - an Arrow record whose schema carries Grafana's metadata, as a
//     streaming source produces it (NewRecord builds one from its columns,
//     record.go; SchemaMetadata and ColumnMetadata are its parts).
//
// A record the source lends (AppendLent) is written as the same bytes in
// pieces, its larger buffers referenced rather than copied.
//
// A frame may also be written in parts as its rows arrive (Parts,
// AppendPart, FinishPartsPieces, in stream.go): one Arrow IPC file of
// several record batches, which the SDK's decoder reads as one frame of all
// their rows, finished with the frame's schema metadata (and stats) once
// the last part is in.
//
// JSONWriter (jsonframe.go; each field type's values by its row of the
// field-type table, jsonvalues.go) writes the same two inputs as Grafana's data-frame JSON,
// the format of backend.DataFrameFormat_JSON: byte for byte what the SDK's
// (*data.Frame).MarshalJSON writes of the frame (or of the frame
// data.FromArrowRecord makes of the record), with neither input converted.
//
// The frame that carries a query's encoding stats gets them from the
// caller's Summary and from the body arrowipc has just prepared: the
// encoder keeps no state from one call to the next but its scratch memory
// and the JSON of the last FrameMeta.
//
// frame imports the SDK's data package, arrow-go, arrowipc and jsoniter (the
// SDK's own JSON encoder, for meta and field config); never the
// SDK's backend package, never a source or the plugin.
package frame
