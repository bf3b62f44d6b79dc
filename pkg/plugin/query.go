package plugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/pipeline"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// queryData answers every query of the request, each with its frames or its
// own error (the forwarded identity redacted from it where the query did not
// send it): a query that fails does not fail the others. Frames in pieces
// stay in pieces for the wire codec. reply (middleware.go) calls it through
// the query chain.
func (s *Service) queryData(ctx context.Context, preq *pluginv2.QueryDataRequest, req *backend.QueryDataRequest) *reply {
	pre := precheck(preq.Queries)
	resp := &pluginv2.QueryDataResponse{Responses: make(map[string]*pluginv2.DataResponse, len(req.Queries))}
	// The response's frames hold their budget until gRPC has written them
	// out (reply.written, see answer).
	acct := s.pipeline.Account(budgetShare(ctx, req.PluginContext))
	written := newAfterWrite(acct.Close)
	dec := grafanaDecoder(req.PluginContext)
	var (
		mu     sync.Mutex
		pieces piecedFrames // the frames kept in pieces (pieces.go)
	)
	s.eachQuery(ctx, req.PluginContext, req.Queries, pre, func(q backend.DataQuery, inst *Instance, err error) {
		ctx, end := s.traceQuery(ctx, q)
		defer func() { end(err) }()
		dr := &pluginv2.DataResponse{Format: preq.Format}
		var frames frameList
		if err == nil {
			dr.Format = replyFormat(inst, preq.Format)
			err = s.runQuery(ctx, inst, q, backend.DataFrameFormat(dr.Format), dec, acct, nil, frames.add)
		}
		if err != nil {
			frames.budget.Release() // the frames, if any, are dropped
			frames.rest.release()
			status, src, msg := classify(err)
			dr.Error, dr.Status, dr.ErrorSource = redactIdentitySent(ctx, msg, string(q.JSON)), int32(status), string(src)
		} else {
			dr.Frames, dr.Status = frames.list, int32(backend.StatusOK)
		}
		mu.Lock()
		resp.Responses[q.RefID] = dr
		if err == nil && frames.rest != nil {
			if pieces == nil {
				pieces = piecedFrames{}
			}
			maps.Copy(pieces, frames.rest)
		}
		mu.Unlock()
	})
	return &reply{msg: resp, rest: newTails(pieces), written: written}
}

// replyFormat is the format a unary reply to a query of inst is written in:
// the data source's replyFormat, or the one Grafana asked for
// (settings.ReplyRequested). A chunked reply is always in the one asked
// for.
func replyFormat(inst *Instance, requested pluginv2.DataFrameFormat) pluginv2.DataFrameFormat {
	switch inst.settings.ReplyFormat {
	case settings.ReplyArrow:
		return pluginv2.DataFrameFormat_ARROW
	case settings.ReplyJSON:
		return pluginv2.DataFrameFormat_JSON
	}
	return requested
}

// frameList keeps encoded frames in the order the source produced them:
// each frame's bytes, or its first piece, with the pieces after it in
// rest, and the budget they hold (given back with the request's account
// once the reply is written, or at once when the query fails).
type frameList struct {
	mu     sync.Mutex
	list   [][]byte
	rest   piecedFrames
	budget pipeline.Held
}

func (l *frameList) add(i int, f pipeline.Frame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.budget.Join(&f.Budget)
	if i >= len(l.list) {
		l.list = append(l.list, make([][]byte, i+1-len(l.list))...)
	}
	l.list[i] = f.B
	if len(f.Rest) > 0 {
		if l.rest == nil {
			l.rest = piecedFrames{}
		}
		l.rest[&f.B[0]] = piecedFrame{rest: f.Rest, lent: f.Lent}
	} else {
		f.Lent.Release() // nothing references it
	}
	return nil
}

