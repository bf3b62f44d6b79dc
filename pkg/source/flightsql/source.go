// This file is over 400 lines: a query's whole read path — expansion, the
// builders, the endpoint loop with its limits and the read-ahead — whose
// cancellation and release rules are read together.

package flightsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// Compile-time checks of the capabilities Source offers.
var (
	_ source.Source          = (*Source)(nil)
	_ source.HealthReporter  = (*Source)(nil)
	_ source.ResourceHandler = (*Source)(nil)
	_ source.MemoryKeeper    = (*Source)(nil)
)

// Formats of the query JSON's "format" key.
const (
	FormatTimeSeries     = "time_series"
	FormatTimeSeriesWide = "time_series_wide"
	FormatTable          = "table"
	FormatLogs           = "logs"
)

// Source answers queries from one Flight SQL server. It is safe for
// concurrent use; Close it when the data-source instance goes away.
type Source struct {
	cfg      settings.FlightSQL
	mem      memory.Allocator
	series   *series.Memory // the pooled memory of its series splits
	conn     *conn
	bounds   resourceBounds // of resource calls (resources.go)
	cache    Store          // kept answers of incremental queries (incremental.go)
	observer CacheObserver  // of the incremental queries and the cache
	bodies   bodyCounts     // of its series streams' recycled bodies (bodies.go)
}

// Option configures a Source at construction.
type Option func(*options)

type options struct {
	observer CacheObserver
	mem      memory.Allocator
	dialOpts []grpc.DialOption // tests' interceptors; credentials come from the settings
}

// WithCacheObserver sets what sees the incremental queries and the result
// cache (default: nothing).
func WithCacheObserver(o CacheObserver) Option { return func(opts *options) { opts.observer = o } }

// New validates cfg and returns a Source for it. It does not contact the
// server: connection problems show in CheckHealth and in queries.
func New(cfg settings.FlightSQL, opts ...Option) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("flightsql: %w", err)
	}
	o := options{mem: memory.NewGoAllocator(), observer: nopObserver{}}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := newConn(cfg, o.mem, o.dialOpts)
	if err != nil {
		return nil, err
	}
	var cache Store = newMemoryStore(cfg.ResultCacheBytes, o.observer)
	if cfg.RedisAddress != "" {
		cache = newRedisStore(cfg)
	}
	return &Source{cfg: cfg, mem: o.mem, series: series.NewMemory(), conn: c, bounds: defaultResourceBounds(),
		cache: cache, observer: o.observer}, nil
}

// KeepIn counts the in-memory result cache in the process's memory budget
// (source.MemoryKeeper); call it once, before any query. A Redis cache
// holds nothing here.
func (s *Source) KeepIn(k source.Kept) {
	if m, ok := s.cache.(*memoryStore); ok {
		m.mu.Lock()
		m.budget = k
		m.mu.Unlock()
	}
}

// Shrink evicts the least recently used kept answers of about n bytes: a
// query needs the memory.
func (s *Source) Shrink(n int64) {
	if m, ok := s.cache.(*memoryStore); ok {
		m.evict(n)
	}
}

