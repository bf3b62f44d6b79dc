// This file is over 400 lines: it is the table of every setting (each
// with its help text), which the parser, Validate, the frontend and the
// README are all generated or read from, and is read as one list.

package settings

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Upstreams accepted in jsonData.upstream.
const (
	UpstreamDemo      = "demo"
	UpstreamFlightSQL = "flightsql"
)

// Codecs accepted in jsonData.codec: package codec's names (see Codecs);
// package codec's DefaultKind is the default (a test in package plugin
// checks both). CodecAuto chooses per frame (codec.Auto) and takes no level.
const (
	CodecAuto    = "auto"
	CodecZstd    = "zstd"
	CodecLZ4     = "lz4"
	CodecNone    = "none"
	DefaultCodec = CodecAuto
)

// Values of jsonData.codecPreference, what codec auto saves first; package
// codec's Preferences and DefaultPreference say the same.
const (
	PreferCPU         = "cpu"
	PreferBytes       = "bytes"
	DefaultPreference = PreferCPU
)

// Values of jsonData.replyFormat: the format of a QueryData reply's frames.
// Grafana decodes a reply by the format the reply declares, whatever it
// asked for, and every consumer (panels, alerting, expressions) works on
// the decoded frames; decoding Arrow costs Grafana less than half of
// decoding JSON (docs/performance.md). ReplyArrow (the default) answers in
// Arrow, ReplyJSON in JSON, ReplyRequested in what Grafana asked for. A
// chunked request is always answered in the format it asked for: Grafana's
// chunked stream to the browser has refused chunks in any other.
const (
	ReplyArrow         = "arrow"
	ReplyJSON          = "json"
	ReplyRequested     = "requested"
	DefaultReplyFormat = ReplyArrow
)

// Auth types accepted in jsonData.authType.
const (
	AuthNone     = "none"
	AuthToken    = "token"
	AuthPassword = "password"
)

// Values of jsonData.noForwardedIdentity: what a call without a forwarded
// user identity gets while oauthPassThru is on. NoIdentityRefuse (the
// default) refuses it; NoIdentityConfigured sends it with the configured
// credentials, an administrator's explicit choice (alert rules without a
// user, for example).
const (
	NoIdentityRefuse     = "refuse"
	NoIdentityConfigured = "configured"
)

// SQL dialects accepted in jsonData.dialect. DialectAuto (the default) asks
// the server for its name (GetSqlInfo) and picks one of the others.
const (
	DialectAuto       = "auto"
	DialectDataFusion = "datafusion" // InfluxDB 3, GreptimeDB and other DataFusion-based servers
	DialectDuckDB     = "duckdb"
	DialectPostgres   = "postgres" // PostgreSQL-compatible
	DialectDremio     = "dremio"
	DialectMySQL      = "mysql" // MySQL-compatible: Apache Doris, StarRocks
	DialectANSI       = "ansi"  // generic fallback
)

// Dialects lists the accepted values of jsonData.dialect, DialectAuto first.
var Dialects = []string{DialectAuto, DialectDataFusion, DialectDuckDB, DialectPostgres, DialectDremio, DialectMySQL, DialectANSI}

// Defaults and ranges of the numeric settings; Table is where they are used.
const (
	// DefaultMinSavings: a body buffer is stored raw unless compression
	// saves at least 10% of it. Below that the bytes saved on the wire do
	// not pay for Grafana's decompression of the buffer: a float column that
	// saves 3% under zstd costs Grafana's decoder 8% more CPU for its frame
	// (docs/journal/benchmarks.md, BenchmarkDecode).
	DefaultMinSavings = 0.1
	MaxMinSavings     = 0.9

	// MaxJSONData bounds the jsonData Quiver parses: its settings take a
	// few hundred bytes.
	MaxJSONData = 1 << 20

	DefaultMaxSeries = 10_000
	MaxMaxSeries     = 1_000_000
	DefaultMaxPoints = 10_000_000
	MaxMaxPoints     = 1_000_000_000

	DefaultFlightSQLTimeout   = 30 // seconds
	DefaultFlightSQLRowLimit  = 1_000_000
	DefaultFlightSQLByteLimit = 256 << 20

	DefaultIncrementalOverlap = 300 // seconds
	DefaultResultCacheBytes   = 64 << 20
	DefaultRedisKeyPrefix     = "quiver:"
	DefaultRedisTTL           = 86400 // seconds
)

// Type is the JSON type of a setting's value.
type Type string

