package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/arrowipc/arrowipctest"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/frame/frametest"
	"github.com/quiverdata/quiver/pkg/pipeline"
	"github.com/quiverdata/quiver/pkg/source"
)

// partQuery is the query model of partSource.
type partQuery struct {
	Parts, Rows int
	Extra       int  // whole frames after the frame in parts
	FailAt      int  // a source error before this part (0: none)
	CancelAt    int  // the request cancelled before this part (0: none)
	LeaveOpen   bool // return without closing the frame
	Join        bool // join the parts and hand the table over whole
	AbortOnly   bool // abort the frame and return no error
	Lend        bool // lend the parts (source.PartLender), or the whole record, rather than hand them over
	Whole       bool // hand part 0 over whole, as a record over its memory (see Lend)
}

// partSource hands over a table in parts when the sink takes them (and the
// same table joined when it does not), then Extra whole frames.
type partSource struct {
	mem    memory.Allocator
	cancel func()              // cancels the request, for CancelAt
	pre    []arrow.RecordBatch // parts built once (benchmarks); nil: built per query
}

var partMD = arrow.NewMetadata([]string{frame.KeyTSType}, []string{frame.TSNumber})
var textMD = arrow.NewMetadata([]string{frame.KeyTSType}, []string{frame.TSString})

// partRecord is part p of rows rows: v (nulls in part 1 only) and s.
func partRecord(mem memory.Allocator, p, rows int) arrow.RecordBatch {
	vb := array.NewFloat64Builder(mem)
	defer vb.Release()
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	for r := range rows {
		if p == 1 && r%7 == 3 {
			vb.AppendNull()
		} else {
			vb.Append(float64(p*rows + r))
		}
		sb.Append(fmt.Sprintf("row %d.%d", p, r))
	}
	v, s := vb.NewArray(), sb.NewArray()
	defer v.Release()
	defer s.Release()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: v.NullN() > 0, Metadata: partMD},
		{Name: "s", Type: arrow.BinaryTypes.String, Metadata: textMD},
	}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{v, s}, int64(rows))
}

// partsFrame is the frame partSource's table should decode to.
func partsFrame(q partQuery, refID string) *data.Frame {
	var vs []*float64
	var ss []string
	for p := range q.Parts {
		for r := range q.Rows {
			if p == 1 && r%7 == 3 {
				vs = append(vs, nil)
			} else {
				v := float64(p*q.Rows + r)
				vs = append(vs, &v)
			}
			ss = append(ss, fmt.Sprintf("row %d.%d", p, r))
		}
	}
	f := data.NewFrame("table", data.NewField("v", nil, vs), data.NewField("s", nil, ss))
	f.RefID = refID
	f.Meta = partsMeta()
	return f
}

func partsMeta() *data.FrameMeta {
	return &data.FrameMeta{ExecutedQueryString: "SELECT v, s", Notices: []data.Notice{{Severity: data.NoticeSeverityWarning, Text: "found late"}}}
}

func (s partSource) Query(ctx context.Context, sq source.Query, sink source.Sink) error {
	var q partQuery
	if err := json.Unmarshal(sq.JSON, &q); err != nil {
		return err
	}
	md, err := frame.SchemaMetadata("table", sq.RefID, partsMeta())
	if err != nil {
		return err
	}
	part := func(p int) arrow.RecordBatch {
		if s.pre != nil {
			s.pre[p].Retain()
			return s.pre[p]
		}
		return partRecord(s.mem, p, q.Rows)
	}
	if q.Whole {
		p := part(0)
		defer p.Release()
		rec := array.NewRecordBatch(arrow.NewSchema(p.Schema().Fields(), &md), p.Columns(), p.NumRows())
		if l, ok := sink.(source.RecordLender); ok && q.Lend {
			if q.FailAt > 0 { // lent twice (the second frame is encoded at once, the first at the end), then a failure
				rec.Retain()
				if err := l.LendRecord(ctx, rec); err != nil {
					rec.Release()
					return err
				}
				if err := l.LendRecord(ctx, rec); err != nil {
					return err
				}
				return source.Upstream(errors.New("the server went away mid-stream"))
			}
			return l.LendRecord(ctx, rec)
		}
		return sink.Record(ctx, rec)
	}
	if q.Join {
		rec, err := s.joined(q, part, md)
		if err != nil {
			return err
		}
		return sink.Record(ctx, rec)
	}
	first := partRecord(s.mem, 0, 0)
	w, err := source.OpenParts(sink, first.Schema())
	first.Release()
	if err != nil {
		return err
	}
	if w == nil { // declined: the table joined, as a frame of its own
		if err := sink.Frame(ctx, partsFrame(q, sq.RefID)); err != nil {
			return err
		}
		return s.extra(ctx, q, sink)
	}
	if !q.LeaveOpen {
		defer w.Abort()
	}
	for p := range q.Parts {
		if p+1 == q.FailAt {
			return source.Upstream(errors.New("the server went away mid-stream"))
		}
		if p+1 == q.CancelAt {
			s.cancel()
		}
		hand := w.Part
		if l, ok := w.(source.PartLender); ok && q.Lend {
			hand = l.LendPart
		}
		if err := hand(ctx, part(p)); err != nil {
			return err
		}
	}
	if q.LeaveOpen {
		return nil
	}
	if q.AbortOnly {
		w.Abort()
		return nil
	}
	if err := w.Close(ctx, md); err != nil {
		return err
	}
	return s.extra(ctx, q, sink)
}

