package plugin

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// stallSource answers "stall" with a table of ten 1 MiB parts and then
// thirty 1 MiB frames, anything else with one 10-row frame.
type stallSource struct{}

func floatRecord(rows int) arrow.RecordBatch {
	md, _ := frame.SchemaMetadata("t", "A", nil)
	fmd := frame.ColumnMetadata(frame.TSNumber, nil, "")
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64, Metadata: fmd}}, &md)
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := range rows {
		b.Append(float64(i) * 1.37)
	}
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(schema, []arrow.Array{a}, int64(rows))
}

func (stallSource) Query(ctx context.Context, q source.Query, sink source.Sink) error {
	if string(q.JSON) != `"stall"` {
		return sink.Record(ctx, floatRecord(10))
	}
	r := floatRecord(0)
	w, err := source.OpenParts(sink, r.Schema())
	r.Release()
	if err != nil {
		return err
	}
	defer w.Abort()
	for range 10 {
		if err := w.Part(ctx, floatRecord(1<<17)); err != nil {
			return err
		}
	}
	if err := w.Close(ctx, arrow.Metadata{}); err != nil {
		return err
	}
	for range 30 {
		if err := sink.Record(ctx, floatRecord(1<<17)); err != nil {
			return err
		}
	}
	return nil
}

// A chunked request whose client stops reading holds up only itself: its
// first frame, held back while the table's parts are built, overdraws
// past its share and the budget, and another tenant's small query must
// still be answered at once, not after the stalled request's budget wait
// (a minute here) has run out.
func TestStalledChunkedRequestHoldsUpNoOtherTenant(t *testing.T) {
	prev := protoCodec(t)
	t.Cleanup(func() { encoding.RegisterCodecV2(prev) })
	if err := registerWireCodec(); err != nil {
		t.Fatal(err)
	}
	s := NewService(Options{
		Sources:       func(context.Context, settings.Settings) (source.Source, error) { return stallSource{}, nil },
		EncodeWorkers: 2,
		Budget:        settings.Budget{Bytes: 8 << 20, Wait: time.Minute},
	})
	t.Cleanup(s.Close)
	client := serveData(t, s)
	ctxA, cancelA := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "tenantID", "A"))
	defer cancelA()
	if _, err := client.QueryChunkedData(ctxA, &pluginv2.QueryChunkedDataRequest{PluginContext: pluginContext(`{"codec":"none"}`),
		Queries: []*pluginv2.DataQuery{query("A", `"stall"`)}}); err != nil {
		t.Fatal(err)
	} // and never reads
	var used int64
	_, _, limit, _ := s.pipeline.Stats()
	for range 400 { // until it holds more than its share and the budget stops moving
		time.Sleep(50 * time.Millisecond)
		u, _, _, _ := s.pipeline.Stats()
		if u == used && u > limit-limit/4 {
			break
		}
		used = u
	}
	if used <= limit-limit/4 {
		t.Fatalf("the stalled request holds %d bytes, within its share of %d: the case is not reached", used, limit-limit/4)
	}
	ctxB, cancelB := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "tenantID", "B"), 20*time.Second)
	defer cancelB()
	resp, err := client.QueryData(ctxB, &pluginv2.QueryDataRequest{PluginContext: pluginContext(`{"codec":"none"}`),
		Queries: []*pluginv2.DataQuery{query("B", `"small"`)}})
	if err != nil {
		t.Fatalf("another tenant's 10-row query beside the stalled request: %v", err)
	}
	if dr := resp.Responses["B"]; dr.Error != "" || len(dr.Frames) != 1 {
		t.Errorf("another tenant's 10-row query: %d %q, %d frames", dr.Status, dr.Error, len(dr.Frames))
	}
	cancelA()
	for i := 0; ; i++ { // the stalled request gives everything back once its client goes
		if u, _, _, _ := s.pipeline.Stats(); u == 0 {
			break
		} else if i == 200 {
			t.Fatalf("%d bytes still held after the stalled client went", u)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A panic while the instance is made (here its source's constructor) is
// recovered by gRPC's interceptor, outside the handler: the chunked
// request's sending goroutine must end all the same.
func TestChunkedRequestLeavesNoGoroutineOnAPanic(t *testing.T) {
	s := NewService(Options{
		Sources:       func(context.Context, settings.Settings) (source.Source, error) { panic("constructor") },
		EncodeWorkers: 1,
		Budget:        settings.Budget{Bytes: 8 << 20},
	})
	t.Cleanup(s.Close)
	base := runtime.NumGoroutine()
	func() {
		defer func() {
			if p := recover(); p == nil {
				t.Error("no panic reached the caller")
			}
		}()
		_ = s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pluginContext(`{}`),
			Queries: []*pluginv2.DataQuery{query("A", `{}`)}}, &chunkStream{ctx: context.Background()})
	}()
	for i := 0; runtime.NumGoroutine() > base; i++ {
		if i == 200 {
			t.Fatalf("%d goroutines after the request, %d before", runtime.NumGoroutine(), base)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
