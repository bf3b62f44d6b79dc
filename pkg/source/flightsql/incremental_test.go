package flightsql

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSQLWhyFull checks which SQL may be answered from parts, by the
// macros it uses and its words.
func TestSQLWhyFull(t *testing.T) {
	cases := []struct{ sql, why string }{
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts)", ""},
		{"SELECT DISTINCT ts AS time, host, v FROM m WHERE $__timeFilter(ts) ORDER BY ts", ""},
		{"SELECT $__timeGroupAlias(ts, 1m), host, count(DISTINCT v) FROM m WHERE $__timeFilter(ts) GROUP BY 1, 2 HAVING count(*) > 1", ""},
		{"SELECT ts AS time, 'limit' AS note, v FROM m /* LIMIT */ WHERE $__timeFilter(ts) -- OVER", ""},
		{"SELECT ts AS time, v FROM m", "0 time filter"},
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) LIMIT 5", "LIMIT"},
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) UNION ALL SELECT ts, v FROM n", "UNION"},
		{"SELECT ts AS time, sum(v) OVER (ORDER BY ts) FROM m WHERE $__timeFilter(ts)", "calls sum() without a time group"},
		{"SELECT ts AS time, v - lag(v) OVER (ORDER BY ts) FROM m WHERE $__timeFilter(ts)", "calls lag()"},
		{"SELECT ts AS time, v - 1 OVER w FROM m WHERE $__timeFilter(ts) WINDOW w AS (ORDER BY ts)", "OVER"},
		{"SELECT max(ts) AS time, max(v) FROM m WHERE $__timeFilter(ts)", "calls max()"},
		// Without a time group only functions of one row's values: any other
		// may aggregate the range (SQLite's total(), an engine's own).
		{"SELECT ts AS time, total(v) AS v FROM m WHERE $__timeFilter(ts)", "calls total()"},
		{"SELECT ts AS time, count_if(v > 1) AS v FROM m WHERE $__timeFilter(ts)", "calls count_if()"},
		{`SELECT ts AS time, "sum"(v) AS v FROM m WHERE $__timeFilter(ts)`, `calls "sum"()`},
		{"SELECT ts AS time, udf.f(v) AS v FROM m WHERE $__timeFilter(ts)", "calls f()"},
		{"SELECT ts AS time, round(v, 2) AS v, upper(host), coalesce(w, 0), CAST(v AS DECIMAL(10, 2)), v::DECIMAL(10,2) FROM m WHERE $__timeFilter(ts) AND host IN ('a', 'b')", ""},
		{"SELECT $__timeGroupAlias(ts, 1m), count_if(v > 1) AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1", ""},
		{"SELECT DISTINCT ON (host) ts AS time, host, v FROM m WHERE $__timeFilter(ts) ORDER BY host, ts DESC", "DISTINCT ON"},
		{"SELECT DISTINCT ON (host) $__timeGroupAlias(ts, 1m), host, v FROM m WHERE $__timeFilter(ts)", "DISTINCT ON"},
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) AND ts < $__timeTo", "$__timeFrom, $__timeTo"},
		{"SELECT $__timeGroup(other, 1m) AS time, avg(v) FROM m WHERE $__timeFilter(ts) GROUP BY 1", "not the time filter's"},
		{"SELECT $__timeGroupAlias(ts, 1h), avg(v) FROM m WHERE $__timeFilter(ts) GROUP BY 1", ""},
		{"WITH x AS (SELECT ts, v FROM m WHERE $__timeFilter(ts)) SELECT ts AS time, v FROM x", "more than one SELECT"},
		// What reads the clock or a random source was answered at another
		// time in the kept rows.
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) AND ts > CURRENT_TIMESTAMP - INTERVAL '5 minutes'", "clock or a random source (CURRENT_TIMESTAMP)"},
		{"SELECT ts AS time, CASE WHEN ts > current_date THEN 'today' END AS age, v FROM m WHERE $__timeFilter(ts)", "(CURRENT_DATE)"},
		{"SELECT $__timeGroupAlias(ts, 1m), avg(v) AS v FROM m WHERE $__timeFilter(ts) AND ts > now() - INTERVAL '10 minutes' GROUP BY 1", "(NOW)"},
		{"SELECT $__timeGroupAlias(ts, 1m), avg(v) * random() AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1", "(RANDOM)"},
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) AND ts > (strftime('%s', 'now') - 3) * 1000", "('NOW')"},
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) AND ts > unix_timestamp() - 60", "(UNIX_TIMESTAMP)"},
		{"SELECT ts AS time, unix_timestamp(ts) AS v, 'now is' AS note, \"now\" FROM m WHERE $__timeFilter(ts)", ""},
		{"SELECT $__timeGroupAlias(ts, 1m), avg(v) AS v FROM m WHERE $__timeFilter(ts) AND ts < now64() GROUP BY 1", "(NOW64)"},
		{"SELECT $__timeGroupAlias(ts, 1m), avg(v * random_normal()) AS v FROM m WHERE $__timeFilter(ts) GROUP BY 1", "(RANDOM_NORMAL)"},
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts) AND ts >= 'Today'", "('TODAY')"},
		{"SELECT ts AS time, CAST(id AS uuid) AS id, id::uuid AS id2, v FROM m WHERE $__timeFilter(ts)", ""},
	}
	for _, tc := range cases {
		exp, err := expandMacros(context.Background(), tc.sql, macroEnv{from: time.Unix(0, 0), to: time.Unix(3600, 0), interval: time.Minute,
			dialect: func() (*dialect, error) { return dialects["duckdb"], nil }})
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		why := sqlWhyFull(tc.sql, exp.Time)
		if tc.why == "" && why != "" || tc.why != "" && !strings.Contains(why, tc.why) {
			t.Errorf("%s: %q, want %q", tc.sql, why, tc.why)
		}
	}
}

