package plugin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"unsafe"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// protoCodec is gRPC's own "proto" codec: the tests run no Serve, so it is
// still the registered one.
func protoCodec(t testing.TB) encoding.CodecV2 {
	t.Helper()
	c := encoding.GetCodecV2(grpcproto.Name)
	if c == nil {
		t.Fatal("no proto codec registered")
	}
	if _, ok := c.(wireCodec); ok {
		t.Fatal("the registered proto codec is already wireCodec")
	}
	return c
}

// deterministic is the protobuf runtime's bytes of m, map keys sorted.
func deterministic(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// randText returns short text: empty, ASCII, or with multi-byte runes.
func randText(r *rand.Rand) string {
	const alphabet = "abcXYZ_-09 é€😀"
	runes := []rune(alphabet)
	var sb strings.Builder
	for range r.IntN(4) * r.IntN(12) {
		sb.WriteRune(runes[r.IntN(len(runes))])
	}
	return sb.String()
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randFrameSize picks empty, small, around the varint boundaries, and now
// and then large frames.
func randFrameSize(r *rand.Rand) int {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return 127 + r.IntN(3) // one- to two-byte length
	case 2:
		return 16383 + r.IntN(3) // two- to three-byte length
	case 3:
		return 64<<10 + r.IntN(256<<10)
	default:
		return r.IntN(3000)
	}
}

func randInt32(r *rand.Rand) int32 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return -int32(r.IntN(1000)) - 1 // ten bytes on the wire
	case 2:
		return int32(r.Uint32())
	default:
		return []int32{200, 207, 400, 500, 504}[r.IntN(5)]
	}
}

func randDataResponse(r *rand.Rand) *pluginv2.DataResponse {
	if r.IntN(12) == 0 {
		return nil
	}
	dr := &pluginv2.DataResponse{}
	if n := r.IntN(5); n > 0 || r.IntN(2) == 0 {
		dr.Frames = make([][]byte, n)
		for i := range dr.Frames {
			dr.Frames[i] = randBytes(r, randFrameSize(r))
		}
	}
	if r.IntN(3) == 0 {
		dr.Error = randText(r)
	}
	if r.IntN(3) == 0 {
		dr.JsonMeta = randBytes(r, r.IntN(40))
	}
	dr.Status = randInt32(r)
	if r.IntN(3) == 0 {
		dr.ErrorSource = []string{"", "plugin", "downstream", randText(r)}[r.IntN(4)]
	}
	dr.Format = pluginv2.DataFrameFormat(randInt32(r) % 3)
	return dr
}

func randQueryData(r *rand.Rand) *pluginv2.QueryDataResponse {
	m := &pluginv2.QueryDataResponse{}
	if n := r.IntN(7); n > 0 || r.IntN(2) == 0 {
		m.Responses = make(map[string]*pluginv2.DataResponse, n)
		for range n {
			key := []string{"A", "B", "C", "", "refId-" + randText(r)}[r.IntN(5)]
			m.Responses[key] = randDataResponse(r)
		}
	}
	return m
}

func randChunk(r *rand.Rand) *pluginv2.QueryChunkedDataResponse {
	c := &pluginv2.QueryChunkedDataResponse{RefId: randText(r), FrameId: randText(r)}
	if r.IntN(4) > 0 {
		c.Frame = randBytes(r, randFrameSize(r))
	}
	if r.IntN(3) == 0 {
		c.Error = randText(r)
	}
	c.Status = randInt32(r)
	if r.IntN(3) == 0 {
		c.ErrorSource = randText(r)
	}
	c.Format = pluginv2.DataFrameFormat(randInt32(r) % 3)
	return c
}

