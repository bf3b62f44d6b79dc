package flightsql

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	mrand "math/rand"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// allTypes has one column of every type the normalisation table converts,
// with two rows: a value and a null.
func allTypes(t *testing.T) (*arrow.Schema, arrow.RecordBatch) {
	t.Helper()
	paris := "Europe/Paris"
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	dictTS := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: &arrow.TimestampType{Unit: arrow.Millisecond}}
	fields := []arrow.Field{
		{Name: "ts_s_paris", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: paris}, Nullable: true},
		{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ts_ns_utc", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "d64", Type: arrow.FixedWidthTypes.Date64, Nullable: true},
		{Name: "dec_small", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "dec_big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
		{Name: "dec256", Type: &arrow.Decimal256Type{Precision: 40, Scale: 3}, Nullable: true},
		{Name: "large", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "view", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "dict", Type: dictType, Nullable: true},
		{Name: "dict_ts", Type: dictTS, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "large_bin", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		{Name: "fixed_bin", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "struct", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String}), Nullable: true},
		{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "dur_ms", Type: arrow.FixedWidthTypes.Duration_ms, Nullable: true},
		{Name: "t32", Type: arrow.FixedWidthTypes.Time32s, Nullable: true},
		{Name: "t64", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "f16", Type: arrow.FixedWidthTypes.Float16, Nullable: true},
		{Name: "null", Type: arrow.Null, Nullable: true},
		{Name: "ext", Type: &textExt{ExtensionBase: arrow.ExtensionBase{Storage: arrow.BinaryTypes.String}}, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "mdn", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
		{Name: "day_time", Type: arrow.FixedWidthTypes.DayTimeInterval, Nullable: true},
		{Name: "months", Type: arrow.FixedWidthTypes.MonthInterval, Nullable: true},
		{Name: "uuid", Type: extensions.NewUUIDType(), Nullable: true},
		{Name: "bool8", Type: extensions.NewBool8Type(), Nullable: true},
		{Name: "json", Type: jsonExt(t), Nullable: true},
		{Name: "dec32", Type: &arrow.Decimal32Type{Precision: 4, Scale: 2}, Nullable: true},
		{Name: "dec64", Type: &arrow.Decimal64Type{Precision: 18, Scale: 3}, Nullable: true},
		{Name: "union", Type: arrow.SparseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, []arrow.UnionTypeCode{5, 7}), Nullable: true},
		{Name: "ree", Type: arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String), Nullable: true},
	}
	schema := arrow.NewSchema(fields, nil)
	rec := batch(schema, func(b *array.RecordBuilder) {
		i := 0
		next := func() array.Builder { i++; return b.Field(i - 1) }
		next().(*array.TimestampBuilder).Append(1_700_000_000)
		next().(*array.TimestampBuilder).Append(1_700_000_000_123)
		next().(*array.TimestampBuilder).Append(1_700_000_000_123_456)
		next().(*array.TimestampBuilder).Append(1_700_000_000_123_456_789)
		next().(*array.TimestampBuilder).Append(1_700_000_000_123_456_789)
		next().(*array.Date32Builder).Append(19675) // 2023-11-14
		next().(*array.Date64Builder).Append(19675 * 86400 * 1000)
		next().(*array.Decimal128Builder).Append(decimal128.FromI64(12345)) // 123.45
		big, _ := decimal128.FromString("1234567890123456789.0123456789", 38, 10)
		next().(*array.Decimal128Builder).Append(big)
		next().(*array.Decimal256Builder).Append(decimal256.FromI64(-1500)) // -1.5
		next().(*array.LargeStringBuilder).Append("large ✓")
		next().(*array.StringViewBuilder).Append("a view string longer than twelve bytes")
		dict := next().(*array.BinaryDictionaryBuilder)
		if err := dict.AppendString("eu-west"); err != nil {
			t.Fatal(err)
		}
		next().AppendNull() // dict_ts: replaced by withDictTimestamps
		next().(*array.BinaryBuilder).Append([]byte{0, 1, 2, 0xff})
		next().(*array.BinaryBuilder).Append([]byte("hi"))
		next().(*array.FixedSizeBinaryBuilder).Append([]byte{1, 2, 3})
		lb := next().(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
		sb := next().(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(7)
		sb.FieldBuilder(1).(*array.StringBuilder).Append(`q"uote`)
		mb := next().(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.Int64Builder).Append(9)
		next().(*array.DurationBuilder).Append(1500)
		next().(*array.Time32Builder).Append(3723) // 01:02:03
		next().(*array.Time64Builder).Append(3723_000_001)
		next().(*array.Float16Builder).Append(float16.New(1.5))
		next().(*array.NullBuilder).AppendNull()
		next().(*array.ExtensionBuilder).StorageBuilder().(*array.StringBuilder).Append("ext text")
		next().(*array.Int8Builder).Append(-8)
		next().(*array.Uint16Builder).Append(65535)
		next().(*array.Uint64Builder).Append(math.MaxUint64)
		next().(*array.Float32Builder).Append(2.5)
		next().(*array.BooleanBuilder).Append(true)
		next().(*array.StringBuilder).Append("plain")
		next().(*array.MonthDayNanoIntervalBuilder).Append(arrow.MonthDayNanoInterval{Months: 14, Days: 2, Nanoseconds: 3_723_500_000_000})
		next().(*array.DayTimeIntervalBuilder).Append(arrow.DayTimeInterval{Days: 1, Milliseconds: 1500})
		next().(*array.MonthIntervalBuilder).Append(25)
		next().(*extensions.UUIDBuilder).Append(uuid.MustParse("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"))
		next().(*extensions.Bool8Builder).Append(true)
		next().(*array.ExtensionBuilder).StorageBuilder().(*array.StringBuilder).Append(`{"a":[1,2]}`)
		next().(*array.Decimal32Builder).Append(30) // 0.30
		next().(*array.Decimal64Builder).Append(-1_234_567)
		ub := next().(*array.SparseUnionBuilder)
		ub.Append(7)
		ub.Child(0).AppendNull()
		ub.Child(1).(*array.StringBuilder).Append("u")
		rb := next().(*array.RunEndEncodedBuilder)
		rb.Append(1)
		rb.ValueBuilder().(*array.StringBuilder).Append("run")
		// Second row: all nulls.
		for j := range fields {
			b.Field(j).AppendNull()
		}
	})
	return schema, rec
}

func TestNormaliseEveryType(t *testing.T) {
	schema, rec := allTypes(t)
	// dict_ts has no values in the first row above (its builder takes
	// timestamps through a memo table); rebuild that column by hand.
	rec = withDictTimestamps(t, rec)
	srv := newMemServer()
	srv.set("all", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{rec}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	sink, err := runQuery(t, s, "all", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.frames) != 1 {
		t.Fatalf("%d frames, want 1", len(sink.frames))
	}
	f := sink.frames[0]
	if f.RefID != "A" || f.Rows() != 2 {
		t.Fatalf("refId %q rows %d", f.RefID, f.Rows())
	}
	ts := func(sec, nsec int64) time.Time { return time.Unix(sec, nsec) }
	want := map[string]any{
		"ts_s_paris": ts(1_700_000_000, 0),
		"ts_ms":      ts(1_700_000_000, 123_000_000),
		"ts_us":      ts(1_700_000_000, 123_456_000),
		"ts_ns_utc":  ts(1_700_000_000, 123_456_789),
		"ts_ns":      ts(1_700_000_000, 123_456_789),
		"d32":        time.Date(2023, 11, 14, 0, 0, 0, 0, time.UTC),
		"d64":        time.Date(2023, 11, 14, 0, 0, 0, 0, time.UTC),
		"dec_small":  123.45,
		"dec_big":    1234567890123456789.0123456789, // the nearest float64
		"dec256":     -1.5,
		"large":      "large ✓",
		"view":       "a view string longer than twelve bytes",
		"dict":       "eu-west",
		"dict_ts":    ts(1_700_000_000, 5_000_000),
		"bin":        "AAEC/w==",
		"large_bin":  "aGk=",
		"fixed_bin":  "AQID",
		"list":       json.RawMessage(`[1,2,3]`),
		"struct":     json.RawMessage(`{"a":7,"b":"q\"uote"}`),
		"map":        json.RawMessage(`{"k":9}`),
		"dur_ms":     int64(1500),
		"t32":        "01:02:03",
		"t64":        "01:02:03.000001",
		"f16":        float32(1.5),
		"null":       nil,
		"ext":        "ext text",
		"i8":         int8(-8),
		"u16":        uint16(65535),
		"u64":        uint64(math.MaxUint64),
		"f32":        float32(2.5),
		"b":          true,
		"s":          "plain",
		"mdn":        "1 year 2 months 2 days 01:02:03.5",
		"day_time":   int64(86_401_500),
		"months":     "2 years 1 month",
		"uuid":       "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
		"bool8":      true,
		"json":       json.RawMessage(`{"a":[1,2]}`),
		"dec32":      0.3,
		"dec64":      -1234.567,
		"union":      json.RawMessage(`{"s":"u"}`),
		"ree":        "run",
	}
	if len(f.Fields) != len(want) {
		t.Fatalf("%d fields, want %d", len(f.Fields), len(want))
	}
	for _, fld := range f.Fields {
		w, ok := want[fld.Name]
		if !ok {
			t.Errorf("unexpected field %q", fld.Name)
			continue
		}
		got, _ := fld.ConcreteAt(0)
		if fld.Name == "null" {
			if fld.At(0) != (*string)(nil) {
				t.Errorf("null: got %v", fld.At(0))
			}
		} else if !equalValue(got, w) {
			t.Errorf("%s: got %#v (%s), want %#v", fld.Name, got, fld.Type(), w)
		}
		if v, ok := fld.ConcreteAt(1); ok {
			t.Errorf("%s: row 2 should be null, got %#v", fld.Name, v)
		}
		if !fld.Nullable() {
			t.Errorf("%s is not nullable although it holds a null", fld.Name)
		}
	}
	for _, name := range []string{"dur_ms", "day_time"} {
		if c := f.Fields[indexOf(f, name)].Config; c == nil || c.Unit != "ms" {
			t.Errorf("%s config: %+v", name, c)
		}
	}
	if f.Fields[indexOf(f, "list")].Type() != data.FieldTypeNullableJSON {
		t.Errorf("list is %s, want JSON", f.Fields[indexOf(f, "list")].Type())
	}
	// Timestamps are timestamp[ns] without a zone in what the Sink gets.
	for _, fld := range sink.schemas[0].Fields() {
		if tt, ok := fld.Type.(*arrow.TimestampType); ok && (tt.Unit != arrow.Nanosecond || tt.TimeZone != "") {
			t.Errorf("%s: %s", fld.Name, tt)
		}
		if typeOf(fld.Type.ID()).grafana == nil {
			t.Errorf("%s: %s is not a type Grafana reads", fld.Name, fld.Type)
		}
	}
	// A precision notice for the one decimal value that does not fit a
	// float64 (dec_big), none for the declared precision alone (dec256).
	if f.Meta == nil || len(f.Meta.Notices) != 1 {
		t.Fatalf("notices: %+v", f.Meta)
	}
	if n := f.Meta.Notices[0].Text; !strings.Contains(n, `"dec_big"`) || !strings.Contains(n, "lost precision") {
		t.Errorf("notice %q", n)
	}
}

// jsonExt is the canonical arrow.json extension type over utf8.
func jsonExt(t *testing.T) arrow.DataType {
	t.Helper()
	dt, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	return dt
}

func equalValue(got, want any) bool {
	switch w := want.(type) {
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	case json.RawMessage:
		g, ok := got.(json.RawMessage)
		return ok && string(g) == string(w)
	case float64:
		g, ok := got.(float64)
		return ok && g == w // correctly rounded: the nearest float64, exactly
	}
	return got == want
}

func indexOf(f *data.Frame, name string) int {
	for i, fld := range f.Fields {
		if fld.Name == name {
			return i
		}
	}
	return -1
}

// withDictTimestamps replaces the dict_ts column with dictionary<int16,
// timestamp[ms]> values [5ms after 1_700_000_000 s, null].
func withDictTimestamps(t *testing.T, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	defer rec.Release()
	idx := rec.Schema().FieldIndices("dict_ts")[0]
	dt := rec.Schema().Field(idx).Type.(*arrow.DictionaryType)
	vb := array.NewTimestampBuilder(memory.DefaultAllocator, dt.ValueType.(*arrow.TimestampType))
	vb.AppendValues([]arrow.Timestamp{1, 1_700_000_000_005}, nil)
	values := vb.NewArray()
	defer values.Release()
	ib := array.NewInt16Builder(memory.DefaultAllocator)
	ib.AppendValues([]int16{1, 0}, []bool{true, false})
	indices := ib.NewArray()
	defer indices.Release()
	dict := array.NewDictionaryArray(dt, indices, values)
	defer dict.Release()
	cols := append([]arrow.Array(nil), rec.Columns()...)
	cols[idx] = dict
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

func TestNormaliseEveryTableEntryLandsOnGrafanaType(t *testing.T) {
	for i, reg := range registry {
		id, n := arrow.Type(i), reg.normalise
		if n == nil {
			continue
		}
		var dt arrow.DataType
		switch id {
		case arrow.DICTIONARY, arrow.EXTENSION, arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.LIST_VIEW,
			arrow.LARGE_LIST_VIEW, arrow.STRUCT, arrow.MAP, arrow.SPARSE_UNION, arrow.DENSE_UNION, arrow.TIMESTAMP,
			arrow.DURATION, arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256, arrow.RUN_END_ENCODED:
			continue // parameterised: covered by TestNormaliseEveryType
		}
		dt = primitiveOf(t, id)
		c := n("c", dt)
		if typeOf(c.out.ID()).grafana == nil {
			t.Errorf("%s normalises to %s, which Grafana does not read", id, c.out)
		}
	}
}

func primitiveOf(t *testing.T, id arrow.Type) arrow.DataType {
	for _, dt := range []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Float16, arrow.FixedWidthTypes.Boolean,
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.StringView, arrow.BinaryTypes.Binary,
		arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.BinaryView, &arrow.FixedSizeBinaryType{ByteWidth: 2},
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Time32ms, arrow.FixedWidthTypes.Time64ns,
		arrow.Null, arrow.FixedWidthTypes.MonthInterval, arrow.FixedWidthTypes.DayTimeInterval, arrow.FixedWidthTypes.MonthDayNanoInterval,
	} {
		if dt.ID() == id {
			return dt
		}
	}
	t.Fatalf("no test type for %s", id)
	return nil
}

// textExt is an extension type over utf8, standing in for uuid, json & co.
type textExt struct{ arrow.ExtensionBase }

type textExtArray struct{ array.ExtensionArrayBase }

func (*textExt) ArrayType() reflect.Type { return reflect.TypeOf(textExtArray{}) }
func (*textExt) ExtensionName() string   { return "quiver.test_text" }
func (*textExt) Serialize() string       { return "" }
func (e *textExt) ExtensionEquals(o arrow.ExtensionType) bool {
	return o.ExtensionName() == e.ExtensionName()
}
func (e *textExt) Deserialize(storage arrow.DataType, _ string) (arrow.ExtensionType, error) {
	return &textExt{ExtensionBase: arrow.ExtensionBase{Storage: storage}}, nil
}

// decimalCase is a decimal column type and the values to test in it.
type decimalCase struct {
	dt     arrow.DecimalType
	random int // random values besides the edges
}

// exactDecimalText is the decimal n × 10^-scale written exactly, computed
// with math/big (independently of appendDecimal).
func exactDecimalText(n *big.Int, scale int32) string {
	if scale <= 0 {
		return new(big.Int).Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil)).String()
	}
	return new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(int(scale))
}

