// Package harness builds the gpx_quiver binary and drives it the way
// Grafana does: it starts the executable with hashicorp go-plugin (the SDK's
// magic cookie, protocol version 2, gRPC), dispenses the diagnostics,
// resource and data services, and sends pluginv2 requests. The end-to-end
// tests, the end-to-end benchmark and `go tool mage demo` use it.
//
// harness is a client of the plugin; no package of the plugin imports it.
package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// BuildFlags are the flags the SDK's build uses; tests build with the same
// so that the Go build cache is shared.
var BuildFlags = []string{"-tags", "arrow_json_stdlib"}

// Build compiles the package pkg (e.g. "./pkg") of the module at root into
// the executable out, with BuildFlags and then extra (e.g. "-ldflags", …).
func Build(ctx context.Context, root, pkg, out string, extra ...string) error {
	args := append([]string{"build", "-o", out}, BuildFlags...)
	args = append(append(args, extra...), pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("harness: go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// RepoRoot returns the root of the module, found from dir upwards.
func RepoRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("harness: no go.mod above %s", dir)
		}
	}
}

// Plugin is a running plugin process and its gRPC clients.
type Plugin struct {
	client      *goplugin.Client
	Pid         int
	Data        pluginv2.DataClient
	Diagnostics pluginv2.DiagnosticsClient
	Resource    pluginv2.ResourceClient
}

// Start runs the executable at path as Grafana does and connects to it.
// stderr receives the plugin's log lines of level warning and above
// (io.Discard to drop them).
func Start(path string, stderr io.Writer, env ...string) (*Plugin, error) {
	return start(path, stderr, hclog.Warn, env)
}

// StartVerbose is Start with every log line of the plugin, debug included.
func StartVerbose(path string, stderr io.Writer, env ...string) (*Plugin, error) {
	return start(path, stderr, hclog.Trace, env)
}

// StartAsGrafana runs the executable with exactly env (and go-plugin's
// handshake variables), as Grafana 12.4 and later start a plugin: nothing
// of the host's environment is inherited (go-plugin's SkipHostEnv). stderr
// receives every log line of the plugin from level info up.
func StartAsGrafana(path string, stderr io.Writer, env ...string) (*Plugin, error) {
	return startWith(path, stderr, hclog.Info, env, true)
}

func start(path string, stderr io.Writer, level hclog.Level, env []string) (*Plugin, error) {
	return startWith(path, stderr, level, append(os.Environ(), env...), false)
}

func startWith(path string, stderr io.Writer, level hclog.Level, env []string, skipHostEnv bool) (*Plugin, error) {
	cmd := exec.Command(path)
	cmd.Env = env
	client := goplugin.NewClient(&goplugin.ClientConfig{
		SkipHostEnv: skipHostEnv,
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{
			grpcplugin.ProtocolVersion: {
				"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
				"resource":    &grpcplugin.ResourceGRPCPlugin{},
				"data":        &grpcplugin.DataGRPCPlugin{},
			},
		},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "harness", Output: stderr, Level: level}),
		SyncStderr:       stderr,
		SyncStdout:       io.Discard,
		StartTimeout:     30 * time.Second,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("harness: starting %s: %w", path, err)
	}
	p := &Plugin{client: client}
	if rc := client.ReattachConfig(); rc != nil {
		p.Pid = rc.Pid
	}
	for name, dst := range map[string]any{"data": &p.Data, "diagnostics": &p.Diagnostics, "resource": &p.Resource} {
		raw, err := rpc.Dispense(name)
		if err != nil {
			client.Kill()
			return nil, fmt.Errorf("harness: dispensing %q: %w", name, err)
		}
		switch d := dst.(type) {
		case *pluginv2.DataClient:
			*d = raw.(pluginv2.DataClient)
		case *pluginv2.DiagnosticsClient:
			*d = raw.(pluginv2.DiagnosticsClient)
		case *pluginv2.ResourceClient:
			*d = raw.(pluginv2.ResourceClient)
		}
	}
	return p, nil
}

// Close stops the plugin process.
func (p *Plugin) Close() { p.client.Kill() }

