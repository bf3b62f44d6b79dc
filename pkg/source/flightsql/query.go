// A query: its SQL expanded, full or incremental (incremental.go), its
// rows read and split into frames.

package flightsql

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// Query runs the query's SQL (macros expanded) and hands its frames to sink:
// of the whole range, or, for a query asked again for a later range, of
// its kept answer and the rows read from the overlap on (incremental.go).
func (s *Source) Query(ctx context.Context, q source.Query, sink source.Sink) error {
	m, err := parseQuery(q.JSON)
	if err != nil {
		return err
	}
	interval := q.Interval
	if interval <= 0 {
		interval = defaultInterval(q)
	}
	env := macroEnv{from: q.From, to: q.To, interval: interval, catalog: s.cfg.Catalog, schema: s.cfg.Schema,
		dialect: func() (*dialect, error) { return s.sqlDialect(ctx) }}
	exp, err := expandMacros(ctx, m.RawSQL, env)
	if err != nil {
		return err
	}
	inc := s.planIncremental(ctx, q, m, exp, interval)
	if inc.prev != nil {
		err := s.query(ctx, q, m, env, exp, inc, sink)
		var fb fallback
		if !errors.As(err, &fb) {
			return err
		}
		source.Unreserve(sink) // what the attempt held is released (query)
		inc.prev, inc.why, inc.fellBack, inc.fromServer, inc.fromCache = nil, fb.why, true, 0, 0
	}
	return s.query(ctx, q, m, env, exp, inc, sink)
}

// fallback ends an incremental attempt that turned out not to give the
// full query's answer, before any frame was handed over: the query is run
// in full instead.
type fallback struct{ why string }

func (f fallback) Error() string { return "flightsql: incremental query abandoned: " + f.why }

// planIncremental plans q: full or incremental, and whether its answer is
// kept.
func (s *Source) planIncremental(ctx context.Context, q source.Query, m queryModel, exp expansion, interval time.Duration) *incremental {
	inc := &incremental{from: q.From, to: q.To, asOf: time.Now(), u: exp.Time, sql: exp.SQL}
	format := m.Format
	switch {
	case !s.cfg.IncrementalQueries || s.cache == nil:
		inc.why = whyOff
	case m.Incremental != nil && !*m.Incremental:
		inc.why = whyQueryOff
	case format != FormatTimeSeries && format != FormatTimeSeriesWide && format != FormatLogs:
		inc.why = whyFormat
	default:
		inc.why = sqlWhyFull(m.RawSQL, exp.Time)
	}
	if format == FormatLogs {
		inc.order = orderOf(sqlWords(m.RawSQL))
	}
	if inc.why != "" {
		return inc
	}
	inc.keep = true
	f, _ := source.ForwardedFrom(ctx)
	inc.key = cacheKey(q, f, m.RawSQL, format, interval)
	b, err := s.cache.Get(inc.storeKey())
	if err != nil {
		s.observer.StoreFailed("get")
		inc.why = whyStore + ": " + s.conn.redact(ctx, err.Error(), false)
		return inc
	}
	var prev *entry
	if b != nil {
		if prev, err = unmarshalEntry(b, inc.key); err != nil {
			s.deleteEntry(inc.storeKey())
			prev = nil
		}
	}
	inc.planDelta(prev, s.cfg.OverlapDuration())
	return inc
}

func (in *incremental) storeKey() string { return hex.EncodeToString(in.key[:]) }

