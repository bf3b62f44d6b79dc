package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source"
)

// job is one frame to encode: an SDK frame, an Arrow record or a closed
// frame in parts (parts.go), and the budget it holds.
type job struct {
	frame *data.Frame
	rec   arrow.RecordBatch
	lent  bool // rec's larger buffers are referenced, not copied (LendRecord)
	parts *partWriter
	held  Held
}

func (j job) bytes() int64 {
	if j.frame != nil {
		return FrameBytes(j.frame)
	}
	return RecordBytes(j.rec)
}

// release releases j's frame, its record or its encoded parts and the lent
// parts they reference, and the budget it holds.
func (j job) release() {
	if j.rec != nil {
		j.rec.Release()
	}
	if j.parts != nil {
		j.parts.drop()
	}
	j.held.Release()
}

// sink receives a query's frames, checks the limits and encodes each frame
// on a shared encode worker as soon as one is free: the source waits while
// all are busy, so that neither goroutines nor frames pile up.
type sink struct {
	cancel context.CancelCauseFunc
	p      *Pipeline
	log    func(msg string, args ...any) // p's Log, with the query's context
	q      Query
	acct   *Account
	emit   func(int, Frame) error

	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	frames  int // counted against maxSeries, the frames in parts open included
	indexed int // frames given their index (admit, index)
	rows    int64
	summary frame.Summary // what encoding the others did
	// first is the first frame (whole, or in parts once closed), held back
	// until the others are encoded.
	first   *job
	writers []*partWriter // the frames in parts (parts.go), every one opened
	// credit is budget the source reserved (Reserve) that no frame has
	// drawn yet. It has an account once the source reserved, even if
	// nothing, so that frames beyond the estimate take the rest without
	// waiting (a query holding a reservation must not wait for more: see
	// budget).
	credit Held
}

var (
	_ source.Reserver   = (*sink)(nil)
	_ source.Unreserver = (*sink)(nil)
)

// Reserve takes n bytes of the memory budget for the frames the source is
// about to produce, waiting for them.
func (k *sink) Reserve(ctx context.Context, n int64) error {
	h, err := k.acct.Hold(ctx, n)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.credit.Join(&h) // h's account, whatever it holds
	k.mu.Unlock()
	return nil
}

// hold holds n bytes for a frame: from the credit, and the rest from the
// budget, without waiting once the source has reserved.
func (k *sink) hold(ctx context.Context, n int64) (Held, error) {
	k.mu.Lock()
	h := k.credit.Split(n)
	k.mu.Unlock()
	if h.a == nil { // not reserved: h is empty
		return k.acct.Hold(ctx, n)
	}
	h.Fit(n) // n > 0 (a frame's estimate), and h holds at most n
	return h, nil
}

// Unreserve gives back the credit (source.Unreserver).
func (k *sink) Unreserve() {
	k.mu.Lock()
	c := k.credit.Move()
	k.mu.Unlock()
	c.Release()
}

func (k *sink) fail(err error) {
	k.mu.Lock()
	if k.err == nil {
		k.err = err
	}
	k.mu.Unlock()
	k.cancel(err)
}

// admit counts frames (0 or 1) of rows rows against the limits and, when
// indexed, gives the frame counted its index. A frame in parts is counted
// when opened but takes its index when closed (index): the frames handed
// over while it is open come before it, so that a caller sending the
// frames in their order (Query.Streamed) never holds them back for a
// frame whose parts are still to come, which may wait for the budget
// those frames hold.
func (k *sink) admit(frames int, rows int64, indexed bool) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch lim := k.q.Query.Limits; {
	case k.err != nil:
	case lim.MaxSeries > 0 && k.frames+frames > lim.MaxSeries:
		k.err = lim.Series("series").Exceeded("the query returned", "")
	case lim.MaxPoints > 0 && k.rows+rows > lim.MaxPoints:
		k.err = lim.Points("points").Exceeded("the query returned", "")
	}
	if k.err != nil {
		return 0, k.err
	}
	k.frames += frames
	k.rows += rows
	if !indexed {
		return 0, nil
	}
	return k.index(), nil
}

// index returns the next frame index; called with k.mu held.
func (k *sink) index() int {
	k.indexed++
	return k.indexed - 1
}

func (k *sink) Frame(ctx context.Context, f *data.Frame) error {
	if f.RefID == "" {
		f.RefID = k.q.Query.RefID
	}
	return k.submit(ctx, int64(f.Rows()), job{frame: f})
}

func (k *sink) Record(ctx context.Context, rec arrow.RecordBatch) error {
	return k.submit(ctx, rec.NumRows(), job{rec: rec})
}

// lendingSink is the sink of a query in the Arrow format: it takes lent
// records (source.RecordLender) besides the sink's other capabilities.
type lendingSink struct{ *sink }

var _ source.RecordLender = lendingSink{}

// LendRecord is Record referencing rec's larger buffers in the frame
// instead of copying them.
func (k lendingSink) LendRecord(ctx context.Context, rec arrow.RecordBatch) error {
	return k.submit(ctx, rec.NumRows(), job{rec: rec, lent: true})
}