// decimalArray builds a column of dt holding the unscaled values ns.
func decimalArray(t testing.TB, dt arrow.DecimalType, ns []*big.Int) arrow.Array {
	t.Helper()
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for _, n := range ns {
		switch b := b.(type) {
		case *array.Decimal32Builder:
			b.Append(decimal.Decimal32(n.Int64()))
		case *array.Decimal64Builder:
			b.Append(decimal.Decimal64(n.Int64()))
		case *array.Decimal128Builder:
			b.Append(decimal128.FromBigInt(n))
		case *array.Decimal256Builder:
			b.Append(decimal256.FromBigInt(n))
		}
	}
	b.AppendNull()
	return b.NewArray()
}

// TestDecimalsCorrectlyRounded converts many decimals of several widths,
// precisions and scales, and compares every result bit for bit with
// strconv.ParseFloat of the decimal's exact text (correctly rounded), and
// the precision flag with whether that float64 reads back as the decimal.
func TestDecimalsCorrectlyRounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []decimalCase{
		{&arrow.Decimal128Type{Precision: 4, Scale: 2}, 9999},
		{&arrow.Decimal128Type{Precision: 5, Scale: 1}, 20000},
		{&arrow.Decimal128Type{Precision: 18, Scale: 3}, 20000},
		{&arrow.Decimal128Type{Precision: 38, Scale: 0}, 20000},
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, 20000},
		{&arrow.Decimal128Type{Precision: 38, Scale: 30}, 5000},
		{&arrow.Decimal128Type{Precision: 5, Scale: -2}, 2000},
		{&arrow.Decimal256Type{Precision: 76, Scale: 20}, 5000},
		{&arrow.Decimal256Type{Precision: 40, Scale: 3}, 5000},
		{&arrow.Decimal32Type{Precision: 9, Scale: 4}, 5000},
		{&arrow.Decimal64Type{Precision: 18, Scale: 6}, 5000},
	}
	for _, tc := range cases {
		t.Run(tc.dt.String(), func(t *testing.T) {
			prec, scale := tc.dt.GetPrecision(), tc.dt.GetScale()
			limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil) // 10^p
			edges := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(-1), big.NewInt(3), big.NewInt(30), big.NewInt(-5),
				new(big.Int).Sub(limit, big.NewInt(1)), new(big.Int).Sub(big.NewInt(1), limit)}
			for _, e := range []int64{1 << 53, 1<<53 + 1, 1<<53 - 1, 1 << 60, 999_999_999_999_999, 1_000_000_000_000_001} {
				if big.NewInt(e).Cmp(limit) < 0 {
					edges = append(edges, big.NewInt(e), big.NewInt(-e))
				}
			}
			ns := edges
			for range tc.random {
				n := new(big.Int).Rand(rng2big(rng), limit)
				if rng.IntN(2) == 0 {
					n.Neg(n)
				}
				// Short values as well as full-width ones.
				if rng.IntN(3) == 0 {
					n.Quo(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rng.IntN(int(prec)))), nil))
				}
				ns = append(ns, n)
			}
			a := decimalArray(t, tc.dt, ns)
			defer a.Release()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			out, f, err := decimalToFloat(mem, a)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			got := out.(*array.Float64)
			if !got.IsNull(len(ns)) {
				t.Error("the null is not null")
			}
			var lossy, oldWrong int
			d := *typeOf(a.DataType().ID()).decimal
			for i, n := range ns {
				text := exactDecimalText(n, scale)
				want, err := strconv.ParseFloat(text, 64)
				if err != nil {
					t.Fatal(err)
				}
				if g := got.Value(i); math.Float64bits(g) != math.Float64bits(want) && !(g == 0 && want == 0) {
					t.Fatalf("%s: got %v, want %v", text, g, want)
				}
				if tt := string(appendDecimal(nil, d, a, i, scale)); tt != text {
					t.Fatalf("text of %s: got %s", text, tt)
				}
				back := strconv.FormatFloat(want, 'f', int(max(scale, 0)), 64)
				_, l := decimalFloat(d, a, i, scale, new([]byte))
				if wantLossy := strings.TrimPrefix(back, "-") != strings.TrimPrefix(text, "-"); l != wantLossy {
					t.Fatalf("%s: lossy %v, want %v (reads back as %s)", text, l, wantLossy, back)
				}
				if l {
					lossy++
				}
				if a, ok := a.(*array.Decimal128); ok && a.Value(i).ToFloat64(scale) != want {
					oldWrong++
				}
			}
			if (f&lostPrecision != 0) != (lossy > 0) {
				t.Errorf("found %b with %d lossy values", f, lossy)
			}
			t.Logf("%d values, %d do not fit a float64 exactly; decimal128 ToFloat64 was off for %d", len(ns), lossy, oldWrong)
		})
	}
}

