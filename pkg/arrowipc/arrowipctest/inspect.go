package arrowipctest

import (
	"encoding/binary"
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// BatchInfo describes one record batch of a file, as Inspect reads it.
type BatchInfo struct {
	Rows int64
	// Codec is the compression the batch declares: "none", "lz4" or "zstd".
	Codec string
	// Buffers counts the batch's non-empty body buffers; Compressed those of
	// them stored compressed (the others are stored raw).
	Buffers, Compressed int
	// BodyBytes is the batch's body length on the wire.
	BodyBytes int64
}

// Inspect reads the footer and record-batch messages of an Arrow IPC file
// and reports what each batch declares and how its buffers are stored. It
// is a diagnostic reader of the format package arrowipc writes; it does
// not decode values.
func Inspect(file []byte) (batches []BatchInfo, err error) {
	defer func() {
		// The flatbuffers accessors index without checks: a malformed file
		// is an error here, never a panic.
		if r := recover(); r != nil {
			batches, err = nil, fmt.Errorf("arrowipctest: malformed file: %v", r)
		}
	}()
	n := len(file)
	if n < 8+10 || string(file[:6]) != format.Magic || string(file[n-6:]) != format.Magic {
		return nil, errors.New("arrowipctest: not an Arrow IPC file")
	}
	flen := int(binary.LittleEndian.Uint32(file[n-10:]))
	if flen <= 0 || flen > n-18 {
		return nil, fmt.Errorf("arrowipctest: footer length %d out of range", flen)
	}
	footer := file[n-10-flen : n-10]
	ft := root(footer)
	vec, count := vector(ft, format.FooterRecordBatches)
	for i := 0; i < count; i++ {
		at := vec + flatbuffers.UOffsetT(format.BlockSize*i)
		off := int64(binary.LittleEndian.Uint64(footer[at+format.BlockOffset:]))
		metaLen := int64(int32(binary.LittleEndian.Uint32(footer[at+format.BlockMetaDataLength:])))
		body := int64(binary.LittleEndian.Uint64(footer[at+format.BlockBodyLength:]))
		if off < 8 || off+metaLen+body > int64(n) || metaLen < 8 {
			return nil, fmt.Errorf("arrowipctest: block %d out of range", i)
		}
		msg := file[off+8 : off+metaLen]
		info, err := inspectBatch(msg, file[off+metaLen:off+metaLen+body])
		if err != nil {
			return nil, fmt.Errorf("arrowipctest: block %d: %w", i, err)
		}
		batches = append(batches, info)
	}
	return batches, nil
}

func inspectBatch(msg, body []byte) (BatchInfo, error) {
	m := root(msg)
	if m.GetByteSlot(slot(format.MessageHeaderType), 0) != format.HeaderRecordBatch {
		return BatchInfo{}, errors.New("not a record batch")
	}
	header := flatbuffers.UOffsetT(m.Offset(slot(format.MessageHeader)))
	rb := &flatbuffers.Table{Bytes: msg, Pos: m.Indirect(m.Pos + header)}
	info := BatchInfo{Rows: rb.GetInt64Slot(slot(format.RecordBatchLength), 0), Codec: "none", BodyBytes: int64(len(body))}
	if o := rb.Offset(slot(format.RecordBatchCompression)); o != 0 {
		c := &flatbuffers.Table{Bytes: msg, Pos: rb.Indirect(rb.Pos + flatbuffers.UOffsetT(o))}
		info.Codec = "lz4"
		if c.GetInt8Slot(slot(format.BodyCompressionCodec), format.CompressionLZ4Frame) == format.CompressionZstd {
			info.Codec = "zstd"
		}
	}
	vec, count := vector(rb, format.RecordBatchBuffers)
	for i := 0; i < count; i++ {
		at := vec + flatbuffers.UOffsetT(format.BufferSize*i)
		off := int64(binary.LittleEndian.Uint64(msg[at+format.BufferOffset:]))
		length := int64(binary.LittleEndian.Uint64(msg[at+format.BufferLength:]))
		if length == 0 {
			continue
		}
		if off < 0 || off+length > int64(len(body)) {
			return BatchInfo{}, fmt.Errorf("buffer %d out of the body", i)
		}
		info.Buffers++
		if info.Codec != "none" && length >= 8 && int64(binary.LittleEndian.Uint64(body[off:])) != -1 {
			info.Compressed++
		}
	}
	return info, nil
}

func root(b []byte) *flatbuffers.Table {
	return &flatbuffers.Table{Bytes: b, Pos: flatbuffers.GetUOffsetT(b)}
}

// slot is the vtable offset of a table's field number i.
func slot(i int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*i) }

// vector returns where the elements of the vector in slot i start, and how
// many there are.
func vector(t *flatbuffers.Table, i int) (flatbuffers.UOffsetT, int) {
	o := flatbuffers.UOffsetT(t.Offset(slot(i)))
	if o == 0 {
		return 0, 0
	}
	return t.Vector(o), t.VectorLen(o)
}
