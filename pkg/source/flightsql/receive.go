package flightsql

import (
	"bytes"
	"encoding/binary"
	"slices"

	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// Receiving a stream costs what copying it costs. With gRPC's "proto" codec
// a record batch larger than one HTTP/2 data frame (16 KiB) is copied three
// times and cleared twice before the IPC reader sees it: the transport reads
// each data frame into a pooled buffer it clears first, the codec joins a
// message's frames into a second cleared pooled buffer
// (MaterializeToBuffer), and protobuf copies the body out of that into the
// message (what that cost the plugin: docs/journal/benchmarks.md, "Receiving
// with one copy").
//
// receiveOptions gives the connection receiveCodec, which decodes
// FlightData, the message of every DoGet stream, straight from the
// transport's buffers: each field is copied once, into a slice of its exact
// size (or, for a stream whose bodies are recycled, the body into memory of
// the source's series pool: bodies.go). Every other message, and a
// FlightData this decoder does not take (below), goes to the "proto" codec.
// The transport keeps gRPC's own buffer pool (a non-clearing one measured no
// better: docs/journal/benchmarks.md, "December 2026").
//
// It does not change what a server sees: the codec's Name is empty, so the
// content-type stays gRPC's default "application/grpc", and every message
// sent is marshalled by the "proto" codec.
func receiveOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(receiveCodec{next: encoding.GetCodecV2(grpcproto.Name)})),
	}
}

// codec is the call option of a DoGet whose bodies are sb's: the
// connection's codec, decoding the bodies with sb.
func (sb *streamBodies) codec() grpc.CallOption {
	return grpc.ForceCodecV2(receiveCodec{next: encoding.GetCodecV2(grpcproto.Name), bodies: sb})
}

// receiveCodec is the connection's codec; see receiveOptions. A DoGet call
// gets one of its own whose bodies are those of its stream (bodies set,
// see bodies.go).
type receiveCodec struct {
	next   encoding.CodecV2
	bodies *streamBodies
}

// Name is empty: gRPC then sends no content subtype, as without a codec.
func (receiveCodec) Name() string { return "" }

// Marshal is the "proto" codec's.
func (c receiveCodec) Marshal(v any) (mem.BufferSlice, error) { return c.next.Marshal(v) }

// Unmarshal decodes a FlightData itself and anything else through the
// "proto" codec.
func (c receiveCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if c.bodies != nil {
		c.bodies.last = nil // set again only by a body decoded below
	}
	if m, ok := v.(*flightgen.FlightData); ok && decodeFlightData(data, m, c.bodies) {
		return nil
	}
	return c.next.Unmarshal(data, v)
}

// decodeFlightData sets m from the protobuf encoding in data, as
// proto.Unmarshal would, and reports whether it could: it takes only
// messages made of the fields data_header (2), app_metadata (3) and
// data_body (1000), each length-delimited, the last of a repeated field
// winning. Anything else — a flight_descriptor (1, a message, only sent
// with DoPut), unknown fields (which the runtime keeps), a wrong wire type,
// a truncated or malformed message — returns false with m untouched, for
// the "proto" codec to decode or refuse with its own error. The body is
// copied by bodies (a stream's, see bodies.go) when it is set, else, as
// the other fields, into new memory of its length.
func decodeFlightData(data mem.BufferSlice, m *flightgen.FlightData, bodies *streamBodies) bool {
	var fields [3]struct{ start, n int } // a field not sent is as one of length 0: nil
	// First pass: the fields' places, nothing copied.
	for pos, end := 0, data.Len(); pos < end; {
		tag, k := varintAt(data, pos, end)
		if k < 0 {
			return false
		}
		num, typ := protowire.DecodeTag(tag)
		if typ != protowire.BytesType {
			return false
		}
		f := slices.Index([]protowire.Number{2, 3, 1000}, num) // data_header, app_metadata, data_body
		if f < 0 {
			return false
		}
		pos += k
		n, k := varintAt(data, pos, end)
		if k < 0 || n > uint64(end-pos-k) {
			return false
		}
		pos += k
		fields[f].start, fields[f].n = pos, int(n)
		pos += int(n)
	}
	m.Reset()
	dst := [3]*[]byte{&m.DataHeader, &m.AppMetadata, &m.DataBody}
	for i, f := range fields {
		if i == 2 && bodies != nil {
			m.DataBody = bodies.copy(data, f.start, f.n)
		} else {
			*dst[i] = copyRange(data, f.start, f.n)
		}
	}
	return true
}

// copyRange returns a new slice of exactly n bytes holding data's bytes
// [start, start+n), nil when n is 0 (as protobuf leaves an empty bytes
// field). bytes.Join writes into memory it does not clear first (make
// would clear it: a pass as long as the copy, on memory the collector
// reuses).
func copyRange(data mem.BufferSlice, start, n int) []byte {
	if n == 0 {
		return nil
	}
	var scratch [32][]byte // 512 KiB in 16 KiB data frames, on the stack
	return bytes.Join(rangePieces(scratch[:0], data, start, n), nil)
}

// rangePieces appends to dst the slices of data's buffers that hold its
// bytes [start, start+n), in order.
func rangePieces(dst [][]byte, data mem.BufferSlice, start, n int) [][]byte {
	left := n
	for _, b := range data {
		p := b.ReadOnlyData()
		if start >= len(p) {
			start -= len(p)
			continue
		}
		p = p[start:min(len(p), start+left)]
		dst = append(dst, p)
		start, left = 0, left-len(p)
		if left == 0 {
			break
		}
	}
	return dst
}

// varintAt reads the protobuf varint at pos of data, whose length is end,
// as protowire.ConsumeVarint does: its value and length, the length
// negative when it is malformed or cut short.
func varintAt(data mem.BufferSlice, pos, end int) (uint64, int) {
	var buf [binary.MaxVarintLen64]byte
	n := readRange(buf[:min(len(buf), end-pos)], data, pos)
	return protowire.ConsumeVarint(buf[:n])
}

// readRange copies data's bytes from start on into dst, as many as fit,
// and returns how many it copied.
func readRange(dst []byte, data mem.BufferSlice, start int) int {
	var scratch [32][]byte
	n := 0
	for _, piece := range rangePieces(scratch[:0], data, start, len(dst)) {
		n += copy(dst[n:], piece)
	}
	return n
}
