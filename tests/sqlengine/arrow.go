//go:build sqlengines

package sqlengine

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// reader scans one column's value of a row (dest is given to rows.Scan)
// and appends it to the column's builder.
type reader struct {
	dest any
	put  func(b array.Builder) error
}

// kind turns a column of one engine type into an Arrow type and a reader.
// session is the connection's time zone, in which MariaDB writes TIMESTAMP
// values.
type kind func(ct *sql.ColumnType, session *time.Location) (arrow.DataType, reader)

// pgTypes maps pgx's DatabaseTypeName to Arrow. numeric is decimal128 when
// its precision (at most 38) and scale are declared; an unconstrained
// numeric (what sum, avg and division give) has a scale per value, which no
// single decimal128 type holds, so it is the engine's exact text.
var pgTypes = map[string]kind{
	"BOOL":        scalar[bool, *array.BooleanBuilder](arrow.FixedWidthTypes.Boolean),
	"INT2":        scalar[int16, *array.Int16Builder](arrow.PrimitiveTypes.Int16),
	"INT4":        scalar[int32, *array.Int32Builder](arrow.PrimitiveTypes.Int32),
	"INT8":        scalar[int64, *array.Int64Builder](arrow.PrimitiveTypes.Int64),
	"FLOAT4":      scalar[float32, *array.Float32Builder](arrow.PrimitiveTypes.Float32),
	"FLOAT8":      scalar[float64, *array.Float64Builder](arrow.PrimitiveTypes.Float64),
	"NUMERIC":     decimalKind,
	"TEXT":        scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"VARCHAR":     scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"BPCHAR":      scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"NAME":        scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"TIMESTAMPTZ": timeKind(&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}),
	"TIMESTAMP":   timeKind(&arrow.TimestampType{Unit: arrow.Nanosecond}),
	"DATE":        timeKind(arrow.FixedWidthTypes.Date32),
}

// mysqlTypes maps go-sql-driver/mysql's DatabaseTypeName to Arrow. Times
// are read as the text the server writes: DATETIME has no zone (a
// zone-less timestamp), TIMESTAMP is an instant the server writes in the
// session's zone (a UTC timestamp). BOOL is TINYINT in MariaDB.
var mysqlTypes = map[string]kind{
	"TINYINT":           scalar[int8, *array.Int8Builder](arrow.PrimitiveTypes.Int8),
	"SMALLINT":          scalar[int16, *array.Int16Builder](arrow.PrimitiveTypes.Int16),
	"MEDIUMINT":         scalar[int32, *array.Int32Builder](arrow.PrimitiveTypes.Int32),
	"INT":               scalar[int32, *array.Int32Builder](arrow.PrimitiveTypes.Int32),
	"BIGINT":            scalar[int64, *array.Int64Builder](arrow.PrimitiveTypes.Int64),
	"UNSIGNED TINYINT":  scalar[uint8, *array.Uint8Builder](arrow.PrimitiveTypes.Uint8),
	"UNSIGNED SMALLINT": scalar[uint16, *array.Uint16Builder](arrow.PrimitiveTypes.Uint16),
	"UNSIGNED INT":      scalar[uint32, *array.Uint32Builder](arrow.PrimitiveTypes.Uint32),
	"UNSIGNED BIGINT":   scalar[uint64, *array.Uint64Builder](arrow.PrimitiveTypes.Uint64),
	"FLOAT":             scalar[float32, *array.Float32Builder](arrow.PrimitiveTypes.Float32),
	"DOUBLE":            scalar[float64, *array.Float64Builder](arrow.PrimitiveTypes.Float64),
	"DECIMAL":           decimalKind,
	"CHAR":              scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"VARCHAR":           scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"TEXT":              scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"NULL":              scalar[string, *array.StringBuilder](arrow.BinaryTypes.String),
	"DATETIME":          textTimeKind(&arrow.TimestampType{Unit: arrow.Nanosecond}, false),
	"TIMESTAMP":         textTimeKind(&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, true),
	"DATE":              textTimeKind(arrow.FixedWidthTypes.Date32, false),
}