// joined is the table of q's parts joined column by column (as the Flight
// SQL source does for a sink that takes no parts), with schema metadata md.
func (s partSource) joined(q partQuery, part func(int) arrow.RecordBatch, md arrow.Metadata) (arrow.RecordBatch, error) {
	parts := make([]arrow.RecordBatch, q.Parts)
	for p := range parts {
		parts[p] = part(p)
	}
	defer func() {
		for _, r := range parts {
			r.Release()
		}
	}()
	var fields []arrow.Field
	var cols []arrow.Array
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for c := range 2 {
		arrs := make([]arrow.Array, q.Parts)
		for p, r := range parts {
			arrs[p] = r.Column(c)
		}
		col, err := array.Concatenate(arrs, s.mem)
		if err != nil {
			return nil, err
		}
		f := parts[0].Schema().Field(c)
		f.Nullable = col.NullN() > 0
		fields = append(fields, f)
		cols = append(cols, col)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, int64(cols[0].Len())), nil
}

func (s partSource) extra(ctx context.Context, q partQuery, sink source.Sink) error {
	for i := range q.Extra {
		if err := sink.Frame(ctx, data.NewFrame("", data.NewField("x", nil, []float64{float64(i)}))); err != nil {
			return err
		}
	}
	return nil
}

func partModel(q partQuery) string {
	b, _ := json.Marshal(q)
	return string(b)
}

// withoutStats returns f with its meta's stats left out, and the stats.
func withoutStats(f *data.Frame) (*data.Frame, map[string]float64) {
	stats := map[string]float64{}
	if f.Meta != nil {
		for _, s := range f.Meta.Stats {
			stats[s.DisplayName] = s.Value
		}
		m := *f.Meta
		m.Stats = nil
		f.Meta = &m
	}
	return f, stats
}

func assertBudgetEmpty(t *testing.T, s *Service, what string) {
	t.Helper()
	if used, _, _, _ := s.pipeline.Stats(); used != 0 {
		t.Errorf("%s: %d bytes of budget held after the response", what, used)
	}
}

