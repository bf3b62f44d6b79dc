package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/demo"
)

// callAdvise posts body to the advisor of the instance of jsonData on s,
// as an Editor.
func callAdvise(t *testing.T, s *Service, jsonData, method, body string) (int, []byte) {
	t.Helper()
	return callAdviseAs(t, s, &backend.User{Login: "ed", Role: "Editor"}, jsonData, method, body)
}

// callAdviseAs is callAdvise as user (nil: no signed-in user).
func callAdviseAs(t *testing.T, s *Service, user *backend.User, jsonData, method, body string) (int, []byte) {
	t.Helper()
	pc := backend.FromProto().PluginContext(pluginContext(jsonData))
	pc.User = user
	var got *backend.CallResourceResponse
	err := s.CallResource(context.Background(), &backend.CallResourceRequest{PluginContext: pc, Path: AdvisePath, Method: method, Body: []byte(body)},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { got = r; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("no response")
	}
	return got.Status, got.Body
}

const adviseRange = `"from":1764583200000,"to":1764590400000,"maxDataPoints":500`

// The advisor answers every setting's figures, and they are consistent:
// every frame counted once per setting, codec none at ratio 1, log lines
// compressed by zstd, random walks by nothing.
func TestAdviseReturnsEverySetting(t *testing.T) {
	s := newTestService(t, demo.New(), 2)
	for _, tc := range []struct {
		query      string
		compresses bool
	}{
		{`{"scenario":"random_walk","seriesCount":5,"seed":3}`, false},
		{`{"scenario":"logs","seriesCount":2,"seed":3}`, true},
	} {
		status, body := callAdvise(t, s, `{}`, http.MethodPost, `{"query":`+tc.query+`,`+adviseRange+`}`)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.query, status, body)
		}
		var res AdviseResult
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatal(err)
		}
		if res.Decoder != codec.Decoders[0].Name { // no user agent: the oldest
			t.Errorf("%s: priced for decoder %q, want %q", tc.query, res.Decoder, codec.Decoders[0].Name)
		}
		if res.Frames == 0 || res.Rows == 0 || len(res.Settings) != len(adviseSettings) {
			t.Fatalf("%s: %d frames, %d rows, %d settings", tc.query, res.Frames, res.Rows, len(res.Settings))
		}
		for i, f := range res.Settings {
			if f.adviseSetting != adviseSettings[i] {
				t.Errorf("setting %d is %+v, want %+v", i, f.adviseSetting, adviseSettings[i])
			}
			n := 0
			for _, c := range f.FramesAs {
				n += c
			}
			if n != res.Frames || f.WireBytes <= 0 || f.Ratio <= 0 || f.EncodeMicros <= 0 || f.DecodeMicros <= 0 || f.TotalMicros != f.EncodeMicros+f.DecodeMicros {
				t.Errorf("%s: %+v: figures inconsistent for %d frames", tc.query, f, res.Frames)
			}
			if f.Codec == "none" && (f.Ratio != 1 || f.Compressed != 0) {
				t.Errorf("codec none: %+v", f)
			}
			if f.Codec == "zstd" && f.Level == 3 && (f.Ratio > 1.5) != tc.compresses {
				t.Errorf("%s: zstd 3 ratio %.2f", tc.query, f.Ratio)
			}
		}
	}
}

// The advisor refuses what it must not run: a query above its limits, an
// instance whose settings are invalid or whose health check fails, a GET,
// a body that is not its JSON.
func TestAdviseRefuses(t *testing.T) {
	s := newTestService(t, demo.New(), 2)
	for _, tc := range []struct {
		name, jsonData, method, body string
		status                       int
		want                         string
	}{
		{"over the advisor's series", `{}`, http.MethodPost, `{"query":{"scenario":"random_walk","seriesCount":5000},` + adviseRange + `}`, http.StatusBadRequest, "larger than the advisor measures (at most 1000 series"},
		{"over the instance's series", `{"maxSeries":20}`, http.MethodPost, `{"query":{"scenario":"random_walk","seriesCount":50},` + adviseRange + `}`, http.StatusBadRequest, "raise maxSeries"},
		{"over the instance's points", `{"maxPoints":1000}`, http.MethodPost, `{"query":{"scenario":"random_walk","seriesCount":10},` + adviseRange + `}`, http.StatusBadRequest, "maxPoints"},
		{"invalid settings", `{"codec":"brotli"}`, http.MethodPost, `{"query":{}}`, http.StatusBadRequest, "codec"},
		{"GET", `{}`, http.MethodGet, ``, http.StatusMethodNotAllowed, "POST"},
		{"not JSON", `{}`, http.MethodPost, `{"query":`, http.StatusBadRequest, "not JSON"},
		{"no query", `{}`, http.MethodPost, `{}`, http.StatusBadRequest, "query"},
		{"time range past 2262", `{}`, http.MethodPost, `{"query":{"scenario":"random_walk"},"from":1,"to":9300000000000}`, http.StatusBadRequest, "outside what Quiver can represent"},
		{"bad scenario", `{}`, http.MethodPost, `{"query":{"scenario":"sine"},` + adviseRange + `}`, http.StatusBadRequest, "sine"},
	} {
		status, body := callAdvise(t, s, tc.jsonData, tc.method, tc.body)
		if status != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.name, status, body, tc.status, tc.want)
		}
	}
	sick := newTestService(t, reportingSource{err: errors.New("flightsql: unreachable")}, 1)
	status, body := callAdvise(t, sick, `{}`, http.MethodPost, `{"query":{"sql":"SELECT 1"}}`)
	if status != http.StatusFailedDependency || !strings.Contains(string(body), "unreachable") {
		t.Errorf("failing health check: %d %s", status, body)
	}
	// The request's own fault (here: no signed-in user to forward) is not
	// a failed dependency.
	refused := newTestService(t, reportingSource{err: source.BadQuery("flightsql: no signed-in user to forward")}, 1)
	status, body = callAdvise(t, refused, `{}`, http.MethodPost, `{"query":{"sql":"SELECT 1"}}`)
	if status != http.StatusBadRequest || strings.Contains(string(body), "health check") || !strings.Contains(string(body), "no signed-in user") {
		t.Errorf("refused by the source: %d %s", status, body)
	}
}