// TestEntryReadsBackOnlyUnderItsKey: an entry reads back as written, and
// not under another key, truncated, or with a wrong version.
func TestEntryReadsBackOnlyUnderItsKey(t *testing.T) {
	key := sha256.Sum256([]byte("a"))
	e := &entry{key: key, from: time.Unix(10, 0), to: time.Unix(20, 0), segs: []segment{{lo: 1, hi: 2, rows: 3, b: []byte("abc")}, {lo: 4, hi: 5, rows: 6, b: []byte("de")}}}
	b := e.marshal()
	got, err := unmarshalEntry(b, key)
	if err != nil || !got.from.Equal(e.from) || !got.to.Equal(e.to) || len(got.segs) != 2 || string(got.segs[1].b) != "de" || got.segs[0].rows != 3 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	bad := map[string][]byte{"another key": nil, "truncated": b[:len(b)-1], "another version": append([]byte{'Q', 'V', 'R', entryMagic[3] + 1}, b[4:]...), "longer": append(append([]byte(nil), b...), 0),
		"a segment's byte flipped": append(append([]byte(nil), b[:len(b)-1]...), b[len(b)-1]^1)}
	for name, c := range bad {
		k := key
		if c == nil {
			c, k = b, sha256.Sum256([]byte("b"))
		}
		if _, err := unmarshalEntry(c, k); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// TestMemoryStoreEvicts: the least recently used entries go first, and an
// entry above a quarter of the cap is not kept.
func TestMemoryStoreEvicts(t *testing.T) {
	one := itemSize("a", make([]byte, 25)) // what an entry of 25 bytes costs
	m := newMemoryStore(4*one, nopObserver{})
	for _, k := range []string{"a", "b", "c", "d"} {
		_ = m.Put(k, make([]byte, 25))
	}
	if b, _ := m.Get("a"); b == nil { // a is now the most recent
		t.Fatal("a was evicted early")
	}
	_ = m.Put("e", make([]byte, 25))
	if b, _ := m.Get("b"); b != nil {
		t.Error("b, the least recently used, was kept")
	}
	if b, _ := m.Get("a"); b == nil {
		t.Error("a was evicted")
	}
	_ = m.Put("big", make([]byte, 26-2)) // a key 2 bytes longer
	if b, _ := m.Get("big"); b != nil || m.bytes() != 4*one {
		t.Errorf("an entry above a quarter of the cap was kept (%d bytes held)", m.bytes())
	}
}

// TestEntryStringsRoundTrip: string columns stored as lengths and bytes
// read back as they were: nulls, empty values, a sliced batch, no rows.
func TestEntryStringsRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_ns},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"k"}, []string{"v"})},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	hosts := []string{"a", "", "host-10", "ü", "x"}
	for i, h := range hosts {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		if i == 3 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(h)
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, r := range []arrow.RecordBatch{rec, rec.NewSlice(1, 4), rec.NewSlice(2, 2)} {
		enc := toEntry(r, entrySchema(schema), mem)
		got, err := fromEntry(enc, schema, mem)
		enc.Release()
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, r) {
			t.Errorf("read back %v, want %v", got, r)
		}
		got.Release()
		if r != rec {
			r.Release()
		}
	}
}

