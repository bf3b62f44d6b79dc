package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/tests/harness"
)

// The query path runs the SDK's handler middlewares (pkg/plugin/middleware.go).

// instancesCreated is the SDK's own count of data-source instances built
// (datasource.NewInstanceProvider increments it in NewInstance).
const instancesCreated = "plugins_datasource_instances_total"

func metrics(t *testing.T) map[string]float64 {
	t.Helper()
	m, err := plug.Metrics(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func withTenant(c context.Context, tenant string) context.Context {
	return metadata.AppendToOutgoingContext(c, "tenantID", tenant)
}

func TestTenantSharesOneInstanceAcrossHealthAndQueries(t *testing.T) {
	pc := instance(`{"codec":"lz4"}`, nil)
	created := func() float64 {
		n, ok := metrics(t)[instancesCreated]
		if !ok {
			t.Fatalf("%s is not among the plugin's metrics", instancesCreated)
		}
		return n
	}
	base := created()
	steps := []struct {
		what, tenant string
		query        bool
		want         float64 // instances created since base
	}{
		{"tenant 1 health", "t1", false, 1},
		{"tenant 1 query", "t1", true, 1},
		{"tenant 2 query", "t2", true, 2},
		{"tenant 2 health", "t2", false, 2},
		{"tenant 1 query again", "t1", true, 2},
	}
	for _, s := range steps {
		c := withTenant(ctx(t), s.tenant)
		if s.query {
			resp, err := plug.QueryData(c, pc, pluginv2.DataFrameFormat_ARROW, walk("A", 2))
			if err != nil || resp.Responses["A"].Error != "" {
				t.Fatalf("%s: %v %v", s.what, err, resp)
			}
		} else if res, err := plug.Health(c, pc); err != nil || res.Status != pluginv2.CheckHealthResponse_OK {
			t.Fatalf("%s: %v %v", s.what, err, res)
		}
		if got := created() - base; got != s.want {
			t.Errorf("after %s: %v instances created, want %v", s.what, got, s.want)
		}
	}
}

func TestQueryRequestsInTheSDKMetrics(t *testing.T) {
	pc := instance(`{}`, nil)
	series := func(endpoint, status, src string) string {
		return fmt.Sprintf(`grafana_plugin_request_total{endpoint=%q,status=%q,status_source=%q}`, endpoint, status, src)
	}
	var (
		okQuery     = series("queryData", "ok", "plugin")
		badQuery    = series("queryData", "error", "plugin")
		okChunked   = series("queryChunkedData", "ok", "plugin")
		okHealth    = series("checkHealth", "ok", "plugin")
		grpcQueries = `grpc_server_handling_seconds_count{grpc_method="QueryData",grpc_service="pluginv2.Data",grpc_type="unary"}`
	)
	before := metrics(t)
	for range 2 {
		if _, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 1)); err != nil {
			t.Fatal(err)
		}
	}
	bad := harness.Query("B", `{"scenario":"nope"}`, from, t0, 0, 100)
	if resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 1), bad); err != nil || resp.Responses["B"].Error == "" {
		t.Fatalf("bad query: %v %v", err, resp)
	}
	if _, err := plug.QueryChunked(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := plug.Health(ctx(t), pc); err != nil {
		t.Fatal(err)
	}
	after := metrics(t)
	for s, want := range map[string]float64{okQuery: 2, badQuery: 1, okChunked: 1, okHealth: 1, grpcQueries: 3} {
		if got := after[s] - before[s]; got != want {
			t.Errorf("%s went up by %v, want %v", s, got, want)
		}
	}
}

// recorder keeps the incoming metadata of every call a Flight SQL server
// receives.
type recorder struct {
	mu  sync.Mutex
	mds []metadata.MD
}

func (r *recorder) record(c context.Context) {
	md, _ := metadata.FromIncomingContext(c)
	r.mu.Lock()
	r.mds = append(r.mds, md.Copy())
	r.mu.Unlock()
}

// take returns the metadata recorded since the last take.
func (r *recorder) take() []metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	mds := r.mds
	r.mds = nil
	return mds
}

// startRecordingFlightSQL serves arrow-go's SQLite example Flight SQL server
// (an in-memory database with the table t(v REAL)) on 127.0.0.1, recording
// the metadata of every call.
func startRecordingFlightSQL(t *testing.T) (string, *recorder) {
	t.Helper()
	return startRecordingFlightSQLWith(t, nil)
}