func rng2big(r *rand.Rand) *mrand.Rand { return mrand.New(mrand.NewSource(int64(r.Uint64()))) }

// TestDecimalNoticeOnlyWhenAValueLosesPrecision: DuckDB types sum(BIGINT)
// as DECIMAL(38,0); small sums are exact.
func TestDecimalNoticeOnlyWhenAValueLosesPrecision(t *testing.T) {
	dt := &arrow.Decimal128Type{Precision: 38, Scale: 0}
	for _, tc := range []struct {
		values []*big.Int
		lossy  bool
	}{
		{[]*big.Int{big.NewInt(0), big.NewInt(123456789), big.NewInt(-1 << 53), big.NewInt(1 << 53)}, false},
		{[]*big.Int{big.NewInt(1 << 62)}, false}, // above 2^53 but a float64 exactly
		{[]*big.Int{big.NewInt(1<<53 + 1)}, true},
		{[]*big.Int{new(big.Int).Exp(big.NewInt(10), big.NewInt(37), nil)}, true}, // 10^37 is no float64
	} {
		a := decimalArray(t, dt, tc.values)
		out, f, err := decimalToFloat(memory.DefaultAllocator, a)
		if err != nil {
			t.Fatal(err)
		}
		if (f&lostPrecision != 0) != tc.lossy {
			t.Errorf("%v: lost precision %v, want %v", tc.values, f&lostPrecision != 0, tc.lossy)
		}
		out.Release()
		a.Release()
	}
}

