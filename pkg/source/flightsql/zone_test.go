package flightsql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// zoneShapes are the types a timestamp can sit in within a column written
// as JSON, each with values in arrow-go's JSON form.
var zoneShapes = []struct {
	name string
	of   func(ts arrow.DataType) arrow.DataType
	js   string
}{
	{"list", func(ts arrow.DataType) arrow.DataType { return arrow.ListOf(ts) }, `[[1704164645000, null], null]`},
	{"large_list", func(ts arrow.DataType) arrow.DataType { return arrow.LargeListOf(ts) }, `[[1719889445000]]`},
	{"fixed_size_list", func(ts arrow.DataType) arrow.DataType { return arrow.FixedSizeListOf(2, ts) }, `[[1704164645000, 1719964799000]]`},
	{"list_view", func(ts arrow.DataType) arrow.DataType { return arrow.ListViewOf(ts) }, `[[1704164645000]]`},
	{"large_list_view", func(ts arrow.DataType) arrow.DataType { return arrow.LargeListViewOf(ts) }, `[[1704164645000]]`},
	{"struct", func(ts arrow.DataType) arrow.DataType {
		return arrow.StructOf(arrow.Field{Name: "t", Type: ts, Nullable: true}, arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}, `[{"t": 1704164645000, "n": 1}, null]`},
	{"map_value", func(ts arrow.DataType) arrow.DataType { return arrow.MapOf(arrow.BinaryTypes.String, ts) }, `[[{"key": "a", "value": 1704164645000}]]`},
	{"map_key", func(ts arrow.DataType) arrow.DataType { return arrow.MapOf(ts, arrow.PrimitiveTypes.Int64) }, `[[{"key": 1704164645000, "value": 7}]]`},
	{"sparse_union", func(ts arrow.DataType) arrow.DataType {
		return arrow.SparseUnionOf([]arrow.Field{{Name: "t", Type: ts, Nullable: true}, {Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, []arrow.UnionTypeCode{0, 1})
	}, `[[0, 1704164645000]]`},
	{"dense_union", func(ts arrow.DataType) arrow.DataType {
		return arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "t", Type: ts, Nullable: true}}, []arrow.UnionTypeCode{2, 5})
	}, `[[5, 1704164645000], [2, 3]]`},
	{"list_of_opaque", func(ts arrow.DataType) arrow.DataType {
		return arrow.ListOf(extensions.NewOpaqueType(ts, "event_time", "SomeEngine"))
	}, `[[1704164645000]]`},
	{"list_of_dictionary", func(ts arrow.DataType) arrow.DataType {
		return arrow.ListOf(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: ts})
	}, `[[1704164645000, 1704164645000, null]]`},
	{"struct_of_run_end", func(ts arrow.DataType) arrow.DataType {
		return arrow.StructOf(arrow.Field{Name: "r", Type: arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int16, ts), Nullable: true})
	}, `[{"r": 1704164645000}, {"r": 1704164645000}]`},
	{"list_of_struct_of_list", func(ts arrow.DataType) arrow.DataType {
		return arrow.ListOf(arrow.StructOf(arrow.Field{Name: "ts", Type: arrow.ListOf(ts), Nullable: true}))
	}, `[[{"ts": [1704164645000]}]]`},
}

// zonedJSON is the plan's JSON of js as shape with timestamps in zone,
// from row from on, and the plan's notices. It fails the test on a leak.
func zonedJSON(t *testing.T, of func(arrow.DataType) arrow.DataType, js, zone string, from int) (rows, notices []string) {
	t.Helper()
	// arrow-go's builder loads the zone: build in UTC, then name the zone.
	ts := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	dt := of(ts)
	all := fromJSON(t, dt, js)
	defer all.Release()
	a := array.NewSlice(all, int64(from), int64(all.Len()))
	defer a.Release()
	ts.TimeZone = zone
	ts.ClearCachedLocation()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: dt, Nullable: true}}, nil)
	p := newPlan(schema)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	in := array.NewRecordBatch(schema, []arrow.Array{a}, int64(a.Len()))
	defer in.Release()
	out := p.apply(mem, in)
	defer out.Release()
	col := out.Column(0).(*array.Binary)
	for i := range col.Len() {
		rows = append(rows, col.ValueStr(i))
	}
	return rows, p.notices()
}

