// Typed per-series storage of value columns: scatter, permute and build arrays without boxing.

package flightsql

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// valueStore holds one value column of every series, by series index.
type valueStore interface {
	// addSeries adds an empty series.
	addSeries()
	// extend makes room for n more values of series id.
	extend(id int32, n int)
	// scatter writes a[i] to series ids[i] at its cursor cur[ids[i]], which
	// it advances; rows with ids[i] < 0 are skipped.
	scatter(ids, cur []int32, a arrow.Array)
	// permute reorders the values of series id: the i-th becomes the perm[i]-th.
	permute(id int32, perm []int32)
	// array hands the values of series id over as an array of type dt (no
	// copy) and forgets them.
	array(id int32, dt arrow.DataType) arrow.Array
}

// numeric is what the series split does with one numeric value type.
type numeric struct {
	newStore func() valueStore
	// spread returns an array of n slots holding a[k] at pos[k] (pos[k] < 0:
	// left out) and null elsewhere.
	spread func(a arrow.Array, pos []int32, n int) arrow.Array
	// fill fills a series' column of this type (fillArray).
	fill func(f *FillSpec, times []arrow.Timestamp, a arrow.Array, from, to time.Time, maxPoints int) ([]arrow.Timestamp, arrow.Array, error)
}

// numerics holds every type whose columns entry is numeric (a test checks).
var numerics = map[arrow.Type]*numeric{
	arrow.INT8:    numericOf[int8](),
	arrow.INT16:   numericOf[int16](),
	arrow.INT32:   numericOf[int32](),
	arrow.INT64:   numericOf[int64](),
	arrow.UINT8:   numericOf[uint8](),
	arrow.UINT16:  numericOf[uint16](),
	arrow.UINT32:  numericOf[uint32](),
	arrow.UINT64:  numericOf[uint64](),
	arrow.FLOAT32: numericOf[float32](),
	arrow.FLOAT64: numericOf[float64](),
}

type number interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

func numericOf[T number]() *numeric {
	return &numeric{newStore: func() valueStore { return &numStore[T]{} }, spread: spread[T], fill: fillArray[T]}
}

// numStore holds the values of each series and, once a series had a null,
// its validity.
type numStore[T number] struct {
	vals  [][]T
	valid [][]bool // nil for a series: all valid
	nulls []int
}

func (s *numStore[T]) addSeries() {
	s.vals = append(s.vals, nil)
	s.valid = append(s.valid, nil)
	s.nulls = append(s.nulls, 0)
}

func (s *numStore[T]) extend(id int32, n int) {
	s.vals[id] = extend(s.vals[id], n)
	if v := s.valid[id]; v != nil {
		k := len(v)
		v = extend(v, n)
		for i := k; i < len(v); i++ {
			v[i] = true
		}
		s.valid[id] = v
	}
}

func (s *numStore[T]) scatter(ids, cur []int32, a arrow.Array) {
	src := a.(interface{ Values() []T }).Values()
	vals := s.vals
	if a.NullN() == 0 {
		for i, id := range ids {
			if id >= 0 {
				c := cur[id]
				vals[id][c] = src[i]
				cur[id] = c + 1
			}
		}
		return
	}
	for i, id := range ids {
		if id < 0 {
			continue
		}
		c := cur[id]
		vals[id][c] = src[i]
		cur[id] = c + 1
		if a.IsNull(i) {
			if s.valid[id] == nil {
				v := make([]bool, len(vals[id]), cap(vals[id]))
				for x := range v {
					v[x] = true
				}
				s.valid[id] = v
			}
			s.valid[id][c] = false
			s.nulls[id]++
		}
	}
}

func (s *numStore[T]) permute(id int32, perm []int32) {
	vals := make([]T, len(perm))
	for i, p := range perm {
		vals[i] = s.vals[id][p]
	}
	s.vals[id] = vals
	if v := s.valid[id]; v != nil {
		valid := make([]bool, len(perm))
		for i, p := range perm {
			valid[i] = v[p]
		}
		s.valid[id] = valid
	}
}

func (s *numStore[T]) array(id int32, dt arrow.DataType) arrow.Array {
	vals, nulls := s.vals[id], s.nulls[id]
	var bm []byte
	if nulls > 0 {
		bm = make([]byte, bitutil.BytesForBits(int64(len(vals))))
		for i, ok := range s.valid[id] {
			if ok {
				bitutil.SetBit(bm, i)
			}
		}
	}
	s.vals[id], s.valid[id] = nil, nil
	return arrayOver(dt, vals, bm, nulls)
}

func spread[T number](a arrow.Array, pos []int32, n int) arrow.Array {
	src := a.(interface{ Values() []T }).Values()
	vals := make([]T, n)
	bm := make([]byte, bitutil.BytesForBits(int64(n)))
	valid := 0
	for k, p := range pos {
		if p < 0 || a.IsNull(k) {
			continue
		}
		vals[p] = src[k]
		bitutil.SetBit(bm, int(p))
		valid++
	}
	return arrayOver(a.DataType(), vals, bm, n-valid)
}
