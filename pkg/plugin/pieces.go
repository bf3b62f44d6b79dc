package plugin

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/metadata"
)

// A frame finished from parts (a table read batch by batch) is its header,
// its parts and its footer, each in memory of its own. Joining them into
// one []byte for the response would copy the whole table once more, and
// hold it twice while doing so, only for gRPC to copy it again into its
// transport. A response (or a chunk) that gRPC marshals with the wire codec
// (wire.go) skips the join: the message carries the frame's first piece
// where the frame goes, and the codec finds the pieces after it in pieced,
// the registry of the messages on their way, writing them after the first
// as the one bytes field they are.
//
// Whoever else read such a message would see only a frame's first piece,
// so the pieces stay apart only for a request that arrived through gRPC
// with the proto content subtype while the wire codec is gRPC's "proto"
// codec (wireBound); for any other caller the frames are joined. That
// rests on two facts of the server the SDK builds (backend.Manage): it
// forces no codec (grpc.ForceServerCodec), so the registered "proto" codec
// is the one that marshals, and nothing else marshals the responses (gRPC's
// binary logging would, with the proto runtime: it is off unless
// GRPC_BINARY_LOG_FILTER is set, and would then log truncated frames).

// encodedFrame is one encoded frame as the sink hands it over: its bytes,
// or its first piece (b) and the pieces that follow it (rest); lent is set
// when some of those reference a lent record's memory (LendRecord), which
// whoever takes the frame gives back once nothing reads the pieces.
type encodedFrame struct {
	b    []byte
	rest [][]byte
	lent *lentFrame
	// spare is what the lent record's buffers hold beyond their bytes
	// (the capacity a pooling allocator rounded them up to, which the
	// pieces keep alive): counted in held.
	spare int64
}

// lentFrame is the lent record whose buffers a frame's pieces reference:
// released once, when nothing reads the pieces any more (the frame written
// out by gRPC's transport, joined into a copy, or dropped), so that the
// source may put its memory back in a pool (source.RecordLender). Nil
// releases nothing.
//
// It is also the mem.BufferPool of the buffer the wire codec wraps the
// frame's last large piece in (wireWriter.frame): the transport frees each
// buffer of a message once it has copied it out, in order, and then
// Puts it back here, which releases the record.
type lentFrame struct {
	once sync.Once
	rec  arrow.RecordBatch
}

func (l *lentFrame) release() {
	if l != nil {
		l.once.Do(l.rec.Release)
	}
}

// spareOf is what rec's buffers hold beyond their lengths.
func spareOf(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil {
				n += int64(cap(b.Buf()) - b.Len())
			}
		}
	}
	return n
}

// Get is not used: a buffer's pool only takes it back.
func (l *lentFrame) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put releases the record: the buffer wrapping the frame's last large
// piece, and so every piece before it, has been written out.
func (l *lentFrame) Put(*[]byte) { l.release() }

// held is the budget the frame holds: the memory of its bytes, their
// spare capacity included, or of its pieces, their lengths (a piece after
// the first may be a lent part's buffer, a slice of a received record's
// memory, which that record's bytes count, or of a lent record, whose
// buffer shared with other frames each counts: see source.PartLender,
// source.RecordLender and arrowipc's AppendBatchBorrowing).
func (f encodedFrame) held() int64 {
	n := heldBytes(f.b) + f.spare
	for _, p := range f.rest {
		n += int64(len(p))
	}
	return n
}

// size is the frame's length in bytes.
func (f encodedFrame) size() int { return int(frameLen(f.b, f.rest)) }

// joined is the frame as one buffer (f.b itself when it has no pieces
// after it).
func (f encodedFrame) joined() []byte {
	if len(f.rest) == 0 {
		return f.b
	}
	return bytes.Join(append([][]byte{f.b}, f.rest...), nil)
}

// piecedFrames is one response's frames kept in pieces: by the first byte
// of a frame's first piece (the slice in DataResponse.Frames, whose memory
// is the frame's own), the pieces after it and the lent record they
// reference.
type piecedFrames map[*byte]piecedFrame

