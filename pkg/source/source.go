package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Query is one query of a request, as a source sees it.
type Query struct {
	RefID         string
	JSON          []byte // the query model as the frontend sent it
	From, To      time.Time
	Interval      time.Duration
	MaxDataPoints int64
	Limits        Limits
	// Scope names who may be given an answer kept for this query: its
	// tenant, organisation and data source (a source that keeps answers
	// adds the forwarded identity itself).
	Scope string
}

// QuoteMax is how many bytes of a user-supplied value Quote keeps.
const QuoteMax = 64

// Quote returns s as a Go-quoted string for an error message, cut to its
// first QuoteMax bytes (at a rune boundary) with the full length appended,
// so that a message never echoes more than a bounded prefix of what a user
// sent. Invalid UTF-8 is escaped by %q, byte by byte.
func Quote(s string) string {
	if len(s) <= QuoteMax {
		return strconv.Quote(s)
	}
	cut := QuoteMax
	for cut > QuoteMax-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// Reserver is an optional capability of a Sink that holds frames in a
// memory budget. A source that knows, before it produces them, how many
// bytes of memory a query's frames will take reserves them at once, so that
// the query waits for the budget (or fails) before it allocates rather than
// frame by frame. Frames handed over afterwards draw on the reservation.
type Reserver interface {
	Reserve(ctx context.Context, bytes int64) error
}

// Unreserver is a Reserver that gives back what was reserved and no frame
// has taken: for a source that gives up an attempt before handing any frame,
// having released what the attempt held, so that running again does not
// hold it twice.
type Unreserver interface {
	Unreserve()
}

// Unreserve gives back what was reserved on sink when it is an Unreserver.
func Unreserve(sink Sink) {
	if u, ok := sink.(Unreserver); ok {
		u.Unreserve()
	}
}

// Reserve reserves bytes on sink when it is a Reserver; otherwise it does
// nothing. Its error (the budget is exhausted, the request was cancelled)
// must be returned by the source as is.
func Reserve(ctx context.Context, sink Sink, bytes int64) error {
	if r, ok := sink.(Reserver); ok {
		return r.Reserve(ctx, bytes)
	}
	return nil
}

type reserverKey struct{}

// WithReserver returns ctx carrying r, for work that is not a query's and so
// has no Sink (a resource call: schema browsing): what it keeps in memory is
// reserved on r with ReserveIn, as a query's frames are on its Sink.
func WithReserver(ctx context.Context, r Reserver) context.Context {
	return context.WithValue(ctx, reserverKey{}, r)
}

// ReserveIn reserves bytes on the Reserver ctx carries (WithReserver);
// without one it does nothing. Its error (the budget is exhausted, the call
// was cancelled) must be returned as is; it may carry the HTTP status a
// resource call answers it with (see StatusOf).
func ReserveIn(ctx context.Context, bytes int64) error {
	if r, ok := ctx.Value(reserverKey{}).(Reserver); ok {
		return r.Reserve(ctx, bytes)
	}
	return nil
}

// statusError is an error with the HTTP status of a resource call's answer.
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// WithStatus returns err carrying the HTTP status a resource call answers
// it with (see StatusOf); nil for nil.
func WithStatus(status int, err error) error {
	if err == nil {
		return nil
	}
	return &statusError{status: status, err: err}
}

// StatusOf returns the HTTP status err carries (WithStatus), or def.
func StatusOf(err error, def int) int {
	var e *statusError
	if errors.As(err, &e) {
		return e.status
	}
	return def
}

// PartSink is an optional capability of a Sink that takes a frame in parts
// as its rows arrive, rather than whole at the end: a table read batch by
// batch is handed over batch by batch, so that the source never joins the
// batches and the sink encodes each as it comes. The frame is still one
// frame to Grafana (one Arrow IPC file of several record batches).
//
// Parts opens a frame whose fields are schema's (with their metadata;
// schema's own metadata is not used) and counts it against the query's
// limits. It returns a nil FrameWriter and no error when the sink declines
// (the JSON data-frame format, for example): the source then hands the frame
// over whole, with Record, as it would to a Sink without the capability. An
// error (a limit, a cancelled request) must be returned by the source as
// is.
type PartSink interface {
	Parts(schema *arrow.Schema) (FrameWriter, error)
}

// FrameWriter takes one frame in parts; see PartSink. It is used by one
// goroutine at a time, and the frame's parts are kept in the order given.
type FrameWriter interface {
	// Part hands over the next rows of the frame: a record of the frame's
	// fields (names, types and metadata as opened; a field may be nullable
	// in some parts only, and is then nullable in the frame), whose schema
	// metadata is not used. The writer releases it. An error must be
	// returned by the source as is; the writer is then aborted.
	Part(ctx context.Context, rec arrow.RecordBatch) error
	// Close ends the frame; md is its schema metadata (name, refId, meta
	// with the notices found while reading it, as frame.SchemaMetadata
	// builds it). A frame of no part is a frame of no row.
	Close(ctx context.Context, md arrow.Metadata) error
	// Abort drops the frame and everything it holds. It may be called after
	// Close or another Abort, and then does nothing, so a source may defer
	// it. A frame opened is counted as one of the query's: a source that
	// aborts one must fail the query (the plugin's sink answers a query
	// that returns nil with a frame aborted as an internal error).
	Abort()
}

// Lending. A lent record is handed over for its buffers to be referenced
// in the frame instead of copied. One contract covers both ways of lending,
// a whole frame (RecordLender) and a part of one (PartLender):
//
//   - the taker holds the record until nothing reads the frame any more
//     (the frame written out to Grafana, joined into a copy, or dropped)
//     and releases it then; the source's memory may go back to a pool on
//     that release (its buffers' allocator), to be written by a later
//     query;
//   - the record's memory is its buffers' alone (no sliced-off rows, no
//     column it replaced, nothing else of a message it came in: the taker
//     counts only the record's bytes and its buffers' capacity) and is not
//     changed while the taker holds it;
//   - the records of one query may share a buffer (series sharing their
//     times): the taker then counts it in each of them.

// PartLender is an optional capability of a FrameWriter: LendPart is Part
// for a lent record (see Lending above).
type PartLender interface {
	LendPart(ctx context.Context, rec arrow.RecordBatch) error
}

// RecordLender is an optional capability of a Sink: LendRecord is Record
// for a lent record (see Lending above).
type RecordLender interface {
	LendRecord(ctx context.Context, rec arrow.RecordBatch) error
}

// OpenParts opens a frame in parts on sink when it is a PartSink that
// accepts it; otherwise it returns nil, and the source hands the frame over
// whole.
func OpenParts(sink Sink, schema *arrow.Schema) (FrameWriter, error) {
	if p, ok := sink.(PartSink); ok {
		return p.Parts(schema)
	}
	return nil, nil
}

// Sink receives the frames of one query. Implementations are safe for use by
// one goroutine at a time. A frame handed to a Sink belongs to it: the source
// must not modify it afterwards. An error from a Sink (for example a limit
// that was hit, or a cancelled request) must be returned by the source as is.
// A method may wait (for the memory budget, an encode worker, the client)
// until ctx, the query's context or one derived from it, is done.
type Sink interface {
	// Frame hands over one frame built with the SDK's data package.
	Frame(ctx context.Context, f *data.Frame) error
	// Record hands over one frame as an Arrow record whose schema carries
	// Grafana's metadata (see package frame). The Sink releases it.
	Record(ctx context.Context, rec arrow.RecordBatch) error
}

// Source answers queries. Implementations must be safe for concurrent use.
type Source interface {
	Query(ctx context.Context, q Query, sink Sink) error
}

// HealthReporter is implemented by sources that can check their upstream
// and tell what they found (the server's name, the SQL dialect chosen…).
// The message and the error's message are shown to the administrator as
// they are, and carry no secret.
type HealthReporter interface {
	HealthReport(ctx context.Context) (string, error)
}

// ResourceHandler is implemented by sources that serve resource calls
// (schema browsing for the query editor, for example).
type ResourceHandler interface {
	Resources() http.Handler
}

// Kind says whose fault an error is.
type Kind uint8

const (
	// KindQuery: the query or its parameters are wrong; the user can fix it.
	KindQuery Kind = iota + 1
	// KindUpstream: the system behind the source failed.
	KindUpstream
	// KindLimit: the query asked for more than the configured limits allow.
	KindLimit
	// KindTimeout: the system behind the source did not answer in time.
	KindTimeout
)

// Error carries a Kind with the error it classifies.
type Error struct {
	Kind Kind
	Err  error
	// Setting names the data-source setting whose limit a KindLimit error
	// of Limit.Exceeded hit ("maxSeries"); "" otherwise.
	Setting string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// BadQuery returns a KindQuery error with a formatted message.
func BadQuery(format string, args ...any) error {
	return &Error{Kind: KindQuery, Err: fmt.Errorf(format, args...)}
}

// Upstream marks err as a failure of the upstream system. It returns nil for nil.
func Upstream(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: KindUpstream, Err: err}
}

// DescribeColumns names the columns of s and their types, for errors that
// say what a result has.
func DescribeColumns(s *arrow.Schema) string {
	if s.NumFields() == 0 {
		return "no columns"
	}
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = fmt.Sprintf("%s (%s)", f.Name, f.Type)
	}
	return "columns " + strings.Join(parts, ", ")
}