// checkWire checks that out is m written by wireCodec itself: the protobuf
// runtime's deterministic bytes, decoding back to m, and every non-empty
// frame in frames one buffer of out that is the frame's own memory.
func checkWire(t *testing.T, m proto.Message, out mem.BufferSlice, frames [][]byte) {
	t.Helper()
	got := out.Materialize()
	if want := deterministic(t, m); !bytes.Equal(got, want) {
		t.Fatalf("bytes differ from the protobuf runtime's:\n got %x\nwant %x", head(got), head(want))
	}
	back := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(got, back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !proto.Equal(back, m) {
		t.Fatal("the message decoded from the codec's bytes is not the original")
	}
	refs := make(map[*byte]int) // the buffers' first bytes and lengths
	for _, b := range out {
		d := b.ReadOnlyData()
		if len(d) > 0 {
			refs[unsafe.SliceData(d)] = len(d)
		}
	}
	for i, f := range frames {
		if len(f) == 0 {
			continue
		}
		if n, ok := refs[unsafe.SliceData(f)]; !ok || n != len(f) {
			t.Fatalf("frame %d (%d bytes) was copied: no buffer is its memory", i, len(f))
		}
	}
}

// head keeps a failure's message short.
func head(b []byte) []byte { return b[:min(len(b), 96)] }

func framesOf(m *pluginv2.QueryDataResponse) [][]byte {
	var fs [][]byte
	for _, dr := range m.GetResponses() {
		fs = append(fs, dr.GetFrames()...)
	}
	return fs
}

func TestWireQueryDataIsTheProtobufRuntimes(t *testing.T) {
	c := wireCodec{next: protoCodec(t)}
	r := rand.New(rand.NewPCG(8, 5))
	for i := range 400 {
		m := randQueryData(r)
		out, ok, err := marshalQueryData(m, nil, nil)
		if err != nil || !ok {
			t.Fatalf("response %d: written here %v, error %v", i, ok, err)
		}
		checkWire(t, m, out, framesOf(m))
		viaCodec, err := c.Marshal(&reply{msg: m})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(viaCodec.Materialize(), out.Materialize()) {
			t.Fatalf("response %d: Marshal differs from marshalQueryData", i)
		}
	}
}

func TestWireChunkIsTheProtobufRuntimes(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 7))
	for i := range 400 {
		m := randChunk(r)
		out, ok, err := marshalChunk(m, nil, nil)
		if err != nil || !ok {
			t.Fatalf("chunk %d: written here %v, error %v", i, ok, err)
		}
		checkWire(t, m, out, [][]byte{m.Frame})
	}
}

// The fields of every kind, at values whose encodings differ in length.
func TestWireEdgeValues(t *testing.T) {
	for _, dr := range []*pluginv2.DataResponse{
		nil,
		{},
		{Frames: [][]byte{nil, {}, {1}}},
		{Status: -1, Format: -1},
		{Status: 1<<31 - 1, Format: pluginv2.DataFrameFormat_JSON},
		{Error: "é", JsonMeta: []byte{0}, ErrorSource: "downstream"},
		{Frames: [][]byte{make([]byte, 1<<21)}, Status: 200},
	} {
		for _, key := range []string{"", "A", strings.Repeat("k", 200)} {
			m := &pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{key: dr}}
			out, ok, err := marshalQueryData(m, nil, nil)
			if err != nil || !ok {
				t.Fatalf("written here %v, error %v", ok, err)
			}
			checkWire(t, m, out, framesOf(m))
		}
	}
	for _, m := range []*pluginv2.QueryDataResponse{{}, {Responses: map[string]*pluginv2.DataResponse{}}} {
		out, ok, err := marshalQueryData(m, nil, nil)
		if err != nil || !ok || out.Len() != 0 {
			t.Fatalf("empty response: written here %v, %d bytes, error %v", ok, out.Len(), err)
		}
	}
}

