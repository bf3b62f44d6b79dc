//go:build duckdb

package flightsql

import (
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/tests/engine"
)

// An integer Unix-time column from the engine (BIGINT seconds, one past
// 2262-04-11 and one before 1677-09-21): those rows are left out with a
// notice naming the column, never shown at a wrapped time.
func TestEngineEpochOutOfRange(t *testing.T) {
	srv := engine.Start(t, "")
	srv.Exec(t, `CREATE TABLE e AS SELECT * FROM (VALUES
	 (1767225600::BIGINT, 1.0::DOUBLE), (9223372037, 2.0), (-9223372037, 3.0), (9223372036, 4.0), (1767225660, 5.0)) v(time, v)`)
	s := engineSource(t, srv)
	for _, format := range []string{FormatTimeSeries, FormatLogs} {
		sql := "SELECT time, v FROM e ORDER BY time"
		if format == FormatLogs {
			sql = "SELECT time, CAST(v AS VARCHAR) AS body FROM e ORDER BY time"
		}
		frames := engineQuery(t, s, sql, format)
		if len(frames) != 1 {
			t.Fatalf("%s: %d frames", format, len(frames))
		}
		f := frames[0]
		var got []string
		for i := range f.Rows() {
			got = append(got, f.Fields[0].At(i).(time.Time).UTC().Format(time.RFC3339))
		}
		if want := "2026-01-01T00:00:00Z 2026-01-01T00:01:00Z 2262-04-11T23:47:16Z"; strings.Join(got, " ") != want {
			t.Errorf("%s: times %v, want %s", format, got, want)
		}
		var text []string
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				text = append(text, n.Text)
			}
		}
		if len(text) != 1 || !strings.Contains(text[0], `Column "time" (int64) has 2 integer Unix times outside`) {
			t.Errorf("%s: notices %q", format, text)
		}
	}
}
