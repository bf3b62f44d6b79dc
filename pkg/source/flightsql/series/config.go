// What a Builder is made with: the query's Config, and what the split needs
// to know of each Arrow type, handed in from the caller's one registration
// per type.

package series

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// Type is the split's part of one Arrow type's registration. Package
// flightsql registers each type once (its types.go) and hands this part in
// (Config.Types); this package keeps no table keyed by Arrow type. What
// differs by type is built here (NumericOf, TimestampValues, EpochValues),
// so that the registration only names it.
type Type struct {
	// Numeric is set for the numbers Grafana reads: a column of the type
	// is a value column of its series. Every other column is a label, but
	// the time column.
	Numeric *Numeric
	// Times reads a column of the type as the time column; nil: a column
	// of the type cannot be the time column.
	Times TimeValues
	// Text appends a value of a column of the type (not null) to dst as
	// its label text.
	Text func(dst []byte, a arrow.Array, i int) []byte
}

// Types returns the Type registered for an Arrow type ID (the zero Type
// when there is none). The split calls it when a builder is made, once per
// column, never per batch or row.
type Types func(arrow.Type) Type

// Number is the types of the values of series (Grafana's numbers).
type Number interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

// Numeric is what the series split does with one numeric value type: how
// it stores a value column of the type, spreads it over a wide frame's
// times and fills it. Made by NumericOf.
type Numeric struct {
	// newStore returns an empty store whose segments and pending rows are
	// memory from segs and scratch.
	newStore func(segs, scratch *pooled) valueStore
	// spread returns an array of n slots holding a[k] at pos[k] (pos[k] < 0:
	// left out) and null elsewhere.
	spread func(a arrow.Array, pos []int32, n int) arrow.Array
	// fill fills a series' column of this type (fillArray).
	fill func(f *FillSpec, times []arrow.Timestamp, a arrow.Array, from, to time.Time, maxPoints int) ([]arrow.Timestamp, arrow.Array, error)
}

// NumericOf is the Numeric of the value type T, whose Arrow arrays have
// Values() []T.
func NumericOf[T Number]() *Numeric {
	return &Numeric{newStore: func(segs, scratch *pooled) valueStore {
		return &numStore[T]{vals: segments[T]{mem: segs, scratch: scratch}}
	}, spread: spread[T], fill: fillArray[T]}
}

// Config is what a Builder is made with, once per query.
type Config struct {
	RefID string // the query's refId, on every frame
	SQL   string // the SQL sent, after macros: every frame's meta.executedQueryString
	// Limits: MaxPoints bounds the rows × value columns of the result,
	// MaxSeries its series × value columns (0: no limit).
	Limits source.Limits
	// Wide: one timeseries-wide frame (format time_series_wide) instead of
	// a timeseries-multi frame per series and value column (time_series).
	Wide bool
	// Types is the registration of the Arrow types (required).
	Types Types
	// Fill, when set, fills every series after the query (see Fill).
	Fill *Fill
	// Memory is the pooled memory the builder shares with the source's
	// other queries; nil: memory of the builder's own (a NewMemory).
	Memory *Memory
	// Stats are the query's stats of its source, on its first frame (the
	// encoder adds its own after them); Builder.SetStats sets them later.
	Stats []data.QueryStat
}

// format is the query format the builder makes, as its errors name it.
func (c *Config) format() string {
	if c.Wide {
		return "time_series_wide"
	}
	return "time_series"
}
