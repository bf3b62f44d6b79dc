package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/demo"
)

// reservingSource serves GET /reserve?n=: it reserves n bytes in the
// caller's budget (source.ReserveIn) and answers what the budget held
// meanwhile, as held() tells.
type reservingSource struct {
	fakeSource
	held func() int64
}

func (r reservingSource) Resources() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /reserve", func(w http.ResponseWriter, req *http.Request) {
		var n int64
		fmt.Sscan(req.URL.Query().Get("n"), &n)
		if err := source.ReserveIn(req.Context(), n); err != nil {
			w.WriteHeader(source.StatusOf(err, http.StatusBadGateway))
			fmt.Fprint(w, err)
			return
		}
		fmt.Fprint(w, r.held())
	})
	return mux
}

// A resource call's reservations draw on the process's memory budget while
// it runs and are given back when it is answered; one larger than the whole
// budget is refused, a 400 naming the budget.
func TestResourcesHoldTheBudget(t *testing.T) {
	var s *Service
	src := reservingSource{held: func() int64 { used, _, _, _ := s.pipeline.Stats(); return used }}
	s = NewService(Options{
		Sources:       func(context.Context, settings.Settings) (source.Source, error) { return src, nil },
		EncodeWorkers: 1,
		Budget:        settings.Budget{Bytes: 4 << 20, Wait: time.Second},
	})
	t.Cleanup(s.Close)
	pc := backend.FromProto().PluginContext(pluginContext(`{}`))
	call := func(n int64) (int, string) {
		var got *backend.CallResourceResponse
		err := s.CallResource(context.Background(), &backend.CallResourceRequest{PluginContext: pc, Path: "reserve", Method: http.MethodGet, URL: fmt.Sprintf("reserve?n=%d", n)},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { got = r; return nil }))
		if err != nil || got == nil {
			t.Fatalf("reserve %d: %v %v", n, got, err)
		}
		return got.Status, string(got.Body)
	}
	if status, body := call(1 << 20); status != http.StatusOK || body != fmt.Sprint(1<<20) {
		t.Errorf("1 MiB: %d %s, want the budget holding 1 MiB", status, body)
	}
	if used, _, _, _ := s.pipeline.Stats(); used != 0 {
		t.Errorf("%d bytes held after the answer", used)
	}
	status, body := call(8 << 20)
	if status != http.StatusBadRequest || !strings.Contains(body, "query too large for the memory budget") || !strings.Contains(body, "4 MiB") {
		t.Errorf("8 MiB: %d %s", status, body)
	}
	if used, _, _, _ := s.pipeline.Stats(); used != 0 {
		t.Errorf("%d bytes held after a refusal", used)
	}
}

// The plugin's own refusals of a resource call are JSON {"error"} as the
// sources' are: a source without resources names the path asked for.
func TestResourceRefusalsAreJSON(t *testing.T) {
	s := newTestService(t, demo.New(), 1)
	for _, tc := range []struct {
		jsonData, path string
		status         int
		want           string
	}{
		{`{}`, "tables", http.StatusNotFound, `no resource "tables": this data source serves none but advise`},
		{`{"codec":"brotli"}`, "tables", http.StatusBadRequest, "codec"},
	} {
		var got *backend.CallResourceResponse
		err := s.CallResource(context.Background(), &backend.CallResourceRequest{PluginContext: backend.FromProto().PluginContext(pluginContext(tc.jsonData)), Path: tc.path, Method: http.MethodGet},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { got = r; return nil }))
		if err != nil || got == nil {
			t.Fatalf("%s: %v %v", tc.path, got, err)
		}
		var body map[string]string
		if jerr := json.Unmarshal(got.Body, &body); jerr != nil || got.Status != tc.status || !strings.Contains(body["error"], tc.want) {
			t.Errorf("%s %s: %d %s (%v), want %d saying %q", tc.jsonData, tc.path, got.Status, got.Body, jerr, tc.status, tc.want)
		}
	}
}