// The advisor is for users who may edit the data source: a Viewer, a user
// of no role and a request without a user are refused with a 403 saying
// who may run it, before the request is read; an Editor and an Admin are
// answered.
func TestAdviseRefusesWhoMayNotEdit(t *testing.T) {
	s := newTestService(t, demo.New(), 2)
	body := `{"query":{"scenario":"random_walk","seriesCount":2,"seed":3},` + adviseRange + `}`
	for _, tc := range []struct {
		name string
		user *backend.User
		want string
	}{
		{"no user", nil, "no signed-in user"},
		{"Viewer", &backend.User{Login: "v", Role: "Viewer"}, `role "Viewer" may not`},
		{"no role", &backend.User{Login: "n", Role: "None"}, `role "None" may not`},
		{"empty role", &backend.User{Login: "e"}, `role "" may not`},
		{"long role", &backend.User{Login: "l", Role: strings.Repeat("R", 1000)}, "(1000 bytes)"},
	} {
		status, got := callAdviseAs(t, s, tc.user, `{}`, http.MethodPost, body)
		var e struct{ Error string }
		if err := json.Unmarshal(got, &e); err != nil {
			t.Fatalf("%s: %s: %v", tc.name, got, err)
		}
		if status != http.StatusForbidden || !strings.Contains(e.Error, tc.want) || !strings.Contains(e.Error, "Editor or Admin") || len(e.Error) > 256 {
			t.Errorf("%s: %d %q, want 403 naming %q and who may", tc.name, status, e.Error, tc.want)
		}
	}
	for _, role := range adviseRoles {
		if status, got := callAdviseAs(t, s, &backend.User{Login: "u", Role: role}, `{}`, http.MethodPost, body); status != http.StatusOK {
			t.Errorf("%s: %d %s", role, status, got)
		}
	}
}

// scopeSource is the demo source, recording the Scope of each query.
type scopeSource struct {
	source.Source
	mu     sync.Mutex
	scopes []string
}

func (s *scopeSource) Query(ctx context.Context, q source.Query, sink source.Sink) error {
	s.mu.Lock()
	s.scopes = append(s.scopes, q.Scope)
	s.mu.Unlock()
	return s.Source.Query(ctx, q, sink)
}

// The advisor's query runs under the scope of a panel's query of the same
// data source (tenant, org, data source, settings version): a source that
// keeps answers by it (a Redis result cache shared by several data sources)
// never serves one data source's kept rows to another's advisor.
func TestAdviseRunsUnderTheInstancesScope(t *testing.T) {
	src := &scopeSource{Source: demo.New()}
	s := newTestService(t, src, 2)
	pc := pluginContext(`{}`)
	model := `{"scenario":"random_walk","seriesCount":2,"seed":3}`
	if _, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", model)}}); err != nil {
		t.Fatal(err)
	}
	upc := backend.FromProto().PluginContext(pc)
	upc.User = &backend.User{Login: "ed", Role: "Editor"}
	var got *backend.CallResourceResponse
	if err := s.CallResource(context.Background(), &backend.CallResourceRequest{PluginContext: upc, Path: AdvisePath, Method: http.MethodPost,
		Body: []byte(`{"query":` + model + `,` + adviseRange + `}`)},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { got = r; return nil })); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Status != http.StatusOK {
		t.Fatalf("advise: %+v", got)
	}
	if len(src.scopes) != 2 || src.scopes[0] == "" || src.scopes[1] != src.scopes[0] {
		t.Errorf("scopes of the panel's query and the advisor's: %q, want one scope, not empty", src.scopes)
	}
}
