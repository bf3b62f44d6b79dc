package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcmem "google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/pipeline"
)

// piecedResponse is a reply with frames kept in pieces among whole ones,
// the same response with every frame joined, and the pieces.
func piecedResponse(r *rand.Rand) (rep *reply, joined *pluginv2.QueryDataResponse, all [][]byte) {
	m := randQueryData(r)
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
			frames[&pieces[0][0]] = piecedFrame{rest: pieces[1:]}
			jr.Frames = append(jr.Frames, bytes.Join(pieces, nil))
			all = append(all, pieces...)
		}
		m.Responses[k], joined.Responses[k] = dr, jr
	}
	return &reply{msg: m, rest: newTails(frames)}, joined, all
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
		rest := m.rest
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
		if rest.take() != nil {
			t.Fatalf("response %d: its pieces were left for another to take after it was written", i)
		}
	}
	// Through the previous codec: for unknown fields of the response, and
	// of one of its DataResponses.
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	for _, where := range []string{"response", "data response"} {
		m, joined, _ := piecedResponse(r)
		if where == "response" {
			m.msg.ProtoReflect().SetUnknown(unknown)
			joined.ProtoReflect().SetUnknown(unknown)
		} else {
			m.msg.Responses["pieced"].ProtoReflect().SetUnknown(unknown)
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
		ch := &chunk{msg: m, rest: newTails(piecedFrames{&pieces[0][0]: {rest: pieces[1:]}})}
		unknown := i%4 == 3
		if unknown {
			m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
		}
		out, err := c.Marshal(ch)
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
		if ch.rest.take() != nil {
			t.Fatalf("chunk %d: its pieces were left for another to take after it was written", i)
		}
	}
}

// piecesSeen counts the chunks sent whose frames are kept in pieces.
type piecesSeen struct {
	grpc.ServerStream
	n *int
}

func (p *piecesSeen) SendMsg(m any) error {
	if c, ok := m.(*chunk); ok && c.rest != nil {
		*p.n++
	}
	return p.ServerStream.SendMsg(m)
}

// The Service through a gRPC server, as Grafana calls it: a table in parts
// arrives whole, the same frame as the Service answers in process (where
// its pieces are joined). TestPiecedThroughGRPC registers the wire codec
// for the whole process for a while: no test of the package runs in
// parallel.
func TestPiecedThroughGRPC(t *testing.T) {
	prev := protoCodec(t)
	t.Cleanup(func() { encoding.RegisterCodecV2(prev) })
	if err := registerWireCodec(); err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, partSource{mem: memory.NewGoAllocator()}, 2)
	keptInPieces := 0   // responses whose frames the Service left in pieces for the codec
	chunksInPieces := 0 // chunks likewise
	client := serveData(t, s, grpc.UnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if r, ok := resp.(*reply); ok && r.rest != nil {
				keptInPieces++
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

// lentRecord is a record of one int64 column of n rows in checked memory,
// and that column's values buffer: the memory a lent frame's piece
// references.
func lentRecord(t *testing.T, n int) (arrow.RecordBatch, *memory.CheckedAllocator, []byte) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(n))
	return rec, mem, col.Data().Buffers()[1].Bytes()
}

// A lent record stays held while its frame's pieces may still be read and
// is released once, when nothing reads them any more: once the transport
// has read the frame's last large piece out of the wire codec's buffers
// (not before), when the frame is joined instead, when whoever holds an
// unwritten message releases its pieces, or when the codec refuses it.
func TestLentFrameReleasedOnceWritten(t *testing.T) {
	c := wireCodec{next: protoCodec(t)}
	// resp returns a response of one frame: a header of its own, the lent
	// record's values and a small tail.
	resp := func() (*pluginv2.QueryDataResponse, *memory.CheckedAllocator, piecedFrames, []byte) {
		rec, mem, vals := lentRecord(t, 1024)
		head, tail := bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 40)
		frames := piecedFrames{&head[0]: {rest: [][]byte{vals, tail}, lent: pipeline.NewLent(rec)}}
		m := &pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{
			"A": {Frames: [][]byte{head}, Status: 200}}}
		return m, mem, frames, vals
	}
	held := func(mem *memory.CheckedAllocator) bool { return mem.CurrentAlloc() > 0 }

	t.Run("written", func(t *testing.T) {
		m, mem, frames, vals := resp()
		out, err := c.Marshal(&reply{msg: m, rest: newTails(frames)})
		if err != nil {
			t.Fatal(err)
		}
		if !held(mem) {
			t.Fatal("released when marshalled, before the transport read it")
		}
		// As gRPC: the transport's reader takes its references, the
		// sender drops its own, and the reader reads up to the end of the
		// values, then on.
		end := 0 // where the values end in the message
		for _, b := range out {
			d := b.ReadOnlyData()
			end += len(d)
			if len(d) > 0 && &d[0] == &vals[0] {
				break
			}
		}
		r := out.Reader()
		out.Free()
		if !held(mem) {
			t.Fatal("released before the transport read it")
		}
		if _, err := io.ReadFull(r, make([]byte, end-1)); err != nil {
			t.Fatal(err)
		}
		if !held(mem) {
			t.Fatal("released before its last large piece was read")
		}
		if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if held(mem) {
			t.Error("still held once its pieces were read")
		}
		r.Close()
		mem.AssertSize(t, 0)
		if got := len(vals); got != 8*1024 {
			t.Errorf("the values are %d bytes", got)
		}
	})
	t.Run("joined", func(t *testing.T) {
		m, mem, frames, vals := resp()
		joinPieced(m, frames)
		if held(mem) {
			t.Error("still held once its frame was joined")
		}
		if got := m.Responses["A"].Frames[0]; len(got) != 100+len(vals)+40 {
			t.Errorf("the joined frame has %d bytes", len(got))
		}
	})
	t.Run("refused", func(t *testing.T) {
		m, mem, frames, _ := resp()
		m.Responses["A"].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
		if _, err := c.Marshal(&reply{msg: m, rest: newTails(frames)}); err != nil {
			t.Fatal(err)
		}
		if held(mem) {
			t.Error("still held once the previous codec wrote the response, joined")
		}
	})
	t.Run("unwritten", func(t *testing.T) {
		_, mem, frames, _ := resp()
		rest := newTails(frames)
		rest.take().release()
		if held(mem) {
			t.Error("still held once the unwritten message's pieces were released")
		}
		if rest.take() != nil {
			t.Error("the pieces were taken twice")
		}
	})
	t.Run("chunk", func(t *testing.T) {
		m, mem, frames, _ := resp()
		head := m.Responses["A"].Frames[0]
		ch := &chunk{msg: &pluginv2.QueryChunkedDataResponse{RefId: "A", Frame: head}, rest: newTails(piecedFrames{&head[0]: frames[&head[0]]})}
		out, err := c.Marshal(ch)
		if err != nil {
			t.Fatal(err)
		}
		if !held(mem) {
			t.Fatal("released when marshalled, before the transport read it")
		}
		out.Free()
		if held(mem) {
			t.Error("still held once its buffers were freed")
		}
	})
}