// A table handed over in parts reaches Grafana as one frame of several
// record batches that decodes to the table joined, with the query's stats
// on it (it is frame 0, finished last; chunked, it is sent first, without
// them), in every codec, unary and chunked;
// the JSON format declines the parts and gets the table whole.
func TestPartsThroughThePlugin(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := newTestService(t, partSource{mem: mem}, 2)
	q := partQuery{Parts: 5, Rows: 3000, Extra: 2}
	want := partsFrame(q, "A")
	for _, c := range []string{"none", "lz4", "zstd", "auto", "none lent", "auto lent"} {
		c, lent := strings.CutSuffix(c, " lent")
		q.Lend = lent
		pc := pluginContext(fmt.Sprintf(`{"codec":%q}`, c))
		resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", partModel(q))}})
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.Responses["A"]
		if dr.Error != "" || len(dr.Frames) != 1+q.Extra {
			t.Fatalf("%s: %q, %d frames", c, dr.Error, len(dr.Frames))
		}
		batches, err := arrowipctest.Inspect(dr.Frames[0])
		if err != nil || len(batches) != q.Parts {
			t.Fatalf("%s: the table is %d batches (%v), want one per part (%d)", c, len(batches), err, q.Parts)
		}
		got, err := data.UnmarshalArrowFrame(dr.Frames[0])
		if err != nil {
			t.Fatal(err)
		}
		got, stats := withoutStats(got)
		if err := frametest.Equal(want, got); err != nil {
			t.Errorf("%s: %v", c, err)
		}
		if stats[frame.StatFrames] != float64(1+q.Extra) {
			t.Errorf("%s: stats count %v frames, want %d", c, stats[frame.StatFrames], 1+q.Extra)
		}
		for i, b := range dr.Frames[1:] {
			f, err := data.UnmarshalArrowFrame(b)
			if err != nil || f.Fields[0].At(0).(float64) != float64(i) {
				t.Errorf("%s: frame %d: %v", c, i+1, err)
			}
		}
		assertBudgetEmpty(t, s, c)

		stream := &chunkStream{ctx: context.Background()}
		if err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", partModel(q))}}, stream); err != nil {
			t.Fatal(err)
		}
		if len(stream.chunks) != 1+q.Extra {
			t.Fatalf("%s chunked: %d chunks", c, len(stream.chunks))
		}
		first := stream.chunks[0] // chunks come in the frames' order
		if first.FrameId != "0" || first.Error != "" {
			t.Fatalf("%s chunked: first chunk is frame %q (%q)", c, first.FrameId, first.Error)
		}
		got, err = data.UnmarshalArrowFrame(first.Frame)
		if err != nil {
			t.Fatal(err)
		}
		got, _ = withoutStats(got)
		if err := frametest.Equal(want, got); err != nil {
			t.Errorf("%s chunked: %v", c, err)
		}
		assertBudgetEmpty(t, s, c+" chunked")
	}

	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pluginContext(`{"replyFormat":"requested"}`), Format: pluginv2.DataFrameFormat_JSON,
		Queries: []*pluginv2.DataQuery{query("A", partModel(q))}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["A"]
	if dr.Error != "" || len(dr.Frames) != 1+q.Extra {
		t.Fatalf("json: %q, %d frames", dr.Error, len(dr.Frames))
	}
	var got data.Frame
	if err := json.Unmarshal(dr.Frames[0], &got); err != nil {
		t.Fatal(err)
	}
	g, _ := withoutStats(&got)
	if err := frametest.Equal(want, g); err != nil {
		t.Errorf("json: %v", err)
	}
	assertBudgetEmpty(t, s, "json")
}

