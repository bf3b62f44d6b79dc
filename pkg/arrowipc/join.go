package arrowipc

import (
	"bytes"
	"slices"
)

// joiner puts a file, or one batch of a File, together from pieces: the
// caller's buffers and the compressed ones, referenced, and the bytes the
// encoder writes itself (message framing, length prefixes, the footer's
// tail), appended to a scratch buffer. Nothing is copied until the pieces
// are joined, and then each byte once: into dst when it has the room, or,
// for an empty dst, into a new buffer of exactly the pieces' size that
// bytes.Join allocates without clearing it first (every byte of it is
// written). A large frame's memory is then written once instead of being
// cleared by the allocator and written again.
//
// A joiner is an Encoder's and is reused: every assembly begins with
// begin, which drops what an assembly abandoned halfway (a panic recovered
// by the caller) left, and join drops its references to the caller's
// memory.
type joiner struct {
	scratch []byte
	pieces  []piece
	list    [][]byte // join's, reused
	size    int
}

// piece is a referenced buffer (b non-nil) or scratch[from:to]; a
// borrowed one stays referenced by the pieces split returns.
type piece struct {
	b        []byte
	from, to int
	borrowed bool
}

// begin readies j for a new assembly, forgetting any pieces left.
func (j *joiner) begin() {
	clear(j.pieces)
	j.scratch = j.scratch[:0]
	j.pieces = j.pieces[:0]
	j.size = 0
}

// ref adds b, referenced; b must stay unchanged until join.
func (j *joiner) ref(b []byte) {
	if len(b) > 0 {
		j.pieces = append(j.pieces, piece{b: b})
		j.size += len(b)
	}
}

// borrow adds b, referenced by the pieces split returns too (see there).
func (j *joiner) borrow(b []byte) {
	if len(b) > 0 {
		j.pieces = append(j.pieces, piece{b: b, borrowed: true})
		j.size += len(b)
	}
}

// pad adds n zero bytes (n < alignment).
func (j *joiner) pad(n int) { j.ref(zeros[:n]) }

// wrote adds what was appended to the scratch since its length was from,
// as one piece with the scratch piece before it when they touch.
func (j *joiner) wrote(from int) {
	to := len(j.scratch)
	if to == from {
		return
	}
	j.size += to - from
	if k := len(j.pieces) - 1; k >= 0 && j.pieces[k].b == nil && j.pieces[k].to == from {
		j.pieces[k].to = to
		return
	}
	j.pieces = append(j.pieces, piece{from: from, to: to})
}

// framed adds the message flatbuffer fb framed (appendFrameHead, fb
// referenced, padding to 8 bytes) and returns the framed length.
func (j *joiner) framed(fb []byte) int32 {
	framed := pad8(8 + len(fb))
	from := len(j.scratch)
	j.scratch = appendFrameHead(j.scratch, framed)
	j.wrote(from)
	j.ref(fb)
	j.pad(framed - 8 - len(fb))
	return int32(framed)
}

// split appends to dst the pieces, in order, as few buffers as borrowing
// allows: each borrowed piece as it is, and each run of the others between
// them copied into a buffer of exactly its size, all those runs' buffers
// slices of one new allocation (written once: see join). It returns dst;
// the joiner is then reset and references nothing.
func (j *joiner) split(dst [][]byte) [][]byte {
	runs := 1 // an upper bound on the buffers returned: every borrowed piece and the run after it
	list := j.list[:0]
	for _, p := range j.pieces {
		if p.borrowed {
			runs += 2
		} else {
			list = append(list, j.bytesOf(p))
		}
	}
	dst = slices.Grow(dst, runs)
	var mem []byte
	if len(list) > 0 { // no piece is empty (see ref and wrote)
		mem = bytes.Join(list, nil) // every run, back to back
	}
	clear(list)
	j.list = list[:0]
	start, end := 0, 0 // the pending run, in mem
	flush := func() {
		if end > start {
			dst = append(dst, mem[start:end:end])
		}
		start = end
	}
	for _, p := range j.pieces {
		if p.borrowed {
			flush()
			dst = append(dst, p.b)
			continue
		}
		end += len(j.bytesOf(p))
	}
	flush()
	j.begin()
	return dst
}

// bytesOf is p's bytes: its buffer, or its range of the scratch.
func (j *joiner) bytesOf(p piece) []byte {
	if p.b != nil {
		return p.b
	}
	return j.scratch[p.from:p.to]
}

// join appends the pieces to dst, in order, and returns the extended
// slice: dst itself when it has the room; for an empty dst without it, a
// new buffer of exactly the pieces' size, not cleared before it is
// written; otherwise dst grown as append grows it. The joiner is then
// reset and references nothing.
func (j *joiner) join(dst []byte) []byte {
	list := j.list[:0]
	for _, p := range j.pieces {
		list = append(list, j.bytesOf(p))
	}
	switch {
	case cap(dst)-len(dst) < j.size && len(dst) == 0 && len(list) > 1:
		// bytes.Join of one piece appends it to nil, which rounds the
		// capacity up; of several, it allocates exactly their size.
		dst = bytes.Join(list, nil)
	default:
		dst = slices.Grow(dst, j.size)
		for _, b := range list {
			dst = append(dst, b...)
		}
	}
	clear(list)
	j.list = list[:0]
	j.begin()
	return dst
}
