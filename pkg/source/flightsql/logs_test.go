package flightsql

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// browserFrame is a frame as Grafana's frontend receives it: the SDK's JSON
// (schema with each field's type, values by column).
type browserFrame struct {
	Schema struct {
		Meta struct {
			Type                string `json:"type"`
			ExecutedQueryString string `json:"executedQueryString"`
		} `json:"meta"`
		Fields []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"fields"`
	} `json:"schema"`
	Data struct {
		Values []json.RawMessage `json:"values"`
	} `json:"data"`
}

// dataplaneLogs is what Grafana's parseDataplaneLogsFrame
// (public/app/features/logs/logsFrame.ts) finds in a frame: fields by name
// and type. Absent optional fields are -1.
type dataplaneLogs struct {
	timestamp, body, severity, id, labels int
	extra                                 []string
}

// parseDataplaneLogs does what logsFrame.ts does: a frame of type log-lines
// is parsed by field name and type (timestamp: time, body: string — both
// mandatory —, severity and id: string, labels: other); the other fields are
// extra fields. ok is false when Grafana would drop the frame.
func parseDataplaneLogs(f *browserFrame) (p dataplaneLogs, ok bool) {
	if f.Schema.Meta.Type != string(data.FrameTypeLogLines) {
		return p, false // the legacy parser would handle it
	}
	get := func(name, typ string) int {
		for i, fl := range f.Schema.Fields {
			if fl.Name == name { // FieldCache.getFieldByName: the first of that name
				if fl.Type == typ {
					return i
				}
				return -1
			}
		}
		return -1
	}
	p = dataplaneLogs{timestamp: get("timestamp", "time"), body: get("body", "string"),
		severity: get("severity", "string"), id: get("id", "string"), labels: get("labels", "other")}
	if p.timestamp < 0 || p.body < 0 {
		return p, false
	}
	for i, fl := range f.Schema.Fields {
		if i != p.timestamp && i != p.body && i != p.severity && i != p.id && i != p.labels {
			p.extra = append(p.extra, fl.Name)
		}
	}
	return p, true
}

func toBrowser(t *testing.T, f *data.Frame) *browserFrame {
	t.Helper()
	b, err := data.FrameToJSON(f, data.IncludeAll)
	if err != nil {
		t.Fatal(err)
	}
	var bf browserFrame
	if err := json.Unmarshal(b, &bf); err != nil {
		t.Fatal(err)
	}
	return &bf
}

func browserValues[T any](t *testing.T, f *browserFrame, i int) []T {
	t.Helper()
	var v []T
	if err := json.Unmarshal(f.Data.Values[i], &v); err != nil {
		t.Fatalf("field %d: %v", i, err)
	}
	return v
}

// TestLogsDataplaneContract runs logs queries, sends each frame through the
// encoder and the SDK's decoder (as Grafana gets it), and parses the result
// the way Grafana's logs view does.
func TestLogsDataplaneContract(t *testing.T) {
	full := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "Level", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "message", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "code", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	}, nil)
	fullRec := batch(full, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1_700_000_000_000, 1_700_000_000_001}, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"web-1", "db \"2\""}, nil)
		b.Field(2).(*array.StringBuilder).AppendValues([]string{"error", ""}, []bool{true, false})
		b.Field(3).(*array.LargeStringBuilder).AppendValues([]string{"disk full", ""}, []bool{true, false})
		b.Field(4).(*array.Int64Builder).AppendValues([]int64{7, 8}, nil)
		b.Field(5).(*array.Int16Builder).AppendValues([]int16{507, 0}, []bool{true, false})
	})
	bare := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.PrimitiveTypes.Int64},
		{Name: "lvl", Type: arrow.PrimitiveTypes.Int32},
		{Name: "service", Type: arrow.BinaryTypes.String},
		{Name: "line", Type: arrow.BinaryTypes.String},
	}, nil)
	bareRec := batch(bare, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1_700_000_000}, nil)
		b.Field(1).(*array.Int32Builder).AppendValues([]int32{3}, nil)
		b.Field(2).(*array.StringBuilder).AppendValues([]string{"api"}, nil)
		b.Field(3).(*array.StringBuilder).AppendValues([]string{"started"}, nil)
	})
	srv := newMemServer()
	srv.set("full", &dataset{schema: full, endpoints: [][]arrow.RecordBatch{{fullRec}}})
	srv.set("bare", &dataset{schema: bare, endpoints: [][]arrow.RecordBatch{{bareRec}}})
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))

	for _, tc := range []struct {
		sql                string
		times              []float64 // ms, as the frontend gets them
		bodies, sev, ids   []*string
		labels             []map[string]string
		hasSeverity, hasID bool
		wantFieldNames     []string
	}{
		{
			sql: "full", times: []float64{1_700_000_000_000, 1_700_000_000_001},
			bodies: []*string{ptr("disk full"), nil}, sev: []*string{ptr("error"), nil}, ids: []*string{ptr("7"), ptr("8")},
			labels:      []map[string]string{{"host": "web-1", "code": "507"}, {"host": `db "2"`}},
			hasSeverity: true, hasID: true, wantFieldNames: []string{"timestamp", "body", "severity", "id", "labels"},
		},
		{
			sql: "bare", times: []float64{1_700_000_000_000},
			bodies: []*string{ptr("started")}, sev: []*string{ptr("3")},
			labels:      []map[string]string{{"service": "api"}},
			hasSeverity: true, wantFieldNames: []string{"timestamp", "body", "severity", "labels"},
		},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			sink := newWireSink(t)
			if err := s.Query(t.Context(), source.Query{RefID: "A", JSON: []byte(fmt.Sprintf(`{"rawSql":%q,"format":"logs"}`, tc.sql))}, sink); err != nil {
				t.Fatal(err)
			}
			if len(sink.frames) != 1 {
				t.Fatalf("%d frames", len(sink.frames))
			}
			bf := toBrowser(t, sink.frames[0])
			p, ok := parseDataplaneLogs(bf)
			if !ok {
				t.Fatalf("Grafana's logs view drops the frame: %+v", bf.Schema)
			}
			var names []string
			for _, f := range bf.Schema.Fields {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, tc.wantFieldNames) || len(p.extra) != 0 {
				t.Errorf("fields %v (extra %v), want %v", names, p.extra, tc.wantFieldNames)
			}
			if bf.Schema.Meta.ExecutedQueryString != tc.sql {
				t.Errorf("executedQueryString %q", bf.Schema.Meta.ExecutedQueryString)
			}
			if got := browserValues[float64](t, bf, p.timestamp); !slices.Equal(got, tc.times) {
				t.Errorf("timestamps %v, want %v", got, tc.times)
			}
			checkStrings(t, "body", browserValues[*string](t, bf, p.body), tc.bodies)
			if (p.severity >= 0) != tc.hasSeverity || (p.id >= 0) != tc.hasID {
				t.Fatalf("severity field %d, id field %d", p.severity, p.id)
			}
			if tc.hasSeverity {
				checkStrings(t, "severity", browserValues[*string](t, bf, p.severity), tc.sev)
			}
			if tc.hasID {
				checkStrings(t, "id", browserValues[*string](t, bf, p.id), tc.ids)
			}
			if p.labels < 0 {
				t.Fatal("no labels field of type other")
			}
			// logFrameLabelsToLabels: every label value must be a string.
			got := browserValues[map[string]any](t, bf, p.labels)
			if len(got) != len(tc.labels) {
				t.Fatalf("labels %v", got)
			}
			for i, m := range got {
				if len(m) != len(tc.labels[i]) {
					t.Errorf("labels row %d: %v, want %v", i, m, tc.labels[i])
				}
				for k, v := range m {
					if s, ok := v.(string); !ok || s != tc.labels[i][k] {
						t.Errorf("label %s of row %d: %#v, want %q", k, i, v, tc.labels[i][k])
					}
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

func checkStrings(t *testing.T, what string, got, want []*string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if (got[i] == nil) != (want[i] == nil) || (got[i] != nil && *got[i] != *want[i]) {
			t.Errorf("%s row %d: %v, want %v", what, i, deref(got[i]), deref(want[i]))
		}
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// TestLogsJSONBody: a column named as a log line (bodyNames) holding JSON
// (a JSON column, or a struct: both normalised to Arrow binary) is the line,
// its JSON as the body's text: alone, the query failed for want of a text
// column; beside a text column, that column became the line and the real
// one went to the labels. A JSON column not so named is not taken as the
// line: the first text column is.
func TestLogsJSONBody(t *testing.T) {
	ts := arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}}
	host := arrow.Field{Name: "host", Type: arrow.BinaryTypes.String}
	jsonCol := func(name string) arrow.Field { return arrow.Field{Name: name, Type: jsonExt(t), Nullable: true} }
	msg := arrow.StructOf(arrow.Field{Name: "msg", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "code", Type: arrow.PrimitiveTypes.Int32})
	srv := newMemServer()
	for name, fields := range map[string][]arrow.Field{
		"json": {ts, jsonCol("body")}, "jsonHost": {ts, host, jsonCol("body")}, "payload": {ts, jsonCol("payload"), host},
		"struct": {ts, {Name: "Message", Type: msg}},
	} {
		schema := arrow.NewSchema(fields, nil)
		srv.set(name, &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{{batch(schema, func(b *array.RecordBuilder) {
			for i, f := range fields {
				switch fb := b.Field(i).(type) {
				case *array.TimestampBuilder:
					fb.AppendValues([]arrow.Timestamp{1_700_000_000_000, 1_700_000_000_001}, nil)
				case *array.StringBuilder:
					fb.AppendValues([]string{"web-1", "web-2"}, nil)
				case *array.ExtensionBuilder:
					fb.Builder.(*array.StringBuilder).AppendValues([]string{`{"msg":"disk full"}`, ""}, []bool{true, false})
				case *array.StructBuilder:
					fb.AppendValues([]bool{true, true})
					fb.FieldBuilder(0).(*array.StringBuilder).AppendValues([]string{"disk full", "ok"}, nil)
					fb.FieldBuilder(1).(*array.Int32Builder).AppendValues([]int32{507, 200}, nil)
				default:
					t.Fatalf("column %s", f.Name)
				}
			}
		})}}})
	}
	s := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	for _, tc := range []struct {
		sql    string
		bodies []*string
		labels []map[string]any
	}{
		{"json", []*string{ptr(`{"msg":"disk full"}`), nil}, []map[string]any{{}, {}}},
		{"jsonHost", []*string{ptr(`{"msg":"disk full"}`), nil}, []map[string]any{{"host": "web-1"}, {"host": "web-2"}}},
		{"payload", []*string{ptr("web-1"), ptr("web-2")}, []map[string]any{{"payload": `{"msg":"disk full"}`}, {}}},
		{"struct", []*string{ptr(`{"msg":"disk full","code":507}`), ptr(`{"msg":"ok","code":200}`)}, []map[string]any{{}, {}}},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			sink := newWireSink(t)
			if err := s.Query(t.Context(), source.Query{RefID: "A", JSON: []byte(fmt.Sprintf(`{"rawSql":%q,"format":"logs"}`, tc.sql))}, sink); err != nil {
				t.Fatal(err)
			}
			bf := toBrowser(t, sink.frames[0])
			p, ok := parseDataplaneLogs(bf)
			if !ok {
				t.Fatalf("Grafana's logs view drops the frame: %+v", bf.Schema)
			}
			checkStrings(t, "body", browserValues[*string](t, bf, p.body), tc.bodies)
			if got := browserValues[map[string]any](t, bf, p.labels); fmt.Sprint(got) != fmt.Sprint(tc.labels) {
				t.Errorf("labels %v, want %v", got, tc.labels)
			}
		})
	}
}
