package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// Pipeline runs queries' sources and encodes their frames on a fixed set
// of long-lived encode workers, within one memory budget, for every query
// of every data source of the process.
type Pipeline struct {
	work    chan func() // to the encode workers; unbuffered, so senders wait for a free one
	workers sync.WaitGroup
	budget  *Budget
	log     func(ctx context.Context, msg string, args ...any)
	// jsonScratches are JSON frame writers and their buffers (json.go).
	jsonScratches sync.Pool
}

// Options configure a Pipeline.
type Options struct {
	// Workers bounds how many frames are encoded at once; GOMAXPROCS when 0.
	Workers int
	// Budget is the memory budget of in-flight frames.
	Budget settings.Budget
	// Observer is told what the budget does (metrics); none when nil.
	Observer Observer
	// Log logs a panic in a source or while encoding (the query fails with
	// an error), with the query's context (whose log attributes name its
	// request and data source); nothing is logged when nil.
	Log func(ctx context.Context, msg string, args ...any)
}

// New starts a Pipeline's encode workers.
func New(o Options) *Pipeline {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &Pipeline{work: make(chan func()), budget: newBudget(o.Budget, o.Observer), log: o.Log}
	if p.log == nil {
		p.log = func(context.Context, string, ...any) {}
	}
	p.jsonScratches.New = func() any { return new(jsonScratch) }
	// Long-lived workers rather than a goroutine per frame: a worker's stack
	// has grown to what encoding needs once, not once per frame.
	for range workers {
		p.workers.Go(func() {
			for fn := range p.work {
				fn()
			}
		})
	}
	return p
}

// Close stops the encode workers once they are idle. The Pipeline must not
// be used afterwards.
func (p *Pipeline) Close() {
	close(p.work)
	p.workers.Wait()
}

// Account opens the budget account of one request: every frame of its
// queries holds budget in it until the caller releases it, or closes the
// account. share names the budget's share the request draws on (see
// Budget): one per tenant's data source.
func (p *Pipeline) Account(share string) *Account { return p.budget.account(share) }

// Stats returns the budget's bytes held, the most held at once, its limit
// and how many reservations wait.
func (p *Pipeline) Stats() (used, peak, limit int64, waiting int) { return p.budget.Stats() }

// Query is one query to run.
type Query struct {
	Source source.Source
	Query  source.Query
	// JSON: frames are written as the SDK's data-frame JSON; records are
	// copied, not lent, and frames are not taken in parts.
	JSON bool
	// Encoders are the data source's frame encoders.
	Encoders *Encoders
	// Decoder is the generation of the decoder of the Grafana that asked
	// (codec.DecoderFor); codec auto prices the query's frames by it. Nil
	// is codec.Decoders[0].
	Decoder *frame.Decoder
	// Observe is told what encoding each frame did; nothing when nil.
	Observe func(st arrowipc.BodyStats, frameBytes int, took time.Duration)
	// Room, when set, is called on the query's own goroutine before each
	// frame goes to an encode worker, and waits until the caller has room
	// for another encoded frame (its sends caught up); an error ends the
	// query. Emit runs on the encode workers, which every query of every
	// request shares, so it must never wait on a client: a caller that
	// sends frames as they come queues them, and bounds the queue here.
	Room func(ctx context.Context) error
	// Streamed: the caller sends each frame as soon as it is emitted (a
	// chunked reply), where a client places the frames in the order they
	// arrive. The first frame is then encoded and emitted at once like the
	// others, not held back to carry the query's encoding stats (which no
	// frame carries then): held back, it would arrive last.
	Streamed bool
}

// Run asks q's source for its frames and encodes them on the encode
// workers, calling emit with each frame's index (in the order the source
// produced them) and the frame. The first frame is encoded last: it carries
// the query's encoding stats (but for a Streamed query).
//
// Every frame holds budget in acct from when the source hands it over
// (held.go); emit's caller takes the frame's (Frame.Budget) and its lent
// records (Frame.Lent), whatever emit returns, and releases them when it
// is done with them. Emit runs on an encode worker: it
// must not wait (see Query.Room).
func (p *Pipeline) Run(ctx context.Context, q Query, acct *Account, emit func(int, Frame) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if q.Observe == nil {
		q.Observe = func(arrowipc.BodyStats, int, time.Duration) {}
	}
	k := &sink{cancel: cancel, p: p, q: q, acct: acct, emit: emit,
		log: func(msg string, args ...any) { p.log(ctx, msg, args...) }}
	defer k.Unreserve()
	var to source.Sink = k
	if !q.JSON {
		to = lendingSink{k} // the JSON format copies every record: it lends none
	}
	err := p.RunSource(ctx, q.Source, q.Query, to)
	k.wg.Wait() // also after a failure: no worker touches the query afterwards
	k.mu.Lock()
	if k.err != nil {
		err = k.err // the sink's first error caused the source's
	}
	k.mu.Unlock()
	if n := k.abortOpen(); n > 0 && err == nil {
		err = fmt.Errorf("internal error in Quiver: the source did not close %d frame(s) it handed over in parts", n)
	}
	if err != nil {
		if k.first != nil {
			k.first.release()
		}
		return err
	}
	return k.finish(ctx)
}

// RunSource runs src's query into sink, turning a panic into the query's
// error.
func (p *Pipeline) RunSource(ctx context.Context, src source.Source, q source.Query, sink source.Sink) (err error) {
	defer Recover(&err, func(msg string, args ...any) { p.log(ctx, msg, args...) }, "panic in a source", q.RefID, "")
	return src.Query(ctx, q, sink)
}

// Recover, deferred, turns a panic into *err ("internal error in Quiver",
// what, and the panic) and logs it as msg, with refID and the stack: it
// fails the query or the request, not the process.
func Recover(err *error, log func(msg string, args ...any), msg, refID, what string) {
	if p := recover(); p != nil {
		log(msg, "refId", refID, "panic", p, "stack", string(debug.Stack()))
		*err = fmt.Errorf("internal error in Quiver%s: %v", what, p)
	}
}

// Encoders is a data source's pool of frame encoders, all configured with
// its options.
type Encoders struct {
	opts arrowipc.Options
	pool sync.Pool // *frame.Encoder
}

// NewEncoders checks opts by building one encoder, and returns the pool.
func NewEncoders(opts arrowipc.Options) (*Encoders, error) {
	e, err := frame.NewEncoder(opts)
	if err != nil {
		return nil, err
	}
	es := &Encoders{opts: opts}
	es.pool.Put(e)
	return es, nil
}

// Get borrows an encoder, set to price frames by decoder d (nil: the
// oldest generation, codec.Decoders[0]) when its codec is auto.
func (es *Encoders) Get(d *frame.Decoder) *frame.Encoder {
	e, ok := es.pool.Get().(*frame.Encoder)
	if !ok {
		var err error
		if e, err = frame.NewEncoder(es.opts); err != nil {
			panic("pipeline: frame encoder options were validated at construction: " + err.Error())
		}
	}
	e.SetDecoder(d)
	return e
}

// Put gives an encoder back.
func (es *Encoders) Put(e *frame.Encoder) { es.pool.Put(e) }

// Options are the options the encoders were built with.
func (es *Encoders) Options() arrowipc.Options { return es.opts }