// startRecordingFlightSQLWith is startRecordingFlightSQL serving what wrap
// makes of the SQLite server, told the address it listens on (nil: the
// server itself).
func startRecordingFlightSQLWith(t *testing.T, wrap func(srv flightsql.Server, addr string) flightsql.Server) (string, *recorder) {
	t.Helper()
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (v REAL); INSERT INTO t VALUES (1.5)`); err != nil {
		t.Fatal(err)
	}
	srv, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	s := flight.NewServerWithMiddleware([]flight.ServerMiddleware{{
		Unary: func(c context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			rec.record(c)
			return recoverUnary(c, req, info, h)
		},
		Stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			rec.record(ss.Context())
			return recoverStream(srv, ss, info, h)
		},
	}})
	s.InitListener(lis)
	var served flightsql.Server = srv
	if wrap != nil {
		served = wrap(srv, lis.Addr().String())
	}
	s.RegisterFlightService(flightsql.NewFlightServer(served))
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve() }()
	t.Cleanup(func() { s.Shutdown(); <-done })
	return lis.Addr().String(), rec
}

func TestForwardedOAuthIdentityReachesFlightSQL(t *testing.T) {
	addr, rec := startRecordingFlightSQL(t)
	const (
		configured = "Bearer configured-service-token"
		user       = "Bearer user-access-token"
		idToken    = "user-id-token"
	)
	settings := func(passThru bool, rule ...string) string {
		js := fmt.Sprintf(`{"upstream":"flightsql","address":%q,"authType":"token","oauthPassThru":%t`, addr, passThru)
		for _, r := range rule {
			js += fmt.Sprintf(`,"noForwardedIdentity":%q`, r)
		}
		return js + "}"
	}
	secure := map[string]string{"token": "configured-service-token"}
	// Grafana sends the forwarded headers under their names, or prefixed
	// "http_" (the SDK's SetHTTPHeader); both are read.
	forwarded := map[string]string{"Authorization": user, "X-Id-Token": idToken}
	forwardedPrefixed := map[string]string{"http_Authorization": user, "http_X-Id-Token": idToken}
	q := harness.Query("A", map[string]string{"rawSql": "SELECT v FROM t", "format": "table"}, from, t0, 0, 100)

	run := func(t *testing.T, pc *pluginv2.PluginContext, headers map[string]string) []metadata.MD {
		t.Helper()
		res, err := plug.Diagnostics.CheckHealth(ctx(t), &pluginv2.CheckHealthRequest{PluginContext: pc, Headers: headers})
		if err != nil || res.Status != pluginv2.CheckHealthResponse_OK {
			t.Fatalf("health: %v %v", err, res)
		}
		resp, err := plug.Data.QueryData(ctx(t), &pluginv2.QueryDataRequest{PluginContext: pc, Headers: headers, Queries: []*pluginv2.DataQuery{q}})
		if err != nil || resp.Responses["A"].Error != "" || len(resp.Responses["A"].Frames) != 1 {
			t.Fatalf("query: %v %v", err, resp)
		}
		// Schema browsing; resource calls carry plain header names.
		rh := map[string]*pluginv2.StringList{}
		for k, v := range headers {
			rh[strings.TrimPrefix(k, "http_")] = &pluginv2.StringList{Values: []string{v}}
		}
		stream, err := plug.Resource.CallResource(ctx(t), &pluginv2.CallResourceRequest{PluginContext: pc, Path: "tables", Method: "GET", Url: "tables", Headers: rh})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := stream.Recv(); err != nil || r.Code != 200 {
			t.Fatalf("tables: %v %v", err, r)
		}
		mds := rec.take()
		if len(mds) < 4 { // health, GetFlightInfo, DoGet, GetTables at least
			t.Fatalf("the server saw %d calls", len(mds))
		}
		return mds
	}
	expect := func(t *testing.T, mds []metadata.MD, authz, id string) {
		t.Helper()
		for i, md := range mds {
			if got := md.Get("authorization"); len(got) != 1 || got[0] != authz {
				t.Errorf("call %d: authorization %q, want %q", i, got, authz)
			}
			if got := md.Get("x-id-token"); (id == "" && len(got) != 0) || (id != "" && (len(got) != 1 || got[0] != id)) {
				t.Errorf("call %d: x-id-token %q, want %q", i, got, id)
			}
		}
	}

	t.Run("on", func(t *testing.T) {
		expect(t, run(t, instance(settings(true), secure), forwarded), user, idToken)
	})
	t.Run("on, prefixed headers", func(t *testing.T) {
		expect(t, run(t, instance(settings(true), secure), forwardedPrefixed), user, idToken)
	})
	t.Run("on, refuse, forwarded", func(t *testing.T) {
		expect(t, run(t, instance(settings(true, "refuse"), secure), forwarded), user, idToken)
	})
	t.Run("on, configured, forwarded", func(t *testing.T) {
		expect(t, run(t, instance(settings(true, "configured"), secure), forwarded), user, idToken)
	})
	t.Run("on, configured, nothing forwarded", func(t *testing.T) {
		expect(t, run(t, instance(settings(true, "configured"), secure), nil), configured, "")
	})
	// The default refuses a call without a forwarded user: the health check
	// fails and the query is the plugin's error, saying what to change;
	// nothing reaches the server.
	for name, rule := range map[string][]string{"default": nil, "refuse": {"refuse"}} {
		t.Run("on, "+name+", nothing forwarded", func(t *testing.T) {
			pc := instance(settings(true, rule...), secure)
			const want = `flightsql: no signed-in user to forward: oauthPassThru is on`
			res, err := plug.Diagnostics.CheckHealth(ctx(t), &pluginv2.CheckHealthRequest{PluginContext: pc})
			if err != nil || res.Status != pluginv2.CheckHealthResponse_ERROR || !strings.Contains(res.Message, want) {
				t.Errorf("health: %v %v", err, res)
			}
			resp, err := plug.Data.QueryData(ctx(t), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{q}})
			if err != nil {
				t.Fatal(err)
			}
			a := resp.Responses["A"]
			if !strings.Contains(a.Error, want) || !strings.Contains(a.Error, `set noForwardedIdentity to "configured"`) ||
				a.ErrorSource != "plugin" || a.Status != 400 || strings.Contains(a.Error, "configured-service-token") {
				t.Errorf("query: status %d, source %q, error %q", a.Status, a.ErrorSource, a.Error)
			}
			if mds := rec.take(); len(mds) != 0 {
				t.Errorf("the server saw %d calls, want none", len(mds))
			}
		})
	}
	// The health check says which rule applies.
	for rule, want := range map[string]string{
		"refuse":     `oauthPassThru: calls without a signed-in user are refused (noForwardedIdentity "refuse")`,
		"configured": `oauthPassThru: calls without a signed-in user are sent with the configured credentials (noForwardedIdentity "configured")`,
	} {
		res, err := plug.Diagnostics.CheckHealth(ctx(t), &pluginv2.CheckHealthRequest{PluginContext: instance(settings(true, rule), secure), Headers: forwarded})
		if err != nil || res.Status != pluginv2.CheckHealthResponse_OK || !strings.Contains(res.Message, want) {
			t.Errorf("health with %s: %v %v", rule, err, res)
		}
	}
	rec.take()
	t.Run("off", func(t *testing.T) {
		expect(t, run(t, instance(settings(false), secure), forwarded), configured, "")
	})
}

// buildInfo is compiled into ownBinary as the SDK's build does.
const buildInfo = `{"time":1764547200000,"pluginID":"quiver-arrow-datasource","version":"9.8.7"}`

// ownBinary builds gpx_quiver with buildInfo, for a test that needs a
// process of its own.
func ownBinary(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	root, err := harness.RepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "gpx_quiver")
	if err := harness.Build(ctx(t), root, "./pkg", bin, "-ldflags", "-X github.com/grafana/grafana-plugin-sdk-go/build/buildinfo.buildInfoJSON="+buildInfo); err != nil {
		t.Fatal(err)
	}
	return bin
}

// The forwarded identity and the configured token appear in no log line of
// the plugin (at its default level, debug), failures included.
func TestForwardedIdentityIsNeverLogged(t *testing.T) {
	addr, _ := startRecordingFlightSQL(t)
	var logs syncBuffer
	p, err := harness.StartVerbose(ownBinary(t), &logs)
	if err != nil {
		t.Fatal(err)
	}
	pc := harness.Context(1, fmt.Sprintf(`{"upstream":"flightsql","address":%q,"authType":"token","oauthPassThru":true}`, addr), map[string]string{"token": "configured-service-token"})
	headers := map[string]string{"Authorization": "Bearer user-access-token", "X-Id-Token": "user-id-token"}
	if _, err := p.Diagnostics.CheckHealth(ctx(t), &pluginv2.CheckHealthRequest{PluginContext: pc, Headers: headers}); err != nil {
		t.Fatal(err)
	}
	good := harness.Query("A", map[string]string{"rawSql": "SELECT v FROM t", "format": "table"}, from, t0, 0, 100)
	bad := harness.Query("B", map[string]string{"rawSql": "SELECT nope FROM missing", "format": "table"}, from, t0, 0, 100)
	resp, err := p.Data.QueryData(ctx(t), &pluginv2.QueryDataRequest{PluginContext: pc, Headers: headers, Queries: []*pluginv2.DataQuery{good, bad}})
	if err != nil || resp.Responses["B"].Error == "" {
		t.Fatalf("query: %v %v", err, resp)
	}
	p.Close()
	out := logs.String()
	if !strings.Contains(out, "Plugin Request Started") || !strings.Contains(out, "Datasource instance created") || !strings.Contains(out, "Partial data response error") {
		t.Fatalf("the plugin's log was not captured:\n%s", out)
	}
	for _, secret := range []string{"user-access-token", "user-id-token", "configured-service-token"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log contains %q", secret)
		}
	}
}

// syncBuffer is a strings.Builder safe for the plugin's log writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBuildInfoFlags(t *testing.T) {
	bin := ownBinary(t)
	info := buildInfo
	out, err := exec.CommandContext(ctx(t), bin, "-version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "9.8.7" {
		t.Errorf("-version: %q %v", out, err)
	}
	out, err = exec.CommandContext(ctx(t), bin, "-buildinfo").Output()
	var got, want map[string]any
	if err != nil || json.Unmarshal(out, &got) != nil || json.Unmarshal([]byte(info), &want) != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("-buildinfo: %q %v", out, err)
	}
}

// locatingServer names an endpoint location for every query: the same
// listener, under another host name.
type locatingServer struct {
	flightsql.Server
	location string
}

func (s *locatingServer) GetFlightInfoStatement(c context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	info, err := s.Server.GetFlightInfoStatement(c, cmd, desc)
	if err != nil {
		return nil, err
	}
	for _, ep := range info.GetEndpoint() {
		ep.Location = []*flight.Location{{Uri: s.location}}
	}
	return info, nil
}

// An endpoint location on another host ("localhost", while the address is
// 127.0.0.1) gets nothing, neither the forwarded user's token nor the
// configured one, and the query fails naming the host, unless
// allowedLocationHosts lists it.
func TestLocationOnAnotherHostThroughThePlugin(t *testing.T) {
	addr, rec := startRecordingFlightSQLWith(t, func(srv flightsql.Server, addr string) flightsql.Server {
		_, port, _ := net.SplitHostPort(addr)
		return &locatingServer{Server: srv, location: "grpc+tcp://localhost:" + port}
	})
	q := harness.Query("A", map[string]string{"rawSql": "SELECT v FROM t", "format": "table"}, from, t0, 0, 100)
	secure := map[string]string{"token": "configured-service-token"}
	for _, tc := range []struct {
		passThru bool
		allowed  string
		authz    string // what the location gets; "" for a refusal
	}{
		{passThru: false, allowed: "", authz: ""},
		{passThru: true, allowed: "", authz: ""},
		{passThru: true, allowed: "data.example", authz: ""},
		{passThru: false, allowed: "localhost", authz: "Bearer configured-service-token"},
		{passThru: true, allowed: "data.example, localhost", authz: "Bearer user-access-token"},
	} {
		js := fmt.Sprintf(`{"upstream":"flightsql","address":%q,"authType":"token","oauthPassThru":%t,"allowedLocationHosts":%q}`, addr, tc.passThru, tc.allowed)
		resp, err := plug.Data.QueryData(ctx(t), &pluginv2.QueryDataRequest{PluginContext: instance(js, secure),
			Headers: map[string]string{"Authorization": "Bearer user-access-token"}, Queries: []*pluginv2.DataQuery{q}})
		if err != nil {
			t.Fatal(err)
		}
		a := resp.Responses["A"]
		mds := rec.take()
		if tc.authz == "" {
			if !strings.Contains(a.Error, `host "localhost"`) || !strings.Contains(a.Error, "allowedLocationHosts") || a.ErrorSource != "plugin" {
				t.Errorf("%+v: status %d, source %q, error %q", tc, a.Status, a.ErrorSource, a.Error)
			}
			if len(mds) != 1 { // GetFlightInfo on the address; nothing at the location
				t.Errorf("%+v: the server saw %d calls, want 1", tc, len(mds))
			}
			continue
		}
		if a.Error != "" || len(a.Frames) != 1 || len(mds) != 2 {
			t.Fatalf("%+v: %q, %d frames, %d calls", tc, a.Error, len(a.Frames), len(mds))
		}
		if got := mds[1].Get("authorization"); len(got) != 1 || got[0] != tc.authz || strings.Join(mds[1].Get(":authority"), ",") != "localhost:"+addr[strings.LastIndex(addr, ":")+1:] {
			t.Errorf("%+v: the location got authorization %q at %q", tc, got, mds[1].Get(":authority"))
		}
	}
}