func TestIntervalText(t *testing.T) {
	for _, tc := range []struct {
		months, days int32
		ns           int64
		want         string
	}{
		{0, 0, 0, "00:00:00"},
		{1, 0, 0, "1 month"},
		{12, 0, 0, "1 year"},
		{14, 2, 3_723_500_000_000, "1 year 2 months 2 days 01:02:03.5"},
		{-13, 0, 0, "-1 year -1 month"},
		{0, -1, 0, "-1 day"},
		{0, 1, 1000, "1 day 00:00:00.000001"},
		{0, 0, -3_600_000_000_000, "-01:00:00"},
		{0, 0, 100 * 3_600_000_000_000, "100:00:00"},
		{0, 3, 1, "3 days 00:00:00.000000001"},
		{24, 0, 61_000_000_000, "2 years 00:01:01"},
		{0, 0, math.MinInt64, "-2562047:47:16.854775807"},
	} {
		if got := string(intervalText(nil, tc.months, tc.days, tc.ns)); got != tc.want {
			t.Errorf("(%d, %d, %d): got %q, want %q", tc.months, tc.days, tc.ns, got, tc.want)
		}
	}
}

// TestOutOfRangeTimestampsBecomeNull: values int64 nanoseconds cannot hold,
// and DuckDB's infinities, are nulls with a notice naming the column; the
// query does not fail.
func TestOutOfRangeTimestampsBecomeNull(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ok", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	}, nil)
	us := []int64{1_700_000_000_000_000, math.MaxInt64, -math.MaxInt64, 32_503_680_000_000_000 /* 3000-01-01 */, -9_223_286_400_000_000 /* 1677-09-22 */}
	ns := []int64{5, math.MaxInt64, -math.MaxInt64, 6, 7}
	days := []int32{19675, math.MaxInt32, -math.MaxInt32, 200_000, -106_000}
	rec := batch(schema, func(b *array.RecordBuilder) {
		for i := range us {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(us[i]))
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ns[i]))
			b.Field(2).(*array.Date32Builder).Append(arrow.Date32(days[i]))
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		}
	})
	srv := newMemServer()
	srv.set("t", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{rec}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	sink, err := runQuery(t, s, "t", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	want := map[string][]any{
		"ts_us": {time.UnixMicro(us[0]), nil, nil, nil, time.UnixMicro(us[4])},
		"ts_ns": {time.Unix(0, 5), nil, nil, time.Unix(0, 6), time.Unix(0, 7)},
		"day":   {time.Unix(19675*86400, 0), nil, nil, nil, time.Unix(-106_000*86400, 0)},
		"ok":    {time.Unix(0, 0), time.Unix(1, 0), time.Unix(2, 0), time.Unix(3, 0), time.Unix(4, 0)},
	}
	for _, fld := range f.Fields {
		for i, w := range want[fld.Name] {
			got, ok := fld.ConcreteAt(i)
			if w == nil {
				if ok {
					t.Errorf("%s[%d]: got %v, want null", fld.Name, i, got)
				}
				continue
			}
			if !ok || !got.(time.Time).Equal(w.(time.Time)) {
				t.Errorf("%s[%d]: got %v, want %v", fld.Name, i, got, w)
			}
		}
	}
	if f.Meta == nil || len(f.Meta.Notices) != 3 {
		t.Fatalf("notices: %+v", f.Meta)
	}
	for i, name := range []string{"ts_us", "ts_ns", "day"} {
		if n := f.Meta.Notices[i].Text; !strings.Contains(n, fmt.Sprintf("%q", name)) || !strings.Contains(n, "infinity") || !strings.Contains(n, "shown as empty") {
			t.Errorf("notice %d: %q", i, n)
		}
	}
}

// jsonOf converts column a to JSON and returns the JSON of each row ("" for a null).
func jsonOf(t *testing.T, a arrow.Array) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out, _, err := convertJSON(mem, a)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	var rows []string
	for i := range out.Len() {
		v := ""
		if out.IsValid(i) {
			v = string(out.(*array.Binary).Value(i))
			if !json.Valid([]byte(v)) {
				t.Errorf("row %d is not JSON: %s", i, v)
			}
		}
		rows = append(rows, v)
	}
	return rows
}