// queryChunkedData streams every frame as its own chunk, with out, as soon
// as it and the query's frames before it are encoded (a client places them
// in the order they come); a query that fails sends one chunk with its
// error, redacted as queryData's, after its frames.
// Frames in pieces stay in pieces for the wire codec. chunks
// (middleware.go) calls it through the query chain.
//
// The encode workers queue the chunks (outbox) and this request's own
// goroutine sends them, one at a time, in order (see outbox and MaxUnsent).
// A failed send ends the request's queries. Each frame holds
// its budget until the transport has written it out, or until the request
// ends (its account closes).
func (s *Service) queryChunkedData(ctx context.Context, preq *pluginv2.QueryChunkedDataRequest, req *backend.QueryChunkedDataRequest, out func(*chunk) error) error {
	pre := precheck(preq.Queries)
	acct := s.pipeline.Account(budgetShare(ctx, req.PluginContext))
	defer acct.Close()
	dec := grafanaDecoder(req.PluginContext)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	box := newOutbox(func(q queued) {
		q.c.rest.take().release()  // unless the codec took them to write
		runAfterWrite(q.c.written) // likewise: it runs it once they are written out
	}, func(msg string, args ...any) { logError(ctx, msg, args...) })
	sent := make(chan error, 1)
	go func() { sent <- box.run(out, cancel) }()
	defer box.close() // the sending goroutine ends even if eachQuery panics
	s.eachQuery(ctx, req.PluginContext, req.Queries, pre, func(q backend.DataQuery, inst *Instance, err error) {
		ctx, end := s.traceQuery(ctx, q)
		defer func() { end(err) }()
		if err == nil {
			// Grafana places a query's frames in the order their chunks
			// arrive: they are put in the outbox in the order of their
			// index, whichever encode worker finishes first.
			seq := &inOrder{put: box.putOwed}
			err = s.runQuery(ctx, inst, q, req.Format, dec, acct, box.room, func(i int, f pipeline.Frame) error {
				c := &chunk{msg: &pluginv2.QueryChunkedDataResponse{
					RefId: q.RefID, FrameId: strconv.Itoa(i), Frame: f.B,
					Status: int32(backend.StatusOK), Format: preq.Format,
				}}
				budget := f.Budget.Move()
				if len(f.Rest) == 0 {
					f.Lent.Release() // nothing references it
				} else {
					c.rest = newTails(piecedFrames{&f.B[0]: {rest: f.Rest, lent: f.Lent}})
				}
				// The frame holds its budget until gRPC has written it out
				// (afterWrite): a send returns once the transport has it.
				// Meanwhile the request is not blocked on itself (Drain).
				held := budget.Bytes()
				c.written = newAfterWrite(budget.Drain())
				box.owe(held) // waiting to be sent, if only for an earlier frame (inOrder)
				seq.add(i, queued{c: c, held: held})
				return nil
			})
			seq.flush() // the frames after one that failed, before the error
		}
		if err != nil {
			status, src, msg := classify(err)
			box.put(queued{c: &chunk{msg: &pluginv2.QueryChunkedDataResponse{
				RefId: q.RefID, Error: redactIdentitySent(ctx, msg, string(q.JSON)), Status: int32(status), ErrorSource: string(src), Format: preq.Format,
			}}})
		}
	})
	box.close()
	return <-sent
}

// inOrder puts a query's chunks in the order of their frames' index (from
// 0), those emitted ahead of an earlier one waiting for it. The pipeline
// hands frames to the encode workers in that order (a frame in parts takes
// its index when closed), so those waiting wait for a frame on an encode
// worker, never for the query's source; they count as unsent (outbox.owe),
// so that the source waits for room while a slow frame holds them back.
type inOrder struct {
	mu      sync.Mutex
	next    int
	pending map[int]queued
	put     func(queued)
}

func (o *inOrder) add(i int, q queued) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if i != o.next {
		if o.pending == nil {
			o.pending = map[int]queued{}
		}
		o.pending[i] = q
		return
	}
	for ok := true; ok; q, ok = o.pending[o.next] {
		delete(o.pending, o.next)
		o.put(q)
		o.next++
	}
}

// flush puts the chunks still waiting, in order: after a frame that never
// came (its query failed), once the query's frames are all emitted.
func (o *inOrder) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, i := range slices.Sorted(maps.Keys(o.pending)) {
		o.put(o.pending[i])
	}
	o.pending = nil
}

// budgetShare names the share of the memory budget a request draws on
// (pipeline.Budget): its tenant's (as Grafana sends it) data source.
func budgetShare(ctx context.Context, pc backend.PluginContext) string {
	var tenant, ds string
	if v := metadata.ValueFromIncomingContext(ctx, tenantMetadataKey); len(v) > 0 {
		tenant = v[0]
	}
	if pc.DataSourceInstanceSettings != nil {
		ds = pc.DataSourceInstanceSettings.UID
	}
	return tenant + "/" + strconv.FormatInt(pc.OrgID, 10) + "/" + ds
}

// MaxQueryJSON is the most bytes of JSON a query may have: a bigger query is
// refused before it is parsed.
const MaxQueryJSON = 1 << 20

// Time ranges must fit int64 nanoseconds since 1970 (1677-09-21 to
// 2262-04-11), which the SDK's conversion from epoch milliseconds wraps
// silently; these bound the milliseconds.
const (
	minEpochMS = math.MinInt64 / int64(time.Millisecond)
	maxEpochMS = math.MaxInt64 / int64(time.Millisecond)
)

// errDuplicate marks a query whose refId an earlier query of the request
// has: it is not run, and the first one answers for both (precheck).
var errDuplicate = errors.New("plugin: duplicate refId")

