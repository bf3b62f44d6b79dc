package flightsql

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNumberTextIsValueStr: a number's text (and an integer's JSON), which
// its registration derives from strconv, is what Arrow's ValueStr writes,
// as it was when numbers had no text writer of their own.
func TestNumberTextIsValueStr(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ints := []int64{0, 1, -1, 42, math.MinInt8, math.MaxInt8, math.MaxUint8, math.MinInt16, math.MaxInt16,
		math.MaxUint16, math.MinInt32, math.MaxInt32, math.MaxUint32, math.MinInt64, math.MaxInt64}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-7, 1e21, 123456789.125, math.MaxFloat32,
		math.SmallestNonzeroFloat64, math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}
	for i := range registry {
		reg, id := &registry[i], arrow.Type(i)
		if reg.numeric == nil {
			continue
		}
		dt := primitiveOf(t, id)
		b := array.NewBuilder(mem, dt)
		switch b := b.(type) {
		case *array.Float32Builder:
			for _, v := range floats {
				b.Append(float32(v))
			}
		case *array.Float64Builder:
			b.AppendValues(floats, nil)
		default:
			for _, v := range ints {
				appendInt(b, v)
			}
		}
		a := b.NewArray()
		b.Release()
		for j := range a.Len() {
			want := a.ValueStr(j)
			if got := string(reg.text(nil, a, j)); got != want {
				t.Errorf("%s text of %s: %q", id, want, got)
			}
			if !strings.HasPrefix(dt.Name(), "float") {
				if got := string(reg.json(nil, a, j)); got != want {
					t.Errorf("%s JSON of %s: %q", id, want, got)
				}
			}
		}
		a.Release()
	}
}

// appendInt appends v, wrapped to b's type, to the integer builder b.
func appendInt(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(v)
	case *array.Uint8Builder:
		b.Append(uint8(v))
	case *array.Uint16Builder:
		b.Append(uint16(v))
	case *array.Uint32Builder:
		b.Append(uint32(v))
	case *array.Uint64Builder:
		b.Append(uint64(v))
	}
}

// TestRegisterOnce: a type is registered once, with a normaliser.
func TestRegisterOnce(t *testing.T) {
	for _, c := range []struct {
		id  arrow.Type
		reg typeInfo
	}{
		{arrow.INT8, typeInfo{normalise: passThrough}},
		{arrow.Type(typeIDs), typeInfo{normalise: passThrough}},
		{arrow.Type(typeIDs - 1), typeInfo{}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("register(%d) did not panic", c.id)
				}
			}()
			register(c.id, c.reg)
		}()
	}
	if typeOf(arrow.Type(typeIDs+1)).normalise != nil || typeOf(arrow.Type(-1)).normalise != nil {
		t.Error("an ID beyond the registry has an entry")
	}
}

// TestNumericsCoverColumns: exactly the types Grafana reads as numbers
// have their typed gather.
func TestNumericsCoverColumns(t *testing.T) {
	for i, reg := range registry {
		number := reg.grafana != nil && reg.grafana.tstype == "number"
		if (reg.numeric != nil) != number {
			t.Errorf("%s: Grafana number %v but numeric entry %v", arrow.Type(i), number, reg.numeric != nil)
		}
	}
}