// Types of settings. A Secret setting lives in secureJsonData, every other
// one in jsonData.
const (
	String  Type = "string"
	Bool    Type = "boolean"
	Integer Type = "integer"
	Number  Type = "number"
	Secure  Type = "secret"
)

// Setting describes one key of jsonData or secureJsonData: everything the
// parser, Validate, the frontend (src/generated/settings.ts) and the README
// know about it.
type Setting struct {
	// Key is the JSON key; "headerNameN" and "headerValueN" stand for the
	// numbered keys headerName1, headerName2…
	Key  string
	Type Type
	// Default applies when the key is absent, null or "": a string, bool,
	// int64 or float64 (nil: the zero value, or by codec for level).
	Default any
	// Values are the accepted values of a string setting that has a fixed
	// set, in the order the editor offers them.
	Values []string
	// Min and Max bound a numeric setting (Max 0: not a range setting).
	Min, Max float64
	// ByCodec: the range and default depend on jsonData.codec (Codecs).
	ByCodec bool
	// Unit names what a number counts ("seconds"), for messages.
	Unit string
	// Upstream is the upstream that reads the setting; "" for every one.
	// Keys of another upstream are neither read nor checked.
	Upstream string
	// Help says what the setting does, in one or two sentences.
	Help string
	// Normalize is how a string value is rewritten before it is stored
	// and checked, by the backend and the editor alike (NormalizeTrim,
	// NormalizeLower); "" keeps it as it is.
	Normalize string

	// index is the setting's field in Settings (reflect's FieldByIndex):
	// the field of Settings, or of its FlightSQL for a Flight SQL setting,
	// whose name is Key in another case; nil for the numbered keys.
	index []int
}

// init finds each setting's field (Setting.index).
func init() {
	for i := range table {
		st := &table[i]
		typ, in := reflect.TypeFor[Settings](), []int(nil)
		if st.Upstream == UpstreamFlightSQL {
			f, _ := typ.FieldByName("FlightSQL")
			typ, in = f.Type, f.Index
		}
		if f, ok := typ.FieldByNameFunc(func(n string) bool { return strings.EqualFold(n, st.Key) }); ok {
			st.index = slices.Concat(in, f.Index)
		}
	}
}

// field returns a pointer to the setting's field in s (*string, *bool,
// *int64, *float64 or *Secret); the numbered keys have none (index nil).
func (st *Setting) field(s *Settings) any {
	return reflect.ValueOf(s).Elem().FieldByIndex(st.index).Addr().Interface()
}

// The ways a string setting's value is normalized.
const (
	NormalizeTrim  = "trim"  // the white space around it dropped
	NormalizeLower = "lower" // trimmed and lowercased
)

// normalized is v rewritten as st.Normalize says.
func (st *Setting) normalized(v string) string {
	switch st.Normalize {
	case NormalizeTrim:
		return strings.TrimSpace(v)
	case NormalizeLower:
		return strings.ToLower(strings.TrimSpace(v))
	}
	return v
}

// Secret reports whether the setting lives in secureJsonData.
func (st Setting) Secret() bool { return st.Type == Secure }

// Numbered reports whether Key stands for numbered keys (headerNameN).
func (st Setting) Numbered() bool { return strings.HasSuffix(st.Key, "N") && st.index == nil }

