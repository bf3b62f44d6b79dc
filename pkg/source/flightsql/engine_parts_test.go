//go:build duckdb

package flightsql

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/tests/engine"
)

// A table DuckDB sends in several batches, with columns that need
// converting (decimals that lose precision, with their notice; infinite
// timestamps that become null, with theirs; text; nulls), reaches a sink
// that takes parts as one frame of several batches that decodes to
// exactly the joined table, in every codec.
func TestEngineTableInParts(t *testing.T) {
	srv := engine.Start(t, "")
	s := engineSource(t, srv)
	srv.Exec(t, `CREATE TABLE wide AS SELECT i AS id,
		CASE WHEN i % 7 = 3 THEN NULL ELSE 'host-' || (i % 13) END AS host,
		(i * 1.125)::DECIMAL(18,3) AS d,
		CASE WHEN i = 4321 THEN 'infinity'::TIMESTAMP ELSE TIMESTAMP '2026-11-30 00:00:00' + INTERVAL (i) SECOND END AS ts,
		i / 3.0 AS v
		FROM range(10000) t(i)`)
	q := func(sink source.Sink) error {
		return s.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"SELECT * FROM wide ORDER BY id","format":"table"}`)}, sink)
	}
	joined := newWireSink(t)
	if err := q(joined); err != nil {
		t.Fatal(err)
	}
	if len(joined.frames) != 1 || joined.frames[0].Rows() != 10000 || joined.frames[0].Meta == nil || len(joined.frames[0].Meta.Notices) == 0 {
		t.Fatalf("joined: %d frames", len(joined.frames))
	}
	for _, c := range []codec.Codec{codec.MustNew(codec.None, 0), codec.MustNew(codec.LZ4, 0), codec.MustNew(codec.Zstd, 3), codec.MustNew(codec.Auto, 0)} {
		sink := newPartsSink(t, c)
		if err := q(sink); err != nil {
			t.Fatal(err)
		}
		if len(sink.wire) != 1 || sink.parts < 2 {
			t.Fatalf("%s: %d frames in parts, %d parts; want one of several", c, len(sink.wire), sink.parts)
		}
		if err := frametest.Equal(joined.frames[0], sink.frames[0]); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}