// submit admits a frame and, but for the first, hands it to a free encode
// worker (waiting for one), which encodes and emits it.
func (k *sink) submit(ctx context.Context, rows int64, j job) error {
	idx, err := k.admit(1, rows, true)
	if err == nil && (idx > 0 || k.q.Streamed) {
		err = k.room(ctx)
	}
	if err != nil {
		j.release()
		return err
	}
	held, err := k.hold(ctx, j.bytes())
	if err != nil {
		j.release()
		k.fail(err)
		return err
	}
	j.held = held
	return k.queue(ctx, idx, j)
}

// queue hands j, the frame of index idx, to a free encode worker (waiting
// for one), which encodes and emits it; the first frame is held back
// instead (finish), but for a Streamed query.
func (k *sink) queue(ctx context.Context, idx int, j job) error {
	if idx == 0 && !k.q.Streamed {
		k.first = new(j)
		return nil
	}
	return k.dispatch(ctx, func() {
		if err := k.encodeAndEmit(idx, j, nil); err != nil {
			k.fail(err)
		}
	}, func() { j.release() })
}

// room waits until the query's caller has room for another encoded frame
// (Query.Room); an error fails the query.
func (k *sink) room(ctx context.Context) error {
	if k.q.Room == nil {
		return nil
	}
	err := k.q.Room(ctx)
	if err != nil {
		k.fail(err)
	}
	return err
}

// dispatch hands work to a free encode worker (waiting for one), counted in
// k.wg; when the query is cancelled first, it runs dropped instead and
// returns the cause.
func (k *sink) dispatch(ctx context.Context, work, dropped func()) error {
	// A cancelled request stops at its next frame: a select with an idle
	// worker ready as well would pick either case at random.
	if ctx.Err() != nil {
		dropped()
		return context.Cause(ctx)
	}
	k.wg.Add(1)
	select {
	case k.p.work <- func() { defer k.wg.Done(); work() }:
		return nil
	case <-ctx.Done():
		k.wg.Done()
		dropped()
		return context.Cause(ctx)
	}
}

// finish encodes and emits the held-back first frame (whole or in parts)
// with the query's stats, on an encode worker like the others.
func (k *sink) finish(ctx context.Context) error {
	if k.first == nil {
		return nil // the query returned no frame
	}
	j := *k.first
	if err := k.room(ctx); err != nil {
		j.release()
		return err
	}
	done := make(chan error, 1)
	if err := k.dispatch(ctx, func() { done <- k.encodeAndEmit(0, j, &k.summary) }, func() { j.release() }); err != nil {
		return err
	}
	return <-done
}

// encodeAndEmit encodes j (with the query's stats when summary is set; see
// encode), hands that to emit, and releases j; lent records the pieces
// reference go with the frame instead (Frame.Lent). The budget j held
// becomes the encoded frame's (Frame.Budget).
// A panic fails the query, not the process.
func (k *sink) encodeAndEmit(idx int, j job, summary *frame.Summary) (err error) {
	held := j.held.Move()
	defer held.Release() // what the frame does not take
	var f Frame
	defer func() {
		if f.Lent == nil { // else the frame's taker releases them (Frame.Lent)
			j.release()
		}
	}()
	defer Recover(&err, k.log, "panic encoding a frame", k.q.Query.RefID, " while encoding a frame")
	if k.q.JSON {
		f.B, err = k.marshalJSON(j, &held)
	} else {
		f, err = k.encode(j, summary)
	}
	if err != nil {
		return fmt.Errorf("encoding frame %d: %w", idx, err)
	}
	held.Fit(f.Memory())
	f.Budget = held.Move()
	return k.emit(idx, f)
}

// encode encodes j into a new buffer of exactly its size (Append to nil),
// written once: no copy of the frame is made to hand it over; a lent
// record, into pieces that reference its larger buffers (AppendLent); a
// frame in parts, into its header, its parts and its footer, not joined.
func (k *sink) encode(j job, summary *frame.Summary) (Frame, error) {
	e := k.q.Encoders.Get(k.q.Decoder)
	defer k.q.Encoders.Put(e)
	start := time.Now()
	var f Frame
	var st arrowipc.BodyStats
	var pieces [][]byte
	var took time.Duration // encoding the parts before
	var err error
	switch w := j.parts; {
	case w != nil:
		if pieces, st, err = e.FinishPartsPieces(w.parts, w.md, summary); err == nil {
			f = Frame{B: pieces[0], Rest: pieces[1:], Lent: NewLent(w.lent...), spare: w.spare}
			w.lent, w.spare, took = nil, 0, w.took // the frame's taker releases them (Frame.Lent)
		}
	case j.lent:
		if pieces, st, err = e.AppendLent(j.rec, summary); err == nil {
			f = Frame{B: pieces[0], Rest: pieces[1:]}
			if len(f.Rest) > 0 { // some piece references the record's memory
				f.Lent, f.spare = NewLent(j.rec), spareOf(j.rec)
			}
		}
	default:
		f.B, st, err = e.Append(nil, frame.Input{Frame: j.frame, Record: j.rec}, summary)
	}
	if err != nil {
		return Frame{}, err
	}
	k.encoded(st, f.Size(), took+time.Since(start), summary)
	return f, nil
}

// encoded records what encoding one frame of size bytes did: in the
// metrics, and, but for the frame that carries them (summary set), in the
// query's stats.
func (k *sink) encoded(st arrowipc.BodyStats, size int, took time.Duration, summary *frame.Summary) {
	k.q.Observe(st, size, took)
	if summary == nil {
		k.mu.Lock()
		k.summary.Add(st, took)
		k.mu.Unlock()
	}
}