// fromJSON builds a column of dt from arrow-go's JSON form of its values.
func fromJSON(t *testing.T, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	a, _, err := array.FromJSON(memory.DefaultAllocator, dt, strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s: %v", dt, err)
	}
	return a
}

// TestNestedJSON: nested values are JSON the way DuckDB's to_json writes
// them: maps as objects with text keys, unions as an object naming their
// member, decimals as
// numbers with their exact digits, timestamps, dates, times and intervals as
// text, nulls as null.
func TestNestedJSON(t *testing.T) {
	dec := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	for _, tc := range []struct {
		dt   arrow.DataType
		js   string
		want []string
	}{
		{arrow.ListOf(dec), `[["1.50","-0.05",null],[],null]`, []string{`[1.50,-0.05,null]`, `[]`, ``}},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), `[[{"key":"a","value":1},{"key":"b","value":null}]]`, []string{`{"a":1,"b":null}`}},
		{arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.ListOf(arrow.BinaryTypes.String)), `[[{"key":1,"value":["x","y\""]},{"key":-2,"value":[]}]]`, []string{`{"1":["x","y\""],"-2":[]}`}},
		{arrow.MapOf(arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Boolean), `[[{"key":"2024-02-29","value":true}]]`, []string{`{"2024-02-29":true}`}},
		{arrow.StructOf(arrow.Field{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
			arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
			arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
			arrow.Field{Name: "tod", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
			arrow.Field{Name: "n", Type: arrow.Null, Nullable: true}),
			`[{"t":"2024-01-02T03:04:05.123456Z","ts":"2024-01-02 03:04:05","d":"2024-01-02","tod":"01:02:03.5","n":null}]`,
			[]string{`{"t":"2024-01-02 03:04:05.123456+00","ts":"2024-01-02 03:04:05","d":"2024-01-02","tod":"01:02:03.5","n":null}`}},
		{arrow.ListOf(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true})),
			`[[{"a":1.5,"b":"AAE="},{"a":1e-7,"b":null},{"a":1e21,"b":""}]]`, []string{`[{"a":1.5,"b":"AAE="},{"a":1e-7,"b":null},{"a":1e+21,"b":""}]`}},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int16), `[[1,2],[null,4]]`, []string{`[1,2]`, `[null,4]`}},
		{arrow.LargeListOf(arrow.BinaryTypes.LargeString), `[["a"],["b",null]]`, []string{`["a"]`, `["b",null]`}},
		{arrow.ListViewOf(arrow.PrimitiveTypes.Uint64), `[[18446744073709551615],[]]`, []string{`[18446744073709551615]`, `[]`}},
		{arrow.ListOf(arrow.FixedWidthTypes.MonthDayNanoInterval), `[[{"months":1,"days":2,"nanoseconds":3000000000}]]`, []string{`["1 month 2 days 00:00:03"]`}},
		{arrow.ListOf(&arrow.Decimal256Type{Precision: 50, Scale: 20}), `[["123456789012345678901234567890.12345678901234567890"]]`, []string{`[123456789012345678901234567890.12345678901234567890]`}},
		{arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, []arrow.UnionTypeCode{3, 9}),
			`[[3,7],[9,"x"],[9,null]]`, []string{`{"i":7}`, `{"s":"x"}`, ``}},
		{arrow.ListOf(arrow.PrimitiveTypes.Float32), `[[0.1,2.5]]`, []string{`[0.1,2.5]`}},
	} {
		a := fromJSON(t, tc.dt, tc.js)
		got := jsonOf(t, a)
		a.Release()
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.dt, got, tc.want)
		}
	}
}