// A finished frame in parts is handed over as its pieces (its header, its
// parts, its footer), not joined; lent parts are borrowed, their larger
// buffers the records' own memory, and held with the frame (its lent
// records) until it is written, then released, as a lent record is; the
// budget counts exactly their memory, the buffers' spare capacity included,
// while the frame waits in a response; and the pieces joined are the frame.
func TestPartsFrameIsItsPieces(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var pre []arrow.RecordBatch
	var spare int64 // what the parts' buffers hold beyond their bytes
	for p := range 5 {
		pre = append(pre, partRecord(mem, p, 3000))
		for _, col := range pre[p].Columns() {
			for _, b := range col.Data().Buffers() {
				if b != nil {
					spare += int64(cap(b.Buf()) - b.Len())
				}
			}
		}
	}
	s := newTestService(t, partSource{mem: mem, pre: pre}, 2)
	pc := backend.FromProto().PluginContext(pluginContext(`{"codec":"none"}`))
	inst, err := s.instance(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	q := backend.FromProto().DataQuery(query("A", partModel(partQuery{Parts: 5, Rows: 3000, Lend: true})))
	acct := s.pipeline.Account("")
	var frames frameList
	if err := s.runQuery(context.Background(), inst, *q, backend.DataFrameFormat_ARROW, nil, acct, nil, frames.add); err != nil {
		t.Fatal(err)
	}
	if len(frames.list) != 1 {
		t.Fatalf("%d frames", len(frames.list))
	}
	f := pipeline.Frame{B: frames.list[0], Rest: frames.rest.of(frames.list[0]).rest}
	if len(f.Rest) < 5+1 { // the parts (each one piece or more), the footer
		t.Fatalf("a frame of 5 parts in %d pieces", 1+len(f.Rest))
	}
	size := int64(f.Size())
	if used, _, _, _ := s.pipeline.Stats(); used != size+spare || frames.budget.Bytes() != used {
		t.Errorf("budget %d (the response's frames: %d) for a frame of %d bytes and %d of spare capacity", used, frames.budget.Bytes(), size, spare)
	}
	// Lent parts: their values (3000 float64, 24 KB) are the records'
	// memory, not copies.
	for p, rec := range pre {
		vals := rec.Column(0).Data().Buffers()[1].Bytes()
		found := false
		for _, piece := range f.Rest {
			found = found || len(piece) > 0 && unsafe.SliceData(piece) == unsafe.SliceData(vals)
		}
		if !found {
			t.Errorf("part %d's values were copied, not borrowed", p)
		}
	}
	got, err := data.UnmarshalArrowFrame(f.Joined())
	if err != nil {
		t.Fatal(err)
	}
	got, _ = withoutStats(got)
	if err := frametest.Equal(partsFrame(partQuery{Parts: 5, Rows: 3000}, "A"), got); err != nil {
		t.Errorf("the joined pieces: %v", err)
	}
	acct.Close()
	assertBudgetEmpty(t, s, "after the response")
	// The source has let go of its parts; the frame still references them.
	for _, rec := range pre {
		rec.Release()
	}
	if mem.CurrentAlloc() == 0 {
		t.Fatal("the lent parts were released while the frame's pieces still reference them")
	}
	frames.rest.release() // as the transport does once it has written the frame
}

// A lent record (source.RecordLender) is a frame in pieces that references
// the record's larger buffers at codec none, and decodes to the frame the
// copied record does, in every codec; a JSON query, whose sink does not
// lend, gets the copied frame whole; the budget holds the frame's bytes and
// is empty after the response.
func TestLentRecordIsItsPieces(t *testing.T) {
	mem := memory.NewGoAllocator()
	pre := []arrow.RecordBatch{partRecord(mem, 0, 3000)}
	defer pre[0].Release()
	s := newTestService(t, partSource{mem: mem, pre: pre}, 2)
	vals := pre[0].Column(0).Data().Buffers()[1].Bytes()
	run := func(settings string, lend bool, format backend.DataFrameFormat) (*data.Frame, pipeline.Frame) {
		t.Helper()
		pc := backend.FromProto().PluginContext(pluginContext(settings))
		inst, err := s.instance(context.Background(), pc)
		if err != nil {
			t.Fatal(err)
		}
		q := backend.FromProto().DataQuery(query("A", partModel(partQuery{Whole: true, Lend: lend})))
		acct := s.pipeline.Account("")
		defer func() {
			acct.Close()
			assertBudgetEmpty(t, s, settings)
		}()
		var frames frameList
		var f pipeline.Frame // as the pipeline hands it over
		keep := func(i int, ef pipeline.Frame) error {
			f = ef
			return frames.add(i, ef)
		}
		if err := s.runQuery(context.Background(), inst, *q, format, nil, acct, nil, keep); err != nil {
			t.Fatal(err)
		}
		if len(frames.list) != 1 {
			t.Fatalf("%d frames", len(frames.list))
		}
		pf := frames.rest.of(frames.list[0])
		defer pf.lent.Release()
		if pf.lent != nil {
			spare := f.Memory() - int64(f.Size()) // the lent buffers' capacity beyond their bytes
			var capacity int64
			for _, col := range pre[0].Columns() {
				for _, b := range col.Data().Buffers() {
					if b != nil {
						capacity += int64(cap(b.Buf()))
					}
				}
			}
			if used, _, _, _ := s.pipeline.Stats(); spare == 0 || used < capacity {
				t.Errorf("%s: budget %d for a lent record whose buffers hold %d bytes (%d beyond their lengths)", settings, used, capacity, spare)
			}
		}
		if used, _, _, _ := s.pipeline.Stats(); used != f.Memory() || frames.budget.Bytes() != used {
			t.Errorf("%s: budget %d (the response's frames: %d) for a frame holding %d bytes", settings, used, frames.budget.Bytes(), f.Memory())
		}
		return decodeFrame(t, f, format), f
	}
	for _, settings := range []string{`{"codec":"none"}`, `{"codec":"zstd"}`, `{}`} {
		want, _ := run(settings, false, backend.DataFrameFormat_ARROW)
		got, f := run(settings, true, backend.DataFrameFormat_ARROW)
		if err := frametest.Equal(want, got); err != nil {
			t.Errorf("%s: lent and copied frames differ: %v", settings, err)
		}
		borrowed := false
		for _, piece := range f.Rest {
			borrowed = borrowed || len(piece) > 0 && unsafe.SliceData(piece) == unsafe.SliceData(vals)
		}
		if settings == `{"codec":"none"}` && (!borrowed || len(f.Rest) < 2) {
			t.Errorf("%s: the record's values (24 KB) were copied, not referenced: %d pieces", settings, 1+len(f.Rest))
		}
	}
	want, _ := run(`{}`, false, backend.DataFrameFormat_JSON)
	got, f := run(`{}`, true, backend.DataFrameFormat_JSON)
	if err := frametest.Equal(want, got); err != nil || len(f.Rest) != 0 {
		t.Errorf("JSON: lent and copied frames differ (%v), or the lent one is in %d pieces", err, 1+len(f.Rest))
	}
}

// A JSON frame larger than the pooled scratch buffer (a table's whole
// result) is written into memory sized once by frame.JSONSizeHint (which
// bounds it: TestJSONSizeHintIsABound) and handed over in it, or, when the
// hint was well above its size, copied to its size; the budget counts that
// memory (and the copy) before it is made, and holds the frame's capacity
// while the frame waits; it decodes to the frame the Arrow reply decodes to.
func TestLargeJSONFrameIsWrittenOnce(t *testing.T) {
	mem := memory.NewGoAllocator()
	long := func() arrow.RecordBatch { // values of 17 digits, near the hint's bound
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		for i := range 200_000 {
			b.Append(-(1.2345678901234567 + float64(i)*1e-12) * 1e-6)
		}
		v := b.NewArray()
		defer v.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64, Metadata: partMD}}, nil)
		return array.NewRecordBatch(schema, []arrow.Array{v}, 200_000)
	}
	for _, tc := range []struct {
		name   string
		rec    arrow.RecordBatch
		copied bool
	}{
		{"short values, half the hint: copied", partRecord(mem, 1, 200_000), true},
		{"long values: handed over", long(), false},
	} {
		defer tc.rec.Release()
		s := newTestService(t, partSource{mem: mem, pre: []arrow.RecordBatch{tc.rec}}, 2)
		run := func(format backend.DataFrameFormat) (*data.Frame, pipeline.Frame) {
			t.Helper()
			inst, err := s.instance(context.Background(), backend.FromProto().PluginContext(pluginContext(`{}`)))
			if err != nil {
				t.Fatal(err)
			}
			q := backend.FromProto().DataQuery(query("A", partModel(partQuery{Whole: true})))
			acct := s.pipeline.Account("")
			defer func() {
				acct.Close()
				assertBudgetEmpty(t, s, tc.name)
			}()
			var frames frameList
			var f pipeline.Frame
			keep := func(i int, ef pipeline.Frame) error {
				f = ef
				return frames.add(i, ef)
			}
			if err := s.runQuery(context.Background(), inst, *q, format, nil, acct, nil, keep); err != nil {
				t.Fatal(err)
			}
			if used, _, _, _ := s.pipeline.Stats(); len(frames.list) != 1 || used != f.Memory() {
				t.Fatalf("%s: %d frames, budget %d for a frame holding %d bytes", tc.name, len(frames.list), used, f.Memory())
			}
			return decodeFrame(t, f, format), f
		}
		want, _ := run(backend.DataFrameFormat_ARROW)
		got, f := run(backend.DataFrameFormat_JSON)
		if err := frametest.Equal(want, got); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		md, err := frame.SchemaMetadata("table", "A", partsMeta())
		if err != nil {
			t.Fatal(err)
		}
		rec := array.NewRecordBatch(arrow.NewSchema(tc.rec.Schema().Fields(), &md), tc.rec.Columns(), tc.rec.NumRows())
		hint := frame.JSONSizeHint(frame.Input{Record: rec})
		rec.Release()
		wantCap, wantPeak := hint, int64(hint)
		if tc.copied {
			wantCap, wantPeak = len(f.B), int64(hint+len(f.B)) // the buffer and its copy, while both exist
		}
		if _, peak, _, _ := s.pipeline.Stats(); peak < wantPeak {
			t.Errorf("%s: the budget held at most %d; the JSON buffer and its copy are %d", tc.name, peak, wantPeak)
		}
		if len(f.Rest) != 0 || cap(f.B) != wantCap || hint < 4<<20 {
			t.Errorf("%s: a JSON frame of %d bytes in %d pieces, capacity %d; want one piece of capacity %d (the hint, above the pooled scratch's 4 MiB, is %d)", tc.name, len(f.B), 1+len(f.Rest), cap(f.B), wantCap, hint)
		}
	}
}