// precheck refuses, before anything parses them, queries whose JSON is too
// big or whose time range does not fit nanoseconds, and queries that share
// a refId (one answer per refId: the first of them answers with the error,
// the others are errDuplicate). It returns one error per query (nil for a
// good one), or nil when all are good.
func precheck(queries []*pluginv2.DataQuery) []error {
	var errs []error
	seen := make(map[string]int, len(queries)) // refId: its first query
	for i, q := range queries {
		var err error
		first, dup := seen[q.GetRefId()]
		if !dup {
			seen[q.GetRefId()] = i
		}
		switch tr := q.GetTimeRange(); {
		case dup:
			if errs == nil {
				errs = make([]error, len(queries))
			}
			errs[first] = source.BadQuery("refId %s is the refId of more than one query of this request; give each query its own", source.Quote(q.GetRefId()))
			err = errDuplicate
		case len(q.GetJson()) > MaxQueryJSON:
			err = source.BadQuery("the query JSON is %d bytes, more than the %d bytes (1 MiB) a query may have", len(q.GetJson()), MaxQueryJSON)
		case tr != nil:
			err = rangeError(tr.FromEpochMS, tr.ToEpochMS)
		}
		if err != nil {
			if errs == nil {
				errs = make([]error, len(queries))
			}
			errs[i] = err
		}
	}
	return errs
}

// rangeError refuses a time range, in epoch milliseconds, that does not fit
// nanoseconds; nil for one that does.
func rangeError(from, to int64) error {
	if outOfRange(from) || outOfRange(to) {
		return source.BadQuery("the time range from %s to %s is outside what Quiver can represent (%s to %s: nanoseconds since 1970 in 64 bits)",
			time.UnixMilli(from).UTC().Format(time.RFC3339), time.UnixMilli(to).UTC().Format(time.RFC3339),
			time.UnixMilli(minEpochMS+1).UTC().Format(time.DateOnly), time.UnixMilli(maxEpochMS).UTC().Format(time.DateOnly))
	}
	return nil
}

func outOfRange(ms int64) bool { return ms <= minEpochMS || ms > maxEpochMS }

// parallelQueries bounds how many queries of one request run at once.
const parallelQueries = 4

// eachQuery runs fn for every query, at most parallelQueries at once, each
// in its own goroutine with a recover, after resolving the instance once
// (held until they have all ended).
// pre holds each query's precheck error, or is nil.
func (s *Service) eachQuery(ctx context.Context, pc backend.PluginContext, queries []backend.DataQuery, pre []error, fn func(backend.DataQuery, *Instance, error)) {
	inst, err := s.held(ctx, pc)
	if err == nil {
		defer inst.let() // after every query below has ended
		if inst.invalid != nil {
			err = settingsError{inst.invalid}
		}
	}
	sem := make(chan struct{}, parallelQueries)
	var wg sync.WaitGroup
	for i, q := range queries {
		if pre != nil && pre[i] == errDuplicate { //nolint:errorlint // the sentinel itself
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		err := err
		if err == nil && pre != nil {
			err = pre[i]
		}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if p := recover(); p != nil {
					logError(ctx, "panic in query", "refId", q.RefID, "panic", p, "stack", string(debug.Stack()))
					fn(q, inst, fmt.Errorf("internal error in Quiver: %v", p))
				}
			}()
			fn(q, inst, err)
		}()
	}
	wg.Wait()
}

// runQuery runs one query of the request on the pipeline, with the
// instance's source, limits and encoders (codec auto pricing Grafana's
// decode by dec, the requesting Grafana's decoder), calling emit with each
// encoded frame (pipeline.Pipeline.Run) once room, when set, says there is
// room for it (pipeline.Query.Room).
func (s *Service) runQuery(ctx context.Context, inst *Instance, q backend.DataQuery, format backend.DataFrameFormat, dec *codec.Decoder, acct *pipeline.Account, room func(context.Context) error, emit func(int, pipeline.Frame) error) error {
	return s.pipeline.Run(ctx, pipeline.Query{
		Source: inst.source,
		Query: source.Query{
			RefID: q.RefID, JSON: q.JSON,
			From: q.TimeRange.From, To: q.TimeRange.To,
			Interval: q.Interval, MaxDataPoints: q.MaxDataPoints,
			Limits: source.Limits{MaxSeries: int(inst.settings.MaxSeries), MaxPoints: inst.settings.MaxPoints,
				MaxBytes: source.Mul(inst.settings.MaxPoints, source.PointBytes)},
			Scope: inst.scope(acct),
		},
		JSON:     format == backend.DataFrameFormat_JSON,
		Encoders: inst.encoders,
		Decoder:  dec,
		Observe:  inst.metrics.observe,
		Room:     room,
		Streamed: room != nil, // a caller with room to wait for sends each frame as it comes
	}, acct, emit)
}