// scalar reads values the driver converts to T.
func scalar[T any, B interface{ Append(T) }](typ arrow.DataType) kind {
	return func(*sql.ColumnType, *time.Location) (arrow.DataType, reader) {
		var v sql.Null[T]
		return typ, reader{dest: &v, put: func(b array.Builder) error {
			if !v.Valid {
				b.AppendNull()
				return nil
			}
			b.(B).Append(v.V)
			return nil
		}}
	}
}

// decimalKind reads the engine's decimal text exactly: into decimal128
// when the column declares a precision Arrow's decimal128 holds, else as
// the text itself.
func decimalKind(ct *sql.ColumnType, _ *time.Location) (arrow.DataType, reader) {
	var v sql.NullString
	p, s, ok := ct.DecimalSize()
	if !ok || p < 1 || p > 38 || s < 0 || s > p {
		return arrow.BinaryTypes.String, reader{dest: &v, put: func(b array.Builder) error {
			if !v.Valid {
				b.AppendNull()
				return nil
			}
			b.(*array.StringBuilder).Append(v.String)
			return nil
		}}
	}
	typ := &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}
	return typ, reader{dest: &v, put: func(b array.Builder) error {
		if !v.Valid {
			b.AppendNull()
			return nil
		}
		n, err := decimal128.FromString(v.String, typ.Precision, typ.Scale)
		if err != nil {
			return fmt.Errorf("column %s: decimal %q: %w", ct.Name(), v.String, err)
		}
		b.(*array.Decimal128Builder).Append(n)
		return nil
	}}
}

// timeKind reads times the driver parses (pgx: timestamptz as the instant,
// timestamp and date as UTC wall clock).
func timeKind(typ arrow.DataType) kind {
	return func(ct *sql.ColumnType, _ *time.Location) (arrow.DataType, reader) {
		var v sql.Null[time.Time]
		return typ, reader{dest: &v, put: func(b array.Builder) error {
			if !v.Valid {
				b.AppendNull()
				return nil
			}
			return appendTime(b, ct.Name(), v.V)
		}}
	}
}

// textTimeKind reads MariaDB's time text, in the session's zone when
// inSession (TIMESTAMP) and as UTC otherwise (DATETIME, DATE). The zero
// date MariaDB allows is null.
func textTimeKind(typ arrow.DataType, inSession bool) kind {
	return func(ct *sql.ColumnType, session *time.Location) (arrow.DataType, reader) {
		loc := time.UTC
		if inSession {
			loc = session
		}
		var v sql.NullString
		return typ, reader{dest: &v, put: func(b array.Builder) error {
			if !v.Valid || strings.HasPrefix(v.String, "0000-00-00") {
				b.AppendNull()
				return nil
			}
			t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", v.String, loc)
			if err != nil {
				t, err = time.ParseInLocation(time.DateOnly, v.String, loc)
			}
			if err != nil {
				return fmt.Errorf("column %s: time %q: %w", ct.Name(), v.String, err)
			}
			return appendTime(b, ct.Name(), t)
		}}
	}
}

// The instants a timestamp[ns] holds.
var (
	minNanos = time.Unix(0, -1<<63)
	maxNanos = time.Unix(0, 1<<63-1)
)

func appendTime(b array.Builder, col string, t time.Time) error {
	switch b := b.(type) {
	case *array.Date32Builder:
		b.Append(arrow.Date32FromTime(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)))
		return nil
	case *array.TimestampBuilder:
		if t.Before(minNanos) || t.After(maxNanos) {
			return fmt.Errorf("column %s: %s is outside timestamp[ns]", col, t)
		}
		b.Append(arrow.Timestamp(t.UnixNano()))
		return nil
	}
	return fmt.Errorf("column %s: no time builder", col)
}
