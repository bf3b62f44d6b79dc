// This file is over 400 lines: it is the whole query path of the Data
// service (entry points, per-query sink, encode workers), whose ordering and
// release rules are read together.

package plugin

import (
	"context"
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// queryData answers every query of the request, each with its frames or its
// own error: a query that fails does not fail the others. Frames in pieces
// stay in pieces for the wire codec when pieced is set, and are joined
// otherwise. answer (middleware.go) calls it through the query chain.
func (s *Service) queryData(ctx context.Context, preq *pluginv2.QueryDataRequest, req *backend.QueryDataRequest, pieced bool) *reply {
	pre := precheck(preq.Queries)
	resp := &pluginv2.QueryDataResponse{Responses: make(map[string]*pluginv2.DataResponse, len(req.Queries))}
	// The response's frames hold their budget until the response is
	// returned (gRPC then marshals and drops it).
	acct := s.budget.account()
	defer acct.close()
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
			err = s.runQuery(ctx, inst, q, req.Format, acct, frames.add)
			dr.Frames = frames.list
			if err != nil {
				acct.release(frames.bytes) // dropped below
				frames.rest.release()
			}
		}
		if err != nil {
			status, src, msg := classify(err)
			dr.Frames, dr.Error, dr.Status, dr.ErrorSource = nil, msg, int32(status), string(src)
		} else {
			dr.Status = int32(backend.StatusOK)
		}
		mu.Lock()
		resp.Responses[q.RefID] = dr
		if dr.Frames != nil && frames.rest != nil {
			if pieces == nil {
				pieces = piecedFrames{}
			}
			maps.Copy(pieces, frames.rest)
		}
		mu.Unlock()
	})
	if len(pieces) > 0 && !pieced {
		acct.force(joinPieced(resp, pieces)) // released with the rest when the request is answered
		pieces = nil
	}
	return &reply{msg: resp, rest: newTails(pieces)}
}

// heldBytes is the budget an encoded frame holds: the memory it keeps
// alive, its slice's spare capacity included (the encoder writes frames
// into buffers of exactly their size, the JSON path into grown ones).
func heldBytes(b []byte) int64 { return int64(cap(b)) }

// frameList keeps encoded frames in the order the source produced them:
// each frame's bytes, or its first piece, with the pieces after it in
// rest.
type frameList struct {
	mu    sync.Mutex
	list  [][]byte
	rest  piecedFrames
	bytes int64
}

func (l *frameList) add(i int, f encodedFrame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bytes += f.held()
	if i >= len(l.list) {
		l.list = append(l.list, make([][]byte, i+1-len(l.list))...)
	}
	l.list[i] = f.b
	if len(f.rest) > 0 {
		if l.rest == nil {
			l.rest = piecedFrames{}
		}
		l.rest[&f.b[0]] = piecedFrame{rest: f.rest, lent: f.lent}
	} else {
		f.lent.release() // nothing references it
	}
	return nil
}

