package series

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/frame"
)

// oracleRow is one row of TestSeriesSplitOracle: nil pointers are nulls.
type oracleRow struct {
	t        *int64
	host, dc *string
	v        *float64
	n        int64
}

// oracleShape is how the rows of one case are made and cut into batches.
type oracleShape struct {
	name    string
	rows    int
	series  func(rng *rand.Rand, i int) int // the series of row i
	twoTags bool                            // a dc label column too
	nulls   bool                            // null labels, values and times
	shuffle bool
	batch   func(rng *rand.Rand) int // the next batch's rows (0: an empty batch)
	time    func(i int) int64        // the time of row i (nil: i/97 seconds)
}

// TestSeriesSplitOracle runs results of many shapes through the series
// builder and compares every series with the one built by hand: the rows
// of each label set, in time order (rows of one time in row order).
func TestSeriesSplitOracle(t *testing.T) {
	fixed := func(n int) func(*rand.Rand) int { return func(*rand.Rand) int { return n } }
	shapes := []oracleShape{
		{name: "one series, unsorted", rows: 20000, series: func(*rand.Rand, int) int { return 0 }, shuffle: true, batch: fixed(5000)},
		{name: "every row a new series", rows: 1500, series: func(_ *rand.Rand, i int) int { return i }, batch: fixed(1024)},
		{name: "nulls in labels, values and times; empty batches", rows: 30000, twoTags: true, nulls: true, shuffle: true,
			series: func(rng *rand.Rand, _ int) int { return rng.IntN(90) },
			batch:  func(rng *rand.Rand) int { return []int{0, 1, 7, 500, 4096}[rng.IntN(5)] }},
		{name: "time-major over many batches and flushes", rows: 2*flushRows + 777, series: func(_ *rand.Rand, i int) int { return i % 97 }, batch: fixed(100)},
		{name: "time-major, a period longer than a batch", rows: 3 * flushRows / 2, series: func(_ *rand.Rand, i int) int { return i % 1500 }, batch: fixed(1000)},
		{name: "ordered by series", rows: flushRows + 5000, series: func(_ *rand.Rand, i int) int { return i / 4000 }, batch: fixed(8192)},
		{name: "labels of 17 bytes and more, and empty", rows: 9000, series: func(_ *rand.Rand, i int) int { return i % 31 }, batch: fixed(333)},
		// Every series at each time: the flushes' times are shared
		// (flushSharedTimes), flushes beginning in the middle of a time.
		{name: "time-major, one time per cycle", rows: 3*flushRows + 123, series: func(_ *rand.Rand, i int) int { return i % 50 },
			time: func(i int) int64 { return int64(i/50) * 1000 }, batch: fixed(8192)},
		{name: "time-major, times descending", rows: 2*flushRows + 7, series: func(_ *rand.Rand, i int) int { return i % 50 },
			time: func(i int) int64 { return -int64(i/50) * 1000 }, batch: fixed(3000)},
		{name: "time-major, one row of the second flush off its cycle's time", rows: 3 * flushRows, series: func(_ *rand.Rand, i int) int { return i % 50 },
			time: func(i int) int64 {
				if i == flushRows+4321 {
					return int64(i/50)*1000 + 1
				}
				return int64(i/50) * 1000
			}, batch: fixed(8192)},
	}
	for si, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 99))
			rows := oracleRows(rng, sh)
			recs, schema := oracleBatches(rng, sh, rows)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			sink := &frameSink{t: t}
			splitInto(t, sink, schema, recs)
			want := oracleSeries(rows)
			got := map[string]string{}
			for _, f := range sink.frames {
				var sb []byte
				for i := range f.Rows() {
					v, ok := f.Fields[1].ConcreteAt(i)
					sb = appendPoint(sb, f.Fields[0].At(i).(time.Time).UnixNano(), v, ok)
				}
				got[f.Fields[1].Labels.String()+"|"+f.Fields[1].Name] = string(sb)
			}
			if len(got) != len(want) {
				t.Fatalf("%d frames, want %d", len(got), len(want))
			}
			for k, w := range want {
				if got[k] != w {
					t.Fatalf("frame %s:\n got %.300s\nwant %.300s", k, got[k], w)
				}
			}
		})
	}
}

