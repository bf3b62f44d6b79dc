package plugin

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/backend/tracing"
	"github.com/grafana/grafana-plugin-sdk-go/backend/useragent"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/status"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/pkg/source"
)

// Queries skip the SDK's handler chain: our Data service is registered
// directly (serve.go), so backend.Manage's defaultHandlerMiddlewares
// (SDK backend/serve.go) never see them. This file gives them the same
// chain, in the same order, around a QueryData-shaped function that computes
// our own pluginv2 response:
//
//	SDK (backend/serve.go)                here
//	MiddlewareHandler.setupContext        setupContext, mirrored
//	newTenantIDMiddleware                 tenantMiddleware, mirrored (unexported)
//	newContextualLoggerMiddleware         contextualLoggerMiddleware, mirrored (unexported)
//	NewTracingMiddleware(DefaultTracer()) the SDK's
//	NewMetricsMiddleware(…, "grafana")    newRequestMetrics, mirrored (see there)
//	NewLoggerMiddleware(Logger, nil)      the SDK's
//	newHeaderMiddleware                   headerMiddleware, mirrored (unexported)
//	NewAlertForwarderMiddleware()         the SDK's
//	newHARCaptureMiddleware               not mirrored (see below)
//	NewErrorSourceMiddleware()            the SDK's
//	                                      identityMiddleware, Quiver's own: the
//	                                      forwarded user identity for the
//	                                      sources (on Manage's chain too)
//
// The HAR capture records requests of the SDK's httpclient and what a
// driver reports to the querycapture recorder; Quiver's sources use neither,
// so it would capture nothing.
//
// The gRPC server interceptors backend.Manage installs (OpenTelemetry stats
// handler, grpc_server_* metrics, panic recovery) already apply: our service
// is registered on the server Manage builds.
//
// QueryChunkedData runs through the same chain as QueryData, under the
// endpoint "queryChunkedData" (the SDK's middlewares implement QueryData
// only; its own chunked path passes through them untouched).

// middlewaresComparedWith is the SDK release whose middlewares this file was
// last compared with, line by line; TestMiddlewaresComparedWithSDK fails once
// go.mod names another, until they are compared again.
const middlewaresComparedWith = "v0.300.0"

// queryChain is the handler chain of query requests.
type queryChain struct {
	middlewares []backend.HandlerMiddleware
	tracer      trace.Tracer // for the span of each query
}

func newQueryChain() *queryChain {
	tracer := tracing.DefaultTracer()
	return &queryChain{
		tracer: tracer,
		middlewares: []backend.HandlerMiddleware{
			tenantMiddleware,
			contextualLoggerMiddleware,
			backend.NewTracingMiddleware(tracer),
			newRequestMetrics(prometheus.DefaultRegisterer),
			backend.NewLoggerMiddleware(backend.Logger, nil),
			headerMiddleware,
			backend.NewAlertForwarderMiddleware(),
			backend.NewErrorSourceMiddleware(),
			identityMiddleware,
		},
	}
}

// run passes req through the chain under endpoint, to final.
func (c *queryChain) run(ctx context.Context, endpoint backend.Endpoint, req *backend.QueryDataRequest, final backend.QueryDataHandlerFunc) error {
	var h backend.Handler = backend.Handlers{QueryDataHandler: final}
	for _, m := range slices.Backward(c.middlewares) {
		h = m.CreateHandlerMiddleware(h)
	}
	_, err := h.QueryData(setupContext(ctx, req.PluginContext, endpoint), req)
	return err
}

// setupContext mirrors the SDK's MiddlewareHandler.setupContext.
func setupContext(ctx context.Context, pc backend.PluginContext, endpoint backend.Endpoint) context.Context {
	ctx = status.InitSource(ctx)
	ctx = backend.WithEndpoint(ctx, endpoint)
	ctx = backend.WithPluginContext(ctx, pc)
	ctx = backend.WithGrafanaConfig(ctx, pc.GrafanaConfig)
	ctx = backend.WithUser(ctx, pc.User)
	return useragent.WithUserAgent(ctx, pc.UserAgent)
}