// queryChunkedData streams every frame as its own chunk, with out, as soon
// as it is encoded; a query that fails sends one chunk with its error.
// Frames in pieces stay in pieces for the wire codec when pieced is set,
// and are joined otherwise. streamChunks (middleware.go) calls it through
// the query chain.
func (s *Service) queryChunkedData(ctx context.Context, preq *pluginv2.QueryChunkedDataRequest, req *backend.QueryChunkedDataRequest, out func(*chunk) error, pieced bool) error {
	pre := precheck(preq.Queries)
	acct := s.budget.account()
	defer acct.close()
	var (
		mu      sync.Mutex // a stream's Send is not safe for concurrent use
		sendErr error
	)
	send := func(c *chunk) error {
		mu.Lock()
		defer mu.Unlock()
		if sendErr == nil {
			sendErr = out(c)
		}
		c.rest.take().release() // unless the codec took them to write
		return sendErr
	}
	s.eachQuery(ctx, req.PluginContext, req.Queries, pre, func(q backend.DataQuery, inst *Instance, err error) {
		ctx, end := s.traceQuery(ctx, q)
		defer func() { end(err) }()
		if err == nil {
			err = s.runQuery(ctx, inst, q, req.Format, acct, func(i int, f encodedFrame) error {
				defer acct.release(f.held()) // sent (or never will be)
				c := &chunk{msg: &pluginv2.QueryChunkedDataResponse{
					RefId: q.RefID, FrameId: strconv.Itoa(i), Frame: f.b,
					Status: int32(backend.StatusOK), Format: preq.Format,
				}}
				switch {
				case len(f.rest) == 0:
					f.lent.release() // nothing references it
				case pieced:
					c.rest = newTails(piecedFrames{&f.b[0]: {rest: f.rest, lent: f.lent}})
				default:
					c.msg.Frame = f.joined()
					f.lent.release()
					acct.force(heldBytes(c.msg.Frame))
					defer acct.release(heldBytes(c.msg.Frame))
				}
				return send(c)
			})
		}
		if err != nil {
			status, src, msg := classify(err)
			_ = send(&chunk{msg: &pluginv2.QueryChunkedDataResponse{
				RefId: q.RefID, Error: msg, Status: int32(status), ErrorSource: string(src), Format: preq.Format,
			}})
		}
	})
	mu.Lock()
	defer mu.Unlock()
	return sendErr
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

// precheck refuses, before anything parses them, queries whose JSON is too
// big or whose time range does not fit nanoseconds. It returns one error per
// query (nil for a good one), or nil when all are good.
func precheck(queries []*pluginv2.DataQuery) []error {
	var errs []error
	for i, q := range queries {
		var err error
		switch tr := q.GetTimeRange(); {
		case len(q.GetJson()) > MaxQueryJSON:
			err = source.BadQuery("the query JSON is %d bytes, more than the %d bytes (1 MiB) a query may have", len(q.GetJson()), MaxQueryJSON)
		case tr != nil && (outOfRange(tr.FromEpochMS) || outOfRange(tr.ToEpochMS)):
			err = source.BadQuery("the time range from %s to %s is outside what Quiver can represent (%s to %s: nanoseconds since 1970 in 64 bits)",
				time.UnixMilli(tr.FromEpochMS).UTC().Format(time.RFC3339), time.UnixMilli(tr.ToEpochMS).UTC().Format(time.RFC3339),
				time.UnixMilli(minEpochMS+1).UTC().Format(time.DateOnly), time.UnixMilli(maxEpochMS).UTC().Format(time.DateOnly))
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

func outOfRange(ms int64) bool { return ms <= minEpochMS || ms > maxEpochMS }

// eachQuery runs fn for every query, at most s.queries at once, each in its
// own goroutine with a recover, after resolving the instance once. pre holds
// each query's precheck error, or is nil.
func (s *Service) eachQuery(ctx context.Context, pc backend.PluginContext, queries []backend.DataQuery, pre []error, fn func(backend.DataQuery, *Instance, error)) {
	inst, err := s.instance(ctx, pc)
	if err == nil && inst.invalid != nil {
		err = settingsError{inst.invalid}
	}
	sem := make(chan struct{}, s.queries)
	var wg sync.WaitGroup
	for i, q := range queries {
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
					backend.Logger.Error("panic in query", "refId", q.RefID, "panic", p, "stack", string(debug.Stack()))
					fn(q, inst, fmt.Errorf("internal error in Quiver: %v", p))
				}
			}()
			fn(q, inst, err)
		}()
	}
	wg.Wait()
}

// runQuery asks the instance's source for the query's frames and encodes
// them on the shared encode workers, calling emit with each frame's index
// (in the order the source produced them) and the frame. The first frame is
// encoded last: it carries the query's encoding stats.
//
// Every frame holds budget from when the source hands it over until emit
// has it (emit's caller releases what it is given when it is done with it).
func (s *Service) runQuery(ctx context.Context, inst *Instance, q backend.DataQuery, format backend.DataFrameFormat, acct *account, emit func(int, encodedFrame) error) error {
	sq := source.Query{
		RefID: q.RefID, JSON: q.JSON,
		From: q.TimeRange.From, To: q.TimeRange.To,
		Interval: q.Interval, MaxDataPoints: q.MaxDataPoints,
		Limits: source.Limits{MaxSeries: int(inst.settings.MaxSeries), MaxPoints: inst.settings.MaxPoints, MaxBytes: inst.settings.MaxBytes()},
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	k := &sink{ctx: ctx, cancel: cancel, svc: s, inst: inst, acct: acct, refID: q.RefID, limits: sq.Limits, json: format == backend.DataFrameFormat_JSON, emit: emit}
	defer k.releaseCredit()
	var to source.Sink = k
	if !k.json {
		to = lendingSink{k} // the JSON format copies every record: it lends none
	}
	err := runSource(ctx, inst.source, sq, to)
	k.wg.Wait() // also after a failure: no worker touches the query afterwards
	if kerr := k.failure(); kerr != nil {
		err = kerr // the sink's first error caused the source's
	}
	if n := k.abortOpen(); n > 0 && err == nil {
		err = fmt.Errorf("internal error in Quiver: the source did not close %d frame(s) it handed over in parts", n)
	}
	if err != nil {
		k.drop(k.first)
		if k.firstParts != nil {
			k.firstParts.drop()
		}
		return err
	}
	return k.finish()
}

// runSource runs the source, turning a panic into the query's error.
func runSource(ctx context.Context, src source.Source, q source.Query, sink source.Sink) (err error) {
	defer func() {
		if p := recover(); p != nil {
			backend.Logger.Error("panic in a source", "refId", q.RefID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error in Quiver: %v", p)
		}
	}()
	return src.Query(ctx, q, sink)
}

// job is one frame to encode: an SDK frame or an Arrow record, and the
// budget bytes it holds.
type job struct {
	frame *data.Frame
	rec   arrow.RecordBatch
	lent  bool // rec's larger buffers are referenced, not copied (LendRecord)
	held  int64
}

func (j job) bytes() int64 {
	if j.frame != nil {
		return frameBytes(j.frame)
	}
	return recordBytes(j.rec)
}

func (j job) release() {
	if j.rec != nil {
		j.rec.Release()
	}
}

// sink receives a query's frames, checks the limits and encodes each frame
// on a shared encode worker as soon as one is free: the source waits while
// all are busy, so that neither goroutines nor frames pile up.
type sink struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	svc    *Service
	inst   *Instance
	acct   *account
	refID  string
	limits source.Limits
	json   bool
	emit   func(int, encodedFrame) error

	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	frames  int
	rows    int64
	first   job           // held back until the others are encoded
	summary frame.Summary // what encoding the others did
	// The frames in parts (parts.go): every one opened, and the first
	// frame when it is one, held back once closed as first is.
	writers    []*partWriter
	firstParts *partWriter
	// credit is budget the source reserved (Reserve) that no frame has
	// drawn yet; reserved says it reserved, so that frames beyond the
	// estimate take the rest without waiting (a query holding a
	// reservation must not wait for more: see budget).
	credit   int64
	reserved bool
}

var _ source.Reserver = (*sink)(nil)

// Reserve takes n bytes of the memory budget for the frames the source is
// about to produce, waiting for them.
func (k *sink) Reserve(n int64) error {
	if err := k.acct.acquire(k.ctx, n); err != nil {
		return err
	}
	k.mu.Lock()
	k.credit += n
	k.reserved = true
	k.mu.Unlock()
	return nil
}

// hold takes a frame's bytes from the credit, and the rest from the budget.
func (k *sink) hold(n int64) error {
	k.mu.Lock()
	from := min(k.credit, n)
	k.credit -= from
	reserved := k.reserved
	k.mu.Unlock()
	if rest := n - from; rest > 0 {
		if reserved {
			k.acct.force(rest)
			return nil
		}
		return k.acct.acquire(k.ctx, rest)
	}
	return nil
}

func (k *sink) releaseCredit() {
	k.mu.Lock()
	n := k.credit
	k.credit = 0
	k.mu.Unlock()
	k.acct.release(n)
}

// drop releases a job that will not be encoded, and its budget.
func (k *sink) drop(j job) {
	j.release()
	k.acct.release(j.held)
}

var _ source.Sink = (*sink)(nil)

func (k *sink) failure() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

func (k *sink) fail(err error) {
	k.mu.Lock()
	if k.err == nil {
		k.err = err
	}
	k.mu.Unlock()
	k.cancel(err)
}

// admit counts frames (0 or 1) of rows rows against the limits and returns
// the index of the last frame counted.
func (k *sink) admit(frames int, rows int64) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return 0, k.err
	}
	if k.limits.MaxSeries > 0 && k.frames+frames > k.limits.MaxSeries {
		k.err = source.LimitExceeded("the query returned more than %d series, this data source's limit (setting maxSeries)", k.limits.MaxSeries)
		return 0, k.err
	}
	if k.limits.MaxPoints > 0 && k.rows+rows > k.limits.MaxPoints {
		k.err = source.LimitExceeded("the query returned more than %d points, this data source's limit (setting maxPoints)", k.limits.MaxPoints)
		return 0, k.err
	}
	k.frames += frames
	k.rows += rows
	return k.frames - 1, nil
}

