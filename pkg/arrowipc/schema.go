package arrowipc

import (
	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/quiverdata/quiver/pkg/arrowipc/internal/format"
)

// KeyValue is one entry of schema or field custom metadata.
type KeyValue struct {
	Key, Value string
}

// AppendMetadata appends md's entries to dst, in md's order, and returns the
// extended slice: the schema metadata of a record as AppendFile takes it.
func AppendMetadata(dst []KeyValue, md arrow.Metadata) []KeyValue {
	keys, values := md.Keys(), md.Values()
	for i := range keys {
		dst = append(dst, KeyValue{Key: keys[i], Value: values[i]})
	}
	return dst
}

// Field describes one column of the schema.
type Field struct {
	Name     string
	Type     arrow.DataType
	Nullable bool
	Metadata []KeyValue // written in this order
}

// writeSchema writes the Schema table of fields (whose types infos
// describes) with custom metadata meta into e.b and returns its offset.
func (e *Encoder) writeSchema(fields []Field, infos []typeInfo, meta []KeyValue) flatbuffers.UOffsetT {
	b := e.b
	offs := e.offs[:0]
	for i := range fields {
		offs = append(offs, e.writeField(&fields[i], infos[i]))
	}
	fieldsVec := offsetsToFB(b, offs)
	e.offs = offs
	return schemaToFB(b, fieldsVec, e.writeKeyValues(meta))
}

func (e *Encoder) writeField(f *Field, info typeInfo) flatbuffers.UOffsetT {
	b := e.b
	name := b.CreateString(f.Name)
	typ := e.writeType(f.Type, info)
	meta := e.writeKeyValues(f.Metadata)
	children := offsetsToFB(b, nil)
	return fieldToFB(b, fieldTable{
		name: name, typ: typ, children: children, meta: meta,
		typeType: info.fbType, nullable: f.Nullable,
	})
}

// writeType writes the type table of a field: Int, FloatingPoint,
// Timestamp, or the empty Bool, Utf8 and Binary.
func (e *Encoder) writeType(t arrow.DataType, info typeInfo) flatbuffers.UOffsetT {
	b := e.b
	switch info.fbType {
	case format.TypeInt:
		return intToFB(b, info.bitWidth, info.signed)
	case format.TypeFloatingPoint:
		return floatingPointToFB(b, info.prec)
	case format.TypeTimestamp:
		var tz flatbuffers.UOffsetT
		if zone := t.(*arrow.TimestampType).TimeZone; zone != "" {
			tz = b.CreateString(zone)
		}
		return timestampToFB(b, format.TimeUnitNanosecond, tz)
	}
	return emptyTypeToFB(b)
}

// writeKeyValues writes a vector of KeyValue tables, or nothing (0) for none.
func (e *Encoder) writeKeyValues(kv []KeyValue) flatbuffers.UOffsetT {
	if len(kv) == 0 {
		return 0
	}
	b := e.b
	base := len(e.kvs)
	for _, p := range kv {
		k := b.CreateString(p.Key)
		v := b.CreateString(p.Value)
		e.kvs = append(e.kvs, keyValueToFB(b, k, v))
	}
	vec := offsetsToFB(b, e.kvs[base:])
	e.kvs = e.kvs[:base]
	return vec
}
