package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"weak"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/quiverdata/quiver/pkg/frame/frametest"
)

// piecedResponse is a response with frames kept in pieces among whole
// ones, registered for the codec, the same response with every frame
// joined, and the pieces.
func piecedResponse(r *rand.Rand) (m, joined *pluginv2.QueryDataResponse, all [][]byte) {
	m = randQueryData(r)
	if m.Responses == nil {
		m.Responses = map[string]*pluginv2.DataResponse{}
	}
	joined = proto.Clone(m).(*pluginv2.QueryDataResponse)
	if joined.Responses == nil {
		joined.Responses = map[string]*pluginv2.DataResponse{}
	}
	frames := piecedFrames{}
	for _, k := range []string{"pieced", "pieced-too"} {
		dr, jr := &pluginv2.DataResponse{Status: 200}, &pluginv2.DataResponse{Status: 200}
		for f := range 3 {
			// Pieces of every size, empty ones among them (never the first).
			pieces := [][]byte{randBytes(r, 1+r.IntN(300))}
			for range 1 + r.IntN(6) {
				pieces = append(pieces, randBytes(r, randFrameSize(r)))
			}
			if f == 1 {
				pieces = append(pieces, nil)
			}
			dr.Frames = append(dr.Frames, pieces[0])
			frames[&pieces[0][0]] = pieces[1:]
			jr.Frames = append(jr.Frames, bytes.Join(pieces, nil))
			all = append(all, pieces...)
		}
		m.Responses[k], joined.Responses[k] = dr, jr
	}
	keepPieced(m, frames)
	return m, joined, all
}

// A frame kept in pieces is written as the one bytes field it is: the
// response's bytes are the protobuf runtime's of the response with every
// frame joined, its pieces referenced, not copied; the codec takes the
// pieces once. A response the previous codec must write (unknown fields)
// gets its frames joined first.
func TestWirePiecedFrames(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	c := wireCodec{next: protoCodec(t)}
	for i := range 20 {
		m, joined, all := piecedResponse(r)
		out, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := out.Materialize(), deterministic(t, joined); !bytes.Equal(got, want) {
			t.Fatalf("response %d: %d bytes, the joined response's %d", i, len(got), len(want))
		}
		written := map[*byte]int{}
		for _, b := range out {
			if d := b.ReadOnlyData(); len(d) > 0 {
				written[&d[0]] = len(d)
			}
		}
		for k, p := range all {
			if len(p) > 0 && written[&p[0]] != len(p) {
				t.Fatalf("response %d: piece %d (%d bytes) was copied, not referenced", i, k, len(p))
			}
		}
		if piecedOf(m) != nil {
			t.Fatalf("response %d: its pieces stayed registered after it was written", i)
		}
	}
	// Through the previous codec: for unknown fields of the response, and
	// of one of its DataResponses.
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	for _, where := range []string{"response", "data response"} {
		m, joined, _ := piecedResponse(r)
		if where == "response" {
			m.ProtoReflect().SetUnknown(unknown)
			joined.ProtoReflect().SetUnknown(unknown)
		} else {
			m.Responses["pieced"].ProtoReflect().SetUnknown(unknown)
			joined.Responses["pieced"].ProtoReflect().SetUnknown(unknown)
		}
		out, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back pluginv2.QueryDataResponse
		if err := proto.Unmarshal(out.Materialize(), &back); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&back, joined) {
			t.Fatalf("through the previous codec (unknown fields of the %s): the frames kept in pieces were not joined", where)
		}
	}
}