// table is every setting, in the order of the editor. Package codec's facts
// (codec names, level ranges) come from codecs_gen.go.
var table = []Setting{
	{Key: "upstream", Type: String, Default: UpstreamDemo, Values: []string{UpstreamDemo, UpstreamFlightSQL},
		Help: "Where this data source reads its data from: the built-in demo generator or a Flight SQL server.", Normalize: NormalizeTrim},
	{Key: "codec", Type: String, Default: DefaultCodec, Values: codecNames(),
		Help: "How the record-batch bodies of each Arrow frame are compressed on the way to Grafana.", Normalize: NormalizeTrim},
	{Key: "level", Type: Integer, ByCodec: true,
		Help: "Compression level of the codec: higher levels make smaller frames and cost more CPU. Ignored for codecs auto and none."},
	{Key: "codecPreference", Type: String, Default: DefaultPreference, Values: []string{PreferCPU, PreferBytes},
		Help: "What codec auto saves first: Grafana's and the plugin's CPU (cpu, for a Grafana next to its data: log frames of about a thousand lines or more go as zstd, shorter text as lz4, time series uncompressed to the Grafana versions released so far) or bytes on the wire (bytes, for a Grafana far from it or short of memory: shorter text and series go as zstd too).", Normalize: NormalizeTrim},
	{Key: "replyFormat", Type: String, Default: DefaultReplyFormat, Values: []string{ReplyArrow, ReplyJSON, ReplyRequested},
		Help: "The format of the frames in a query's reply to Grafana: arrow (Grafana decodes it at less than half the CPU of JSON, and every version reads it), json, or requested (what Grafana asked for: released versions ask for Arrow; a Grafana built to ask for JSON asks for it unless this plugin is in its arrow_query_data_plugins list). Chunked replies always come in the format asked for.", Normalize: NormalizeTrim},
	{Key: "minSavings", Type: Number, Default: DefaultMinSavings, Min: 0, Max: MaxMinSavings,
		Help: "A body buffer is sent uncompressed unless compression saves at least this fraction of its size."},
	{Key: "maxSeries", Type: Integer, Default: int64(DefaultMaxSeries), Min: 1, Max: MaxMaxSeries, Unit: "frames",
		Help: "Frames one query may return; more is that query's error."},
	{Key: "maxPoints", Type: Integer, Default: int64(DefaultMaxPoints), Min: 1, Max: MaxMaxPoints, Unit: "rows",
		Help: "Rows one query may return, summed over its frames; their bodies may weigh maxPoints × 16 bytes."},

	{Key: "address", Type: String, Upstream: UpstreamFlightSQL,
		Help: "The Flight SQL server as host:port (no scheme; turn on tlsEnabled for TLS).", Normalize: NormalizeTrim},
	{Key: "tlsEnabled", Type: Bool, Upstream: UpstreamFlightSQL,
		Help: "Connect to the server over TLS."},
	{Key: "tlsSkipVerify", Type: Bool, Upstream: UpstreamFlightSQL,
		Help: "Do not check the server certificate: anyone between Grafana and the server can read and change the data. Use only for testing."},
	{Key: "tlsAuthWithCACert", Type: Bool, Upstream: UpstreamFlightSQL,
		Help: "Verify the server certificate against the CA certificate (tlsCACert) instead of the system roots."},
	{Key: "tlsAuth", Type: Bool, Upstream: UpstreamFlightSQL,
		Help: "Present a client certificate and key (tlsClientCert, tlsClientKey) to the server (mTLS)."},
	{Key: "tlsServerName", Type: String, Upstream: UpstreamFlightSQL,
		Help: "Name used to verify the server certificate (SNI) when it differs from the address host.", Normalize: NormalizeTrim},
	{Key: "tlsCACert", Type: Secure, Upstream: UpstreamFlightSQL,
		Help: "PEM CA certificate, used when tlsAuthWithCACert is on."},
	{Key: "tlsClientCert", Type: Secure, Upstream: UpstreamFlightSQL,
		Help: "PEM client certificate, used when tlsAuth is on."},
	{Key: "tlsClientKey", Type: Secure, Upstream: UpstreamFlightSQL,
		Help: "PEM client key, used when tlsAuth is on."},
	{Key: "authType", Type: String, Default: AuthNone, Values: []string{AuthNone, AuthToken, AuthPassword}, Upstream: UpstreamFlightSQL,
		Help: "How the plugin authenticates to the server: no credentials, a bearer token, or user and password."},
	{Key: "username", Type: String, Upstream: UpstreamFlightSQL,
		Help: `User for authType "password".`},
	{Key: "token", Type: Secure, Upstream: UpstreamFlightSQL,
		Help: `Bearer token for authType "token".`},
	{Key: "password", Type: Secure, Upstream: UpstreamFlightSQL,
		Help: `Password for authType "password".`},
	{Key: "oauthPassThru", Type: Bool, Upstream: UpstreamFlightSQL,
		Help: "Send the signed-in user's OAuth access token (and ID token, when there is one) to the server instead of the configured credentials, on every query, health check and schema call that Grafana forwards them with. What a call without a forwarded user gets is noForwardedIdentity's choice."},
	{Key: "noForwardedIdentity", Type: String, Default: NoIdentityRefuse, Values: []string{NoIdentityRefuse, NoIdentityConfigured}, Upstream: UpstreamFlightSQL,
		Help: "With oauthPassThru on, what a call without a signed-in user's OAuth identity gets (an expired token, a public dashboard, a basic-auth user, a service account, an alert rule): refuse fails it with \"no signed-in user to forward\"; configured sends it with the configured credentials. Ignored when oauthPassThru is off.", Normalize: NormalizeLower},
	{Key: "headerNameN", Type: String, Upstream: UpstreamFlightSQL,
		Help: "Name of a custom gRPC metadata header sent with every call (headerName1, headerName2…)."},
	{Key: "headerValueN", Type: Secure, Upstream: UpstreamFlightSQL,
		Help: "Value of the header headerNameN."},
	{Key: "allowedLocationHosts", Type: String, Upstream: UpstreamFlightSQL,
		Help: "Other hosts, comma-separated, that the server's endpoint locations may send the plugin to for a query's data; the plugin sends them the credentials, headers and forwarded user tokens. Empty: only the host of address. A location on any other host fails the query, naming the host.", Normalize: NormalizeTrim},
	{Key: "catalog", Type: String, Upstream: UpstreamFlightSQL,
		Help: "Sent once per connection as the Flight SQL session option catalog (servers without session options ignore it); the default of schema browsing and of the $__catalog macro."},
	{Key: "schema", Type: String, Upstream: UpstreamFlightSQL,
		Help: "Sent once per connection as the Flight SQL session option schema (servers without session options ignore it); the default of schema browsing and of the $__schema macro."},
	{Key: "dialect", Type: String, Default: DialectAuto, Values: Dialects, Upstream: UpstreamFlightSQL,
		Help: "How the macros ($__timeFilter, $__timeGroup, …) write SQL. auto asks the server for its name; the health check says which dialect it chose.", Normalize: NormalizeLower},
	{Key: "timeout", Type: Integer, Default: int64(DefaultFlightSQLTimeout), Min: 1, Max: 3600, Unit: "seconds", Upstream: UpstreamFlightSQL,
		Help: "Query timeout."},
	{Key: "rowLimit", Type: Integer, Default: int64(DefaultFlightSQLRowLimit), Min: 1, Max: 100_000_000, Unit: "rows", Upstream: UpstreamFlightSQL,
		Help: "Rows read per query; the rest is cut with a frame notice."},
	{Key: "byteLimit", Type: Integer, Default: int64(DefaultFlightSQLByteLimit), Min: 1024, Max: 16 << 30, Unit: "bytes", Upstream: UpstreamFlightSQL,
		Help: "Bytes read per query; the rest is cut with a frame notice."},
	{Key: "incrementalQueries", Type: Bool, Default: true, Upstream: UpstreamFlightSQL,
		Help: "A time_series, time_series_wide or logs query asked again for a range that starts and ends no earlier (a refreshing dashboard) reads from the server only the rows from incrementalOverlap before its kept answer's end on, and the rest from the result cache, when its SQL allows it (one $__timeFilter that alone selects rows by time, no $__timeFrom/$__timeTo, no LIMIT, window, DISTINCT ON or second SELECT, nothing that reads the clock (now(), CURRENT_TIMESTAMP) or a random source, aggregates only with $__timeGroup and otherwise only functions of one row; logs ordered by their time column, if at all). The query's stats say whether it was incremental, and why not. A query can opt out with the query editor's Incremental switch (\"incremental\": false in its JSON)."},
	{Key: "incrementalOverlap", Type: Integer, Default: int64(DefaultIncrementalOverlap), Min: 1, Max: 86400, Unit: "seconds", Upstream: UpstreamFlightSQL,
		Help: "How far before the kept answer's end an incremental query reads again, for rows that arrive late and the last, incomplete $__timeGroup bucket. With a $__timeGroup longer than half of it, two of its buckets are read again instead."},
	{Key: "resultCacheBytes", Type: Integer, Default: int64(DefaultResultCacheBytes), Min: 1 << 20, Max: 16 << 30, Unit: "bytes", Upstream: UpstreamFlightSQL,
		Help: "Most bytes of compressed kept answers this data source holds in the plugin's memory; the least recently used go first, and an answer above a quarter of it is not kept. They count in the plugin's memory budget (memory_budget) and are given back first when queries need the memory."},
	{Key: "incrementalNotice", Type: Bool, Default: false, Upstream: UpstreamFlightSQL,
		Help: "Every time_series, time_series_wide or logs panel shows an info icon in its header whose tooltip says whether its query was incremental (or why not), with the rows read from the server and served from the cache; clicking it opens Inspect → Stats. For watching the cache at work; off, the same figures are in Inspect → Stats only."},
	{Key: "redisAddress", Type: String, Upstream: UpstreamFlightSQL,
		Help: "host:port of a Redis or Valkey server that keeps the result cache instead of the plugin's memory, shared by every Grafana replica that uses this data source. Redis down, slow or full never fails a query: it is answered in full, its stats say why, and Redis is tried again 10 s later. Empty: the plugin's memory (resultCacheBytes).", Normalize: NormalizeTrim},
	{Key: "redisTLS", Type: Bool, Upstream: UpstreamFlightSQL,
		Help: "Connect to Redis with TLS, checking its certificate against the system's roots."},
	{Key: "redisUsername", Type: String, Upstream: UpstreamFlightSQL,
		Help: "Redis ACL user name (empty: the default user)."},
	{Key: "redisPassword", Type: Secure, Upstream: UpstreamFlightSQL,
		Help: "Redis password."},
	{Key: "redisKeyPrefix", Type: String, Default: DefaultRedisKeyPrefix, Upstream: UpstreamFlightSQL,
		Help: "Prefix of the keys of kept answers in Redis."},
	{Key: "redisTTL", Type: Integer, Default: int64(DefaultRedisTTL), Min: 10, Max: 30 * 86400, Unit: "seconds", Upstream: UpstreamFlightSQL,
		Help: "How long Redis keeps an answer after it was last written."},
}