// decodeFrame decodes an encoded frame as Grafana does in format, without
// the query's stats (an Arrow frame's).
func decodeFrame(t *testing.T, f pipeline.Frame, format backend.DataFrameFormat) *data.Frame {
	t.Helper()
	if format == backend.DataFrameFormat_JSON {
		var got data.Frame
		if err := json.Unmarshal(f.Joined(), &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	got, err := data.UnmarshalArrowFrame(f.Joined())
	if err != nil {
		t.Fatal(err)
	}
	got, _ = withoutStats(got)
	return got
}

// lendProbe is a source that notes whether its sink lends records.
type lendProbe struct{ lends *bool }

func (p lendProbe) Query(_ context.Context, _ source.Query, sink source.Sink) error {
	_, *p.lends = sink.(source.RecordLender)
	return nil
}

// Queries in the Arrow format lend records; the JSON format, which copies
// every record, does not offer to (a source would give up recycling its
// memory for nothing).
func TestOnlyArrowQueriesLend(t *testing.T) {
	var lends bool
	s := newTestService(t, lendProbe{&lends}, 1)
	inst, err := s.instance(context.Background(), backend.FromProto().PluginContext(pluginContext(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	q := backend.FromProto().DataQuery(query("A", `{}`))
	for _, tc := range []struct {
		format backend.DataFrameFormat
		want   bool
	}{{backend.DataFrameFormat_ARROW, true}, {backend.DataFrameFormat_JSON, false}} {
		acct := s.pipeline.Account("")
		var frames frameList
		if err := s.runQuery(context.Background(), inst, *q, tc.format, nil, acct, nil, frames.add); err != nil {
			t.Fatal(err)
		}
		acct.Close()
		if lends != tc.want {
			t.Errorf("format %v: the sink lends: %v, want %v", tc.format, lends, tc.want)
		}
	}
}

// A failure in the middle of a frame in parts — the source's error, a limit,
// the request cancelled, a frame left open — fails the query alone and
// releases everything: the records, the budget, the encoded parts, and no
// goroutine stays.
func TestPartsFailuresReleaseEverything(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var cancel context.CancelFunc
	s := newTestService(t, partSource{mem: mem, cancel: func() { cancel() }}, 2)
	base := runtime.NumGoroutine()
	for _, tc := range []struct {
		name, settings string
		q              partQuery
		want           string
	}{
		{"source error", `{}`, partQuery{Parts: 6, Rows: 2000, FailAt: 4}, "the server went away mid-stream"},
		{"lent, then an error", `{"codec":"none"}`, partQuery{Whole: true, Lend: true, Rows: 3000, FailAt: 1}, "the server went away mid-stream"},
		{"maxPoints", `{"maxPoints":7000}`, partQuery{Parts: 6, Rows: 2000}, "more than 7000 points"},
		{"maxSeries", `{"maxSeries":2}`, partQuery{Parts: 3, Rows: 100, Extra: 2}, "more than 2 series"},
		{"cancelled", `{}`, partQuery{Parts: 6, Rows: 2000, CancelAt: 3}, "context canceled"},
		{"left open", `{}`, partQuery{Parts: 3, Rows: 100, LeaveOpen: true}, "did not close 1 frame(s)"},
		{"aborted", `{}`, partQuery{Parts: 3, Rows: 100, AbortOnly: true}, "did not close 1 frame(s)"},
	} {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		resp, err := s.QueryData(ctx, &pluginv2.QueryDataRequest{PluginContext: pluginContext(tc.settings),
			Queries: []*pluginv2.DataQuery{query("A", partModel(tc.q)), query("B", partModel(partQuery{Parts: 2, Rows: 10}))}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.Responses["A"]
		if !strings.Contains(dr.Error, tc.want) || len(dr.Frames) != 0 {
			t.Errorf("%s: %d %q, %d frames; want an error saying %q", tc.name, dr.Status, dr.Error, len(dr.Frames), tc.want)
		}
		if b := resp.Responses["B"]; tc.name != "cancelled" && (b.Error != "" || len(b.Frames) != 1) {
			t.Errorf("%s: the other query: %q, %d frames", tc.name, b.Error, len(b.Frames))
		}
		assertBudgetEmpty(t, s, tc.name)
		if n := mem.CurrentAlloc(); n != 0 {
			t.Errorf("%s: %d bytes of records not released", tc.name, n)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("%d goroutines after the queries, %d before", n, base)
	}
}
