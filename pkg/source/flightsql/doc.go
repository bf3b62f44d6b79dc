// Package flightsql is Quiver's Apache Arrow Flight SQL source: it runs a
// query's SQL on a Flight SQL server and turns the Arrow stream into Grafana
// frames while it arrives, without copying it into Go values first.
//
// It owns the connection (TLS with CA / client certificate / skip-verify /
// server name; authentication none, bearer token, or username + password
// through the Flight SQL basic handshake, re-authenticating once when the
// server rejects the bearer token; custom gRPC headers), the macros, the
// normalisation of Arrow types to what Grafana reads, the table and logs
// frames, the row and byte limits, the health check and the schema-browsing
// resources. The split into series (formats time_series and
// time_series_wide, and the fill) is package series below it
// (pkg/source/flightsql/series), which the query loop feeds batch by batch
// and finishes, handing it its part of each type's registration. It imports
// pkg/source, pkg/settings, pkg/frame, package series, arrow-go and the
// SDK's data package; never the SDK's backend package, never pkg/plugin.
//
// # Reading
//
// The default catalog and schema settings are sent once per connection, before
// the first query, as the session options "catalog" and "schema"
// (SetSessionOptions; the cookie middleware keeps the session). A server
// without session options answers Unimplemented once and is not asked again;
// an option the server refuses fails the query, naming it. With
// oauthPassThru on, one connection serves every user: it keeps no cookie
// and so no server session, and sends no session options (catalog and schema
// then only default schema browsing and the macros). A call without a
// forwarded identity is refused (ErrNoSignedInUser, "no signed-in user to
// forward") unless noForwardedIdentity is "configured", which sends it with
// the configured credentials; the health check says which rule applies.
//
// Every endpoint of the FlightInfo is read, in order; an endpoint with a
// location is read from that location (grpc, grpc+tcp, grpc+tls, or
// arrow-flight-reuse-connection), with the same credentials. A plaintext
// location is refused while TLS is on, and so is a location on a host other
// than the address's and those of allowedLocationHosts (ErrLocationHost):
// such a host is not dialled at all. A stream that fails after some batches
// fails the query: the reader's error is checked after its loop. Rows beyond
// the rowLimit setting, and bytes beyond the byteLimit setting (counted as
// the Arrow buffer sizes of the batches read, so approximate), are not read:
// the stream is cancelled and the first frame carries a warning notice.
//
// # Formats
//
// Every frame of a query carries meta.executedQueryString, the SQL sent
// after macros (Grafana's query inspector shows it). An upstream failure
// names the SQL sent, cut after 500 bytes with "…".
//
//   - time_series: the time column is the column named "time" when it is a
//     timestamp, else the first timestamp column, else an integer column named
//     "time" holding Unix time (seconds, milliseconds, microseconds or
//     nanoseconds, told apart by magnitude as Grafana's SQL data sources do).
//     Numeric columns are values; every other column is a label (null labels
//     are left out; an empty one is kept). One frame per (label set × value
//     column), frame type timeseries-multi 0.1, each sorted by time (stable:
//     rows of one time keep their order); rows with a null time are left out
//     with a notice; without series, one frame of the format's type without
//     fields (the data-plane "no data" answer, which alert rules read as
//     NoData) carries the notices and the SQL. A result of a time, a text
//     column named "metric" and one value names each series' value field by
//     its metric, without labels, as Grafana's SQL data sources do. The
//     time field keeps its name from the SQL: the data-plane contract
//     treats a time field's name as display only.
//     Frames are ordered as Grafana's SQL data sources order their fields
//     (data.LongToWide): by the label values, column by column in the
//     result's order (a null one as empty, before an empty one), and a
//     series' frames by value column name, whatever order the rows arrive
//     in, so that colours and legends stay put from one refresh to the next
//     and match a dashboard made on those data sources. With several value
//     columns, those list every series' first column first; these frames
//     keep a series' columns together, handed over as each series is done.
//   - time_series_wide: the same series as one timeseries-wide 0.1 frame:
//     one time field holding the union of the series' times, sorted, and one
//     value field per (label set × value column), with its labels, by value
//     column name and then in the order above, as Grafana's LongToWide
//     orders them; null where a series has no point at a time. A series with
//     several points at one time keeps the last, as Grafana's LongToWide
//     does (a notice counts the others). For series that share their times (GROUP BY time bucket): one
//     time column instead of one per series is about half the bytes and a
//     fifth of Grafana's decoding (docs/journal/benchmarks.md). A result whose
//     series share so few times that the frame would hold more than four
//     cells per point is refused: choose time_series.
//   - table: one frame, the columns as returned (normalised). Grafana's
//     table panel shows one frame at a time (a frame picker when a query
//     returns several), so a table stays one frame. When the sink takes a
//     frame in parts (source.PartSink: the plugin, for the Arrow format),
//     each normalised batch is handed over as the next part as it arrives
//     (smaller ones joined first; a part whose memory is its own lent, see
//     source.PartLender), and the frame (one Arrow IPC file of those
//     batches) is closed with
//     its meta (executedQueryString, the notices found while converting)
//     at the end; otherwise the batches' columns are kept as they arrive
//     and joined once at the end.
//   - logs: one log-lines frame following Grafana's logs data-plane contract
//     (fields found by name and type, public/app/features/logs/logsFrame.ts):
//     "timestamp" (the time column), "body" (the first text column named
//     body, message, msg, line or log, else the first text column),
//     "severity" as text (the first column named severity, level, lvl,
//     loglevel, log_level, severity_text or detected_level, names compared
//     ignoring case), "id" as text (a column named id), and "labels", a JSON
//     object holding the other columns of each row as text (nulls left out);
//     preferredVisualisationType "logs".
//
// With no format, time_series is used when the result has a time column,
// table otherwise.
//
// # Splitting into series
//
// Batches are split into series as they arrive, column-wise, by package
// series (its doc.go says how, and what memory it keeps across queries). A
// batch's values are copied out and the batch released (its message's body
// goes back to the series pool, for a later message or a series' arrays:
// bodies.go). Batches are read from the
// stream on a goroutine of their own, two ahead of the split.
//
// # Types
//
// Each Arrow type is registered once (types.go), and that registration says
// everything the package does with it: what a column becomes, its text and
// JSON, whether Grafana reads it, whether it is a series value or can be the
// time column (what package series does with those, which it builds and
// seriesType hands it). A column of a type not registered becomes text
// (Arrow's own text form) with a notice naming it (normalise). No column
// type fails the query, and a column whose conversion fails on some value is
// left out (all null) with a notice naming it; the other columns are still
// shown.
//
//   - Timestamps of any unit and zone → timestamp[ns] without zone (the same
//     instant); date32/date64 → timestamp[ns] at midnight UTC. A value that
//     int64 nanoseconds cannot hold (before 1677-09-21 or after 2262-04-11)
//     and DuckDB's infinity and -infinity (the largest value of the type and
//     its negation) become null, with a notice naming the column.
//   - Decimals (32, 64, 128, 256 bits) → float64, correctly rounded: one IEEE
//     division when the unscaled value and the power of ten are exact
//     float64s, strconv.ParseFloat of the decimal's exact text otherwise
//     (not arrow-go's ToFloat64, whose n × 10^-scale is 1 ULP off for a
//     tenth to a third of short decimals). The "lost precision" notice comes
//     only when a value does not read back as itself at its scale (more
//     significant digits than a float64 keeps; an integer above 2^53 that is
//     no float64): DuckDB's sum(BIGINT), typed DECIMAL(38,0), gets none for
//     ordinary sums.
//   - Pure time spans are numbers with a duration unit in the field config, so
//     Grafana formats them: duration → int64 in its unit (ns, µs, ms, s);
//     day_time interval → int64 milliseconds (a day counted as 24 h).
//     Intervals that count months (month_day_nano, which is what DuckDB sends
//     for INTERVAL, and year_month) have no fixed length, so they are text,
//     in DuckDB's (and PostgreSQL's) form rather than ISO 8601, because that
//     is what the same value looks like in the engine's own clients:
//     "1 year 2 months 3 days 04:05:06.5", "-1 day -01:00:00", "00:00:00".
//   - time32/time64 → text 15:04:05[.fraction], trailing zeros dropped;
//     float16 → float32; large_utf8, utf8_view → utf8; dictionaries and
//     run-end encoded columns → their values, normalised; null → an all-null
//     text column; binary, large_binary, binary_view, fixed_size_binary →
//     base64 text.
//   - Canonical extension types, read with arrow-go's registry (package
//     arrow/extensions, so the IPC reader builds them): arrow.uuid → text
//     8-4-4-4-12; arrow.bool8 → bool; arrow.json → a JSON column (Arrow
//     binary, which Grafana reads as JSON values), so the table shows the
//     value and transformations such as "Extract fields" can read it; text
//     that is not valid JSON is kept as a JSON string. arrow.opaque: the
//     types DuckDB's arrow_lossless_conversion marks opaque are read
//     (HUGEINT, UHUGEINT → float64 as decimals are; TIMETZ, BIT → DuckDB's
//     text); any other opaque value is base64 (or its text when stored as
//     text) with a notice naming the column and the vendor's type. Other
//     extension types are normalised as their storage type.
//   - Lists (all kinds: list, large, fixed-size, view), structs, maps and
//     unions → JSON in a binary column, written as DuckDB's to_json writes
//     them: maps as objects with text keys ({"1":"a"}), a union as an object
//     naming the member that holds the value ({"num":2}; a union holding a
//     null is null), decimals as numbers with their exact digits,
//     timestamps, dates, times and intervals as DuckDB's text
//     ("2024-01-02 03:04:05.5+00", the local time and offset in the type's
//     zone; a zone the plugin cannot find is UTC, with a notice), NULL as
//     null. Two differences, as JSON has no form for them:
//     blobs are base64 strings (DuckDB writes its \x escapes), NaN and
//     infinities are the strings "NaN", "Infinity", "-Infinity" (DuckDB
//     writes bare NaN, which no JSON reader accepts).
//
// Known engine limits: DuckDB's default Arrow export sends UUID and JSON as
// utf8, HUGEINT and UHUGEINT as decimal(38,0) (a UHUGEINT above 2^127 arrives
// wrapped to a negative number), TIMETZ as time64 without its offset, and BIT
// as its internal bytes; SET arrow_lossless_conversion = true sends them as
// the extension types above. Cast them in the SQL when that setting is off.
//
// # Macros
//
// Macros are expanded before the SQL is sent, outside string literals,
// quoted identifiers ("x", `x`) and comments (--, /* */). Quotes inside
// literals are escaped by doubling them (standard SQL); backslash escapes
// are not recognised. Arguments may hold macros ($__timeGroup(ts,
// $__interval)). An unknown $__name is an error that lists the known macros.
//
// The SQL of the time macros depends on the SQL dialect (the dialect
// setting; dialect.go has the table). docs/dialects.md has the exact SQL of
// every macro in every dialect (checked by TestDialectsDoc), the servers
// auto picks each dialect for, and whose answer it keeps. A server without
// GetSqlInfo (an error other than a connection, authentication or timeout
// failure) gets ansi, which refuses $__timeGroup and $__timeEpoch rather
// than guess. The macros are $__timeFilter, $__timeFrom, $__timeTo,
// $__timeGroup, $__timeGroupAlias, $__unixEpochGroup,
// $__unixEpochGroupAlias, $__time, $__timeEpoch, $__unixEpochFilter,
// $__unixEpochFrom, $__unixEpochTo (and their Ms and Nano variants),
// $__interval, $__interval_ms, $__catalog and $__schema.
//
// The fill of $__timeGroup / $__timeGroupAlias / $__unixEpochGroup /
// $__unixEpochGroupAlias is NULL, previous or a number, as in Grafana's SQL
// data sources; it leaves the SQL alone (a query has one fill, whichever
// macro gives it) and fills every series of the time_series and
// time_series_wide frames after the query (package series): each series
// gets one point per interval, at the multiples of the interval since the
// Unix epoch from the one at or before the range's start to its end
// included. A point
// takes the value of the series' last row in (point − interval, point] (so
// a $__timeGroup bucket keeps its own row); a point without one is null, the
// number (converted to the column's type, integers towards zero), or for
// previous the last row before it (null when there is none). Rows outside
// the points are left out. The points of all series and value columns
// together may not exceed maxPoints (rowLimit when maxPoints is not set):
// past that the query fails with an error naming the setting. Table and
// logs frames are not filled. The series' time is the result's time column
// (series.TimeColumn): an integer $__unixEpochGroup is it when it is named
// time ($__unixEpochGroupAlias, or AS time) and no timestamp column is
// selected, and its Unix seconds are filled as a $__timeGroup bucket is.
//
// Expansion is linear in the query's length whatever the nesting: a query
// longer than 1 MiB is refused, so are macros nested more than 16 deep in
// macro arguments and expansions whose text, counted at every nesting
// level, would exceed 32 × the query's length + 256 KiB (a $__timeFilter
// nested in a $__timeFilter repeats it twice, and so on). Expansion checks
// for cancellation every 64 macros.
package flightsql
