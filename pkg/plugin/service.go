package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime/debug"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"

	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/pipeline"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// PluginID is the plugin's id, as in plugin.json.
const PluginID = "quiver-arrow-datasource"

// Compile-time checks of what Service serves.
var (
	_ backend.CheckHealthHandler  = (*Service)(nil)
	_ backend.CallResourceHandler = (*Service)(nil)
)

// Options configure a Service.
type Options struct {
	// Sources builds an instance's source; DefaultSources when nil.
	Sources SourceFactory
	// EncodeWorkers bounds how many frames are encoded at once across every
	// query of every instance; GOMAXPROCS when 0.
	EncodeWorkers int
	// Budget is the process-wide memory budget of in-flight queries. When
	// its Bytes is 0 it is read from the plugin's settings in the
	// environment (settings.ReadBudget), and the Go runtime's soft memory
	// limit is set from it unless GOMEMLIMIT is set.
	// A Wait of 0 with Bytes set means settings.DefaultBudgetWait.
	Budget settings.Budget
}

// Service serves health checks, resource calls and the Data service of
// every data-source instance of the plugin.
type Service struct {
	im       instancemgmt.InstanceManager
	chain    *queryChain // the SDK's handler middlewares, for queries (middleware.go)
	pipeline *pipeline.Pipeline
	// budgetErr names the bad budget variables in the environment: each
	// one's default applies, and health checks report them.
	budgetErr error
	// adviseSlot admits one codec-advisor measurement at a time: measuring
	// loads the CPU, and timings taken side by side would disturb each other.
	adviseSlot chan struct{}
}

// NewService returns a Service.
func NewService(o Options) *Service {
	sources := o.Sources
	if sources == nil {
		sources = DefaultSources
	}
	s := &Service{
		chain:      newQueryChain(),
		adviseSlot: make(chan struct{}, 1),
	}
	b := o.Budget
	if b.Bytes <= 0 {
		var err error
		if b, err = settings.ReadBudget(os.Getenv); err != nil {
			s.budgetErr = err
			backend.Logger.Error("memory budget: a setting is ignored, its default used", "error", err)
		}
		if debug.SetMemoryLimit(-1) == math.MaxInt64 { // the runtime's GOMEMLIMIT is not set
			debug.SetMemoryLimit(b.GoMemoryLimit())
		}
		backend.Logger.Info("memory budget", "bytes", b.Bytes, "from", b.From, "wait", b.Wait.String())
	}
	if o.Budget.Bytes > 0 && b.Wait <= 0 {
		b.Wait = settings.DefaultBudgetWait
	}
	if b.From == "" {
		b.From = "set by the plugin's options"
	}
	s.pipeline = pipeline.New(pipeline.Options{
		Workers: o.EncodeWorkers, Budget: b, Observer: budgetMetrics{}, Log: logError,
	})
	livePipeline.Store(s.pipeline)
	s.im = datasource.NewInstanceManager(func(ctx context.Context, ds backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
		return newInstance(ctx, ds, sources, s.pipeline), nil
	})
	return s
}

// logError logs an error line with the log attributes of ctx (the
// request's endpoint, data source and trace: contextualLoggerMiddleware).
func logError(ctx context.Context, msg string, args ...any) {
	backend.Logger.FromContext(ctx).Error(msg, args...)
}

// Close stops the encode workers once they are idle. The Service must not be
// used afterwards.
func (s *Service) Close() {
	s.pipeline.Close()
}

// instance returns the instance of a request's plugin context.
func (s *Service) instance(ctx context.Context, pc backend.PluginContext) (*Instance, error) {
	if pc.DataSourceInstanceSettings == nil {
		return nil, fmt.Errorf("plugin: the request names no data source instance")
	}
	i, err := s.im.Get(ctx, pc)
	if err != nil {
		return nil, err
	}
	return i.(*Instance), nil // s.im's factory makes nothing else (NewService)
}

// held is instance, held (Instance.hold) until the caller calls let. An
// instance being disposed has been replaced: the next Get returns its
// successor.
func (s *Service) held(ctx context.Context, pc backend.PluginContext) (*Instance, error) {
	for range 2 {
		inst, err := s.instance(ctx, pc)
		if err != nil || inst.hold() {
			return inst, err
		}
	}
	return nil, errors.New("plugin: the data source's settings are being replaced; run the request again")
}

