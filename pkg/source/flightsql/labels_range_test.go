package flightsql

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/source"
)

// A label column with dates Grafana cannot read as times (1500-01-01)
// fails a series query, naming the column: made empty, the two series it
// labels would be one, their points interleaved. In a table the same
// column is shown empty with a notice.
func TestLabelsOutsideGrafanasTimes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_ns},
		{Name: "born", Type: arrow.FixedWidthTypes.Date32},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	const y1500, y1600 = -171_802, -135_278 // days since 1970
	for i, born := range []arrow.Date32{y1500, y1600, y1500, y1600} {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000_000 + int64(i/2)*60_000_000_000))
		b.Field(1).(*array.Date32Builder).Append(born)
		b.Field(2).(*array.Float64Builder).Append(float64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	srv := newMemServer()
	srv.set("SELECT born", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{rec}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for _, format := range []string{FormatTimeSeries, FormatTimeSeriesWide} {
		_, err := runQuery(t, s, "SELECT born", format, source.Limits{})
		if err == nil || source.KindOf(err) != source.KindQuery || !strings.Contains(err.Error(), `column "born" (date32) labels series and has values outside the times Grafana reads`) {
			t.Errorf("%s: %v", format, err)
		}
	}
	sink, err := runQuery(t, s, "SELECT born", FormatTable, source.Limits{})
	if err != nil || len(sink.frames) != 1 || sink.frames[0].Meta == nil || len(sink.frames[0].Meta.Notices) != 1 {
		t.Fatalf("table: %v", err)
	}
}