// A zone arrow-go cannot load is replaced once, in the column's type,
// whatever the type it sits in: a column in an unknown zone is written as
// the same values in UTC, with a notice naming the zone; an offset without
// its colon as the offset with it, without one; a zone arrow-go loads is
// left as it is.
func TestUnknownZonesReplacedInTheType(t *testing.T) {
	for _, sh := range zoneShapes {
		t.Run(sh.name, func(t *testing.T) {
			for _, tc := range []struct{ zone, same string }{
				{"Mars/Olympus_Mons", "UTC"},
				{"+0530", "+05:30"},
				{"-08", "-08:00"},
			} {
				got, notices := zonedJSON(t, sh.of, sh.js, tc.zone, 0)
				want, _ := zonedJSON(t, sh.of, sh.js, tc.same, 0)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s:\ngot  %q\nwant %q (as %s)", tc.zone, got, want, tc.same)
				}
				if len(got) > 1 { // a slice of the column: offsets carried over
					gotTail, _ := zonedJSON(t, sh.of, sh.js, tc.zone, 1)
					if strings.Join(gotTail, "\n") != strings.Join(want[1:], "\n") {
						t.Errorf("%s from row 1:\ngot  %q\nwant %q", tc.zone, gotTail, want[1:])
					}
				}
				unknown := tc.same == "UTC"
				if named := len(notices) == 1 && strings.Contains(notices[0], tc.zone); named != unknown || (!unknown && len(notices) > 0) {
					t.Errorf("%s: notices %q", tc.zone, notices)
				}
			}
			ny, _ := zonedJSON(t, sh.of, sh.js, "America/New_York", 0)
			utc, _ := zonedJSON(t, sh.of, sh.js, "UTC", 0)
			if strings.Join(ny, "") == strings.Join(utc, "") {
				t.Errorf("America/New_York is written as UTC: %q", ny)
			}
		})
	}
}

// What knownZones returns loads every zone, so that no value's text looks
// one up; a type whose zones load is returned as it is.
func TestKnownZonesLoadEveryZone(t *testing.T) {
	var loads func(dt arrow.DataType) bool
	loads = func(dt arrow.DataType) bool {
		switch t := dt.(type) {
		case *arrow.TimestampType:
			_, err := t.GetZone()
			return err == nil
		case arrow.ExtensionType:
			return loads(t.StorageType())
		case *arrow.DictionaryType:
			return loads(t.ValueType)
		case arrow.NestedType:
			for _, f := range t.Fields() {
				if !loads(f.Type) {
					return false
				}
			}
		}
		return true
	}
	for _, sh := range zoneShapes {
		for _, zone := range []string{"Nowhere/At_All", "+0100", "+99", "Europe/Paris", "+05:30", strings.Repeat("Z", 200)} {
			dt := sh.of(&arrow.TimestampType{Unit: arrow.Second, TimeZone: zone})
			var unknown []string
			known := knownZones(dt, &unknown)
			if !loads(known) {
				t.Errorf("%s in %s: %s has a zone GetZone cannot load", zone, sh.name, known)
			}
			if loads(dt) != (known == dt) {
				t.Errorf("%s in %s: replaced %v, though its zones load: %v", zone, sh.name, known != dt, loads(dt))
			}
		}
	}
}

// BenchmarkZonedJSON: the JSON of a list of zoned timestamps (8 a row), a
// zone the database has and one it lacks, through the plan.
func BenchmarkZonedJSON(b *testing.B) {
	for _, zone := range []string{"America/New_York", "Mars/Olympus_Mons"} {
		b.Run("zone="+strings.ReplaceAll(zone, "/", "_"), func(b *testing.B) {
			ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
			lb := array.NewListBuilder(memory.DefaultAllocator, ts)
			vb := lb.ValueBuilder().(*array.TimestampBuilder)
			for i := range 4096 {
				lb.Append(true)
				for k := range 8 {
					vb.Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i*8+k)*1_000_003))
				}
			}
			a := lb.NewArray()
			lb.Release()
			defer a.Release()
			ts.TimeZone = zone
			ts.ClearCachedLocation()
			schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: a.DataType(), Nullable: true}}, nil)
			rec := array.NewRecordBatch(schema, []arrow.Array{a}, int64(a.Len()))
			defer rec.Release()
			b.ReportAllocs()
			for b.Loop() {
				p := newPlan(schema)
				p.apply(memory.DefaultAllocator, rec).Release()
			}
		})
	}
}

// Zone names are the SQL's to choose: a struct of many fields, each in a
// different unknown zone of 10 000 bytes, gets one notice, which quotes a
// bounded prefix of the first.
func TestHostileZoneNamesOneBoundedNotice(t *testing.T) {
	fields := make([]arrow.Field, 500)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprint("t", i), Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: fmt.Sprint(i, strings.Repeat("Z", 10_000))}, Nullable: true}
	}
	p := newPlan(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.StructOf(fields...), Nullable: true}}, nil))
	ns := p.notices()
	if len(ns) != 1 || len(ns[0]) > 400 || !strings.Contains(ns[0], "written in UTC") {
		t.Errorf("%d notices, the first of %d bytes: %.200q", len(ns), len(ns[0]), ns)
	}
}
