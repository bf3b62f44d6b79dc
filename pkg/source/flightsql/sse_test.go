package flightsql

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// sseConvert is what Grafana's server-side expressions (alerting, recording
// rules, expressions) make of one query's frames, copied from
// grafana/grafana pkg/expr/converter.go (ResultConverter.Convert, with
// allowLongFrames false as for a math/reduce/threshold input),
// pkg/expr/dataplane.go (shouldUseDataplane, handleDataplaneTimeseries) and
// the readers it calls, grafana/dataplane sdata/reader/reader.go
// (CanReadBasedOnMeta), sdata/timeseries/multi.go (validateAndGetRefsMulti),
// sdata/timeseries/wide.go (validateAndGetRefsWide) and
// sdata/timeseries/util.go (seriesCheckSelectTime, malformedFrameCheck).
// It returns what SSE gets: "no data", or how many series / numbers, or the
// error the rule would show.
func sseConvert(frames data.Frames) (kind string, n int, err error) {
	if len(frames) == 0 {
		return "no data", 0, nil
	}
	first := frames[0]
	// shouldUseDataplane + reader.CanReadBasedOnMeta.
	if first != nil && first.Meta != nil && first.Meta.Type != "" && !first.Meta.TypeVersion.IsZero() {
		switch first.Meta.Type {
		case data.FrameTypeTimeSeriesMulti:
			refs, err := sseMulti(frames)
			return sseRefs("dataplane-timeseries-multi", refs, err)
		case data.FrameTypeTimeSeriesWide:
			refs, err := sseWide(frames)
			return sseRefs("dataplane-timeseries-wide", refs, err)
		}
		// other types: CanReadBasedOnMeta fails, the old path is taken
	}
	// The old path (converter.go, after the dataplane branch).
	if len(frames) == 1 {
		if len(first.Fields) == 0 {
			return "no data", 0, nil
		}
		if first.TimeSeriesSchema().Type == data.TimeSeriesTypeNot && sseIsNumberTable(first) {
			return "number set", first.Rows(), nil
		}
	}
	for _, f := range frames {
		if s := f.TimeSeriesSchema(); s.Type != data.TimeSeriesTypeWide {
			return "", 0, fmt.Errorf("input data must be a wide series but got type %s (input refid)", s.Type)
		}
	}
	for _, f := range frames {
		n += len(f.TimeSeriesSchema().ValueIndices)
	}
	return "series set", n, nil
}

func sseRefs(kind string, refs int, err error) (string, int, error) {
	if err != nil {
		return "", 0, err
	}
	if refs == 0 {
		return "no data", 0, nil
	}
	return kind, refs, nil
}

// sseIsNumberTable is converter.go's isNumberTable.
func sseIsNumberTable(f *data.Frame) bool {
	numeric, other := 0, 0
	for _, fld := range f.Fields {
		switch t := fld.Type(); {
		case t.Numeric():
			numeric++
		case t == data.FieldTypeString || t == data.FieldTypeNullableString:
		default:
			other++
		}
	}
	return numeric == 1 && other == 0
}

func sseValueFields(f *data.Frame) []int {
	return f.TypeIndices(append(data.NumericFieldTypes(), data.FieldTypeBool, data.FieldTypeNullableBool)...)
}

// sseFrameCheck is malformedFrameCheck + seriesCheckSelectTime.
func sseFrameCheck(i int, f *data.Frame) error {
	if _, err := f.RowLen(); err != nil {
		return fmt.Errorf("frame %v has mismatched field lengths: %w", i, err)
	}
	if len(f.TypeIndices(data.FieldTypeTime)) == 0 {
		return fmt.Errorf("frame %v is missing a []time.Time field", i)
	}
	return nil
}

// sseMulti is validateAndGetRefsMulti (validateData false): the number of
// series, 0 for the no-data response.
func sseMulti(frames data.Frames) (int, error) {
	if len(frames[0].Fields) == 0 {
		return 0, nil // "No Data Response"
	}
	refs := 0
	for i, f := range frames {
		if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti {
			if i == 0 {
				return 0, errors.New("first frame must have the many/multi type indicator in frame metadata")
			}
			continue
		}
		if len(f.Fields) == 0 {
			return 0, fmt.Errorf("frame %v has zero or null fields which is invalid when more than one frame", i)
		}
		if err := sseFrameCheck(i, f); err != nil {
			return 0, err
		}
		if v := sseValueFields(f); len(v) == 0 {
			return 0, fmt.Errorf("frame %v must have at least one value field but has %v", i, len(v))
		}
		refs++
	}
	return refs, nil
}