type piecedFrame struct {
	rest [][]byte
	lent *lentFrame
}

// rest returns the pieces after f when f is the first piece of one of the
// frames (nil otherwise).
func (p piecedFrames) rest(f []byte) [][]byte { return p.of(f).rest }

// of returns the pieces after f and their lent record (zero when f is not
// the first piece of one of the frames).
func (p piecedFrames) of(f []byte) piecedFrame {
	if len(p) == 0 || len(f) == 0 {
		return piecedFrame{}
	}
	return p[&f[0]]
}

// release releases the lent records of the frames, for frames that will
// not be written in pieces (joined, or dropped).
func (p piecedFrames) release() {
	for _, f := range p {
		f.lent.release()
	}
}

// pieced maps the responses and chunks on their way to gRPC (weakly: one
// dropped before it was marshalled takes its entry with it, through a
// cleanup) to their frames kept in pieces; piecedCount is how many it
// holds, so that the codec looks nothing up while it holds none.
var (
	pieced      sync.Map // weak.Pointer[pluginv2.QueryDataResponse or QueryChunkedDataResponse] → piecedFrames
	piecedCount atomic.Int64
)

// keepPieced registers frames as those of m (a QueryDataResponse or a
// QueryChunkedDataResponse), until m is collected or the codec takes them
// (piecedOf).
func keepPieced[M any](m *M, frames piecedFrames) {
	key := weak.Make(m)
	piecedCount.Add(1)
	pieced.Store(key, frames)
	runtime.AddCleanup(m, func(k weak.Pointer[M]) {
		if v, ok := forgetPieced(k); ok { // dropped unwritten
			v.(piecedFrames).release()
		}
	}, key)
}

// piecedOf returns m's frames kept in pieces, and forgets them (a message
// is marshalled once).
func piecedOf[M any](m *M) piecedFrames {
	if piecedCount.Load() == 0 {
		return nil
	}
	v, ok := forgetPieced(weak.Make(m))
	if !ok {
		return nil
	}
	return v.(piecedFrames)
}

func forgetPieced(key any) (any, bool) {
	v, ok := pieced.LoadAndDelete(key)
	if ok {
		piecedCount.Add(-1)
	}
	return v, ok
}

// joinPieced replaces in resp every frame of frames by the frame joined,
// for a response that no wire codec will write, releases their lent
// records, and returns the bytes it allocated (the copies, alive beside the
// pieces until the response is dropped), for the caller to count.
func joinPieced(resp *pluginv2.QueryDataResponse, frames piecedFrames) int64 {
	defer frames.release()
	var n int64
	for _, dr := range resp.Responses {
		if dr == nil {
			continue
		}
		for i, f := range dr.Frames {
			if rest := frames.rest(f); rest != nil {
				dr.Frames[i] = encodedFrame{b: f, rest: rest}.joined()
				n += heldBytes(dr.Frames[i])
			}
		}
	}
	return n
}

// wireBound says whether the response to the request of ctx will be
// marshalled by the wire codec: the request came through a gRPC server
// with gRPC's default content subtype or "proto", and the codec registered
// as "proto" is the wire codec.
func wireBound(ctx context.Context) bool {
	if grpc.ServerTransportStreamFromContext(ctx) == nil {
		return false
	}
	if _, ok := encoding.GetCodecV2(grpcproto.Name).(wireCodec); !ok {
		return false
	}
	md, _ := metadata.FromIncomingContext(ctx)
	ct := md.Get("content-type")
	if len(ct) != 1 {
		return false
	}
	// As gRPC reads it (grpcutil.ContentSubtype): "application/grpc", then
	// nothing, or '+' or ';' and the subtype in any case.
	sub, ok := strings.CutPrefix(ct[0], "application/grpc")
	switch {
	case !ok:
		return false
	case sub == "":
		return true
	case sub[0] != '+' && sub[0] != ';':
		return false
	}
	return strings.EqualFold(sub[1:], grpcproto.Name)
}