func (k *sink) Frame(f *data.Frame) error {
	if f.RefID == "" {
		f.RefID = k.refID
	}
	return k.submit(int64(f.Rows()), job{frame: f})
}

func (k *sink) Record(rec arrow.RecordBatch) error {
	return k.submit(rec.NumRows(), job{rec: rec})
}

// lendingSink is the sink of a query in the Arrow format: it takes lent
// records (source.RecordLender) besides the sink's other capabilities.
type lendingSink struct{ *sink }

var _ source.RecordLender = lendingSink{}

// LendRecord is Record referencing rec's larger buffers in the frame
// instead of copying them.
func (k lendingSink) LendRecord(rec arrow.RecordBatch) error {
	return k.submit(rec.NumRows(), job{rec: rec, lent: true})
}

// submit admits a frame and, but for the first, hands it to a free encode
// worker (waiting for one), which encodes and emits it.
func (k *sink) submit(rows int64, j job) error {
	idx, err := k.admit(1, rows)
	if err != nil {
		j.release()
		return err
	}
	n := j.bytes()
	if err := k.hold(n); err != nil {
		j.release()
		k.fail(err)
		return err
	}
	j.held = n
	if idx == 0 {
		k.first = j
		return nil
	}
	return k.dispatch(func() {
		if err := k.encodeAndEmit(idx, j, nil); err != nil {
			k.fail(err)
		}
	}, func() { k.drop(j) })
}

