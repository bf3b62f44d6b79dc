package arrowipc

import (
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// SchemaDepth returns how deeply the fields of the Schema an IPC message
// header (a Message flatbuffer) holds nest: 1 for flat columns, 0 for a
// message that is not a schema. It walks the fields without recursion and
// stops once past most, so that a reader that recurses (arrow-go's, a
// stack frame a level) can refuse a schema before it overflows its stack.
// A malformed header is an error, never a panic; so is one that names more
// fields than its bytes can hold (offsets that point back at a field
// already read).
func SchemaDepth(header []byte, most int) (depth int, err error) {
	defer func() {
		// The flatbuffers accessors index without checks.
		if r := recover(); r != nil {
			depth, err = 0, fmt.Errorf("arrowipc: malformed message header: %v", r)
		}
	}()
	if len(header) < flatbuffers.SizeUOffsetT {
		return 0, errors.New("arrowipc: message header too short")
	}
	m := &flatbuffers.Table{Bytes: header, Pos: flatbuffers.GetUOffsetT(header)}
	ht, h := slotOf(m, format.MessageHeaderType), slotOf(m, format.MessageHeader)
	if ht == 0 || h == 0 || m.GetByte(m.Pos+ht) != format.HeaderSchema {
		return 0, nil
	}
	schema := &flatbuffers.Table{Bytes: header, Pos: m.Indirect(m.Pos + h)}
	// Each entry: where the rest of a vector of fields lies, how many are
	// left, and their depth.
	type fields struct {
		at    flatbuffers.UOffsetT
		n     int
		depth int
	}
	var stack []fields
	if at, n := vectorOf(schema, format.SchemaFields); n > 0 {
		stack = append(stack, fields{at, n, 1})
	}
	budget := len(header) / 4 // a field takes at least its offset in a vector
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.n == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		f := &flatbuffers.Table{Bytes: header, Pos: m.Indirect(top.at)}
		top.at += flatbuffers.SizeUOffsetT
		top.n--
		if budget--; budget < 0 {
			return 0, errors.New("arrowipc: malformed message header: more fields than its bytes hold")
		}
		d := top.depth
		if depth = max(depth, d); depth > most {
			return depth, nil
		}
		if at, n := vectorOf(f, format.FieldChildren); n > 0 {
			stack = append(stack, fields{at, n, d + 1})
		}
	}
	return depth, nil
}

// slotOf returns where slot i of t lies from t's start, 0 when absent.
func slotOf(t *flatbuffers.Table, i int) flatbuffers.UOffsetT {
	return flatbuffers.UOffsetT(t.Offset(flatbuffers.VOffsetT(4 + 2*i)))
}

// vectorOf returns where the elements of the vector in slot i of t start,
// and how many there are.
func vectorOf(t *flatbuffers.Table, i int) (flatbuffers.UOffsetT, int) {
	o := slotOf(t, i)
	if o == 0 {
		return 0, 0
	}
	return t.Vector(o), t.VectorLen(o)
}