// sseWide is validateAndGetRefsWide (validateData false).
func sseWide(frames data.Frames) (int, error) {
	f := frames[0]
	if len(f.Fields) == 0 {
		return 0, nil // empty response
	}
	if err := sseFrameCheck(0, f); err != nil {
		return 0, err
	}
	v := sseValueFields(f)
	if len(v) == 0 {
		return 0, errors.New("frame is missing a numeric value field")
	}
	return len(v), nil
}

// TestSSEReadsTheAnswers runs Flight SQL answers through what Grafana's
// server-side expressions do with them: an alert rule on a query gets its
// series, its numbers, or NoData, never an error for an answer without rows.
func TestSSEReadsTheAnswers(t *testing.T) {
	srv := newMemServer()
	// No rows at all (the time filter matches nothing).
	srv.set("none", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{nil}})
	// Rows, but every time null.
	allNull := batch(metricsSchema, func(b *array.RecordBuilder) {
		b.Field(0).AppendNull()
		_ = b.Field(1).(*array.BinaryDictionaryBuilder).AppendString("h")
		b.Field(2).AppendNull()
		b.Field(3).(*array.Float64Builder).Append(1)
		b.Field(4).(*array.Int64Builder).Append(1)
	})
	srv.set("nulltimes", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{{allNull}}})
	eu := "eu"
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, []metricRow{
		{ts: 1000, host: "a", dc: &eu, cpu: 1, reqs: 1}, {ts: 1000, host: "b", cpu: 2, reqs: 2}, {ts: 2000, host: "a", dc: &eu, cpu: 3, reqs: 3},
	}, 10)}})
	// A nullable decimal value with a null, and a host label.
	decSchema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	srv.set("dec", &dataset{schema: decSchema, endpoints: [][]arrow.RecordBatch{{batch(decSchema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1, 2}, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "a"}, nil)
		b.Field(2).(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(150), {}}, []bool{true, false})
	})}}})
	// A table: one number per host (SELECT host, avg(cpu) … GROUP BY host).
	numSchema := arrow.NewSchema([]arrow.Field{
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "avg", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	srv.set("numbers", &dataset{schema: numSchema, endpoints: [][]arrow.RecordBatch{{batch(numSchema, func(b *array.RecordBuilder) {
		b.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
		b.Field(1).(*array.Float64Builder).AppendValues([]float64{1, 2}, nil)
	})}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	for _, tc := range []struct {
		sql, format string
		kind        string
		n           int
	}{
		{"none", FormatTimeSeries, "no data", 0},
		{"none", FormatTimeSeriesWide, "no data", 0},
		{"none", "", "no data", 0}, // format chosen from the schema: time_series
		{"nulltimes", FormatTimeSeries, "no data", 0},
		{"nulltimes", FormatTimeSeriesWide, "no data", 0},
		{"m", FormatTimeSeries, "dataplane-timeseries-multi", 4},
		{"m", FormatTimeSeriesWide, "dataplane-timeseries-wide", 4},
		{"dec", FormatTimeSeries, "dataplane-timeseries-multi", 1},
		{"numbers", FormatTable, "number set", 2},
		{"numbers", "", "number set", 2},
	} {
		name := tc.sql + "/" + tc.format
		sink, err := runQuery(t, s, tc.sql, tc.format, source.Limits{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		kind, n, err := sseConvert(sink.frames)
		if err != nil || kind != tc.kind || n != tc.n {
			t.Errorf("%s: SSE gets %q %d, error %v; want %q %d", name, kind, n, err, tc.kind, tc.n)
		}
		// What a NoData answer still carries: the SQL sent.
		if tc.kind == "no data" && (len(sink.frames) != 1 || sink.frames[0].Meta == nil || sink.frames[0].Meta.ExecutedQueryString != tc.sql) {
			t.Errorf("%s: frames %v", name, sink.frames)
		}
	}
}