// TestTimeColumnFiltered: the result's time column is the filtered one only
// when it is that column, or a rename of it and of nothing else.
func TestTimeColumnFiltered(t *testing.T) {
	cases := []struct {
		sql, name string
		want      bool
	}{
		{"SELECT ts, v FROM m WHERE $__timeFilter(ts)", "ts", true},
		{"SELECT m.ts, v FROM m WHERE $__timeFilter(m.ts)", "ts", true},
		{"SELECT ts AS time, v FROM m WHERE $__timeFilter(ts)", "time", true},
		{"SELECT \"ts\" AS \"Time\", v FROM m WHERE $__timeFilter(\"ts\")", "Time", true},
		{"SELECT created AS time, v FROM m WHERE $__timeFilter(ts)", "time", false},
		{"SELECT xts AS time, v FROM m WHERE $__timeFilter(ts)", "time", false},
		{"SELECT created AS ts, v FROM m WHERE $__timeFilter(ts)", "ts", false},
		{"SELECT ts + INTERVAL 1 HOUR AS ts, v FROM m WHERE $__timeFilter(ts)", "ts", false},
		{"SELECT date_trunc('hour', ts) AS time, v FROM m WHERE $__timeFilter(ts)", "time", false},
		{"SELECT $__timeGroupAlias(ts, 1m), avg(v) FROM m WHERE $__timeFilter(ts) GROUP BY 1", "time", true},
		{"SELECT $__timeGroup(ts, 1m) AS t, avg(v) FROM m WHERE $__timeFilter(ts) GROUP BY 1", "t", true},
		{"SELECT $__timeGroup(ts, 1m) AS t, max(other) AS time FROM m WHERE $__timeFilter(ts) GROUP BY 1", "time", false},
		// With several tables, a qualified filter's column must be the one
		// selected, not another table's of the same name.
		{"SELECT b.ts, b.v FROM m a JOIN m b ON b.ts = a.ts + INTERVAL 5 MINUTE WHERE $__timeFilter(a.ts)", "ts", false},
		{"SELECT b.ts, a.v FROM m a, m b WHERE b.host = a.host AND $__timeFilter(a.ts)", "ts", false},
		{"SELECT * FROM m a JOIN n b ON a.host = b.host WHERE $__timeFilter(a.ts)", "ts", false},
		{"SELECT a.ts, b.v FROM m a JOIN n b ON b.ts = a.ts WHERE $__timeFilter(a.ts)", "ts", true},
		{`SELECT "a"."ts", b.v FROM m a JOIN n b ON b.ts = a.ts WHERE $__timeFilter("a"."ts")`, "ts", true},
		{"SELECT ts, b.v FROM m a JOIN n b ON b.id = a.id WHERE $__timeFilter(ts)", "ts", true},
		{"SELECT ts, v FROM m WHERE $__timeFilter(m.ts) AND host IN (SELECT host FROM a, b)", "ts", true},
	}
	for _, tc := range cases {
		exp, err := expandMacros(context.Background(), tc.sql, macroEnv{from: time.Unix(0, 0), to: time.Unix(3600, 0), interval: time.Minute,
			dialect: func() (*dialect, error) { return dialects["duckdb"], nil }})
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if got := timeColumnFiltered(tc.name, exp.SQL, exp.Time); got != tc.want {
			t.Errorf("%s, time column %s: %v, want %v", tc.sql, tc.name, got, tc.want)
		}
	}
}