// queryMiddleware is a middleware of the query chain, which calls QueryData only.
func queryMiddleware(fn func(ctx context.Context, req *backend.QueryDataRequest, next backend.Handler) (*backend.QueryDataResponse, error)) backend.HandlerMiddleware {
	return backend.HandlerMiddlewareFunc(func(next backend.Handler) backend.Handler {
		return &queryHandler{BaseHandler: backend.NewBaseHandler(next), next: next, fn: fn}
	})
}

type queryHandler struct {
	backend.BaseHandler
	next backend.Handler
	fn   func(ctx context.Context, req *backend.QueryDataRequest, next backend.Handler) (*backend.QueryDataResponse, error)
}

func (h *queryHandler) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	return h.fn(ctx, req, h.next)
}

// tenantMiddleware mirrors the SDK's newTenantIDMiddleware: the tenant ID
// Grafana sends as the gRPC metadata "tenantID" goes into the context, where
// the instance manager's key (SDK datasource/instance_provider.go) and the
// tracer read it.
var tenantMiddleware = queryMiddleware(func(ctx context.Context, req *backend.QueryDataRequest, next backend.Handler) (*backend.QueryDataResponse, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if tid := md.Get(tenantMetadataKey); len(tid) > 0 && tid[0] != "" {
			ctx = backend.WithTenant(ctx, tid[0])
		}
	}
	return next.QueryData(ctx, req)
})

// tenantMetadataKey is the SDK's internal tenant.CtxKey.
const tenantMetadataKey = "tenantID"

// contextualLoggerMiddleware mirrors the SDK's newContextualLoggerMiddleware
// (withContextualLogAttributes in SDK backend/log.go): the attributes every
// log line of the request carries.
var contextualLoggerMiddleware = queryMiddleware(func(ctx context.Context, req *backend.QueryDataRequest, next backend.Handler) (*backend.QueryDataResponse, error) {
	pc := req.PluginContext
	args := []any{"pluginId", pc.PluginID, "pluginVersion", pc.PluginVersion}
	if ep := backend.EndpointFromContext(ctx); !ep.IsEmpty() {
		args = append(args, "endpoint", string(ep))
	}
	if tid := trace.SpanContextFromContext(ctx).TraceID(); tid.IsValid() {
		args = append(args, "traceId", tid.String())
	}
	if ds := pc.DataSourceInstanceSettings; ds != nil {
		args = append(args, "dsName", ds.Name, "dsUid", ds.UID)
		if pc.User != nil {
			args = append(args, "uname", pc.User.Name)
		}
	}
	args = append(args, log.ContextualAttributesFromIncomingContext(ctx)...)
	return next.QueryData(log.WithContextualAttributes(ctx, args), req)
})

// newRequestMetrics mirrors the SDK's NewMetricsMiddleware(reg, "grafana",
// false): grafana_plugin_request_total{endpoint, status, status_source}.
// That middleware cannot be used a second time: it registers its own
// counter with MustRegister, and backend.Manage's copy already did. This one
// counts into the counter Manage registered for health and resources (found
// at the first request, when Manage has built its chain), or registers it
// when there is none (a Service used without Manage). The SDK has no request
// duration metric of its own; the gRPC interceptor's
// grpc_server_handling_seconds{grpc_service="pluginv2.Data"} times queries.
func newRequestMetrics(reg prometheus.Registerer) backend.HandlerMiddleware {
	var (
		once    sync.Once
		counter *prometheus.CounterVec
	)
	return queryMiddleware(func(ctx context.Context, req *backend.QueryDataRequest, next backend.Handler) (*backend.QueryDataResponse, error) {
		resp, err := next.QueryData(ctx, req)
		once.Do(func() { counter = requestCounter(reg) })
		counter.WithLabelValues(
			backend.EndpointFromContext(ctx).String(),
			backend.RequestStatusFromQueryDataResponse(resp, err).String(),
			string(backend.ErrorSourceFromContext(ctx)),
		).Inc()
		return resp, err
	})
}

func requestCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "grafana",
		Subsystem: "plugin",
		Name:      "request_total",
		Help:      "The total amount of plugin requests",
	}, []string{"endpoint", "status", "status_source"})
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(*prometheus.CounterVec); ok {
			return existing
		}
	}
	if err != nil {
		backend.Logger.Error("plugin: query requests are not counted", "metric", "grafana_plugin_request_total", "error", err)
	}
	return c
}

// headerMiddleware mirrors the SDK's newHeaderMiddleware: the forwarded
// HTTP headers go to outgoing requests of the SDK's httpclient made with
// ForwardHTTPHeaders on.
var headerMiddleware = queryMiddleware(func(ctx context.Context, req *backend.QueryDataRequest, next backend.Handler) (*backend.QueryDataResponse, error) {
	if headers := req.GetHTTPHeaders(); len(headers) > 0 {
		ctx = httpclient.WithContextualMiddleware(ctx,
			httpclient.MiddlewareFunc(func(opts httpclient.Options, next http.RoundTripper) http.RoundTripper {
				if !opts.ForwardHTTPHeaders {
					return next
				}
				return httpclient.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
					for k, v := range headers {
						if r.Header.Get(k) == "" {
							for _, vv := range v {
								r.Header.Add(k, vv)
							}
						}
					}
					return next.RoundTrip(r)
				})
			}))
	}
	return next.QueryData(ctx, req)
})

// identityMiddleware puts the user identity Grafana forwarded with a request
// (source.WithForwarded) into its context, for the sources. It is on the
// query chain and on backend.Manage's chain (health checks, resources).
var identityMiddleware = backend.HandlerMiddlewareFunc(func(next backend.Handler) backend.Handler {
	return &identityHandler{BaseHandler: backend.NewBaseHandler(next)}
})

type identityHandler struct{ backend.BaseHandler }

func withIdentity(ctx context.Context, r backend.ForwardHTTPHeaders) context.Context {
	return source.WithForwarded(ctx, r.GetHTTPHeader(backend.OAuthIdentityTokenHeaderName), r.GetHTTPHeader(backend.OAuthIdentityIDTokenHeaderName))
}

func (h *identityHandler) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	return h.BaseHandler.QueryData(withIdentity(ctx, req), req)
}

func (h *identityHandler) CheckHealth(ctx context.Context, req *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	return h.BaseHandler.CheckHealth(withIdentity(ctx, req), req)
}

func (h *identityHandler) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	return h.BaseHandler.CallResource(withIdentity(ctx, req), req, sender)
}

// redactIdentity removes the forwarded identity of ctx from a message (an
// upstream that echoes a token), before the message is shown or logged.
func redactIdentity(ctx context.Context, msg string) string {
	return redactIdentitySent(ctx, msg, "")
}