// CheckHealth reports invalid settings (naming the key and the accepted
// values), then asks the source, when it can check its upstream.
func (s *Service) CheckHealth(ctx context.Context, req *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	inst, err := s.held(ctx, req.PluginContext)
	if err != nil {
		return nil, err
	}
	defer inst.let()
	if inst.invalid != nil {
		return unhealthy(ctx, settingsError{inst.invalid}, ""), nil
	}
	if s.budgetErr != nil {
		return unhealthy(ctx, settingsError{s.budgetErr}, " (the plugin runs with that setting's default)"), nil
	}
	what := "Demo source ready"
	if inst.reporter != nil {
		msg, err := inst.reporter.HealthReport(ctx)
		if err != nil {
			return unhealthy(ctx, err, ""), nil
		}
		what = msg
	}
	o := inst.encoders.Options()
	msg := fmt.Sprintf("%s; frames are sent as %s (%s)", what, o.Codec, o.Codec.Effective())
	if o.Codec.Kind() == codec.Auto {
		msg = fmt.Sprintf("%s; frames are sent as auto (none, lz4 or zstd per frame, preferring %s)", what, o.Preference.Name)
	}
	if ws := inst.settings.Warnings; len(ws) > 0 {
		msg += "; warning: " + strings.Join(ws, "; ")
	}
	return &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: msg}, nil
}

// sendResourceError answers a resource call with status and msg as
// {"error": msg}, the request's fault.
func sendResourceError(sender backend.CallResourceResponseSender, status int, msg string) error {
	body, err := json.Marshal(map[string]string{"error": msg})
	if err != nil {
		return err
	}
	return sender.Send(&backend.CallResourceResponse{Status: status, Headers: map[string][]string{"Content-Type": {"application/json"}},
		Body: body, ErrorSource: backend.ErrorSourcePlugin})
}

// unhealthy is the failed health check of err, with the error source
// classify gives it (so Grafana tells a server that is down from a
// data source that is set up wrong) and its message, redacted, then suffix.
func unhealthy(ctx context.Context, err error, suffix string) *backend.CheckHealthResult {
	_, src, msg := classify(err)
	return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: redactIdentity(ctx, msg) + suffix, ErrorSource: src}
}

// CallResource serves the codec advisor (advisor.go) and the source's
// resources (schema browsing for the query editor), or 404 when the source
// has none. What a resource call keeps is held in the memory budget, in an
// account of its own, until it is answered.
func (s *Service) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	inst, err := s.held(ctx, req.PluginContext)
	if err != nil {
		return err
	}
	defer inst.let()
	if inst.invalid != nil {
		return sendResourceError(sender, http.StatusBadRequest, oneLine(inst.invalid))
	}
	if req.Path == AdvisePath {
		return s.advise(ctx, inst, req, sender) // advisor.go
	}
	if inst.resources == nil {
		return sendResourceError(sender, http.StatusNotFound, "no resource "+source.Quote(req.Path)+": this data source serves none but "+AdvisePath)
	}
	// An upstream that echoes the user's forwarded token in an error must
	// not hand it back in a resource's body either.
	// A failed resource call says whose fault it was: the upstream's when
	// the source answers 502/503/504, the request's otherwise.
	redacting := backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		if r != nil && r.Status >= 400 {
			if msg := redactIdentity(ctx, string(r.Body)); msg != string(r.Body) {
				r.Body = []byte(msg)
			}
			if !r.ErrorSource.IsValid() {
				r.ErrorSource = resourceErrorSource(r.Status)
			}
		}
		return sender.Send(r)
	})
	acct := s.pipeline.Account(budgetShare(ctx, req.PluginContext))
	defer acct.Close()
	return inst.resources.CallResource(source.WithReserver(ctx, resourceBudget{acct}), req, redacting)
}

// resourceBudget holds what a resource call keeps in the memory budget
// (source.ReserveIn); a refusal carries the status classify gives it.
type resourceBudget struct{ acct *pipeline.Account }

// Reserve implements source.Reserver.
func (b resourceBudget) Reserve(ctx context.Context, n int64) error {
	err := b.acct.Acquire(ctx, n)
	if err == nil {
		return nil
	}
	status, _, _ := classify(err)
	return source.WithStatus(int(status), fmt.Errorf("plugin: resource: %w", err))
}