// Close closes every connection of the Source. It is safe to call twice.
func (s *Source) Close() error {
	err := s.conn.close()
	if m, ok := s.cache.(*memoryStore); ok {
		m.clear() // its bytes leave the budget and the metrics
	}
	if r, ok := s.cache.(*redisStore); ok {
		if cerr := r.Close(); cerr != nil && !errors.Is(cerr, redis.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

// queryModel is the query JSON of a Flight SQL query.
type queryModel struct {
	RawSQL string `json:"rawSql"`
	Format string `json:"format"`
	// Incremental false makes the query a full one always (incremental.go).
	Incremental *bool `json:"incremental"`
}

func parseQuery(b []byte) (queryModel, error) {
	var m queryModel
	if err := json.Unmarshal(b, &m); err != nil {
		return m, source.BadQuery("flightsql: the query is not valid JSON: %w", err)
	}
	if strings.TrimSpace(m.RawSQL) == "" {
		return m, source.BadQuery("flightsql: rawSql: the query has no SQL")
	}
	switch m.Format {
	case "", FormatTimeSeries, FormatTimeSeriesWide, FormatTable, FormatLogs:
	default:
		return m, source.BadQuery(`flightsql: format: %s is not one of "time_series", "time_series_wide", "table", "logs"`, source.Quote(m.Format))
	}
	return m, nil
}

// streamState tracks what one query has read, against the row and byte limits.
type streamState struct {
	rows, bytes int64
	plan        *plan         // its normalised schema is the first endpoint's
	recycle     bool          // the batches' bodies are recycled (see stream)
	notices     []data.Notice // each text once
}

func (st *streamState) notice(texts ...string) {
	for _, text := range texts {
		if !slices.ContainsFunc(st.notices, func(n data.Notice) bool { return n.Text == text }) {
			st.notices = append(st.notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: text})
		}
	}
}

// stream executes sql and reads every endpoint of its FlightInfo in order.
// Each upstream schema is planned once (onPlan sees the plan before its
// batches, and says whether onBatch copies out all it keeps of a batch, so
// that the batches' message bodies may be recycled once they are released:
// see bodies.go); every batch is normalised and handed to onBatch, which
// must not keep it (but for a table's lent parts, when onPlan said no).
// Reading stops at the row or byte limit with a notice.
func (s *Source) stream(ctx context.Context, sql string, onPlan func(*plan) (recycle bool, err error), onBatch batchFunc) ([]data.Notice, error) {
	if err := s.conn.session(ctx); err != nil {
		return nil, err
	}
	info, err := do(ctx, s.conn, func(cctx context.Context) (*flight.FlightInfo, error) {
		return s.conn.main.Execute(cctx, sql)
	})
	if err != nil {
		return nil, s.conn.upstream(ctx, "executing the query", err)
	}
	st := &streamState{}
	eps := info.GetEndpoint()
	for i, ep := range eps {
		done, err := s.readEndpoint(ctx, st, ep, fmt.Sprintf("reading endpoint %d of %d", i+1, len(eps)), onPlan, onBatch)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return st.notices, nil
}

// doGet opens the stream of endpoint ep (on the server its location names).
// cancel cancels the call, which stops the server's stream when reading ends
// early; the caller releases rdr after that.
// Its bodies are recycled once sb.recycle is set (see bodies.go).
func (s *Source) doGet(ctx context.Context, ep *flight.FlightEndpoint, what string, most int) (rdr *ipc.Reader, sb *streamBodies, cancel func(), err error) {
	cl, err := s.conn.clientFor(ep)
	if err != nil {
		return nil, nil, nil, s.conn.upstream(ctx, what, err)
	}
	ectx, cancel := context.WithCancel(ctx)
	rdr, err = do(ectx, s.conn, func(cctx context.Context) (*ipc.Reader, error) {
		sb = &streamBodies{pool: s.series.Pool(), counts: &s.bodies}
		stream, err := cl.Client.DoGet(cctx, ep.GetTicket(), grpc.MaxCallRecvMsgSize(most), sb.codec())
		if err != nil {
			return nil, err
		}
		return newStreamReader(stream, sb, cl.Alloc, int64(most))
	})
	if err != nil {
		cancel()
		return nil, nil, nil, s.conn.upstream(ctx, what, err)
	}
	return rdr, sb, cancel, nil
}

// prefetcher reads a stream's batches on its own goroutine, a few ahead of
// the one that splits them, so that reading and decoding the next batch
// overlaps with splitting this one.
type prefetcher struct {
	ch     chan arrow.RecordBatch // retained batches; closed when reading ends
	quit   chan struct{}
	cancel func()
	err    error // the reader's error, set before ch is closed
}

// batchReader is what prefetch reads: an *ipc.Reader (newStreamReader).
type batchReader interface {
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
}

// prefetchDepth is how many batches the prefetcher reads ahead.
const prefetchDepth = 2

// prefetch starts reading rdr. The caller ranges over ch, releasing each
// batch, then reads err; stop must run before rdr is released.
func prefetch(rdr batchReader, cancel func()) *prefetcher {
	p := &prefetcher{ch: make(chan arrow.RecordBatch, prefetchDepth), quit: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.ch)
		// A stream arrow-go cannot decode may panic in Next: it becomes
		// the stream's error rather than taking the plugin down (this
		// goroutine is outside the query's recover).
		defer func() {
			if r := recover(); r != nil {
				p.err = &source.Error{Kind: source.KindUpstream, Err: fmt.Errorf("flightsql: reading the server's stream: %v", r)}
			}
		}()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			select {
			case p.ch <- rec:
			case <-p.quit:
				rec.Release()
				return
			}
		}
		p.err = rdr.Err()
	}()
	return p
}

// stop cancels the call (so that a read waiting on the network returns),
// and waits for the goroutine to end, releasing the batches it read.
func (p *prefetcher) stop() {
	p.cancel()
	close(p.quit)
	for rec := range p.ch {
		rec.Release()
	}
}

// readEndpoint reads one endpoint; done reports that a limit was reached.
func (s *Source) readEndpoint(ctx context.Context, st *streamState, ep *flight.FlightEndpoint, what string,
	onPlan func(*plan) (bool, error), onBatch batchFunc) (done bool, err error) {
	rdr, sb, cancel, err := s.doGet(ctx, ep, what, maxMessage(s.cfg.ByteLimit))
	if err != nil {
		return false, err
	}
	defer rdr.Release()
	defer cancel()

	if st.plan == nil || !st.plan.in.Equal(rdr.Schema()) {
		p := newPlan(rdr.Schema())
		if st.plan != nil && !st.plan.out.Equal(p.out) {
			return false, source.Upstream(fmt.Errorf("flightsql: %s: its schema differs from the first endpoint's: %s", what, source.DescribeColumns(rdr.Schema())))
		}
		st.plan = p
		st.notice(p.notices()...)
		if st.recycle, err = onPlan(p); err != nil {
			return false, err
		}
	}
	sb.recycle.Store(st.recycle) // before the first batch is read

	// The notices of what this endpoint's values met (deduplicated by st.notice).
	defer func() { st.notice(st.plan.notices()...) }()

	p := prefetch(rdr, cancel)
	defer p.stop()
	for rec := range p.ch {
		done, err = s.take(st, rec, onBatch)
		rec.Release()
		if err != nil || done {
			return done, err
		}
	}
	if p.err != nil {
		return false, s.conn.upstream(ctx, what, p.err)
	}
	return false, nil
}

// take counts rec against the row and byte limits, normalises what fits
// and hands it to onBatch; done reports that a limit was reached.
func (s *Source) take(st *streamState, rec arrow.RecordBatch, onBatch batchFunc) (done bool, err error) {
	n := rec.NumRows()
	if n == 0 {
		return false, nil
	}
	// A batch's length is the server's word (a null column costs no bytes
	// at any length): the sums are written not to overflow.
	rowLimit, byteLimit, keep := s.cfg.RowLimit, s.cfg.ByteLimit, n
	if n > rowLimit-st.rows {
		keep = rowLimit - st.rows
		st.notice(fmt.Sprintf("The result was truncated to %d rows (rowLimit setting): the server had more. Narrow the query or raise rowLimit.", rowLimit))
		done = true
	}
	size := recordBytes(rec)
	if size > byteLimit-st.bytes {
		keep = min(keep, mulDiv(byteLimit-st.bytes, n, size))
		st.notice(fmt.Sprintf("The result was truncated after about %d bytes (byteLimit setting): the server had more. Narrow the query or raise byteLimit.", byteLimit))
		done = true
	}
	st.rows += keep
	st.bytes += mulDiv(size, keep, n)
	if keep == 0 {
		return done, nil
	}
	part := rec
	if keep < n {
		part = rec.NewSlice(0, keep)
		defer part.Release()
	}
	norm := st.plan.apply(s.mem, part)
	defer norm.Release()
	return done, onBatch(norm, keep == n && keptAll(part, norm))
}

// mulDiv is a × b ÷ c for non-negative a and b and a positive c, without
// overflowing on a × b; math.MaxInt64 when the quotient does not fit.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(min(q, math.MaxInt64))
}

