// The one registration of each Arrow type (typeInfo).

package flightsql

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/extensions"

	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// typeInfo is everything this package does with one Arrow type ID. Each type
// is registered once (init, below), and every decision the package makes by
// type reads its entry: there is no other table keyed by Arrow type.
type typeInfo struct {
	// normalise plans how a column of the type reaches a type Grafana reads
	// (normalise.go). nil: the type is not registered, and normalise
	// decides what it becomes.
	normalise normaliser
	// text appends a value as the engine's text (appendText); nil: Arrow's
	// ValueStr.
	text valueWriter
	// json appends a value as JSON (appendJSON); nil: its text, as a JSON
	// string.
	json valueWriter
	// grafana is set for the types Grafana reads, which every column has
	// after normalisation: the field's type, how to copy and print a value.
	grafana *column
	// numeric is set for the numbers among those, the value columns of
	// series (the other columns are labels): how package series stores,
	// spreads and fills them.
	numeric *series.Numeric
	// decimal reads the unscaled values of a decimal type.
	decimal *decimalReader
	// times reads a column of the type as a time column
	// (series.TimeValues); nil: the type cannot be the time column.
	times series.TimeValues
}

// typeIDs bounds the Arrow type IDs (arrow-go v18 has 44): an ID beyond it
// is a type this package does not know, as an unregistered one is.
const typeIDs = 64

// registry is indexed by Arrow type ID: appendText and appendJSON look a
// type up for every value, which an array index does faster than a map.
var registry [typeIDs]typeInfo

// unregistered is the entry of the IDs beyond typeIDs: all nil.
var unregistered typeInfo

// typeOf returns the registration of type id (all nil when there is none).
func typeOf(id arrow.Type) *typeInfo {
	if uint(id) < typeIDs {
		return &registry[id]
	}
	return &unregistered
}

// register declares type id, once, with its normaliser.
func register(id arrow.Type, t typeInfo) {
	switch {
	case uint(id) >= typeIDs:
		panic(fmt.Sprintf("flightsql: internal: type %s has ID %d, beyond typeIDs", id, id))
	case registry[id].normalise != nil:
		panic(fmt.Sprintf("flightsql: internal: type %s registered twice", id))
	case t.normalise == nil:
		panic(fmt.Sprintf("flightsql: internal: type %s registered without a normaliser", id))
	}
	registry[id] = t
}

// seriesType is the series split's part of the registration of type id,
// handed to package series (series.Config.Types): its numeric store, its
// time values, and Grafana's text of its values as labels.
func seriesType(id arrow.Type) series.Type {
	t := typeOf(id)
	st := series.Type{Numeric: t.numeric, Times: t.times}
	if t.grafana != nil {
		st.Text = t.grafana.text
	}
	return st
}

// withTimes and withColumn return t reading a time column with f, and read
// by Grafana as c.
func (t typeInfo) withTimes(f series.TimeValues) typeInfo { t.times = f; return t }
func (t typeInfo) withColumn(c *column) typeInfo          { t.grafana = c; return t }

func init() {
	registerNumbers()
	registerTimes()
	registerBytes()
	registerNested()
	registerExtensions()
}

// registerNumbers: numbers pass through and are the values of series;
// integer Unix times (int32, int64) may be the time column; float16,
// which Grafana does not read, becomes float32; decimals become float64.
func registerNumbers() {
	register(arrow.INT8, numberType[int8, *array.Int8, *array.Int8Builder](intText))
	register(arrow.INT16, numberType[int16, *array.Int16, *array.Int16Builder](intText))
	register(arrow.INT32, numberType[int32, *array.Int32, *array.Int32Builder](intText).
		withTimes(series.EpochValues[int32]))
	register(arrow.INT64, numberType[int64, *array.Int64, *array.Int64Builder](intText).
		withTimes(series.EpochValues[int64]))
	register(arrow.UINT8, numberType[uint8, *array.Uint8, *array.Uint8Builder](uintText))
	register(arrow.UINT16, numberType[uint16, *array.Uint16, *array.Uint16Builder](uintText))
	register(arrow.UINT32, numberType[uint32, *array.Uint32, *array.Uint32Builder](uintText))
	register(arrow.UINT64, numberType[uint64, *array.Uint64, *array.Uint64Builder](uintText))
	register(arrow.FLOAT32, floatType[float32, *array.Float32, *array.Float32Builder](32))
	register(arrow.FLOAT64, floatType[float64, *array.Float64, *array.Float64Builder](64))

	register(arrow.FLOAT16, typeInfo{normalise: fixed(arrow.PrimitiveTypes.Float32, convertFloat16), json: float16JSON})
	register(arrow.DECIMAL32, decimalType(intDecimal[decimal.Decimal32, *array.Decimal32]()))
	register(arrow.DECIMAL64, decimalType(intDecimal[decimal.Decimal64, *array.Decimal64]()))
	register(arrow.DECIMAL128, decimalType(decimal128Reader))
	register(arrow.DECIMAL256, decimalType(decimal256Reader))

	register(arrow.BOOL, typeInfo{normalise: passThrough, json: boolJSON,
		grafana: valueColumn[bool, *array.Boolean, *array.BooleanBuilder](frame.TSBoolean, strconv.AppendBool)})
	register(arrow.NULL, typeInfo{normalise: fixed(arrow.BinaryTypes.String, allNull), json: nullJSON})
}