// The messages wireCodec does not write go through the previous codec: the
// same bytes, the same errors.
func TestWireOtherMessagesGoThroughUnchanged(t *testing.T) {
	next := protoCodec(t)
	c := wireCodec{next: next}
	if c.Name() != grpcproto.Name {
		t.Fatalf("Name() = %q", c.Name())
	}
	unknown := &pluginv2.DataResponse{Status: 200}
	unknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	chunkUnknown := &pluginv2.QueryChunkedDataResponse{RefId: "A"}
	chunkUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 42, protowire.VarintType), 1))
	st, err := structpb.NewStruct(map[string]any{"a": 1.5}) // one entry: the proto codec's map order varies
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{
		&pluginv2.QueryDataRequest{Queries: []*pluginv2.DataQuery{{RefId: "A", Json: []byte(`{"x":1}`)}}},
		&pluginv2.CheckHealthResponse{Status: pluginv2.CheckHealthResponse_OK, Message: "ok"},
		&pluginv2.DataResponse{Frames: [][]byte{{1, 2, 3}}}, // not a response of the service
		&pluginv2.CallResourceResponse{Code: 200, Body: []byte("body")},
		st,
		&pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{"A": unknown}},
		chunkUnknown,
		(*pluginv2.QueryDataResponse)(nil),
		(*pluginv2.QueryChunkedDataResponse)(nil),
	} {
		want, wantErr := next.Marshal(v)
		got, gotErr := c.Marshal(v)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%T: error %v, the proto codec's %v", v, gotErr, wantErr)
		}
		if !bytes.Equal(got.Materialize(), want.Materialize()) {
			t.Fatalf("%T: bytes differ from the proto codec's", v)
		}
		if m, ok := v.(proto.Message); ok && m.ProtoReflect().IsValid() {
			back := m.ProtoReflect().New().Interface()
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(got.Materialize())}, back); err != nil {
				t.Fatalf("%T: unmarshal: %v", v, err)
			}
			if !proto.Equal(back, m) {
				t.Fatalf("%T: unmarshal through wireCodec gives another message", v)
			}
		}
	}
	// What the protobuf runtime refuses is refused as it was.
	for _, v := range []any{
		&pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{"\xff": {}}},
		&pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{"A": {Error: "bad \xc3"}}},
		&pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{"A": {ErrorSource: "\xff"}}},
		&pluginv2.QueryChunkedDataResponse{RefId: "\xff"},
		&pluginv2.QueryChunkedDataResponse{FrameId: "\xff"},
		&pluginv2.QueryChunkedDataResponse{Error: "\xff"},
		&pluginv2.QueryChunkedDataResponse{ErrorSource: "\xff"},
		struct{}{},
	} {
		_, wantErr := next.Marshal(v)
		_, gotErr := c.Marshal(v)
		if wantErr == nil || gotErr == nil || gotErr.Error() != wantErr.Error() {
			t.Fatalf("%T: error %v, the proto codec's %v", v, gotErr, wantErr)
		}
		// The same messages as the service's own reply and chunk.
		switch m := v.(type) {
		case *pluginv2.QueryDataResponse:
			v = &reply{msg: m}
		case *pluginv2.QueryChunkedDataResponse:
			v = &chunk{msg: m}
		default:
			continue
		}
		if _, gotErr := c.Marshal(v); gotErr == nil || gotErr.Error() != wantErr.Error() {
			t.Fatalf("%T: error %v, the proto codec's %v", v, gotErr, wantErr)
		}
	}
}

func TestRegisterWireCodec(t *testing.T) {
	prev := protoCodec(t)
	t.Cleanup(func() { encoding.RegisterCodecV2(prev) })
	for range 2 { // twice: the second leaves the first in place
		if err := registerWireCodec(); err != nil {
			t.Fatal(err)
		}
		got, ok := encoding.GetCodecV2(grpcproto.Name).(wireCodec)
		if !ok || got.next != prev {
			t.Fatalf("registered %T, delegating to %v", encoding.GetCodecV2(grpcproto.Name), got.next)
		}
	}
}

// wireServer answers with fixed responses.
type wireServer struct {
	resp *pluginv2.QueryDataResponse
	sent []*pluginv2.QueryChunkedDataResponse
}

func (s *wireServer) reply(context.Context, *pluginv2.QueryDataRequest) (*reply, error) {
	return &reply{msg: s.resp}, nil
}

