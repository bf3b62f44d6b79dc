package plugin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
)

// capLogger records every line logged through it, with its attributes
// (those of With and of the context's contextual attributes).
type capLogger struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []any
}

func newCapLogger() capLogger { return capLogger{mu: &sync.Mutex{}, lines: new([]string)} }

func (l capLogger) rec(level, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.lines = append(*l.lines, fmt.Sprintf("%s %q %v", level, msg, append(append([]any{}, l.attrs...), args...)))
}
func (l capLogger) Debug(msg string, args ...any) { l.rec("DEBUG", msg, args...) }
func (l capLogger) Info(msg string, args ...any)  { l.rec("INFO", msg, args...) }
func (l capLogger) Warn(msg string, args ...any)  { l.rec("WARN", msg, args...) }
func (l capLogger) Error(msg string, args ...any) { l.rec("ERROR", msg, args...) }
func (l capLogger) With(args ...any) log.Logger {
	l.attrs = append(append([]any{}, l.attrs...), args...)
	return l
}
func (l capLogger) Level() log.Level { return log.Debug }
func (l capLogger) FromContext(ctx context.Context) log.Logger {
	return l.With(log.ContextualAttributesFromContext(ctx)...)
}
func (l capLogger) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), *l.lines...)
}

func withCapLogger(t *testing.T) capLogger {
	t.Helper()
	c := newCapLogger()
	prev := backend.Logger
	backend.Logger = c
	t.Cleanup(func() { backend.Logger = prev })
	return c
}

// TestAddressCredentialsNotShownOrLogged: an address typed as a URL with
// credentials is quoted whole by the settings error, which the health
// check shows and every query answers with; the SDK's logger middleware
// then logs it at Error level, once per query.
func TestAddressCredentialsNotShownOrLogged(t *testing.T) {
	logs := withCapLogger(t)
	s := NewService(Options{})
	t.Cleanup(s.Close)
	const jsonData = `{"upstream":"flightsql","address":"grpc+tls://svc:hunter2pass@db:443","redisAddress":"redis://default:s3cretpass@cache:6379"}`

	pc := pluginContext(jsonData)
	res, err := s.CheckHealth(context.Background(), &backend.CheckHealthRequest{PluginContext: backend.FromProto().PluginContext(pc)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("A", `{"rawSql":"select 1"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2pass", "s3cretpass"} {
		if strings.Contains(res.Message, secret) {
			t.Errorf("health message shows %q: %s", secret, res.Message)
		}
		if strings.Contains(resp.Responses["A"].Error, secret) {
			t.Errorf("query error shows %q: %s", secret, resp.Responses["A"].Error)
		}
		for _, l := range logs.all() {
			if strings.Contains(l, secret) {
				t.Errorf("log line shows %q: %s", secret, l)
			}
		}
	}
}

// TestPanicLogHasContext: the log line of a recovered panic carries
// the request's contextual attributes (data source uid), as the SDK's own
// lines of that request do.
func TestPanicLogHasContext(t *testing.T) {
	logs := withCapLogger(t)
	s := newTestService(t, fakeSource{frames: 1, rows: 1}, 1)
	pc := pluginContext(`{}`)
	if _, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pc, Queries: []*pluginv2.DataQuery{query("P", `"panic"`)}}); err != nil {
		t.Fatal(err)
	}
	uid := pc.DataSourceInstanceSettings.Uid
	var panics, stacks int
	for _, l := range logs.all() {
		if strings.Contains(l, "panic in") {
			panics++
			if !strings.Contains(l, "dsUid "+uid) {
				t.Errorf("panic line without the data source: %s", l)
			}
		}
		if strings.Contains(l, "runtime/debug.Stack") {
			stacks++
		}
	}
	if panics != 1 || stacks != 1 {
		t.Errorf("%d panic lines, %d stacks; want 1, 1", panics, stacks)
	}
}

// closeFailing is a source whose Close fails.
type closeFailing struct{ fakeSource }

func (closeFailing) Close() error { return fmt.Errorf("connection reset") }

// TestDisposeLogNamesDataSource: Dispose's log lines (no request,
// so no contextual attributes) still say which data source they are about.
func TestDisposeLogNamesDataSource(t *testing.T) {
	logs := withCapLogger(t)
	s := newTestService(t, closeFailing{}, 1)
	pc := pluginContext(`{}`)
	inst, err := s.instance(context.Background(), backend.FromProto().PluginContext(pc))
	if err != nil {
		t.Fatal(err)
	}
	inst.Dispose()
	found := false
	for _, l := range logs.all() {
		if strings.Contains(l, "closing data source") {
			found = true
			if !strings.Contains(l, "dsUid "+pc.DataSourceInstanceSettings.Uid) {
				t.Errorf("dispose line without the data source: %s", l)
			}
		}
	}
	if !found {
		t.Errorf("no dispose line: %q", logs.all())
	}
}