func oracleRows(rng *rand.Rand, sh oracleShape) []oracleRow {
	str := func(s string) *string { return &s }
	rows := make([]oracleRow, sh.rows)
	for i := range rows {
		s := sh.series(rng, i)
		tv := int64(i/97) * 1000
		if sh.time != nil {
			tv = sh.time(i)
		}
		if sh.shuffle {
			tv = rng.Int64N(int64(sh.rows/4 + 1))
		}
		v := float64(i)
		r := oracleRow{t: &tv, host: str(fmt.Sprintf("h%04d", s)), v: &v, n: int64(i)}
		if strings.Contains(sh.name, "17 bytes") {
			r.host = str(strings.Repeat("x", s)) // 0 to 30 bytes
		}
		if sh.twoTags {
			r.dc = str([]string{"eu", "us", ""}[s%3])
		}
		if sh.nulls {
			switch {
			case s%10 == 1:
				r.host = nil
			case s%10 == 2:
				r.dc = nil
			}
			if rng.IntN(9) == 0 {
				r.v = nil
			}
			if rng.IntN(50) == 0 {
				r.t = nil
			}
		}
		rows[i] = r
	}
	return rows
}

func oracleBatches(rng *rand.Rand, sh oracleShape, rows []oracleRow) ([]arrow.RecordBatch, *arrow.Schema) {
	fields := []arrow.Field{
		{Name: "time", Type: frame.Timestamp, Nullable: true},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}
	if sh.twoTags {
		fields = append(fields, arrow.Field{Name: "dc", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	var recs []arrow.RecordBatch
	for len(rows) > 0 {
		chunk := rows[:min(sh.batch(rng), len(rows))]
		rows = rows[len(chunk):]
		for _, r := range chunk {
			appendOr(rb.Field(0), r.t, func(v int64) { rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(v)) })
			appendOr(rb.Field(1), r.host, rb.Field(1).(*array.StringBuilder).Append)
			appendOr(rb.Field(2), r.v, rb.Field(2).(*array.Float64Builder).Append)
			rb.Field(3).(*array.Int64Builder).Append(r.n)
			if sh.twoTags {
				appendOr(rb.Field(4), r.dc, rb.Field(4).(*array.StringBuilder).Append)
			}
		}
		recs = append(recs, rb.NewRecordBatch())
	}
	return recs, schema
}

func appendOr[T any](b array.Builder, v *T, app func(T)) {
	if v == nil {
		b.AppendNull()
		return
	}
	app(*v)
}

// oracleSeries is the frames the rows should give, by label set and value
// column: "time:value " for every point in time order.
func oracleSeries(rows []oracleRow) map[string]string {
	type point struct {
		t int64
		v *float64
		n int64
	}
	by := map[string][]point{}
	for _, r := range rows {
		if r.t == nil {
			continue
		}
		var labels []string
		if r.dc != nil {
			labels = append(labels, "dc="+*r.dc)
		}
		if r.host != nil {
			labels = append(labels, "host="+*r.host)
		}
		slices.Sort(labels)
		k := strings.Join(labels, ", ")
		by[k] = append(by[k], point{*r.t, r.v, r.n})
	}
	out := map[string]string{}
	for k, ps := range by {
		slices.SortStableFunc(ps, func(a, b point) int { return int(a.t - b.t) })
		var v, n []byte
		for _, p := range ps {
			if p.v == nil {
				v = appendPoint(v, p.t, nil, false)
			} else {
				v = appendPoint(v, p.t, *p.v, true)
			}
			n = appendPoint(n, p.t, p.n, true)
		}
		out[k+"|v"], out[k+"|n"] = string(v), string(n)
	}
	return out
}

// appendPoint writes "time:value " (value null when !ok).
func appendPoint(b []byte, t int64, v any, ok bool) []byte {
	b = append(strconv.AppendInt(b, t, 10), ':')
	switch v := v.(type) {
	case float64:
		if ok {
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	case int64:
		b = strconv.AppendInt(b, v, 10)
	}
	if !ok {
		b = append(b, "null"...)
	}
	return append(b, ' ')
}
