//go:build duckdb

package flightsql

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"

	"github.com/quiverdata/quiver/tests/engine"
)

// BenchmarkEntryOffsetsAsLengths measures what storing the string columns'
// offsets as lengths (each value's length instead of its end) saves in a
// kept answer (entrystrings.go): every string column's offsets compressed
// with zstd as offsets and as lengths, the entry's bytes (with lengths),
// and the share of the entry with offsets that the lengths save.
// Three answers the cache keeps, from DuckDB: series with one label
// (host), with four (host, region, service, level), and logs (a level,
// two labels and an access-log line). Tables are not kept, so not
// measured.
func BenchmarkEntryOffsetsAsLengths(b *testing.B) {
	srv := engine.Start(b, "UTC")
	srv.Exec(b, `CREATE TABLE m AS SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + (i // 8) * INTERVAL '5 seconds' AS ts,
		'host-' || (i % 8)::VARCHAR AS host, 'eu-west-' || (i % 3)::VARCHAR AS region, 'svc-' || (i % 17)::VARCHAR AS service,
		CASE WHEN i % 5 = 0 THEN 'error' ELSE 'info' END AS level, sin(i / 100.0) AS v,
		CASE WHEN i % 5 = 0 THEN 'upstream timed out after ' || (i % 997)::VARCHAR || ' ms: GET /api/v1/items/' || (i * 7919 % 100000)::VARCHAR
			ELSE 'GET /api/v1/items/' || (i * 7919 % 100000)::VARCHAR || ' 200 ' || (i % 311)::VARCHAR || ' ms user=' || (i % 53)::VARCHAR END AS msg
		FROM range(0, 8 * 17280) r(i)`)
	s := newTestSource(b, baseConfig(srv.Addr))
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct{ name, sql, format string }{
		{"answer=series", "SELECT ts AS time, host, v FROM m WHERE $__timeFilter(ts)", FormatTimeSeries},
		{"answer=labels", "SELECT ts AS time, host, region, service, level, v FROM m WHERE $__timeFilter(ts)", FormatTimeSeries},
		{"answer=logs", "SELECT ts AS time, level, host, service, msg FROM m WHERE $__timeFilter(ts) ORDER BY ts DESC", FormatLogs},
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			frames, _ := incQuery(b, s, c.sql, c.format, from, from.Add(24*time.Hour))
			if len(frames) == 0 {
				b.Fatal("no frames")
			}
			ms := s.cache.(*memoryStore)
			ms.mu.Lock()
			var entry []byte
			for k, el := range ms.items {
				entry = el.Value.(*memoryItem).b // the one answer kept
				ms.remove(k)
			}
			ms.mu.Unlock()
			if entry == nil {
				b.Fatal("nothing kept")
			}
			var key [32]byte
			copy(key[:], entry[4:36])
			e, err := unmarshalEntry(entry, key)
			if err != nil {
				b.Fatal(err)
			}
			var offsets, lengths int
			for range b.N {
				offsets, lengths = 0, 0
				for _, sg := range e.segs {
					err := readSegment(sg, resultSchemaOf(b, sg), memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
						for _, col := range rec.Columns() {
							if col.DataType().ID() != arrow.STRING {
								continue
							}
							off := col.Data().Buffers()[1].Bytes()
							n := col.Len() + 1
							offs := off[4*col.Data().Offset() : 4*(col.Data().Offset()+n)]
							lens := make([]byte, len(offs))
							prev := uint32(0)
							for i := range n {
								v := binary.LittleEndian.Uint32(offs[4*i:])
								binary.LittleEndian.PutUint32(lens[4*i:], v-prev)
								prev = v
							}
							offsets += len(enc.EncodeAll(offs, nil))
							lengths += len(enc.EncodeAll(lens, nil))
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(entry)), "entry-bytes")
			b.ReportMetric(float64(offsets), "offsets-zstd-bytes")
			b.ReportMetric(float64(lengths), "lengths-zstd-bytes")
			b.ReportMetric(100*float64(offsets-lengths)/float64(len(entry)+offsets-lengths), "saved-%-of-entry")
		})
	}
}

// resultSchemaOf is the result schema of segment sg: its own, with each
// pair of lengths and bytes columns as the string column they store.
func resultSchemaOf(b *testing.B, sg segment) *arrow.Schema {
	r, err := ipc.NewReader(bytes.NewReader(sg.b))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Release()
	es := r.Schema()
	var fields []arrow.Field
	for i := 0; i < es.NumFields(); i++ {
		f := es.Field(i)
		if i+1 < es.NumFields() && es.Field(i+1).Name == f.Name+bytesSuffix {
			fields = append(fields, arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.String, Nullable: true, Metadata: f.Metadata})
			i++
			continue
		}
		fields = append(fields, f)
	}
	md := es.Metadata()
	return arrow.NewSchema(fields, &md)
}