// A chunk's frame kept in pieces is written as the one bytes field it is,
// its pieces referenced; through the previous codec, joined.
func TestWirePiecedChunk(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	c := wireCodec{next: protoCodec(t)}
	for i := range 20 {
		pieces := [][]byte{randBytes(r, 1+r.IntN(300))}
		for range r.IntN(5) {
			pieces = append(pieces, randBytes(r, randFrameSize(r)))
		}
		m := randChunk(r)
		m.Frame = pieces[0]
		joined := proto.Clone(m).(*pluginv2.QueryChunkedDataResponse)
		joined.Frame = bytes.Join(pieces, nil)
		keepPieced(m, piecedFrames{&pieces[0][0]: pieces[1:]})
		unknown := i%4 == 3
		if unknown {
			m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
		}
		out, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if unknown {
			var back pluginv2.QueryChunkedDataResponse
			if err := proto.Unmarshal(out.Materialize(), &back); err != nil || !bytes.Equal(back.Frame, joined.Frame) {
				t.Fatalf("chunk %d through the previous codec: its pieces were not joined (%v)", i, err)
			}
			continue
		}
		if got, want := out.Materialize(), deterministic(t, joined); !bytes.Equal(got, want) {
			t.Fatalf("chunk %d: %d bytes, the joined chunk's %d", i, len(got), len(want))
		}
		if piecedOf(m) != nil {
			t.Fatalf("chunk %d: its pieces stayed registered after it was written", i)
		}
	}
}

// A response dropped before it was written takes its registered pieces
// with it.
func TestPiecedGoesWithItsResponse(t *testing.T) {
	before := registered()
	func() {
		m, _, _ := piecedResponse(rand.New(rand.NewPCG(5, 6)))
		if registered() != before+1 {
			t.Fatal("not registered")
		}
		runtime.KeepAlive(m)
	}()
	for i := 0; registered() > before; i++ { // cleanups run after the collection that finds the response dead
		if i == 100 {
			t.Fatalf("%d responses' pieces still registered after %d collections", registered()-before, i)
		}
		runtime.GC()
		runtime.Gosched()
	}
}

// registered counts the responses whose pieces are registered.
func registered() int {
	n := 0
	pieced.Range(func(any, any) bool { n++; return true })
	return n
}

// piecesSeen counts the chunks sent whose frames are kept in pieces.
type piecesSeen struct {
	grpc.ServerStream
	n *int
}

func (p *piecesSeen) SendMsg(m any) error {
	if c, ok := m.(*pluginv2.QueryChunkedDataResponse); ok {
		if _, ok := pieced.Load(weak.Make(c)); ok {
			*p.n++
		}
	}
	return p.ServerStream.SendMsg(m)
}

type fakeTransportStream struct{ grpc.ServerTransportStream }

func (fakeTransportStream) Method() string { return "/pluginv2.Data/QueryData" }

// TestWireBound and TestPiecedThroughGRPC register the wire codec for the
// whole process for a while: no test of the package runs in parallel.
func TestWireBound(t *testing.T) {
	prev := protoCodec(t)
	base := grpc.NewContextWithServerTransportStream(context.Background(), fakeTransportStream{})
	with := func(ct ...string) context.Context {
		md := metadata.MD{}
		for _, v := range ct {
			md.Append("content-type", v)
		}
		return metadata.NewIncomingContext(base, md)
	}
	if wireBound(with("application/grpc")) {
		t.Error("bound to the wire codec before it is registered")
	}
	t.Cleanup(func() { encoding.RegisterCodecV2(prev) })
	if err := registerWireCodec(); err != nil {
		t.Fatal(err)
	}
	for ct, want := range map[string]bool{
		"application/grpc": true, "application/grpc+proto": true, "application/grpc+PROTO": true,
		"application/grpc;proto": true, "application/grpc+json": false, "application/grpcx": false,
		"application/json": false, "": false,
	} {
		if got := wireBound(with(ct)); got != want {
			t.Errorf("content-type %q: %v", ct, got)
		}
	}
	if wireBound(with()) || wireBound(with("application/grpc", "application/grpc")) {
		t.Error("bound without exactly one content-type")
	}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("content-type", "application/grpc"))
	if wireBound(ctx) {
		t.Error("bound without a gRPC server stream")
	}
}