// registerTimes: timestamps and dates become timestamp[ns]; pure time spans
// are numbers with a duration unit; times of day and intervals that count
// months (which have no fixed length) are text.
func registerTimes() {
	register(arrow.TIMESTAMP, typeInfo{normalise: normaliseTimestamp, text: timestampText, times: series.TimestampValues,
		grafana: valueColumn[arrow.Timestamp, *array.Timestamp, *array.TimestampBuilder](frame.TSTime, timeText)})
	register(arrow.DATE32, typeInfo{normalise: fixed(frame.Timestamp, scaleToNS[arrow.Date32, *array.Date32](int64(24*3600*1e9))), text: date32Text})
	register(arrow.DATE64, typeInfo{normalise: fixed(frame.Timestamp, scaleToNS[arrow.Date64, *array.Date64](1e6)), text: date64Text})
	register(arrow.TIME32, textType(timeOfDayText[arrow.Time32, *array.Time32]))
	register(arrow.TIME64, textType(timeOfDayText[arrow.Time64, *array.Time64]))

	register(arrow.DURATION, typeInfo{normalise: normaliseDuration, text: durationText})
	register(arrow.INTERVAL_DAY_TIME, typeInfo{normalise: withUnit(arrow.PrimitiveTypes.Int64, dayTimeToMS, "ms"), text: dayTimeText})
	register(arrow.INTERVAL_MONTHS, textType(monthsText))
	register(arrow.INTERVAL_MONTH_DAY_NANO, textType(monthDayNanoText))
}

// registerBytes: text is utf8; opaque bytes are base64 text. A normalised
// binary column holds JSON (Grafana reads an Arrow binary column as JSON).
func registerBytes() {
	register(arrow.STRING, typeInfo{normalise: passThrough,
		grafana: valueColumn[string, *array.String, *array.StringBuilder](frame.TSString, appendRaw[string])})
	register(arrow.LARGE_STRING, typeInfo{normalise: fixed(arrow.BinaryTypes.String, toString[*array.LargeString])})
	register(arrow.STRING_VIEW, typeInfo{normalise: fixed(arrow.BinaryTypes.String, toString[*array.StringView])})

	register(arrow.BINARY, base64Type[*array.Binary]().withColumn(
		valueColumn[[]byte, *array.Binary, *array.BinaryBuilder](frame.TSOther, appendRaw[[]byte])))
	register(arrow.LARGE_BINARY, base64Type[*array.LargeBinary]())
	register(arrow.BINARY_VIEW, base64Type[*array.BinaryView]())
	register(arrow.FIXED_SIZE_BINARY, base64Type[*array.FixedSizeBinary]())
}

// registerNested: lists, structs, maps and unions become JSON; encoded
// columns their values, normalised; extension types by name
// (extensionTypes), others as their storage.
func registerNested() {
	register(arrow.LIST, nestedType(jsonList))
	register(arrow.LARGE_LIST, nestedType(jsonList))
	register(arrow.FIXED_SIZE_LIST, nestedType(jsonList))
	register(arrow.LIST_VIEW, nestedType(jsonList))
	register(arrow.LARGE_LIST_VIEW, nestedType(jsonList))
	register(arrow.STRUCT, nestedType(jsonStruct))
	register(arrow.MAP, nestedType(jsonMap))
	register(arrow.SPARSE_UNION, nestedType(unionJSON))
	register(arrow.DENSE_UNION, nestedType(unionJSON))

	register(arrow.DICTIONARY, typeInfo{normalise: normaliseEncoded, text: encodedText, json: encodedJSON})
	register(arrow.RUN_END_ENCODED, typeInfo{normalise: normaliseEncoded, text: encodedText, json: encodedJSON})
	register(arrow.EXTENSION, typeInfo{normalise: normaliseExtension, text: extensionText, json: extensionJSON})
}