// dispatch hands work to a free encode worker (waiting for one), counted in
// k.wg; when the query is cancelled first, it runs dropped instead and
// returns the cause.
func (k *sink) dispatch(work, dropped func()) error {
	// A cancelled request stops at its next frame: a select with an idle
	// worker ready as well would pick either case at random.
	if k.ctx.Err() != nil {
		dropped()
		return context.Cause(k.ctx)
	}
	k.wg.Add(1)
	select {
	case k.svc.work <- func() { defer k.wg.Done(); work() }:
		return nil
	case <-k.ctx.Done():
		k.wg.Done()
		dropped()
		return context.Cause(k.ctx)
	}
}

// finish encodes and emits the held-back first frame (whole or in parts)
// with the query's stats, on an encode worker like the others.
func (k *sink) finish() error {
	var work func() error
	var dropped func()
	switch {
	case k.firstParts != nil:
		w := k.firstParts
		work, dropped = func() error { return w.finishAndEmit(&k.summary) }, w.drop
	case k.first.frame != nil || k.first.rec != nil:
		work = func() error { return k.encodeAndEmit(0, k.first, &k.summary) }
		dropped = func() { k.drop(k.first) }
	default:
		return nil // the query returned no frame
	}
	done := make(chan error, 1)
	if err := k.dispatch(func() { done <- work() }, dropped); err != nil {
		return err
	}
	return <-done
}

