package plugin

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// countingAllocator counts live bytes and remembers the most at once.
type countingAllocator struct {
	memory.Allocator
	live, peak atomic.Int64
}

func (a *countingAllocator) add(n int) {
	v := a.live.Add(int64(n))
	for p := a.peak.Load(); v > p && !a.peak.CompareAndSwap(p, v); p = a.peak.Load() {
	}
}

func (a *countingAllocator) Allocate(n int) []byte {
	a.add(n)
	return a.Allocator.Allocate(n)
}

func (a *countingAllocator) Free(b []byte) {
	a.add(-len(b))
	a.Allocator.Free(b)
}

func (a *countingAllocator) Reallocate(size int, b []byte) []byte {
	a.add(size - len(b))
	return a.Allocator.Reallocate(size, b)
}

// fakeSource emits frames records of rows float64 rows each, from mem;
// query "panic" panics, query "fail" fails after two frames.
type fakeSource struct {
	mem          memory.Allocator
	frames, rows int
}

func (s fakeSource) Query(ctx context.Context, q source.Query, sink source.Sink) error {
	switch string(q.JSON) {
	case `"panic"`:
		panic("a source bug")
	case `"frames"`:
		for i := range s.frames {
			f := data.NewFrame("", data.NewField("v", data.Labels{"i": fmt.Sprint(i)}, make([]float64, s.rows)))
			if err := sink.Frame(ctx, f); err != nil {
				return err
			}
		}
		return nil
	}
	md, _ := frame.SchemaMetadata("", q.RefID, nil)
	fmd := frame.ColumnMetadata(frame.TSNumber, nil, "")
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Float64, Metadata: fmd}}, &md)
	for i := range s.frames {
		if string(q.JSON) == `"fail"` && i == 2 {
			return source.Upstream(errors.New("server went away"))
		}
		b := array.NewFloat64Builder(s.mem)
		for r := range s.rows {
			b.Append(float64(i*s.rows + r))
		}
		arr := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(s.rows))
		arr.Release()
		if err := sink.Record(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

func newTestService(t *testing.T, src source.Source, workers int) *Service {
	t.Helper()
	s := NewService(Options{
		Sources:       func(context.Context, settings.Settings) (source.Source, error) { return src, nil },
		EncodeWorkers: workers,
	})
	t.Cleanup(s.Close)
	return s
}

var nextInstance atomic.Int64

func pluginContext(jsonData string) *pluginv2.PluginContext {
	id := nextInstance.Add(1)
	return &pluginv2.PluginContext{OrgId: 1, PluginId: PluginID, DataSourceInstanceSettings: &pluginv2.DataSourceInstanceSettings{
		Id: id, Uid: fmt.Sprint("u", id), JsonData: []byte(jsonData), LastUpdatedMS: 1,
	}}
}

func query(refID, model string) *pluginv2.DataQuery {
	return &pluginv2.DataQuery{RefId: refID, Json: []byte(model), TimeRange: &pluginv2.TimeRange{FromEpochMS: 0, ToEpochMS: 3600_000}}
}

func TestPanicAndFailureStayInTheirQuery(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := newTestService(t, fakeSource{mem: mem, frames: 20, rows: 100}, 2)
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{
		PluginContext: pluginContext(`{}`),
		Queries:       []*pluginv2.DataQuery{query("A", `"ok"`), query("P", `"panic"`), query("F", `"fail"`), query("D", `"frames"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if dr := resp.Responses["A"]; dr.Error != "" || len(dr.Frames) != 20 {
		t.Errorf("A: %q, %d frames", dr.Error, len(dr.Frames))
	}
	if dr := resp.Responses["D"]; dr.Error != "" || len(dr.Frames) != 20 {
		t.Errorf("D: %q, %d frames", dr.Error, len(dr.Frames))
	}
	if dr := resp.Responses["P"]; dr.Status != 500 || dr.ErrorSource != "plugin" || dr.Error != "internal error in Quiver: a source bug" {
		t.Errorf("P: %d %s %q", dr.Status, dr.ErrorSource, dr.Error)
	}
	if dr := resp.Responses["F"]; dr.Status != 502 || dr.ErrorSource != "downstream" || dr.Error != "server went away" || len(dr.Frames) != 0 {
		t.Errorf("F: %d %s %q, %d frames", dr.Status, dr.ErrorSource, dr.Error, len(dr.Frames))
	}
	// The frames decode, in the order the source produced them.
	frames, err := data.UnmarshalArrowFrames(resp.Responses["A"].Frames)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if got := f.Fields[0].At(0).(float64); got != float64(i*100) {
			t.Fatalf("frame %d starts with %v: out of order", i, got)
		}
	}
}

// Many concurrent queries: the frames alive at once (handed over, not yet
// encoded and released) stay bounded by the encode workers and the held
// first frames, not by the number of frames the sources produce; and the
// goroutines by the workers and the queries, not by the frames.
func TestConcurrentQueriesAreBounded(t *testing.T) {
	const (
		callers = 16
		frames  = 200
		rows    = 1024 // 8 KiB of values per frame
		workers = 2
	)
	mem := &countingAllocator{Allocator: memory.NewGoAllocator()}
	s := newTestService(t, fakeSource{mem: mem, frames: frames, rows: rows}, workers)
	base := runtime.NumGoroutine()
	var peakG atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
				if n := int64(runtime.NumGoroutine()); n > peakG.Load() {
					peakG.Store(n)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	pc := pluginContext(`{"codec":"zstd","level":1}`)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query(fmt.Sprint("Q", c), `"ok"`)}})
			if err != nil || len(resp.Responses[fmt.Sprint("Q", c)].Frames) != frames {
				t.Errorf("caller %d: %v", c, err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	// One builder's worth per frame is 8 KiB (arrow rounds to 64 bytes).
	perFrame := int64(rows*8 + 64)
	// Per query: the held first frame, one in a worker's hands at most, and
	// one being built; plus one per worker.
	bound := perFrame * (callers*3 + workers)
	if p := mem.peak.Load(); p > bound {
		t.Errorf("peak live frame memory %d bytes, above the bound %d (%d frames of %d produced at once)", p, bound, p/perFrame, callers*frames)
	}
	if live := mem.live.Load(); live != 0 {
		t.Errorf("%d bytes of records never released", live)
	}
	// callers + a query goroutine each + workers, with some slack for the
	// sampler and the runtime.
	if g := peakG.Load() - int64(base); g > callers*2+workers+8 {
		t.Errorf("%d goroutines above the baseline at peak, want about %d", g, callers*2+workers)
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	s := NewService(Options{EncodeWorkers: 4})
	if _, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{
		PluginContext: pluginContext(`{}`),
		Queries:       []*pluginv2.DataQuery{query("A", `{"seriesCount":30}`)},
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestSettingsRangesMatchTheCodecs(t *testing.T) {
	// settings' codec table is generated from codec.Specs (a test in
	// internal/settingsgen fails when it is stale); this checks that
	// every level settings accepts builds a codec and the next ones do not.
	for _, c := range settings.Codecs() {
		kind, err := codec.ParseKind(c.Name)
		if err != nil {
			t.Fatalf("settings offer codec %q: %v", c.Name, err)
		}
		if !c.Levels {
			continue
		}
		for l := c.MinLevel; l <= c.MaxLevel; l++ {
			if _, err := codec.New(kind, int(l)); err != nil {
				t.Errorf("settings accept %s level %d, codec refuses it: %v", c.Name, l, err)
			}
		}
		if _, err := codec.New(kind, int(c.MaxLevel)+1); err == nil {
			t.Errorf("codec accepts %s level %d, settings refuse it", c.Name, c.MaxLevel+1)
		}
	}
	// The codec names and the default, and codec auto's preferences.
	for _, name := range []string{settings.CodecAuto, settings.CodecZstd, settings.CodecLZ4, settings.CodecNone} {
		s, err := settings.Parse([]byte(`{"codec":"`+name+`"}`), nil)
		if err != nil || s.Validate() != nil {
			t.Errorf("settings refuse codec %q: %v", name, err)
		}
		if _, err := codec.ParseKind(name); err != nil {
			t.Errorf("settings accept codec %q, codec refuses it: %v", name, err)
		}
	}
	if len(codec.Names) != 4 {
		t.Errorf("codec knows %d names, settings 4", len(codec.Names))
	}
	if settings.DefaultCodec != codec.DefaultKind.String() {
		t.Errorf("default codec %q in settings, %q in codec", settings.DefaultCodec, codec.DefaultKind)
	}
	if settings.DefaultPreference != codec.DefaultPreference || len(codec.Preferences) != 2 {
		t.Errorf("default preference %q in settings, %q in codec", settings.DefaultPreference, codec.DefaultPreference)
	}
	for _, p := range []string{settings.PreferCPU, settings.PreferBytes} {
		if _, err := codec.ParsePreference(p); err != nil {
			t.Errorf("settings accept codecPreference %q, codec refuses it: %v", p, err)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status backend.Status
		src    backend.ErrorSource
	}{
		{source.BadQuery("x"), backend.StatusBadRequest, backend.ErrorSourcePlugin},
		{source.LimitExceeded("x"), backend.StatusBadRequest, backend.ErrorSourcePlugin},
		{source.Upstream(errors.New("x")), backend.StatusBadGateway, backend.ErrorSourceDownstream},
		{source.Upstream(fmt.Errorf("x: %w", context.DeadlineExceeded)), backend.StatusTimeout, backend.ErrorSourceDownstream},
		{&source.Error{Kind: source.KindTimeout, Err: errors.New("x")}, backend.StatusTimeout, backend.ErrorSourceDownstream},
		{context.Canceled, backend.StatusTimeout, backend.ErrorSourceDownstream},
		{settingsError{errors.New("settings: codec: bad")}, backend.StatusBadRequest, backend.ErrorSourcePlugin},
		{errors.New("boom"), backend.StatusInternal, backend.ErrorSourcePlugin},
	} {
		status, src, _ := classify(tc.err)
		if status != tc.status || src != tc.src {
			t.Errorf("%v: %d %s, want %d %s", tc.err, status, src, tc.status, tc.src)
		}
	}
	_, _, msg := classify(errors.Join(errors.New("a"), errors.New("b")))
	if msg != "a; b" {
		t.Errorf("joined message %q", msg)
	}
}