// TestLogsOrderByTime checks which ORDER BY of a logs query sorts it by
// its time column (so that an incremental answer is sorted the same way).
func TestLogsOrderByTime(t *testing.T) {
	u := timeUse{filters: []string{"m.ts"}}
	cases := []struct {
		sql    string
		byTime bool
		desc   bool
	}{
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts)", true, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY ts DESC", true, true},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY m.ts ASC NULLS LAST, msg", true, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY \"Time\" desc", true, true},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY 1 DESC", true, true},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY 2 DESC", false, true},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY msg, ts", false, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY -ts", false, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY ts + 1", false, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY 'ts'", false, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY date_trunc('hour', ts)", false, false},
		{"SELECT ts AS time, string_agg(msg ORDER BY msg) AS msg FROM m WHERE $__timeFilter(m.ts) GROUP BY ts", true, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) /* ORDER BY msg */ -- ORDER BY msg", true, false},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY other.ts DESC", false, true},
		{"SELECT ts AS time, msg FROM m WHERE $__timeFilter(m.ts) ORDER BY ts DESC;", true, true},
		{"SELECT ts AS time, msg, ts - INTERVAL 1 HOUR AS ts FROM m WHERE $__timeFilter(m.ts) ORDER BY ts DESC", false, true},
		{"SELECT ts AS time, msg, other AS ts FROM m WHERE $__timeFilter(m.ts) ORDER BY m.ts", false, false},
		{"SELECT ts AS time, msg, m.ts AS ts FROM m WHERE $__timeFilter(m.ts) ORDER BY ts", true, false},
	}
	for _, tc := range cases {
		o := orderOf(sqlWords(tc.sql))
		if got := o.byTime("time", 0, u, tc.sql); got != tc.byTime || o.desc != tc.desc {
			t.Errorf("%s: by time %v, descending %v; want %v, %v", tc.sql, got, o.desc, tc.byTime, tc.desc)
		}
	}
}

// TestLogsSortedByTime: the logs of an incremental answer, which come in
// parts, are written sorted by time, equal times in the order they came,
// every column with its row, and the parts' records are released.
func TestLogsSortedByTime(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
		{Name: "body", Type: arrow.BinaryTypes.String},
		{Name: "host", Type: arrow.BinaryTypes.String},
	}, nil)
	for _, desc := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		part := func(times []arrow.Timestamp, bodies []string) arrow.RecordBatch {
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			b.Field(0).(*array.TimestampBuilder).AppendValues(times, nil)
			b.Field(1).(*array.StringBuilder).AppendValues(bodies, nil)
			for _, body := range bodies {
				b.Field(2).(*array.StringBuilder).Append("h-" + body)
			}
			return b.NewRecordBatch()
		}
		lb, err := newLogsBuilder(mem, frameInfo{refID: "A"}, schema, &sortOrder{has: true, term: "time", desc: desc})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range []arrow.RecordBatch{part([]arrow.Timestamp{5, 1, 3}, []string{"a", "b", "c"}), part([]arrow.Timestamp{3, 9, 1}, []string{"d", "e", "f"})} {
			if err := lb.Add(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		sink := &frameSink{t: t}
		if err := lb.Finish(t.Context(), sink, nil); err != nil {
			t.Fatal(err)
		}
		lb.Release()
		mem.AssertSize(t, 0)
		want := "1 b, 1 f, 3 c, 3 d, 5 a, 9 e"
		if desc {
			want = "9 e, 5 a, 3 c, 3 d, 1 b, 1 f"
		}
		f := sink.frames[0]
		var got []string
		for i := range f.Rows() {
			body, labels := f.Fields[1].At(i).(string), string(f.Fields[2].At(i).(json.RawMessage))
			if labels != `{"host":"h-`+body+`"}` {
				t.Errorf("row %d: body %s with labels %s", i, body, labels)
			}
			got = append(got, fmt.Sprint(f.Fields[0].At(i).(time.Time).UnixNano(), " ", body))
		}
		if strings.Join(got, ", ") != want {
			t.Errorf("descending %v: rows %s, want %s", desc, strings.Join(got, ", "), want)
		}
	}
}