// encodeAndEmit encodes j (with the query's stats when summary is set)
// into memory of exactly the frame's size, or, for a lent record, into
// pieces that reference its larger buffers, hands that to emit, and
// releases j; a lent record the pieces reference goes with the frame
// instead (encodedFrame.lent), and emit's caller releases it when nothing
// reads them any more. The budget j held becomes the encoded frame's:
// emit's caller releases that.
// A panic fails the query, not the process.
func (k *sink) encodeAndEmit(idx int, j job, summary *frame.Summary) (err error) {
	var f encodedFrame
	defer func() {
		if f.lent == nil { // else the frame's taker releases the record (lentFrame)
			j.release()
		}
	}()
	held := j.held
	defer func() { k.acct.release(held) }() // what the frame no longer holds
	defer k.recoverEncode(&err)
	if k.json {
		f.b, err = k.marshalJSON(j)
	} else {
		f, err = k.encode(j, summary)
	}
	if err != nil {
		return fmt.Errorf("encoding frame %d: %w", idx, err)
	}
	held = k.takeOver(f.held(), held)
	return k.emit(idx, f)
}

// takeOver gives the budget held for a frame to its encoded memory, n
// bytes, and returns what of held the encoded frame does not need (for the
// caller to release). An encoded frame above its estimate takes the
// difference without waiting.
func (k *sink) takeOver(n, held int64) int64 {
	if n > held {
		k.acct.force(n - held)
		return 0
	}
	return held - n
}

// recoverEncode, deferred, turns a panic while encoding a frame into *err
// and logs it: it fails the query, not the process.
func (k *sink) recoverEncode(err *error) {
	if p := recover(); p != nil {
		backend.Logger.Error("panic encoding a frame", "refId", k.refID, "panic", p, "stack", string(debug.Stack()))
		*err = fmt.Errorf("internal error in Quiver while encoding a frame: %v", p)
	}
}

// encode encodes j into a new buffer of exactly its size (Append to nil),
// written once: no copy of the frame is made to hand it over; a lent
// record, into pieces that reference its larger buffers (AppendLent).
func (k *sink) encode(j job, summary *frame.Summary) (encodedFrame, error) {
	e := k.inst.encoder()
	defer k.inst.putEncoder(e)
	start := time.Now()
	var f encodedFrame
	var st arrowipc.BodyStats
	var err error
	if j.lent {
		var pieces [][]byte
		if pieces, st, err = e.AppendLent(j.rec, summary); err == nil {
			f = encodedFrame{b: pieces[0], rest: pieces[1:]}
			if len(f.rest) > 0 { // some piece references the record's memory
				f.lent, f.spare = &lentFrame{rec: j.rec}, spareOf(j.rec)
			}
		}
	} else {
		f.b, st, err = e.Append(nil, frame.Input{Frame: j.frame, Record: j.rec}, summary)
	}
	if err != nil {
		return encodedFrame{}, err
	}
	k.encoded(st, f.size(), time.Since(start), summary)
	return f, nil
}

// encoded records what encoding one frame of size bytes did: in the
// metrics, and, but for the frame that carries them (summary set), in the
// query's stats.
func (k *sink) encoded(st arrowipc.BodyStats, size int, took time.Duration, summary *frame.Summary) {
	k.inst.metrics.observe(st, size, took)
	if summary == nil {
		k.mu.Lock()
		k.summary.Add(st, took)
		k.mu.Unlock()
	}
}

func (k *sink) marshalJSON(j job) ([]byte, error) {
	if j.frame != nil {
		return j.frame.MarshalJSON()
	}
	f, err := data.FromArrowRecord(j.rec)
	if err != nil {
		return nil, err
	}
	return f.MarshalJSON()
}