// TestNestedJSONSpecialValues: NaN and infinities are strings (JSON has no
// such numbers), uuid, json and bool8 extension values inside a list are
// their value, dictionaries and run-end encoded values are decoded.
func TestNestedJSONSpecialValues(t *testing.T) {
	lb := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Float64)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float64Builder).AppendValues([]float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}, nil)
	floats := lb.NewArray()
	lb.Release()
	defer floats.Release()
	if got := jsonOf(t, floats); got[0] != `["NaN","Infinity","-Infinity",-0]` {
		t.Errorf("floats: %s", got[0])
	}

	ub := array.NewListBuilder(memory.DefaultAllocator, extensions.NewUUIDType())
	ub.Append(true)
	ub.ValueBuilder().(*extensions.UUIDBuilder).Append(uuid.MustParse("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"))
	ub.ValueBuilder().AppendNull()
	uuids := ub.NewArray()
	ub.Release()
	defer uuids.Release()
	if got := jsonOf(t, uuids); got[0] != `["0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",null]` {
		t.Errorf("uuids: %s", got[0])
	}

	jb := array.NewListBuilder(memory.DefaultAllocator, jsonExt(t))
	jb.Append(true)
	jstore := jb.ValueBuilder().(*array.ExtensionBuilder).StorageBuilder().(*array.StringBuilder)
	jstore.Append(`{"k": [true]}`)
	jstore.Append(`not json`)
	bb := array.NewListBuilder(memory.DefaultAllocator, extensions.NewBool8Type())
	bb.Append(true)
	bb.ValueBuilder().(*extensions.Bool8Builder).AppendValues([]bool{true, false}, nil)
	for _, tc := range []struct {
		b    array.Builder
		want string
	}{{jb, `[{"k": [true]},"not json"]`}, {bb, `[true,false]`}} {
		a := tc.b.NewArray()
		tc.b.Release()
		if got := jsonOf(t, a); got[0] != tc.want {
			t.Errorf("%s: %s, want %s", a.DataType(), got[0], tc.want)
		}
		a.Release()
	}

	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	st := arrow.StructOf(arrow.Field{Name: "region", Type: dictType, Nullable: true},
		arrow.Field{Name: "run", Type: arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int64), Nullable: true})
	sb := array.NewStructBuilder(memory.DefaultAllocator, st)
	for _, r := range []string{"eu", "us"} {
		sb.Append(true)
		if err := sb.FieldBuilder(0).(*array.BinaryDictionaryBuilder).AppendString(r); err != nil {
			t.Fatal(err)
		}
	}
	rb := sb.FieldBuilder(1).(*array.RunEndEncodedBuilder)
	rb.Append(2)
	rb.ValueBuilder().(*array.Int64Builder).Append(42)
	structs := sb.NewArray()
	sb.Release()
	defer structs.Release()
	if got := jsonOf(t, structs); strings.Join(got, " ") != `{"region":"eu","run":42} {"region":"us","run":42}` {
		t.Errorf("structs: %q", got)
	}
}

