package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/pipeline"
)

// A frame finished from parts (a table read batch by batch) is its header,
// its parts and its footer, each in memory of its own. Joining them into
// one []byte for the response would copy the whole table once more, and
// hold it twice while doing so, only for gRPC to copy it again into its
// transport. So the frame stays in pieces: the protobuf message carries its
// first piece where the frame goes, and the reply or chunk that carries the
// message (dataservice.go) carries the pieces after it, which the wire codec
// (wire.go) writes after the first as the one bytes field they are, or
// joins (joinPieced) for a message it hands to the proto codec.

// piecedFrames is one response's frames kept in pieces: by the first byte
// of a frame's first piece (the slice in DataResponse.Frames, whose memory
// is the frame's own), the pieces after it and the lent record they
// reference.
type piecedFrames map[*byte]piecedFrame

type piecedFrame struct {
	rest [][]byte
	lent *pipeline.Lent
}

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
		f.lent.Release()
	}
}

// joinPieced replaces in resp every frame of frames by the frame joined,
// for a response that the wire codec hands to the registered codec, and
// releases their lent records.
func joinPieced(resp *pluginv2.QueryDataResponse, frames piecedFrames) {
	defer frames.release()
	for _, dr := range resp.Responses {
		if dr == nil {
			continue
		}
		for i, f := range dr.Frames {
			if rest := frames.of(f).rest; rest != nil {
				dr.Frames[i] = pipeline.Frame{B: f, Rest: rest}.Joined()
			}
		}
	}
}

// writtenPool is the mem.BufferPool of the buffer the wire codec wraps a
// frame's last pooled piece in (wireWriter.frame): the transport frees each
// buffer of a message once it has copied it out, in order, and then Puts
// it back here, which releases the lent record the pieces reference and
// runs done (a chunk's afterWrite), each when set.
type writtenPool struct {
	lent *pipeline.Lent
	done func()
}

// Get is not used: a buffer's pool only takes it back.
func (p writtenPool) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put: the buffer wrapping the frame's last pooled piece, and so every
// piece before it, has been written out.
func (p writtenPool) Put(*[]byte) {
	p.lent.Release()
	if p.done != nil {
		p.done()
	}
}