// A chunk's or a reply's afterWrite (its frames' budget) runs once, and
// only once gRPC is done with the frames: when the transport frees the
// message's last pooled buffer, at once for a frame too small to be pooled or a message the
// previous codec copies, and by the outbox for a chunk no codec took.
func TestChunkWrittenOnce(t *testing.T) {
	c := wireCodec{next: protoCodec(t)}
	chunkOf := func(refID string, frame []byte) (*chunk, *int) {
		runs := new(int)
		return &chunk{msg: &pluginv2.QueryChunkedDataResponse{RefId: refID, Frame: frame}, written: newAfterWrite(func() { *runs++ })}, runs
	}
	large := make([]byte, 64<<10)

	ch, runs := chunkOf("A", large)
	replyRuns := 0
	rp := &reply{msg: &pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{
		"A": {Frames: [][]byte{large, make([]byte, 100)}}, "B": {Frames: [][]byte{make([]byte, 10)}},
	}}, written: newAfterWrite(func() { replyRuns++ })}
	for what, m := range map[string]struct {
		msg  any
		runs *int
	}{"a chunk's large frame": {ch, runs}, "a reply with a large frame": {rp, &replyRuns}} {
		out, err := c.Marshal(m.msg)
		if err != nil {
			t.Fatal(err)
		}
		if *m.runs != 0 {
			t.Fatalf("%s: the budget went back when it was marshalled, before the transport wrote it", what)
		}
		out.Free()
		if *m.runs != 1 {
			t.Errorf("%s: afterWrite ran %d times once its buffers were freed, want once", what, *m.runs)
		}
	}

	for name, frame := range map[string][]byte{"small": make([]byte, 100), "empty": nil} {
		ch, runs := chunkOf("A", frame)
		out, err := c.Marshal(ch)
		if err != nil {
			t.Fatal(err)
		}
		if *runs != 1 {
			t.Errorf("%s frame: afterWrite ran %d times when marshalled, want once: nothing of it is referenced", name, *runs)
		}
		out.Free()
		if *runs != 1 {
			t.Errorf("%s frame: afterWrite ran %d times, want once", name, *runs)
		}
	}

	ch, runs = chunkOf("\xff", large) // not UTF-8: the previous codec copies it
	if _, err := c.Marshal(ch); err == nil {
		t.Fatal("a refId that is not UTF-8 was marshalled")
	}
	if *runs != 1 {
		t.Errorf("a message the previous codec took: afterWrite ran %d times, want once", *runs)
	}

	ch, runs = chunkOf("A", large) // never marshalled: the outbox runs it
	if done := ch.written.take(); done != nil {
		done()
	}
	if _, err := c.Marshal(ch); err != nil {
		t.Fatal(err)
	}
	if *runs != 1 || ch.written.take() != nil {
		t.Errorf("afterWrite ran %d times when taken before the codec saw it, want once", *runs)
	}
}

// The wire codec releases a lent record when the transport returns the
// frame's last pooled buffer (wireWriter.frame): every piece that
// references lent memory must be one gRPC pools and returns, else a piece
// after that buffer would be read after its memory went back to be reused
// by another query. Lent pieces are at least arrowipc.MinBorrow bytes.
func TestLentPiecesArePooledByGRPC(t *testing.T) {
	if grpcmem.IsBelowBufferPoolingThreshold(arrowipc.MinBorrow) {
		t.Fatalf("gRPC does not pool buffers of %d bytes (arrowipc.MinBorrow): a lent piece could be read after its record is released; raise MinBorrow above gRPC's pooling threshold", arrowipc.MinBorrow)
	}
	b := make([]byte, arrowipc.MinBorrow)
	freed := false
	buf := grpcmem.NewBuffer(&b, poolFunc(func(*[]byte) { freed = true }))
	buf.Free()
	if !freed {
		t.Fatalf("a %d-byte buffer was not returned to its pool when freed: gRPC does not count its references", arrowipc.MinBorrow)
	}
}

type poolFunc func(*[]byte)

func (f poolFunc) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (f poolFunc) Put(b *[]byte)     { f(b) }