// query runs q in full, or, when inc has a kept answer, as a delta with
// the kept rows (a fallback error: run it in full).
func (s *Source) query(ctx context.Context, q source.Query, m queryModel, env macroEnv, exp expansion, inc *incremental, sink source.Sink) (err error) {
	sql, err := inc.deltaSQL(ctx, m, env, exp)
	if err != nil {
		return err
	}
	// The user's text, before and after the macros, for messages (redact).
	qctx, cancel := context.WithTimeout(withSent(ctx, m.RawSQL+"\n"+sql), s.cfg.TimeoutDuration())
	defer cancel()

	var fb frameBuilder
	defer func() {
		if fb != nil {
			fb.Release()
		}
	}()
	var k *keeper     // of the answer's rows, for the result cache; nil: not kept
	var plans []*plan // of every endpoint's schema (labelsLost)
	feed := func(rec arrow.RecordBatch) error {
		// A series or logs result, kept until the stream ends, reserves its
		// memory as it is received: the query waits (or fails) as it reads.
		// A table's batches go by onBatch, and only a series or logs query
		// has a keeper (planIncremental), so fb is a series or logs builder.
		if err := source.Reserve(qctx, sink, recordBytes(rec)); err != nil {
			return err
		}
		return fb.(interface{ Add(arrow.RecordBatch) error }).Add(rec)
	}
	onPlan := func(p *plan) (bool, error) {
		plans = append(plans, p)
		if fb == nil {
			if fb, err = s.newBuilder(p.out, m.Format, q, sql, exp.Fill, inc.partsOrder(), sink); err != nil {
				return false, err
			}
			if inc.keep {
				if k, err = newKeeper(inc, p.out, s.mem, s.cfg, feed); err != nil {
					return false, err
				}
			}
		} else if k != nil && !p.out.Equal(k.schema) {
			return false, fallback{whySchema} // the head's and the delta's
		}
		_, split := fb.(*series.Builder) // it copies out what it keeps of a batch
		return split, nil
	}
	onBatch := func(rec arrow.RecordBatch, whole bool) error {
		if tb, ok := fb.(*tableBuilder); ok {
			return tb.addBatch(qctx, rec, whole) // handed over as it comes
		}
		if k != nil {
			return k.addRead(rec)
		}
		inc.fromServer += rec.NumRows()
		return feed(rec)
	}
	var notices []data.Notice
	if inc.prev != nil && inc.u.width > 0 {
		// The first time group, the kept rows, the new ones: in time order.
		notices, err = s.readHead(qctx, m, env, inc, onPlan, func(rec arrow.RecordBatch, _ bool) error {
			return k.addHead(rec) // made by onPlan: a delta has a keeper or falls back
		})
	}
	if err == nil {
		var more []data.Notice
		more, err = s.stream(qctx, sql, func(p *plan) (bool, error) {
			split, err := onPlan(p)
			if err == nil && k != nil {
				err = k.feedKept()
			}
			return split, err
		}, onBatch)
		notices = append(notices, more...)
	}
	if err == nil && inc.prev != nil {
		err = deltaRead(k, notices)
	}
	if err != nil {
		return s.queryError(ctx, qctx, sql, err)
	}
	return s.finish(ctx, fb, k, inc, sink, notices, plans)
}

// deltaRead says whether a delta's reads, done without error, make its
// answer: a fallback when they do not.
func deltaRead(k *keeper, notices []data.Notice) error {
	switch {
	case k == nil || !k.keptFed:
		return fallback{"the server answered the new rows' query with no endpoint"}
	case len(notices) > 0:
		return fallback{whyNoticed} // the full query words it, and its answer is not kept
	}
	return nil
}

// finish hands the frames to sink, with the incremental stats (and, with
// the incrementalNotice setting, a notice of them) on a series or logs
// query's first, and keeps the answer when it is to be kept. Without a
// builder (no endpoint) there is no data. plans are the result's
// normalisations (labelsLost).
func (s *Source) finish(ctx context.Context, fb frameBuilder, k *keeper, inc *incremental, sink source.Sink, notices []data.Notice, plans []*plan) error {
	if fb == nil {
		return nil
	}
	if err := labelsLost(fb, plans); err != nil {
		return err
	}
	keep := k != nil && len(notices) == 0 // an answer cut short is not kept
	if b, ok := fb.(interface{ SetStats([]data.QueryStat) }); ok {
		b.SetStats(inc.stats())
		s.observer.Answered(inc.reason(), inc.fromServer, inc.fromCache)
		if s.cfg.IncrementalNotice {
			notices = append(notices, inc.notice())
		}
	}
	if err := fb.Finish(ctx, sink, notices); err != nil {
		return err
	}
	switch {
	case keep && !k.off:
		if err := k.store(s.cache); err != nil {
			s.observer.StoreFailed("put")
		}
	case inc.fellBack && (inc.why == whyOutside || inc.why == whyLimit || inc.why == whyNoticed):
		s.deleteEntry(inc.storeKey()) // a delta from the older answer would only fall back again
	}
	return nil
}

// labelsLost fails a series query a label column of which had times
// Grafana cannot read (made null, see outOfRange): empty, they would merge
// the series they label into one.
func labelsLost(fb frameBuilder, plans []*plan) error {
	sb, ok := fb.(*series.Builder)
	if !ok {
		return nil
	}
	labels := sb.LabelColumns()
	for _, p := range plans {
		p.mu.Lock()
		j := slices.IndexFunc(labels, func(i int) bool { return p.found[i]&outOfRange != 0 })
		p.mu.Unlock()
		if j >= 0 {
			f := p.in.Field(labels[j])
			return source.BadQuery("flightsql: column %s (%s) labels series and has values outside the times Grafana reads (1677-09-21 to 2262-04-11; infinity and -infinity too): empty, they would make the series they label one. Cast the column to text in the SQL", source.Quote(f.Name), f.Type)
		}
	}
	return nil
}

