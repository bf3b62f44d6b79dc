package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// The leaves keep their own copies of a fact; they must agree.
func TestLeafCopiesAgree(t *testing.T) {
	if settings.QuoteMax != source.QuoteMax {
		t.Error("settings and source disagree on QuoteMax")
	}
}

// A query whose frames do not fit the budget fails naming the setting; the
// budget is whole again after every response, unary or chunked.
func TestServiceBudget(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := NewService(Options{
		Sources: func(context.Context, settings.Settings) (source.Source, error) {
			return fakeSource{mem: mem, frames: 50, rows: 1000}, nil
		},
		EncodeWorkers: 2,
		Budget:        settings.Budget{Bytes: 200 << 10, Wait: time.Second},
	})
	t.Cleanup(s.Close)
	pc := pluginContext(`{"codec":"none"}`)
	// 50 frames of ~10 KB held in one unary response: 500 KB > 200 KB, and
	// nobody else holds any; the overdraft lets one request through up to
	// twice the budget, then it is refused as too large.
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", `"ok"`)}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["A"]
	if !strings.Contains(dr.Error, "query too large for the memory budget: the frames of this request's queries add up to") || dr.Status != 400 || len(dr.Frames) != 0 {
		t.Errorf("unary over the budget: %d %q, %d frames", dr.Status, dr.Error, len(dr.Frames))
	}
	if used, _, _, _ := s.pipeline.Stats(); used != 0 {
		t.Fatalf("%d bytes held after the response", used)
	}
	// Chunked: each frame's bytes go back once sent, so the same query fits.
	stream := &chunkStream{ctx: context.Background()}
	if err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", `"ok"`)}}, stream); err != nil {
		t.Fatal(err)
	}
	if len(stream.chunks) != 50 || stream.chunks[0].Error != "" {
		t.Errorf("chunked: %d chunks, first error %q", len(stream.chunks), stream.chunks[0].Error)
	}
	if used, peak, _, _ := s.pipeline.Stats(); used != 0 || peak > 400<<10 {
		t.Errorf("used %d, peak %d after chunked", used, peak)
	}
}

func TestPrecheck(t *testing.T) {
	year := func(y int) int64 { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() }
	qs := []*pluginv2.DataQuery{
		{RefId: "ok", TimeRange: &pluginv2.TimeRange{FromEpochMS: year(2000), ToEpochMS: year(2001)}},
		{RefId: "y1", TimeRange: &pluginv2.TimeRange{FromEpochMS: year(1), ToEpochMS: year(2001)}},
		{RefId: "y9999", TimeRange: &pluginv2.TimeRange{FromEpochMS: year(2000), ToEpochMS: year(9999)}},
		{RefId: "big", Json: make([]byte, MaxQueryJSON+1)},
	}
	errs := precheck(qs)
	if errs[0] != nil {
		t.Errorf("good query refused: %v", errs[0])
	}
	for i, want := range map[int]string{1: "0001-01-01", 2: "9999-01-01", 3: "1048576 bytes"} {
		if errs[i] == nil || !strings.Contains(errs[i].Error(), want) || source.KindOf(errs[i]) != source.KindQuery {
			t.Errorf("%s: %v, want a bad-query error saying %q", qs[i].RefId, errs[i], want)
		}
	}
	if precheck(qs[:1]) != nil {
		t.Error("precheck of good queries should be nil")
	}
}

// collectSink keeps the records a source hands over.
type collectSink struct{ recs []arrow.RecordBatch }

func (c *collectSink) Frame(context.Context, *data.Frame) error { return errors.New("want records") }
func (c *collectSink) Record(ctx context.Context, r arrow.RecordBatch) error {
	c.recs = append(c.recs, r)
	return nil
}

// chunkStream is the server side of a QueryChunkedData stream, in memory.
type chunkStream struct {
	grpc.ServerStream
	ctx    context.Context
	chunks []*pluginv2.QueryChunkedDataResponse
}

func (c *chunkStream) Context() context.Context { return c.ctx }
func (c *chunkStream) Send(r *pluginv2.QueryChunkedDataResponse) error {
	c.chunks = append(c.chunks, r)
	return nil
}

// Queries that share a refId are not run: the first answers with an error
// naming the refId, once, unary or chunked; the others of the request
// answer as usual, and nothing is held afterwards.
func TestDuplicateRefIDsAnsweredOnce(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := newTestService(t, fakeSource{mem: mem, frames: 3, rows: 10}, 2)
	pc := pluginContext(`{"codec":"none"}`)
	queries := []*pluginv2.DataQuery{query("A", `"ok"`), query("B", `"ok"`), query("A", `"ok"`), query("A", `"ok"`)}
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: queries})
	if err != nil {
		t.Fatal(err)
	}
	if a := resp.Responses["A"]; a == nil || a.Status != 400 || len(a.Frames) != 0 || !strings.Contains(a.Error, `refId "A" is the refId of more than one query`) {
		t.Errorf("A: %+v", a)
	}
	if b := resp.Responses["B"]; b == nil || b.Error != "" || len(b.Frames) != 3 {
		t.Errorf("B: %+v", b)
	}
	stream := &chunkStream{ctx: context.Background()}
	if err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pc, Queries: queries}, stream); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range stream.chunks {
		if c.RefId == "A" && !strings.Contains(c.Error, "more than one query") {
			t.Errorf("chunk of A without the error: %+v", c)
		}
		got[c.RefId]++
	}
	if got["A"] != 1 || got["B"] != 3 {
		t.Errorf("chunks by refId %v, want A once (its error) and B's 3 frames", got)
	}
	if used, _, _, _ := s.pipeline.Stats(); used != 0 {
		t.Errorf("%d bytes held after the responses", used)
	}
}