func TestTimestampText(t *testing.T) {
	for _, tc := range []struct {
		dt   *arrow.TimestampType
		v    int64
		want string
	}{
		{&arrow.TimestampType{Unit: arrow.Second}, 0, "1970-01-01 00:00:00"},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, -1, "1969-12-31 23:59:59.999999"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, 1_700_000_000_000_000_010, "2023-11-14 22:13:20.00000001+00"},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "+05:30"}, 0, "1970-01-01 05:30:00+05:30"},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "-08:00"}, 0, "1969-12-31 16:00:00-08"},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, math.MaxInt64, "infinity"},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, -math.MaxInt64, "-infinity"},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, 253_402_300_800_000_000, "10000-01-01 00:00:00"},
		{&arrow.TimestampType{Unit: arrow.Second}, -62_135_596_800 - 86400, "0001-12-31 (BC) 00:00:00"},
	} {
		b := array.NewTimestampBuilder(memory.DefaultAllocator, tc.dt)
		b.Append(arrow.Timestamp(tc.v))
		a := b.NewArray()
		b.Release()
		if got := string(appendText(nil, a, 0)); got != tc.want {
			t.Errorf("%s %d: got %q, want %q", tc.dt, tc.v, got, tc.want)
		}
		a.Release()
	}
}

// TestExtensionTypes: opaque values are shown with a notice naming the
// column; an extension this package does not know is its storage type.
func TestExtensionTypes(t *testing.T) {
	opaque := extensions.NewOpaqueType(arrow.BinaryTypes.Binary, "geometry", "postgis")
	c := normalise("shape", opaque)
	if c.out.ID() != arrow.STRING || !strings.Contains(c.notice, `"shape"`) || !strings.Contains(c.notice, "base64") || !strings.Contains(c.notice, "postgis") {
		t.Errorf("opaque: %s, %q", c.out, c.notice)
	}
	eb := array.NewExtensionBuilder(memory.DefaultAllocator, opaque)
	eb.StorageBuilder().(*array.BinaryBuilder).Append([]byte{1, 2, 3})
	a := eb.NewArray()
	eb.Release()
	out, _, err := c.convert(memory.DefaultAllocator, a)
	if err != nil || out.(*array.String).Value(0) != "AQID" {
		t.Errorf("opaque value: %v %v", out, err)
	}
	out.Release()
	a.Release()

	// An unknown extension over int64 stays a number Grafana can plot.
	c = normalise("n", &textExt{ExtensionBase: arrow.ExtensionBase{Storage: arrow.PrimitiveTypes.Int64}})
	if c.out.ID() != arrow.INT64 || c.notice != "" {
		t.Errorf("unknown extension: %s %q", c.out, c.notice)
	}
}

// TestTypeMissingFromTheTableIsText: a type the table does not know is
// text with a notice naming the column, never a failed query.
func TestTypeMissingFromTheTableIsText(t *testing.T) {
	saved := registry[arrow.INTERVAL_MONTHS].normalise
	registry[arrow.INTERVAL_MONTHS].normalise = nil
	defer func() { registry[arrow.INTERVAL_MONTHS].normalise = saved }()
	schema := arrow.NewSchema([]arrow.Field{{Name: "ok", Type: arrow.PrimitiveTypes.Int64}, {Name: "span", Type: arrow.FixedWidthTypes.MonthInterval, Nullable: true}}, nil)
	rec := batch(schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
		b.Field(1).(*array.MonthIntervalBuilder).Append(3)
		b.Field(1).AppendNull()
	})
	srv := newMemServer()
	srv.set("q", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{rec}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	sink, err := runQuery(t, s, "q", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if got, _ := f.Fields[1].ConcreteAt(0); got != "3" {
		t.Errorf("span: %v", got)
	}
	if _, ok := f.Fields[1].ConcreteAt(1); ok {
		t.Error("span: the null is not null")
	}
	if f.Meta == nil || len(f.Meta.Notices) != 1 || !strings.Contains(f.Meta.Notices[0].Text, `Column "span" has type month_interval, which Grafana cannot read: it is shown as text`) {
		t.Errorf("notices: %+v", f.Meta)
	}
}

// TestFailedConversionLeavesTheColumnOut: a conversion that fails or panics
// gives an all-null column and a notice naming it; the others are intact.
func TestFailedConversionLeavesTheColumnOut(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "ok", Type: arrow.PrimitiveTypes.Int64}, {Name: "bad", Type: arrow.BinaryTypes.LargeString}, {Name: "worse", Type: arrow.BinaryTypes.StringView}}, nil)
	rec := batch(schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).Append(1)
		b.Field(1).(*array.LargeStringBuilder).Append("x")
		b.Field(2).(*array.StringViewBuilder).Append("y")
	})
	defer rec.Release()
	p := newPlan(schema)
	p.convs[1].convert = func(memory.Allocator, arrow.Array) (arrow.Array, found, error) { return nil, 0, errors.New("no way") }
	p.convs[2].convert = func(memory.Allocator, arrow.Array) (arrow.Array, found, error) { panic("boom") }
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out := p.apply(mem, rec)
	defer out.Release()
	if out.Column(0).(*array.Int64).Value(0) != 1 || out.Column(1).IsValid(0) || out.Column(2).IsValid(0) || !arrow.TypeEqual(out.Column(1).DataType(), arrow.BinaryTypes.String) {
		t.Errorf("columns: %v", out)
	}
	ns := p.notices()
	if len(ns) != 2 || !strings.Contains(ns[0], `"bad"`) || !strings.Contains(ns[0], "no way") || !strings.Contains(ns[1], `"worse"`) || !strings.Contains(ns[1], "boom") {
		t.Errorf("notices: %q", ns)
	}
}