// extensionInfo is what this package does with one extension type it
// knows (extensionOf); an extension type it does not know is normalised,
// written and read as its storage type.
type extensionInfo struct {
	normalise  normaliser
	text, json valueWriter // text is set; json nil: the text as a JSON string
}

// extensionTypes are the canonical extension types, read with arrow-go's
// registry (package arrow/extensions, so the IPC reader builds them):
// arrow.uuid is its text 8-4-4-4-12, bool8 a boolean, arrow.json JSON (a
// JSON string when it is not valid JSON). arrow.opaque is as opaqueForms
// says.
var extensionTypes map[string]extensionInfo

func registerExtensions() {
	extensionTypes = map[string]extensionInfo{
		extensions.NewUUIDType().ExtensionName(): {normalise: fixed(arrow.BinaryTypes.String, stringsOf(appendText)),
			text: valueStrText, json: uuidJSON},
		extensions.NewBool8Type().ExtensionName(): {normalise: fixed(arrow.FixedWidthTypes.Boolean, bool8ToBool), text: valueStrText, json: bool8JSON},
		(&extensions.JSONType{}).ExtensionName():  {normalise: toJSON, text: valueStrText, json: jsonExtensionJSON},
	}
}

// opaqueForms are the types DuckDB's lossless Arrow export
// (arrow_lossless_conversion) marks opaque: HUGEINT and UHUGEINT (16 bytes,
// little-endian) become numbers, TIMETZ and BIT their DuckDB text. Others
// (BIGNUM, say) are shown as base64 with a notice (opaqueNotice).
var opaqueForms = map[opaqueKey]opaqueForm{
	{"DuckDB", "hugeint"}:  {16, opaqueNumber(int128Reader)},
	{"DuckDB", "uhugeint"}: {16, opaqueNumber(uint128Reader)},
	{"DuckDB", "time_tz"}:  {8, opaqueText(timeTZText)},
	{"DuckDB", "bit"}:      {0, opaqueText(bitText)},
}

// The helpers below derive a type's whole entry from what tells it apart.

// numberType is a number T: passed through, Grafana's "number", the values
// of series, its text (and, unless json says otherwise, its JSON) written
// by text.
func numberType[T series.Number, A valueArray[T], B valueBuilder[T]](text func([]byte, T) []byte) typeInfo {
	c := valueColumn[T, A, B](frame.TSNumber, text)
	return typeInfo{normalise: passThrough, text: c.text, json: c.text, grafana: c, numeric: series.NumericOf[T]()}
}

// floatType is a float of bits bits; in JSON NaN and infinities are strings.
func floatType[T float32 | float64, A valueArray[T], B valueBuilder[T]](bits int) typeInfo {
	t := numberType[T, A, B](floatText[T](bits))
	t.json = func(dst []byte, a arrow.Array, i int) []byte { return jsonFloat(dst, float64(a.(A).Value(i)), bits) }
	return t
}

// decimalType is a decimal read by r: float64, its text and JSON its exact
// digits.
func decimalType(r decimalReader) typeInfo {
	return typeInfo{normalise: fixed(arrow.PrimitiveTypes.Float64, decimalToFloat), text: decimalText, json: decimalText, decimal: &r}
}

// textType is a type shown as its engine text, written by text.
func textType(text valueWriter) typeInfo {
	return typeInfo{normalise: fixed(arrow.BinaryTypes.String, stringsOf(appendText)), text: text}
}

// base64Type is opaque bytes, shown (and written as text) in base64.
func base64Type[A valueArray[[]byte]]() typeInfo {
	return typeInfo{normalise: fixed(arrow.BinaryTypes.String, stringsOf(base64Text[A])), text: base64Text[A]}
}

// nestedType is a nested type, shown as JSON written by json.
func nestedType(json valueWriter) typeInfo {
	return typeInfo{normalise: toJSON, json: json}
}