// batchFunc takes one normalised batch; whole says that the batch's memory
// is its buffers' alone: received as it is, no row sliced off and no
// column replaced by normalising (whose received buffers would otherwise
// live on in the message's body as long as the batch's others).
type batchFunc func(rec arrow.RecordBatch, whole bool) error

// keptAll says whether norm is rec as received and rec's memory is its
// buffers' alone: every buffer of norm is one of rec's (normalising
// replaced no column), and rec's buffers lie together in one span about as
// long as they are. A received message's buffers are slices of its body;
// one whose body was compressed in part hands out its raw buffers as
// slices of the compressed body, whose other bytes they would keep alive,
// and decompressed buffers lie apart.
func keptAll(rec, norm arrow.RecordBatch) bool {
	for i, out := range norm.Columns() {
		in := rec.Column(i).Data().Buffers()
		for j, b := range out.Data().Buffers() {
			if b == nil || b.Len() == 0 {
				continue
			}
			if j >= len(in) || in[j] == nil || unsafe.SliceData(in[j].Bytes()) != unsafe.SliceData(b.Bytes()) {
				return false
			}
		}
		if len(out.Data().Children()) > 0 {
			return false // not a type a table keeps as received
		}
	}
	lo, hi := ^uintptr(0), uintptr(0)
	sum, n := 0, 0
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b == nil || b.Len() == 0 {
				continue
			}
			at := uintptr(unsafe.Pointer(unsafe.SliceData(b.Bytes())))
			lo, hi = min(lo, at), max(hi, at+uintptr(b.Len()))
			sum += b.Len()
			n++
		}
	}
	// Padding: up to 63 bytes a buffer (Arrow aligns to 8 or 64), and a
	// sixteenth for what a body holds unread (a validity bitmap sent for a
	// column without nulls).
	return n == 0 || hi-lo <= uintptr(sum+sum/16+64*n)
}

// recordBytes is the size of rec's buffers, children and dictionaries
// included: what reading it from the server cost in memory.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += dataBytes(d.Dictionary())
	}
	return n
}