// BenchmarkDecimalToFloat converts 8192 decimals; the anchor is arrow-go's
// ToFloat64 (not correctly rounded) over the same values.
func BenchmarkDecimalToFloat(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		dt     *arrow.Decimal128Type
		values string
	}{
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, "full"},
		{&arrow.Decimal128Type{Precision: 38, Scale: 0}, "sums"},
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, "short"},
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, "full"},
	} {
		dt := tc.dt
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dt.Precision)), nil)
		ns := make([]*big.Int, 8192)
		for i := range ns {
			switch tc.values {
			case "full": // every digit of the precision
				ns[i] = new(big.Int).Rand(rng2big(rng), limit)
			case "sums": // small integers
				ns[i] = big.NewInt(rng.Int64N(1 << 40))
			case "short": // 12 significant digits, 1e-4 … 1e8
				ns[i] = new(big.Int).Mul(big.NewInt(rng.Int64N(1e12)), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rng.IntN(3))), nil))
			}
		}
		a := decimalArray(b, dt, ns)
		b.Run(fmt.Sprintf("type=%s/values=%s/conv=quiver", dt, tc.values), func(b *testing.B) {
			for range b.N {
				out, _, _ := decimalToFloat(memory.DefaultAllocator, a)
				out.Release()
			}
		})
		b.Run(fmt.Sprintf("type=%s/values=%s/conv=ToFloat64", dt, tc.values), func(b *testing.B) {
			src := a.(*array.Decimal128)
			for range b.N {
				fb := array.NewFloat64Builder(memory.DefaultAllocator)
				fb.Reserve(src.Len())
				for i := range src.Len() {
					if src.IsNull(i) {
						fb.AppendNull()
						continue
					}
					fb.UnsafeAppend(src.Value(i).ToFloat64(dt.Scale))
				}
				fb.NewArray().Release()
				fb.Release()
			}
		})
		a.Release()
	}
}

// hasInfinity finds what isInfinity finds, wherever it lies, and nothing
// next to it.
func TestHasInfinity(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	for _, v := range []int64{maxI, minI, minI + 1, maxI - 1, minI + 2, 0, -1, 1_700_000_000_000_000_000} {
		for _, at := range []int{0, 1, 7} {
			vals := make([]arrow.Timestamp, 8)
			for i := range vals {
				vals[i] = arrow.Timestamp(1_700_000_000_000_000_000 + int64(i))
			}
			vals[at] = arrow.Timestamp(v)
			if got, want := hasInfinity(vals, maxI), isInfinity(v, maxI); got != want {
				t.Errorf("%d at %d: hasInfinity %v, isInfinity %v", v, at, got, want)
			}
		}
	}
	for _, v := range []int32{math.MaxInt32, math.MinInt32, math.MinInt32 + 1, math.MaxInt32 - 1, math.MinInt32 + 2} {
		vals := []arrow.Date32{1, arrow.Date32(v), 3}
		if got, want := hasInfinity(vals, math.MaxInt32), isInfinity(v, math.MaxInt32); got != want {
			t.Errorf("date32 %d: hasInfinity %v, isInfinity %v", v, got, want)
		}
	}
	if hasInfinity([]arrow.Timestamp(nil), maxI) {
		t.Error("no values hold an infinity")
	}
}

// BenchmarkScaleToNS converts 8192 microsecond timestamps (DuckDB's), one
// in 16 null, to nanoseconds: the null-skipping loop of every converter.
func BenchmarkScaleToNS(b *testing.B) {
	tb := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Microsecond})
	for i := range 8192 {
		if i%16 == 0 {
			tb.AppendNull()
			continue
		}
		tb.Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1_000_000))
	}
	a := tb.NewArray()
	tb.Release()
	defer a.Release()
	conv := normaliseTimestamp("time", a.DataType()).convert
	b.Run("unit=us/rows=8192", func(b *testing.B) {
		for range b.N {
			out, _, _ := conv(memory.DefaultAllocator, a)
			out.Release()
		}
	})
}

// TestNormaliseKeepsBuffers: the types Grafana reads as they are (a
// timestamp[ns] with a zone and no infinity, utf8, float64, int64) pass
// normalisation without a copy: every buffer of the normalised batch is the
// received one.
func TestNormaliseKeepsBuffers(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rec := batch(schema, func(b *array.RecordBuilder) {
		for i := range 100 {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1e9))
			if i%7 == 0 {
				b.Field(1).AppendNull()
				b.Field(2).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("h%d", i%3))
				b.Field(2).(*array.Float64Builder).Append(float64(i))
			}
			b.Field(3).(*array.Int64Builder).Append(int64(i))
		}
	})
	defer rec.Release()
	plan := newPlan(schema)
	norm := plan.apply(memory.DefaultAllocator, rec)
	defer norm.Release()
	for c := range schema.NumFields() {
		in, out := rec.Column(c).Data().Buffers(), norm.Column(c).Data().Buffers()
		if len(in) != len(out) {
			t.Fatalf("column %d: %d buffers, want %d", c, len(out), len(in))
		}
		for i := range in {
			if in[i] == nil || in[i].Len() == 0 {
				continue
			}
			if out[i] == nil || unsafe.SliceData(out[i].Bytes()) != unsafe.SliceData(in[i].Bytes()) {
				t.Errorf("column %s buffer %d was copied by normalisation", schema.Field(c).Name, i)
			}
		}
	}
	// A nanosecond column with an infinity is converted (the infinity
	// becomes null), so the check above can fail.
	inf := batch(schema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(math.MaxInt64))
		b.Field(1).(*array.StringBuilder).Append("h")
		b.Field(2).(*array.Float64Builder).Append(1)
		b.Field(3).(*array.Int64Builder).Append(1)
	})
	defer inf.Release()
	n2 := plan.apply(memory.DefaultAllocator, inf)
	defer n2.Release()
	if !n2.Column(0).IsNull(0) {
		t.Errorf("infinity was not made null")
	}
}
