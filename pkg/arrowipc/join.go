package arrowipc

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// joiner puts a file, or one batch of a File, together from pieces: the
// caller's buffers and the compressed ones, referenced, and the bytes the
// encoder writes itself (message framing, length prefixes, the footer's
// tail), appended to a scratch buffer between them. Nothing is copied until
// the pieces are joined, and then each byte once: into dst when it has the
// room, or, for an empty dst, into a new buffer of exactly the pieces' size
// that bytes.Join allocates without clearing it first (every byte of it is
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
	list    [][]byte // join's and split's, reused
	refSize int      // the referenced pieces' bytes
}

// piece is a referenced buffer, which follows scratch[:at]; a borrowed one
// stays referenced by the pieces split returns.
type piece struct {
	b        []byte
	at       int
	borrowed bool
}

// begin readies j for a new assembly, forgetting any pieces left.
func (j *joiner) begin() {
	clear(j.pieces)
	clear(j.list)
	j.scratch = j.scratch[:0]
	j.pieces = j.pieces[:0]
	j.list = j.list[:0]
	j.refSize = 0
}

// size is the bytes added: the referenced ones and the scratch.
func (j *joiner) size() int { return j.refSize + len(j.scratch) }

// ref adds b, referenced, after what the scratch holds; b must stay
// unchanged until join.
func (j *joiner) ref(b []byte) {
	if len(b) > 0 {
		j.pieces = append(j.pieces, piece{b: b, at: len(j.scratch)})
		j.refSize += len(b)
	}
}

// borrow adds b, not empty, as ref does, referenced by the pieces split
// returns too (see there).
func (j *joiner) borrow(b []byte) {
	j.pieces = append(j.pieces, piece{b: b, at: len(j.scratch), borrowed: true})
	j.refSize += len(b)
}

// pad adds n zero bytes (n < alignment).
func (j *joiner) pad(n int) { j.ref(zeros[:n]) }

// framed adds the message flatbuffer fb framed (the continuation marker and
// the length of what follows it, fb referenced, padding to 8 bytes) and
// returns the framed length.
func (j *joiner) framed(fb []byte) int32 {
	framed := pad8(8 + len(fb))
	j.scratch = binary.LittleEndian.AppendUint32(j.scratch, continuation)
	j.scratch = binary.LittleEndian.AppendUint32(j.scratch, uint32(framed-8))
	j.ref(fb)
	j.pad(framed - 8 - len(fb))
	return int32(framed)
}

// all yields the bytes added, in order, as few slices as the pieces allow:
// each referenced piece, and the scratch written before, between and after
// them (never empty); and whether each is borrowed.
func (j *joiner) all(yield func(b []byte, borrowed bool) bool) {
	from := 0
	for _, p := range j.pieces {
		if p.at > from && !yield(j.scratch[from:p.at], false) || !yield(p.b, p.borrowed) {
			return
		}
		from = p.at
	}
	if from < len(j.scratch) {
		yield(j.scratch[from:], false)
	}
}

// split appends to dst the pieces, in order, as few buffers as borrowing
// allows: each borrowed piece as it is, and each run of the others between
// them copied into a buffer of exactly its size, all those runs' buffers
// slices of one new allocation (written once: see join). It returns dst;
// the joiner is then reset and references nothing.
func (j *joiner) split(dst [][]byte) [][]byte {
	runs := 1 // an upper bound on the buffers returned: every borrowed piece and the run after it
	list := j.list[:0]
	for b, borrowed := range j.all {
		if borrowed {
			runs += 2
		} else {
			list = append(list, b)
		}
	}
	dst = slices.Grow(dst, runs)
	mem := bytes.Join(list, nil) // every run, back to back
	j.list = list
	start, end := 0, 0 // the pending run, in mem
	for b, borrowed := range j.all {
		if !borrowed {
			end += len(b)
			continue
		}
		if end > start {
			dst = append(dst, mem[start:end:end])
		}
		dst = append(dst, b)
		start = end
	}
	if end > start {
		dst = append(dst, mem[start:end:end])
	}
	j.begin()
	return dst
}

// join appends the pieces to dst, in order, and returns the extended
// slice: dst itself when it has the room; for an empty dst without it, a
// new buffer of exactly the pieces' size, not cleared before it is
// written; otherwise dst grown as append grows it. The joiner is then
// reset and references nothing.
func (j *joiner) join(dst []byte) []byte {
	list := j.list[:0]
	for b := range j.all {
		list = append(list, b)
	}
	switch {
	case cap(dst)-len(dst) < j.size() && len(dst) == 0 && len(list) > 1:
		// bytes.Join of one piece appends it to nil, which rounds the
		// capacity up; of several, it allocates exactly their size.
		dst = bytes.Join(list, nil)
	default:
		dst = slices.Grow(dst, j.size())
		for _, b := range list {
			dst = append(dst, b...)
		}
	}
	j.list = list
	j.begin()
	return dst
}