// budgetShare is a source.Kept of limit bytes, of which others holds
// some: what the store holds is counted in held.
type budgetShare struct {
	mu                  sync.Mutex
	limit, others, held int64
}

func (b *budgetShare) TryTake(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.others+b.held+n > b.limit {
		return false
	}
	b.held += n
	return true
}

func (b *budgetShare) Give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
}

// TestMemoryStoreCountsInTheBudgetConcurrently: puts of the same and of
// other keys, deletes and evictions (a query lacking memory) at once: the
// budget counts what the store holds, at every moment the store is idle.
func TestMemoryStoreCountsInTheBudgetConcurrently(t *testing.T) {
	budget := &budgetShare{limit: 4000}
	m := newMemoryStore(3000, nopObserver{})
	m.budget = budget
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				key := string(rune('a' + (i*7+g)%11))
				switch i % 5 {
				case 3:
					_ = m.Delete(key)
				case 4:
					m.evict(int64(100 + i%300))
				default:
					_ = m.Put(key, make([]byte, 50+(i*13+g)%700))
				}
			}
		})
	}
	wg.Wait()
	if budget.held != m.bytes() || m.bytes() > 3000 {
		t.Fatalf("the budget counts %d bytes, the store holds %d (cap 3000)", budget.held, m.bytes())
	}
	m.clear()
	if budget.held != 0 {
		t.Errorf("%d bytes counted after the store was cleared", budget.held)
	}
}

// TestMemoryStoreCountsInTheBudget: the store holds only what the memory
// budget has room for, its older answers yield to a newer one, and every
// byte it drops (replaced, evicted, shrunk for a query, deleted, cleared)
// goes back to the budget.
func TestMemoryStoreCountsInTheBudget(t *testing.T) {
	budget := &budgetShare{limit: 3000}
	m := newMemoryStore(10000, nopObserver{})
	m.budget = budget
	// put keeps an entry of key k that costs n bytes.
	put := func(k string, n int64) { _ = m.Put(k, make([]byte, n-itemSize(k, nil))) }
	check := func(what string, keys ...string) {
		t.Helper()
		if budget.held != m.bytes() {
			t.Fatalf("%s: the budget counts %d bytes, the store holds %d", what, budget.held, m.bytes())
		}
		for _, k := range keys {
			if b, _ := m.Get(k); b == nil {
				t.Errorf("%s: %s not kept", what, k)
			}
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		put(k, 1000)
	}
	check("three fill the budget", "a", "b", "c")
	put("b", 500)
	check("b replaced", "a", "b", "c")
	put("d", 1000)
	check("d, the least recently used evicted for it", "b", "c", "d")
	if b, _ := m.Get("a"); b != nil {
		t.Error("a, the least recently used, was kept")
	}

	budget.others = 2000 // queries in flight hold 2000 of the 3000
	put("e", 1000)
	check("e, with no room left for it")
	if b, _ := m.Get("e"); b != nil {
		t.Error("e was kept with no room in the budget")
	}
	m.evict(1200) // a query lacks 1200 bytes
	check("shrunk for a query")
	if m.bytes() > 2500-1200 {
		t.Errorf("shrinking by 1200 left %d of 2500 bytes", m.bytes())
	}
	budget.others = 0
	put("f", 400)
	_ = m.Delete("f")
	check("f deleted")
	put("g", 400)
	m.clear()
	check("cleared")
	if budget.held != 0 {
		t.Errorf("%d bytes counted after the store was cleared", budget.held)
	}
	// A query still running when the source closed finishes after it:
	// what it would keep is not kept, nor counted.
	put("h", 400)
	check("put after the store was cleared")
	if b, _ := m.Get("h"); b != nil || budget.held != 0 {
		t.Errorf("after clear, an entry was kept (%d bytes counted)", budget.held)
	}
}
