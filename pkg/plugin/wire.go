package plugin

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quiverdata/quiver/pkg/pipeline"
)

// The Data service's answers go out without a copy of their frames.
//
// gRPC's "proto" codec marshals a message into one buffer of its whole size
// before the transport writes it: for a unary QueryData that is a second
// copy of every encoded frame of the request, alive beside the response until
// it is sent. wireCodec writes the Data service's own messages, reply and
// chunk (dataservice.go), in protobuf's wire format itself, as a
// mem.BufferSlice whose buffers are the field tags and lengths (one scratch
// buffer) and, between them, every non-empty frame's own bytes (or pieces),
// referenced, not copied. Every other message, and every Unmarshal, goes to
// the codec registered before it, unchanged.
//
// The bytes are those of proto.MarshalOptions{Deterministic: true} of the
// message with its frames whole: fields in number order, proto3 defaults
// left out, map entries in key order with key (1) and value (2) both
// written, repeated bytes one field per element. A message this writer does
// not render exactly as the protobuf runtime would (unknown fields, a string
// that is not UTF-8, which the runtime refuses) goes to the registered codec
// as well, its frames joined.
//
// The frames are referenced until gRPC has written them, which is after
// QueryData returned or Send queued the chunk: a frame handed to the response
// must not be modified or reused afterwards (the query path gives each frame
// its own memory and keeps none, package pipeline; the records a frame
// references, a table's lent parts or a lent series record, are held until
// the transport has written the frame out, see writtenPool).
type wireCodec struct {
	next encoding.CodecV2
}

// maxWireMessage is the most bytes protobuf allows in one message (2 GiB
// less one): a response above it is refused with an error saying its size.
const maxWireMessage = math.MaxInt32

// registerWireCodec puts wireCodec in the place of gRPC's "proto" codec for
// the whole process, delegating to the codec registered until now. The SDK's
// serve path builds its gRPC server with no way to add a server option
// (grpc.ForceServerCodecV2), so the registration is process-wide: the
// plugin's gRPC clients (Flight SQL) and the SDK's other services use the
// same codec, and get the previous one's behaviour through the delegation.
// It must run before any gRPC server or connection is used (gRPC's
// registry is not safe for concurrent use); registering twice is harmless.
func registerWireCodec() error {
	next := encoding.GetCodecV2(grpcproto.Name)
	if next == nil {
		return fmt.Errorf("plugin: no gRPC %q codec is registered to delegate to", grpcproto.Name)
	}
	if _, ok := next.(wireCodec); ok {
		return nil
	}
	encoding.RegisterCodecV2(wireCodec{next: next})
	return nil
}

// Name is the content subtype the codec serves: "proto".
func (c wireCodec) Name() string { return c.next.Name() }

// Marshal writes the Data service's replies and chunks itself, every other
// message through the previous codec.
func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	var (
		out  mem.BufferSlice
		ok   bool
		err  error
		done func()
	)
	switch m := v.(type) {
	case *reply:
		v, done = m.msg, m.written.take()
		out, ok, err = marshalQueryData(m.msg, m.rest.take(), done)
	case *chunk:
		v, done = m.msg, m.written.take()
		out, ok, err = marshalChunk(m.msg, m.rest.take(), done)
	}
	if !ok && done != nil {
		defer done() // the previous codec's copy, or nothing, goes out
	}
	if ok || err != nil {
		return out, err
	}
	return c.next.Marshal(v)
}

// Unmarshal is the previous codec's.
func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return c.next.Unmarshal(data, v)
}