// deleteEntry deletes a kept answer that did not read.
func (s *Source) deleteEntry(key string) {
	if err := s.cache.Delete(key); err != nil {
		s.observer.StoreFailed("delete")
	}
}

// deltaSQL is the SQL a query sends: its own, or a delta's, from cut on.
func (in *incremental) deltaSQL(ctx context.Context, m queryModel, env macroEnv, exp expansion) (string, error) {
	if in.prev == nil {
		return exp.SQL, nil
	}
	env.from = in.cut
	d, err := expandMacros(ctx, m.RawSQL, env)
	return d.SQL, err
}

// readHead reads the first time group of the range again: its rows
// labelled before the start are the full query's first, partial, bucket
// (the kept one holds rows from before the new start). onPlan makes the
// builder and the keeper, whose addHead onBatch is.
func (s *Source) readHead(ctx context.Context, m queryModel, env macroEnv, inc *incremental, onPlan func(*plan) (bool, error), onBatch batchFunc) ([]data.Notice, error) {
	env.from, env.to = inc.from, inc.from.Add(inc.u.width)
	exp, err := expandMacros(ctx, m.RawSQL, env)
	if err != nil {
		return nil, err
	}
	return s.stream(ctx, exp.SQL, onPlan, onBatch)
}

// queryError words a query's failure: cancelled, timed out or the
// server's, with the SQL sent.
func (s *Source) queryError(ctx, qctx context.Context, sql string, err error) error {
	if errors.As(err, new(fallback)) {
		return err // the incremental attempt's: run in full (Query)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("flightsql: query cancelled: %w", cerr)
	}
	if errors.Is(qctx.Err(), context.DeadlineExceeded) && source.KindOf(err) != source.KindTimeout {
		err = &source.Error{Kind: source.KindTimeout, Err: fmt.Errorf("flightsql: the query timed out after %s (timeout setting): %w", s.cfg.TimeoutDuration(), err)}
	}
	if k := source.KindOf(err); k == source.KindUpstream || k == source.KindTimeout {
		// The SQL as sent, never redacted (see redact), cut to QuoteMax.
		return &source.Error{Kind: k, Err: fmt.Errorf("%w (SQL sent: %s)", err, source.Quote(sql))}
	}
	return err
}

// newBuilder is the builder of a result of schema in format (chosen from
// the schema when ""), for query q whose SQL, after macros, is sql; order
// is set when logs come in parts (logsBuilder.order).
func (s *Source) newBuilder(schema *arrow.Schema, format string, q source.Query, sql string, fill *series.FillSpec, order *sortOrder, sink source.Sink) (frameBuilder, error) {
	if format == "" {
		format = FormatTable
		if _, ok := series.TimeColumn(schema, seriesType); ok {
			format = FormatTimeSeries
		}
	}
	fi := frameInfo{refID: q.RefID, sql: sql, limits: q.Limits}
	switch format {
	case FormatTimeSeries, FormatTimeSeriesWide:
		cfg := series.Config{RefID: q.RefID, SQL: sql, Limits: q.Limits, Wide: format == FormatTimeSeriesWide, Types: seriesType, Memory: s.series}
		if fill != nil {
			limit := q.Limits.Points("points")
			if limit.Max <= 0 {
				limit = source.Limit{Max: s.cfg.RowLimit, Unit: "points", Setting: "rowLimit"}
			}
			cfg.Fill = &series.Fill{Spec: fill, From: q.From, To: q.To, Limit: limit}
		}
		return asBuilder(series.New(cfg, schema))
	case FormatLogs:
		return asBuilder(newLogsBuilder(s.mem, fi, schema, order))
	}
	b := newTableBuilder(s.mem, fi, schema)
	return asBuilder(b, b.stream(sink))
}

// asBuilder returns b, or nil (not a typed nil in the interface) with err.
func asBuilder[B frameBuilder](b B, err error) (frameBuilder, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// defaultInterval is the time range over the requested points when Grafana
// sent no interval, at least 1ms.
func defaultInterval(q source.Query) time.Duration {
	points := q.MaxDataPoints
	if points <= 0 {
		points = 1000
	}
	return max((q.To.Sub(q.From) / time.Duration(points)).Truncate(time.Millisecond), time.Millisecond)
}