// Table returns every setting, in the order of the editor.
func Table() []Setting { return append([]Setting(nil), table...) }

// CodecSpec is one of package codec's codecs, as settings and the editor
// see it: codecs_gen.go is written from codec.Specs by go generate.
type CodecSpec struct {
	Name string
	// Levels is false for a codec that takes no level (none).
	Levels                           bool
	MinLevel, MaxLevel, DefaultLevel int64
	// Effective says what each level becomes in the encoder, in ascending
	// runs of levels that make the same bytes.
	Effective []LevelRun
}

// LevelRun is a run of levels From..To that all become Effective (package
// codec's Codec.Effective, "zstd better").
type LevelRun struct {
	From, To  int64
	Effective string
}

// Codecs returns package codec's codecs in the order the editor offers them.
func Codecs() []CodecSpec { return append([]CodecSpec(nil), codecs...) }

// codecByName returns the codec of that name; an unknown name's is the
// zero CodecSpec, which takes no level.
func codecByName(name string) CodecSpec {
	for _, c := range codecs {
		if c.Name == name {
			return c
		}
	}
	return CodecSpec{}
}

func codecNames() []string {
	names := make([]string, len(codecs))
	for i, c := range codecs {
		names[i] = c.Name
	}
	return names
}

// Message templates, shared with the editor (src/generated/settings.ts
// carries them, and the editor fills them the same way): a value out of a
// setting's range, a fraction for a whole-number setting, a value outside a
// fixed set or of another JSON type. {unit} is the setting's Unit, or "<codec> levels" for level.
const (
	MsgRange    = "{value} is not within {min} to {max}"
	MsgUnit     = " ({unit})"
	MsgWhole    = "{value} is not a whole number"
	MsgNotANum  = "{value} is not a number"
	MsgOneOf    = "{value} is not one of {values}"
	MsgNotABool = "{value} is not true or false"
	MsgNotAText = "{value} is not a string"
)

