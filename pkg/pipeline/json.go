package pipeline

import (
	"bytes"
	"slices"

	"github.com/quiverdata/quiver/pkg/frame"
)

// This file is the sink's JSON path: a frame written as the SDK's
// data-frame JSON when Grafana asked for it (Query.JSON).

// marshalJSON writes j as the SDK's data-frame JSON (frame.JSONWriter,
// byte for byte the SDK's MarshalJSON). A frame that fits a pooled scratch
// buffer is written there and copied into memory of exactly its size, in
// memory not cleared first (bytes.Join of more than one piece allocates so;
// make would clear it), so the scratch grows once per pooled writer, not
// per frame. A larger record (a table's whole result) is written into
// memory of its own, sized once by frame.JSONSizeHint, so that no buffer of
// hundreds of megabytes is grown and copied again and again, and handed
// over as it is, or copied to its size a megabyte at a time when the hint
// was more than a third above it. A single copy of many megabytes would
// also hold up the garbage collector, which cannot preempt a copy.
// held, the job's budget, grows to count that memory, and the copy while
// both exist, before either is made (taken without waiting: a worker must
// not wait); the caller fits it to the frame once written. The budget a
// frame holds is its capacity (Frame.Memory).
func (k *sink) marshalJSON(j job, held *Held) ([]byte, error) {
	in := frame.Input{Frame: j.frame, Record: j.rec}
	s := k.p.jsonScratches.Get().(*jsonScratch)
	defer func() {
		if cap(s.buf) > maxJSONScratch {
			s.buf = nil
		}
		k.p.jsonScratches.Put(s)
	}()
	if hint := int64(frame.JSONSizeHint(in)); hint > maxJSONScratch {
		held.Fit(max(held.Bytes(), hint))
		b, err := s.w.Append(make([]byte, 0, hint), in)
		if err != nil || cap(b)-len(b) <= len(b)/3 {
			return b, err
		}
		held.Fit(held.Bytes() + int64(len(b)))
		return joinChunks(b), nil
	}
	var err error
	if s.buf, err = s.w.Append(s.buf[:0], in); err != nil {
		return nil, err
	}
	s.pieces[0] = s.buf
	out := bytes.Join(s.pieces[:], nil)
	s.pieces[0] = nil
	return out, nil
}

// joinChunks copies b into memory of exactly its size, not cleared first,
// a megabyte at a time.
func joinChunks(b []byte) []byte {
	const chunk = 1 << 20
	pieces := slices.AppendSeq(make([][]byte, 0, len(b)/chunk+2), slices.Chunk(b, chunk))
	return bytes.Join(append(pieces, nil), nil) // two pieces at least: see marshalJSON
}

// jsonScratch is a JSON frame writer and the buffer it writes into.
type jsonScratch struct {
	w      frame.JSONWriter
	buf    []byte
	pieces [2][]byte // the frame and nothing, for bytes.Join
}

// maxJSONScratch is the largest scratch buffer kept for the next frame: a
// larger one (a frame of many megabytes) goes back to the garbage collector.
const maxJSONScratch = 4 << 20