// CPUTime returns the user + system CPU time the plugin process has used,
// read from /proc (Linux).
func (p *Plugin) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
	if err != nil {
		return 0, fmt.Errorf("harness: reading the plugin's CPU time: %w", err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("harness: unexpected /proc stat %q", s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("harness: unexpected /proc stat %q", s)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// Context returns a plugin context for a data-source instance with the given
// jsonData and decrypted secure data. Instances are cached by the plugin by
// id and update time: give a new id (or time) for other settings.
func Context(id int64, jsonData string, secure map[string]string) *pluginv2.PluginContext {
	return &pluginv2.PluginContext{
		OrgId:    1,
		PluginId: "quiver-arrow-datasource",
		DataSourceInstanceSettings: &pluginv2.DataSourceInstanceSettings{
			Id: id, Uid: "ds" + strconv.FormatInt(id, 10), Name: "Quiver " + strconv.FormatInt(id, 10),
			JsonData: []byte(jsonData), DecryptedSecureJsonData: secure,
			LastUpdatedMS: 1,
		},
	}
}

// Query returns a query over [from, to] with the given model.
func Query(refID string, model any, from, to time.Time, interval time.Duration, maxDataPoints int64) *pluginv2.DataQuery {
	js, ok := model.(string)
	if !ok {
		b, err := json.Marshal(model)
		if err != nil {
			panic(err)
		}
		js = string(b)
	}
	return &pluginv2.DataQuery{
		RefId: refID, Json: []byte(js),
		TimeRange:     &pluginv2.TimeRange{FromEpochMS: from.UnixMilli(), ToEpochMS: to.UnixMilli()},
		IntervalMS:    interval.Milliseconds(),
		MaxDataPoints: maxDataPoints,
	}
}

// Health runs a health check.
func (p *Plugin) Health(ctx context.Context, pc *pluginv2.PluginContext) (*pluginv2.CheckHealthResponse, error) {
	return p.Diagnostics.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: pc})
}

// QueryData runs a QueryData request.
func (p *Plugin) QueryData(ctx context.Context, pc *pluginv2.PluginContext, format pluginv2.DataFrameFormat, queries ...*pluginv2.DataQuery) (*pluginv2.QueryDataResponse, error) {
	return p.Data.QueryData(ctx, &pluginv2.QueryDataRequest{PluginContext: pc, Queries: queries, Format: format})
}

// QueryChunked runs a QueryChunkedData request and returns every chunk.
func (p *Plugin) QueryChunked(ctx context.Context, pc *pluginv2.PluginContext, format pluginv2.DataFrameFormat, queries ...*pluginv2.DataQuery) ([]*pluginv2.QueryChunkedDataResponse, error) {
	stream, err := p.Data.QueryChunkedData(ctx, &pluginv2.QueryChunkedDataRequest{PluginContext: pc, Queries: queries, Format: format})
	if err != nil {
		return nil, err
	}
	var chunks []*pluginv2.QueryChunkedDataResponse
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
}

// Metrics collects the plugin's Prometheus metrics (the diagnostics
// service, as Grafana scrapes them) and returns every sample by its series
// as the text format writes it, e.g.
// `grafana_plugin_request_total{endpoint="queryData",status="ok",status_source="plugin"}`.
func (p *Plugin) Metrics(ctx context.Context) (map[string]float64, error) {
	res, err := p.Diagnostics.CollectMetrics(ctx, &pluginv2.CollectMetricsRequest{})
	if err != nil {
		return nil, fmt.Errorf("harness: collecting metrics: %w", err)
	}
	samples := map[string]float64{}
	for _, line := range strings.Split(string(res.GetMetrics().GetPrometheus()), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("harness: metrics line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("harness: metrics line %q: %w", line, err)
		}
		samples[line[:i]] = v
	}
	return samples, nil
}

// Memory returns the plugin process's resident set size now and its peak
// (VmRSS and VmHWM of /proc/<pid>/status, Linux), in bytes.
func (p *Plugin) Memory() (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid))
	if err != nil {
		return 0, 0, fmt.Errorf("harness: reading the plugin's memory: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak, nil
}