// redactIdentitySent is redactIdentity for the message of a query whose
// JSON is sent: a value the query holds is left as is, so that the message
// never confirms a guess (the rule of package flightsql's redact).
func redactIdentitySent(ctx context.Context, msg, sent string) string {
	fw, ok := source.ForwardedFrom(ctx)
	if !ok || msg == "" {
		return msg
	}
	for _, v := range []string{fw.Authorization(), fw.IDToken()} {
		if v != "" && !strings.Contains(sent, v) {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
		if _, tok, ok := strings.Cut(v, " "); ok && len(tok) >= 8 && !strings.Contains(sent, tok) {
			msg = strings.ReplaceAll(msg, tok, "[redacted]") // the token without its scheme
		}
	}
	return msg
}

// reply answers a QueryData request as the gRPC server calls it
// (dataService), through the query chain: frames in pieces stay in pieces,
// for the wire codec.
func (s *Service) reply(ctx context.Context, preq *pluginv2.QueryDataRequest) (*reply, error) {
	req := backend.FromProto().QueryDataRequest(preq)
	var r *reply
	err := s.chain.run(ctx, backend.EndpointQueryData, req, func(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
		r = s.queryData(ctx, preq, req)
		out := &backend.QueryDataResponse{Responses: make(backend.Responses, len(r.msg.Responses))}
		for refID, dr := range r.msg.Responses {
			out.Responses[refID] = outcome(ctx, dr.Status, dr.ErrorSource, dr.Error)
		}
		return out, nil
	})
	if err != nil {
		if r != nil {
			r.rest.take().release()
			runAfterWrite(r.written)
		}
		return nil, err
	}
	// The wire codec gives the request's budget back once the reply is
	// written out; should it never, the call's end does.
	context.AfterFunc(ctx, func() { runAfterWrite(r.written) })
	return r, nil
}

// chunks answers a QueryChunkedData request as the gRPC server calls it
// (dataService), through the query chain, sending each chunk on ss with
// its frame's pieces for the wire codec; the middlewares see each query's
// outcome as its chunks went out.
func (s *Service) chunks(preq *pluginv2.QueryChunkedDataRequest, ss grpc.ServerStream) error {
	ctx := ss.Context()
	req := backend.FromProto().QueryChunkedDataRequest(preq)
	qreq := &backend.QueryDataRequest{PluginContext: req.PluginContext, Headers: req.Headers, Queries: req.Queries, Format: req.Format}
	var sendErr error
	err := s.chain.run(ctx, backend.EndpointQueryChunkedData, qreq, func(ctx context.Context, _ *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
		out := &backend.QueryDataResponse{Responses: backend.Responses{}}
		// Called by queryChunkedData's one sending goroutine, a chunk at a time.
		record := func(c *chunk) error {
			m := c.msg
			if _, seen := out.Responses[m.RefId]; !seen || m.Error != "" {
				out.Responses[m.RefId] = outcome(ctx, m.Status, m.ErrorSource, m.Error)
			}
			return ss.SendMsg(c)
		}
		sendErr = s.queryChunkedData(ctx, preq, req, record)
		return out, nil // a failed send is the stream's error, not a query's
	})
	return cmp.Or(err, sendErr)
}

// outcome is what the middlewares see of one query's answer: status, error
// source and message; the frames stay in our pluginv2 response. The error
// wraps the request's own cancellation, if any, so that a request Grafana
// gave up on counts as "cancelled", as on the SDK's path.
func outcome(ctx context.Context, st int32, src, msg string) backend.DataResponse {
	dr := backend.DataResponse{Status: backend.Status(st), ErrorSource: backend.ErrorSource(src)}
	if msg != "" {
		dr.Error = answerError{msg: msg, cause: ctx.Err()}
	}
	return dr
}

// answerError is a query's error message as answered.
type answerError struct {
	msg   string
	cause error
}

func (e answerError) Error() string { return e.msg }
func (e answerError) Unwrap() error { return e.cause }

// traceQuery starts the span of one query, a child of the request's span,
// and returns the function that ends it with the query's error.
func (s *Service) traceQuery(ctx context.Context, q backend.DataQuery) (context.Context, func(error)) {
	ctx, span := s.chain.tracer.Start(ctx, "quiver.query", trace.WithAttributes(
		attribute.String("ref_id", q.RefID),
		attribute.String("query_type", q.QueryType),
		attribute.Int64("from_ms", q.TimeRange.From.UnixMilli()),
		attribute.Int64("to_ms", q.TimeRange.To.UnixMilli()),
		attribute.Int64("interval_ms", q.Interval.Milliseconds()),
		attribute.Int64("max_data_points", q.MaxDataPoints),
	))
	return ctx, func(err error) {
		if err != nil {
			st, src, msg := classify(err)
			span.SetAttributes(attribute.Int("status", int(st)), attribute.String("status_source", string(src)))
			span.SetStatus(codes.Error, redactIdentity(ctx, msg))
		}
		span.End()
	}
}