func (s *wireServer) chunks(_ *pluginv2.QueryChunkedDataRequest, ss grpc.ServerStream) error {
	for _, c := range s.sent {
		if err := ss.SendMsg(&chunk{msg: c}); err != nil {
			return err
		}
	}
	return nil
}

// serveData serves srv on 127.0.0.1 with opts (messages up to 64 MiB) for
// the test, and returns a client of it.
func serveData(t *testing.T, srv dataServer, opts ...grpc.ServerOption) pluginv2.DataClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20)}, opts...)...)
	gs.RegisterService(&dataService, srv)
	done := make(chan error, 1)
	go func() { done <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Error(err)
		}
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pluginv2.NewDataClient(conn)
}

// Through a gRPC server that uses wireCodec and a client that uses the
// proto codec, as Grafana does: both calls arrive whole.
func TestWireThroughGRPC(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	srv := &wireServer{resp: randQueryData(r)}
	srv.resp.Responses = map[string]*pluginv2.DataResponse{"big": {Frames: [][]byte{randBytes(r, 5<<20), {}, randBytes(r, 70000)}, Status: 200}}
	for range 4 {
		maps := randQueryData(r)
		for k, v := range maps.Responses {
			srv.resp.Responses[k] = v
		}
	}
	for range 50 {
		srv.sent = append(srv.sent, randChunk(r))
	}
	client := serveData(t, srv, grpc.ForceServerCodecV2(wireCodec{next: protoCodec(t)}))
	ctx := t.Context()
	for range 3 {
		got, err := client.QueryData(ctx, &pluginv2.QueryDataRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, srv.resp) {
			t.Fatal("QueryData: the client received another response")
		}
	}
	stream, err := client.QueryChunkedData(ctx, &pluginv2.QueryChunkedDataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if i != len(srv.sent) {
				t.Fatalf("%d chunks received of %d", i, len(srv.sent))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(srv.sent) || !proto.Equal(c, srv.sent[i]) {
			t.Fatalf("chunk %d differs", i)
		}
	}
}

// Any message the protobuf runtime decodes is written as it writes it, or
// (unknown fields) handed on and written by the proto codec.
func FuzzWireQueryData(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		m := randQueryData(r)
		for _, dr := range m.Responses {
			for i, fr := range dr.GetFrames() {
				dr.Frames[i] = fr[:min(len(fr), 64)] // small seeds fuzz fast
			}
		}
		f.Add(deterministic(f, m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m pluginv2.QueryDataResponse
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		checkFuzzed(t, &m)
	})
}

func FuzzWireChunk(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		c := randChunk(r)
		c.Frame = c.Frame[:min(len(c.Frame), 64)] // small seeds fuzz fast
		f.Add(deterministic(f, c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m pluginv2.QueryChunkedDataResponse
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		checkFuzzed(t, &m)
	})
}

func checkFuzzed(t *testing.T, m proto.Message) {
	var v any
	switch m := m.(type) {
	case *pluginv2.QueryDataResponse:
		v = &reply{msg: m}
	case *pluginv2.QueryChunkedDataResponse:
		v = &chunk{msg: m}
	}
	out, err := wireCodec{next: protoCodec(t)}.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Materialize()
	if hasUnknown(m) {
		back := m.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(got, back); err != nil || !proto.Equal(back, m) {
			t.Fatalf("handed-on message does not decode back: %v", err)
		}
		return
	}
	if want := deterministic(t, m); !bytes.Equal(got, want) {
		t.Fatalf("bytes differ from the protobuf runtime's:\n got %x\nwant %x", head(got), head(want))
	}
}

// hasUnknown says whether m or a DataResponse in it has unknown fields.
func hasUnknown(m proto.Message) bool {
	if len(m.ProtoReflect().GetUnknown()) > 0 {
		return true
	}
	if q, ok := m.(*pluginv2.QueryDataResponse); ok {
		for _, dr := range q.Responses {
			if dr != nil && len(dr.ProtoReflect().GetUnknown()) > 0 {
				return true
			}
		}
	}
	return false
}