// KindOf reports the Kind of err, or 0 when err carries none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Forwarded is the identity Grafana forwarded for the user of a request:
// the OAuth access token's "Authorization" header value and, when present,
// the ID token ("X-Id-Token"). The plugin puts it in the context of every
// query, health check and resource call that carries one; a source uses it
// only when its settings say so (Flight SQL: oauthPassThru). Every way of
// printing a Forwarded yields "[redacted]".
type Forwarded struct {
	authorization, idToken string
}

// Authorization returns the forwarded "Authorization" header value.
func (f Forwarded) Authorization() string { return f.authorization }

// IDToken returns the forwarded "X-Id-Token" header value, or "".
func (f Forwarded) IDToken() string { return f.idToken }

// Format prints "[redacted]" for every fmt verb.
func (f Forwarded) Format(s fmt.State, _ rune) { _, _ = s.Write([]byte("[redacted]")) }

type forwardedKey struct{}

// WithForwarded returns ctx carrying the forwarded identity; ctx itself when
// authorization is empty (an ID token alone identifies no one to a server).
func WithForwarded(ctx context.Context, authorization, idToken string) context.Context {
	if authorization == "" {
		return ctx
	}
	return context.WithValue(ctx, forwardedKey{}, Forwarded{authorization: authorization, idToken: idToken})
}

// ForwardedFrom returns the forwarded identity of ctx, if any.
func ForwardedFrom(ctx context.Context) (Forwarded, bool) {
	f, ok := ctx.Value(forwardedKey{}).(Forwarded)
	return f, ok
}