// Field numbers of backend.proto (SDK genproto/pluginv2).
const (
	fieldResponses = 1 // QueryDataResponse.responses: map<string, DataResponse>
	fieldMapKey    = 1 // a map entry's key
	fieldMapValue  = 2 // a map entry's value

	fieldFrames      = 1 // DataResponse.frames: repeated bytes
	fieldError       = 2 // DataResponse.error
	fieldJSONMeta    = 3 // DataResponse.jsonMeta
	fieldStatus      = 4 // DataResponse.status: int32
	fieldErrorSource = 5 // DataResponse.errorSource
	fieldFormat      = 6 // DataResponse.format: enum

	chunkRefID       = 1 // QueryChunkedDataResponse.refId
	chunkFrameID     = 2 // QueryChunkedDataResponse.frameId
	chunkFrame       = 3 // QueryChunkedDataResponse.frame: bytes
	chunkError       = 4 // QueryChunkedDataResponse.error
	chunkStatus      = 5 // QueryChunkedDataResponse.status: int32
	chunkErrorSource = 6 // QueryChunkedDataResponse.errorSource
	chunkFormat      = 7 // QueryChunkedDataResponse.format: enum
)

// marshalQueryData writes m, whose frames' pieces after the first are
// pieces, or says (ok false) that the previous codec must.
//
// A frame kept in pieces (pieces.go) is written as the one bytes field it
// is: its first piece, in Frames, then the others, each referenced. When
// the previous codec must write m, those frames are joined first. Once m is
// written out, it runs done (when set and ok).
func marshalQueryData(m *pluginv2.QueryDataResponse, pieces piecedFrames, done func()) (mem.BufferSlice, bool, error) {
	if len(m.ProtoReflect().GetUnknown()) > 0 {
		joinPieced(m, pieces) // the copies are the proto codec's to hold
		return nil, false, nil
	}
	keys := make([]string, 0, len(m.Responses))
	for k, dr := range m.Responses {
		if !utf8.ValidString(k) || !plainDataResponse(dr) {
			joinPieced(m, pieces) // likewise
			return nil, false, nil
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Sizes first: every length prefix is known before its bytes.
	sizes := make([]int64, len(keys)) // each DataResponse's
	var total, frames int64
	nframes := 0 // buffers referenced
	for i, k := range keys {
		dr := m.Responses[k]
		sizes[i] = dataResponseSize(dr, pieces)
		entry := keyedSize(fieldMapKey, int64(len(k))) + keyedSize(fieldMapValue, sizes[i])
		total += keyedSize(fieldResponses, entry)
		if total > maxWireMessage {
			pieces.release() // nothing is written
			return nil, false, tooLarge(total)
		}
		for _, f := range dr.GetFrames() {
			rest := pieces.of(f).rest
			frames += frameLen(f, rest)
			if len(f) > 0 {
				nframes += 1 + len(rest)
			}
		}
	}
	w := newWireWriter(total-frames, nframes)
	for i, k := range keys {
		dr := m.Responses[k]
		entry := keyedSize(fieldMapKey, int64(len(k))) + keyedSize(fieldMapValue, sizes[i])
		w.length(fieldResponses, entry)
		w.bytes(fieldMapKey, k)
		w.length(fieldMapValue, sizes[i])
		for _, f := range dr.GetFrames() { // the frames' lent records go with the buffers returned
			pf := pieces.of(f)
			w.frame(fieldFrames, f, pf.rest, pf.lent)
		}
		w.optBytes(fieldError, dr.GetError())
		w.optBytes(fieldJSONMeta, string(dr.GetJsonMeta()))
		w.optVarint(fieldStatus, int64(dr.GetStatus()))
		w.optBytes(fieldErrorSource, dr.GetErrorSource())
		w.optVarint(fieldFormat, int64(dr.GetFormat()))
	}
	return w.finish(done), true, nil
}

// plainDataResponse says whether dr is written here exactly as the protobuf
// runtime would write it (nil is: the runtime writes an empty value).
func plainDataResponse(dr *pluginv2.DataResponse) bool {
	return dr == nil || len(dr.ProtoReflect().GetUnknown()) == 0 &&
		utf8.ValidString(dr.Error) && utf8.ValidString(dr.ErrorSource)
}

// dataResponseSize is dr's size on the wire (0 for nil), without its own
// tag and length, its frames kept in pieces whole.
func dataResponseSize(dr *pluginv2.DataResponse, pieces piecedFrames) int64 {
	var n int64
	for _, f := range dr.GetFrames() {
		n += keyedSize(fieldFrames, frameLen(f, pieces.of(f).rest))
	}
	return n + optBytesSize(fieldError, len(dr.GetError())) + optBytesSize(fieldJSONMeta, len(dr.GetJsonMeta())) +
		optVarintSize(fieldStatus, int64(dr.GetStatus())) + optBytesSize(fieldErrorSource, len(dr.GetErrorSource())) +
		optVarintSize(fieldFormat, int64(dr.GetFormat()))
}

// frameLen is the length of the frame made of f and then rest.
func frameLen(f []byte, rest [][]byte) int64 { return int64(pipeline.Frame{B: f, Rest: rest}.Size()) }

// marshalChunk writes c, whose frame's pieces after the first are in
// pieces, or says (ok false) that the previous codec must (its frame joined
// first when it is kept in pieces). Once c's frame is written out, it
// runs done (when set and ok).
func marshalChunk(c *pluginv2.QueryChunkedDataResponse, pieces piecedFrames, done func()) (mem.BufferSlice, bool, error) {
	pf := pieces.of(c.Frame)
	rest := pf.rest
	written := false
	defer func() {
		if !written {
			pf.lent.Release()
		}
	}()
	if len(c.ProtoReflect().GetUnknown()) > 0 || !utf8.ValidString(c.RefId) ||
		!utf8.ValidString(c.FrameId) || !utf8.ValidString(c.Error) || !utf8.ValidString(c.ErrorSource) {
		c.Frame = pipeline.Frame{B: c.Frame, Rest: rest}.Joined()
		return nil, false, nil
	}
	flen := frameLen(c.Frame, rest)
	total := optBytesSize(chunkRefID, len(c.RefId)) + optBytesSize(chunkFrameID, len(c.FrameId)) +
		optBytesSize(chunkFrame, int(flen)) + optBytesSize(chunkError, len(c.Error)) +
		optVarintSize(chunkStatus, int64(c.Status)) + optBytesSize(chunkErrorSource, len(c.ErrorSource)) +
		optVarintSize(chunkFormat, int64(c.Format))
	if total > maxWireMessage {
		return nil, false, tooLarge(total)
	}
	w := newWireWriter(total-flen, 1+len(rest))
	w.optBytes(chunkRefID, c.RefId)
	w.optBytes(chunkFrameID, c.FrameId)
	if flen > 0 { // proto3 bytes: left out when empty
		w.frame(chunkFrame, c.Frame, rest, pf.lent)
		written = true
	}
	w.optBytes(chunkError, c.Error)
	w.optVarint(chunkStatus, int64(c.Status))
	w.optBytes(chunkErrorSource, c.ErrorSource)
	w.optVarint(chunkFormat, int64(c.Format))
	return w.finish(done), true, nil
}

func tooLarge(n int64) error {
	return fmt.Errorf("plugin: the response is at least %d bytes, more than a protobuf message may hold (%d)", n, maxWireMessage)
}

// keyedSize is the size of a length-delimited field of n bytes.
func keyedSize(num protowire.Number, n int64) int64 {
	return int64(protowire.SizeTag(num)+protowire.SizeVarint(uint64(n))) + n
}

// optBytesSize is keyedSize, or 0 for an empty proto3 field.
func optBytesSize(num protowire.Number, n int) int64 {
	if n == 0 {
		return 0
	}
	return keyedSize(num, int64(n))
}

// optVarintSize is the size of an int32 or enum field of value v (negative
// values take ten bytes, sign-extended), or 0 for a proto3 zero.
func optVarintSize(num protowire.Number, v int64) int64 {
	if v == 0 {
		return 0
	}
	return int64(protowire.SizeTag(num) + protowire.SizeVarint(uint64(v)))
}

// wireWriter appends everything but the frames to one scratch buffer, sized
// beforehand, and cuts it into buffers around the frames, which are
// referenced as they are.
type wireWriter struct {
	scratch []byte
	start   int // where the scratch's pending segment begins
	out     mem.BufferSlice
	last    int    // the last frame buffer in out that gRPC counts references of; -1 for none
	wraps   []wrap // the buffers in out to wrap, in order (finish)
}

// wrap says that the buffer at out[at] returns to pool once written.
type wrap struct {
	at   int
	pool writtenPool
}

func newWireWriter(scratch int64, frames int) *wireWriter {
	return &wireWriter{
		scratch: make([]byte, 0, int(scratch)),
		out:     make(mem.BufferSlice, 0, 2*frames+1),
		last:    -1,
	}
}

func (w *wireWriter) length(num protowire.Number, n int64) {
	w.scratch = protowire.AppendTag(w.scratch, num, protowire.BytesType)
	w.scratch = protowire.AppendVarint(w.scratch, uint64(n))
}

func (w *wireWriter) bytes(num protowire.Number, b string) {
	w.length(num, int64(len(b)))
	w.scratch = append(w.scratch, b...)
}

func (w *wireWriter) optBytes(num protowire.Number, b string) {
	if len(b) > 0 {
		w.bytes(num, b)
	}
}

func (w *wireWriter) optVarint(num protowire.Number, v int64) {
	if v != 0 {
		w.scratch = protowire.AppendTag(w.scratch, num, protowire.VarintType)
		w.scratch = protowire.AppendVarint(w.scratch, uint64(v))
	}
}

// frame writes the tag and length of the frame made of f and then rest,
// then each as its own buffer. The last of them large enough for gRPC to
// count its references (every lent piece is) will be wrapped (finish) in
// a buffer whose return to its pool, once the transport has written it
// and everything before it, releases lent; with none, nothing references
// lent's record and it is released now.
func (w *wireWriter) frame(num protowire.Number, f []byte, rest [][]byte, lent *pipeline.Lent) {
	n := frameLen(f, rest)
	w.length(num, n)
	if n == 0 {
		lent.Release()
		return
	}
	w.cut()
	last := -1 // in w.out
	add := func(p []byte) {
		if len(p) > 0 {
			if !mem.IsBelowBufferPoolingThreshold(cap(p)) {
				last = len(w.out)
			}
			w.out = append(w.out, mem.SliceBuffer(p)) // referenced, a buffer of its own
		}
	}
	add(f)
	for _, p := range rest {
		add(p)
	}
	switch {
	case last < 0:
		lent.Release()
	default:
		w.last = last
		if lent != nil {
			w.wraps = append(w.wraps, wrap{at: last, pool: writtenPool{lent: lent}})
		}
	}
}

// cut ends the pending scratch segment as a buffer of its own.
func (w *wireWriter) cut() {
	if end := len(w.scratch); end > w.start {
		w.out = append(w.out, mem.SliceBuffer(w.scratch[w.start:end:end]))
		w.start = end
	}
}

// finish returns the message's buffers, the frames' last pooled pieces
// wrapped (frame), and done (when set) run once the last pooled buffer of
// the message is written out: after everything else it references, as the
// transport frees a message's buffers in order. With no pooled buffer, the
// message references nothing that needs to outlive this call, and done runs
// now.
func (w *wireWriter) finish(done func()) mem.BufferSlice {
	w.cut()
	if done != nil {
		switch n := len(w.wraps); {
		case w.last < 0:
			done()
		case n > 0 && w.wraps[n-1].at == w.last:
			w.wraps[n-1].pool.done = done
		default:
			w.wraps = append(w.wraps, wrap{at: w.last, pool: writtenPool{done: done}})
		}
	}
	for _, wr := range w.wraps {
		p := []byte(w.out[wr.at].(mem.SliceBuffer))
		w.out[wr.at] = mem.NewBuffer(&p, wr.pool)
	}
	return w.out
}