// The Service through a gRPC server, as Grafana calls it: a table in parts
// arrives whole, the same frame as the Service answers in process (where
// its pieces are joined), and nothing stays registered.
func TestPiecedThroughGRPC(t *testing.T) {
	prev := protoCodec(t)
	t.Cleanup(func() { encoding.RegisterCodecV2(prev) })
	if err := registerWireCodec(); err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, partSource{mem: memory.NewGoAllocator()}, 2)
	before := registered()
	keptInPieces := 0   // responses whose frames the Service left in pieces for the codec
	chunksInPieces := 0 // chunks likewise
	client := serveData(t, s, grpc.UnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if m, ok := resp.(*pluginv2.QueryDataResponse); ok {
				if _, ok := pieced.Load(weak.Make(m)); ok {
					keptInPieces++
				}
			}
			return resp, err
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, &piecesSeen{ServerStream: ss, n: &chunksInPieces})
		}))
	pc := pluginContext(`{"codec":"none"}`)
	req := &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{
		query("A", partModel(partQuery{Parts: 7, Rows: 3000, Extra: 2})),
		query("B", partModel(partQuery{Parts: 3, Rows: 100})),
	}}
	got, err := client.QueryData(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.QueryData(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, refID := range []string{"A", "B"} {
		g, w := got.Responses[refID], want.Responses[refID]
		if g == nil || w == nil || g.Error != "" || len(g.Frames) != len(w.Frames) {
			t.Fatalf("%s: %v, in process %v", refID, g, w)
		}
		for i := range g.Frames {
			sameFrame(t, fmt.Sprintf("%s frame %d through gRPC, against the frame in process", refID, i), w.Frames[i], g.Frames[i])
		}
	}
	// The chunked call: every frame of each query (by its frame id: the
	// first is sent last), as in the unary answer.
	stream, err := client.QueryChunkedData(t.Context(), &pluginv2.QueryChunkedDataRequest{PluginContext: pc, Queries: req.Queries})
	if err != nil {
		t.Fatal(err)
	}
	chunks := map[string][][]byte{}
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Error != "" {
			t.Fatalf("chunk of %s: %s", c.RefId, c.Error)
		}
		i, err := strconv.Atoi(c.FrameId)
		if err != nil || i < 0 || i > 100 {
			t.Fatalf("chunk of %s: frame id %q", c.RefId, c.FrameId)
		}
		for len(chunks[c.RefId]) <= i {
			chunks[c.RefId] = append(chunks[c.RefId], nil)
		}
		chunks[c.RefId][i] = c.Frame
	}
	for _, refID := range []string{"A", "B"} {
		if len(chunks[refID]) != len(got.Responses[refID].Frames) {
			t.Fatalf("%s: %d chunks, %d frames", refID, len(chunks[refID]), len(got.Responses[refID].Frames))
		}
		for i, b := range chunks[refID] {
			sameFrame(t, fmt.Sprintf("%s chunk %d, against the unary frame", refID, i), got.Responses[refID].Frames[i], b)
		}
	}
	if chunksInPieces != 2 { // the table of each query
		t.Errorf("%d chunks through gRPC kept their frames in pieces, want 2", chunksInPieces)
	}
	if keptInPieces != 1 {
		t.Errorf("%d responses through gRPC kept their frames in pieces, want 1", keptInPieces)
	}
	if n := registered(); n != before {
		t.Errorf("%d responses' pieces still registered after they were sent", n-before)
	}
}

// sameFrame checks that the encoded frames want and got decode to the same
// frame, but for the query's stats.
func sameFrame(t *testing.T, what string, want, got []byte) {
	t.Helper()
	wf, err := data.UnmarshalArrowFrame(want)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	gf, err := data.UnmarshalArrowFrame(got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wf, _ = withoutStats(wf)
	gf, _ = withoutStats(gf)
	if err := frametest.Equal(wf, gf); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}
