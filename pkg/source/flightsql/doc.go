// Package flightsql is Quiver's Apache Arrow Flight SQL source: it runs a
// query's SQL on a Flight SQL server and turns the Arrow stream into Grafana
// frames while it arrives, without copying it into Go values first.
//
// It owns the connection (TLS with CA / client certificate / skip-verify /
// server name; authentication none, bearer token, or username + password
// through the Flight SQL basic handshake, re-authenticating once when the
// server rejects the bearer token; custom gRPC headers), the macros, the
// normalisation of Arrow types to what Grafana reads, the split into frames,
// the row and byte limits, the health check and the schema-browsing
// resources. It imports pkg/source, pkg/settings, arrow-go and the SDK's data
// package; never the SDK's backend package, never pkg/plugin.
//
// # Reading
//
// The default catalog and schema settings are sent once per connection, before
// the first query, as the session options "catalog" and "schema"
// (SetSessionOptions; the cookie middleware keeps the session). A server
// without session options answers Unimplemented once and is not asked again;
// an option the server refuses fails the query, naming it.
//
// Every endpoint of the FlightInfo is read, in order; an endpoint with a
// location is read from that location (grpc, grpc+tcp, grpc+tls, or
// arrow-flight-reuse-connection), with the same credentials. A plaintext
// location is refused while TLS is on. A stream that fails after some batches
// fails the query: the reader's error is checked after its loop. Rows beyond
// the rowLimit setting, and bytes beyond the byteLimit setting (counted as
// the Arrow buffer sizes of the batches read, so approximate), are not read:
// the stream is cancelled and the first frame carries a warning notice.
//
// # Formats
//
//   - time_series: the time column is the column named "time" when it is a
//     timestamp, else the first timestamp column, else an integer column named
//     "time" holding Unix time (seconds, milliseconds, microseconds or
//     nanoseconds, told apart by magnitude as Grafana's SQL data sources do).
//     Numeric columns are values; every other column is a label (null labels
//     are left out). One frame per (label set × value column), frame type
//     timeseries-multi, each sorted by time; rows with a null time are left
//     out with a notice.
//   - table: one frame, the columns as returned (normalised).
//   - logs: one log-lines frame: the time column, the body (the first text
//     column named body, message, msg, line or log, else the first text
//     column) and a JSON "labels" column holding the other columns of each
//     row as text; preferredVisualisationType "logs".
//
// With no format, time_series is used when the result has a time column,
// table otherwise.
//
// # Types
//
// One table (conversions, keyed by Arrow type ID) says what each type
// becomes: timestamps of any unit and zone → timestamp[ns] without zone
// (the same instant); date32/date64 → timestamp[ns] at midnight UTC;
// decimal32/64/128/256 → float64 (notice when the declared precision exceeds
// 15 digits); float16 → float32; large_utf8, utf8_view → utf8; dictionaries →
// their values, normalised; duration → int64 with the unit in the field
// config (ns, µs, ms, s); time32/time64 → text (15:04:05.000); extension
// types (uuid, …) → their text form; null → an all-null text column;
// binary, large_binary, binary_view, fixed_size_binary → base64 text;
// lists, structs, maps and unions → JSON in a binary column (Grafana reads a
// binary column as JSON values, so opaque bytes may never go into one).
// Anything else (intervals, run-end encoded) fails the query naming the
// column and its type.
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
// setting; dialect.go has the table, docs/dialects.md the exact SQL of
// every macro in every dialect, checked by TestDialectsDoc). auto reads the
// server's FLIGHT_SQL_SERVER_NAME and _VERSION by GetSqlInfo once per
// connection, before the first query that needs it, and picks: DuckDB →
// duckdb; InfluxDB/IOx, DataFusion, GreptimeDB, CnosDB, Datalayers,
// Seafowl, Ballista → datafusion; Dremio → dremio; PostgreSQL → postgres;
// Doris, StarRocks, MySQL, MariaDB → mysql; anything else, and servers
// without GetSqlInfo (an error other than a connection, authentication or
// timeout failure) → ansi, which refuses $__timeGroup rather than guess.
// The health check names the dialect. For a range from 2026-01-01T00:00:00Z
// to 01:00:00Z:
//
//	$__timeFilter(col)  (col >= F AND col <= T), F and T as $__timeFrom(), $__timeTo():
//	    datafusion '2026-01-01T00:00:00.000Z'
//	    duckdb     '2026-01-01 00:00:00.000+00' (untyped: takes the column's type,
//	               TIMESTAMP or TIMESTAMPTZ, and its offset is read either way)
//	    postgres   '2026-01-01 00:00:00.000+00'
//	    dremio     TIMESTAMP '2026-01-01 00:00:00.000' (Dremio's timestamps hold UTC)
//	    mysql      '2026-01-01 00:00:00.000' (DATETIME holds UTC)
//	    ansi       TIMESTAMP '2026-01-01 00:00:00.000+00:00'
//	$__timeGroup(col, 5m[, fill]), buckets aligned on the Unix epoch in UTC:
//	    datafusion date_bin(INTERVAL '300 seconds', col)
//	    duckdb     time_bucket(INTERVAL '300 seconds', col), plus an INTERVAL offset
//	               moving time_bucket's 2000-01-03 origin onto the epoch when the
//	               width does not divide the gap (7m: INTERVAL '60 seconds')
//	    postgres   to_timestamp(floor(extract(epoch from col) / 300) * 300)
//	    dremio     TO_TIMESTAMP(FLOOR(EXTRACT(EPOCH FROM col) / 300) * 300), whole seconds only
//	    mysql      DATE_ADD(CAST('1970-01-01 00:00:00' AS DATETIME), INTERVAL
//	               FLOOR(TIMESTAMPDIFF(SECOND, CAST('1970-01-01 00:00:00' AS DATETIME), col)
//	               / 300) * 300 SECOND), whole seconds only
//	    ansi       none: an error naming the macro and the dialect
//	    The interval may be quoted and may be $__interval; units ms, s, m, h, d, w.
//	$__timeGroupAlias(col, 5m[, fill])  the same, followed by AS "time" (AS `time` in mysql)
//	$__unixEpochGroup(col, 5m)  (CAST(floor(col / 300) AS BIGINT) * 300), an integer;
//	    mysql (col DIV 300 * 300). For integer Unix seconds, whole seconds only.
//	$__unixEpochFilter(col)    (col >= 1767225600 AND col <= 1767229200), seconds
//	$__unixEpochMsFilter(col), $__unixEpochNanoFilter(col): milliseconds, nanoseconds
//	$__unixEpochFrom(), $__unixEpochTo() and the Ms / Nano variants: integers
//	$__interval                the query interval as Grafana writes it (1m, 30s, 500ms)
//	$__interval_ms             the query interval in milliseconds
//	$__catalog, $__schema      the catalog and schema settings, as written there.
//
// The fill of $__timeGroup / $__timeGroupAlias is NULL, previous or a
// number, as in Grafana's SQL data sources; it leaves the SQL alone and is
// returned with the expansion, for the time_series frames to be filled
// after the query (fill.go: one point per interval over the range; a query
// has one fill). Wiring it into the frames belongs to series.go.
//
// Expansion is linear in the query's length whatever the nesting: a query
// longer than 1 MiB is refused, so are macros nested more than 16 deep in
// macro arguments and expansions whose text, counted at every nesting
// level, would exceed 32 × the query's length + 256 KiB (a $__timeFilter
// nested in a $__timeFilter repeats it twice, and so on). Expansion checks
// for cancellation every 64 macros.
package flightsql