// fill replaces each {name} in template by its value, given as "{name}",
// value pairs.
func fill(template string, kv ...string) string { return strings.NewReplacer(kv...).Replace(template) }

// rangeMessage is MsgRange (plus MsgUnit when unit is set) for value.
func rangeMessage(value string, lo, hi float64, unit string) string {
	m := fill(MsgRange, "{value}", value, "{min}", FormatNumber(lo), "{max}", FormatNumber(hi))
	if unit != "" {
		m += fill(MsgUnit, "{unit}", unit)
	}
	return m
}

// oneOfMessage is MsgOneOf for value (quoted) and the accepted values.
func oneOfMessage(value string, values []string) string {
	return fill(MsgOneOf, "{value}", quote(value), "{values}", quoteList(values))
}

// FormatNumber writes v the way JavaScript's Number.prototype.toString
// does (shortest round-trip digits, exponent below 1e-6 and from 1e21 on),
// so that a message reads the same in the health check and in the editor.
func FormatNumber(v float64) string {
	if v == 0 {
		return "0" // and -0
	}
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(v, 'e', -1, 64) // 1.5e-07, 1e+21
	mant, exp, _ := strings.Cut(s, "e")
	return mant + "e" + exp[:1] + strings.TrimLeft(exp[1:], "0")
}

// quoteList writes "a", "b", "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
