package settings

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Secret is a value from secureJsonData. Every way of printing it (fmt verbs,
// %#v, JSON, text marshalling, slog) yields "[redacted]"; Reveal returns the
// value itself and is the only way to read it.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret value. Call it only where the value is handed to
// the upstream (a TLS config, an authorization header).
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret has a value.
func (s Secret) IsSet() bool { return s != "" }

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]".
func (s Secret) GoString() string { return redacted }

// Format prints "[redacted]" for every verb, so no fmt verb can reveal it.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalText returns "[redacted]" (used by encoding/json and log handlers).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue returns "[redacted]" for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// Auth types accepted in jsonData.authType.
const (
	AuthNone     = "none"
	AuthToken    = "token"
	AuthPassword = "password"
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

// Defaults and ranges of the Flight SQL settings (see the contract).
const (
	DefaultFlightSQLTimeout   = 30 // seconds
	DefaultFlightSQLRowLimit  = 1_000_000
	DefaultFlightSQLByteLimit = 256 << 20

	minTimeout, maxTimeout     = 1, 3600
	minRowLimit, maxRowLimit   = 1, 100_000_000
	minByteLimit, maxByteLimit = 1024, 16 << 30
)

// Header is one custom gRPC metadata header (jsonData.headerNameN +
// secureJsonData.headerValueN).
type Header struct {
	Index int // N in headerNameN
	Name  string
	Value Secret
}

// FlightSQL holds the settings of a Flight SQL upstream. Plain fields come
// from jsonData under the keys given by their json tags; the secure fields
// come from secureJsonData only and have no JSON key, so a secret placed in
// jsonData by mistake is never read.
type FlightSQL struct {
	Address           string `json:"address"`
	TLSEnabled        bool   `json:"tlsEnabled"`
	TLSSkipVerify     bool   `json:"tlsSkipVerify"`
	TLSAuthWithCACert bool   `json:"tlsAuthWithCACert"`
	TLSAuth           bool   `json:"tlsAuth"`
	TLSServerName     string `json:"tlsServerName"`
	AuthType          string `json:"authType"`
	Username          string `json:"username"`
	Catalog           string `json:"catalog"`
	Schema            string `json:"schema"`
	// OAuthPassThru sends the user's forwarded OAuth identity (the
	// Authorization header and, when present, X-Id-Token) to the server
	// instead of the configured credentials, when a request carries one.
	OAuthPassThru bool `json:"oauthPassThru"`
	// Dialect is one of Dialects; "" is read as DialectAuto.
	Dialect string `json:"dialect"`
	// Timeout is the query timeout in seconds.
	Timeout   int64 `json:"timeout"`
	RowLimit  int64 `json:"rowLimit"`
	ByteLimit int64 `json:"byteLimit"`

	// Headers are sorted by Index.
	Headers []Header `json:"-"`

	Token         Secret `json:"-"`
	Password      Secret `json:"-"`
	TLSCACert     Secret `json:"-"`
	TLSClientCert Secret `json:"-"`
	TLSClientKey  Secret `json:"-"`
}

// TimeoutDuration returns Timeout as a time.Duration.
func (f FlightSQL) TimeoutDuration() time.Duration { return time.Duration(f.Timeout) * time.Second }

// String describes the settings without any secret value.
func (f FlightSQL) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FlightSQL{address=%q tls=%t authType=%q username=%q catalog=%q schema=%q dialect=%q oauthPassThru=%t timeout=%d rowLimit=%d byteLimit=%d",
		f.Address, f.TLSEnabled, f.AuthType, f.Username, f.Catalog, f.Schema, f.Dialect, f.OAuthPassThru, f.Timeout, f.RowLimit, f.ByteLimit)
	for _, h := range f.Headers {
		fmt.Fprintf(&b, " header%d=%q", h.Index, h.Name)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so %#v prints no secret either.
func (f FlightSQL) GoString() string { return f.String() }

// flightSQLJSON mirrors FlightSQL's plain keys with pointer numbers so that an
// absent key, null or "" gets the default while an explicit value is checked.
type flightSQLJSON struct {
	Address           string     `json:"address"`
	TLSEnabled        bool       `json:"tlsEnabled"`
	TLSSkipVerify     bool       `json:"tlsSkipVerify"`
	TLSAuthWithCACert bool       `json:"tlsAuthWithCACert"`
	TLSAuth           bool       `json:"tlsAuth"`
	TLSServerName     string     `json:"tlsServerName"`
	AuthType          string     `json:"authType"`
	Username          string     `json:"username"`
	Catalog           string     `json:"catalog"`
	Schema            string     `json:"schema"`
	OAuthPassThru     bool       `json:"oauthPassThru"`
	Dialect           string     `json:"dialect"`
	Timeout           *jsonInt64 `json:"timeout"`
	RowLimit          *jsonInt64 `json:"rowLimit"`
	ByteLimit         *jsonInt64 `json:"byteLimit"`
}

var headerNameKey = regexp.MustCompile(`^headerName([1-9][0-9]*)$`)

// ParseFlightSQL reads the Flight SQL settings from jsonData and the decrypted
// secureJsonData, applying defaults. It fails only on malformed JSON; call
// Validate for the checks that depend on the values.
func ParseFlightSQL(jsonData []byte, secure map[string]string) (FlightSQL, error) {
	var raw flightSQLJSON
	var keys map[string]json.RawMessage
	if len(bytes.TrimSpace(jsonData)) > 0 {
		if err := json.Unmarshal(jsonData, &keys); err != nil {
			return FlightSQL{}, fmt.Errorf("settings: jsonData is not a JSON object: %w", err)
		}
		for _, k := range []string{"timeout", "rowLimit", "byteLimit"} {
			if v, ok := keys[k]; ok {
				var n jsonInt64
				if err := n.UnmarshalJSON(v); err != nil {
					return FlightSQL{}, fmt.Errorf("settings: %s: %w", k, err)
				}
			}
		}
		if err := json.Unmarshal(jsonData, &raw); err != nil {
			return FlightSQL{}, fmt.Errorf("settings: jsonData: %w", err)
		}
	}
	f := FlightSQL{
		Address:           strings.TrimSpace(raw.Address),
		TLSEnabled:        raw.TLSEnabled,
		TLSSkipVerify:     raw.TLSSkipVerify,
		TLSAuthWithCACert: raw.TLSAuthWithCACert,
		TLSAuth:           raw.TLSAuth,
		TLSServerName:     strings.TrimSpace(raw.TLSServerName),
		AuthType:          raw.AuthType,
		Username:          raw.Username,
		Catalog:           raw.Catalog,
		Schema:            raw.Schema,
		OAuthPassThru:     raw.OAuthPassThru,
		Dialect:           strings.ToLower(strings.TrimSpace(raw.Dialect)),
		Timeout:           orDefault(raw.Timeout, DefaultFlightSQLTimeout),
		RowLimit:          orDefault(raw.RowLimit, DefaultFlightSQLRowLimit),
		ByteLimit:         orDefault(raw.ByteLimit, DefaultFlightSQLByteLimit),
		Token:             Secret(secure["token"]),
		Password:          Secret(secure["password"]),
		TLSCACert:         Secret(secure["tlsCACert"]),
		TLSClientCert:     Secret(secure["tlsClientCert"]),
		TLSClientKey:      Secret(secure["tlsClientKey"]),
	}
	if f.AuthType == "" {
		f.AuthType = AuthNone
	}
	if f.Dialect == "" {
		f.Dialect = DialectAuto
	}
	for k, v := range keys {
		m := headerNameKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		var name string
		if err := json.Unmarshal(v, &name); err != nil {
			return FlightSQL{}, fmt.Errorf("settings: %s: must be a string", keyName(k))
		}
		name = strings.TrimSpace(name)
		if name == "" {
			continue // an emptied row of the header editor
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			return FlightSQL{}, fmt.Errorf("settings: %s: the header number is out of range", keyName(k))
		}
		f.Headers = append(f.Headers, Header{Index: idx, Name: name, Value: Secret(secure["headerValue"+m[1]])})
	}
	sort.Slice(f.Headers, func(i, j int) bool { return f.Headers[i].Index < f.Headers[j].Index })
	return f, nil
}

func orDefault(n *jsonInt64, def int64) int64 {
	if n == nil || !n.set {
		return def
	}
	return n.v
}

// grpcKey matches what gRPC accepts as a metadata key (after lowercasing).
var grpcKey = regexp.MustCompile(`^[0-9a-z_.-]+$`)

// reservedHeaders are set by gRPC or by the authentication settings.
var reservedHeaders = map[string]string{
	"authorization": `use authType "token" or "password"`,
	"content-type":  "set by gRPC",
	"user-agent":    "set by gRPC",
	"te":            "set by gRPC",
}

// Validate checks the settings of an instance whose upstream is "flightsql".
// Errors name the JSON key and what is accepted. TLS sub-settings are checked
// only when tlsEnabled is on (they are ignored otherwise).
func (f FlightSQL) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("settings: "+format, args...)) }

	if f.Address == "" {
		add(`address: required when upstream is "flightsql" (host:port)`)
	} else if err := checkAddress(f.Address); err != nil {
		add("address: %s %v", quote(f.Address), err)
	}

	switch f.AuthType {
	case AuthNone:
	case AuthToken:
		if !f.Token.IsSet() {
			add(`token: required when authType is "token"`)
		} else if err := checkHeaderText(f.Token.Reveal()); err != nil {
			add("token: %v", err)
		}
	case AuthPassword:
		if f.Username == "" {
			add(`username: required when authType is "password"`)
		} else if err := checkNoControl(f.Username); err != nil {
			add("username: %v", err)
		} else if strings.Contains(f.Username, ":") {
			add(`username: contains ":", which basic authentication cannot carry in a user name`)
		}
		if !f.Password.IsSet() {
			add(`password: required when authType is "password"`)
		} else if err := checkNoControl(f.Password.Reveal()); err != nil {
			add("password: %v", err)
		}
	default:
		add(`authType: %s is not one of "none", "token", "password"`, quote(f.AuthType))
	}

	if f.TLSEnabled {
		if f.TLSAuthWithCACert {
			if !f.TLSCACert.IsSet() {
				add("tlsCACert: required when tlsAuthWithCACert is on")
			} else if !x509.NewCertPool().AppendCertsFromPEM([]byte(f.TLSCACert.Reveal())) {
				add("tlsCACert: no PEM certificate found (paste the CA certificate, -----BEGIN CERTIFICATE-----)")
			}
		}
		if f.TLSAuth {
			cert, key := f.TLSClientCert.IsSet(), f.TLSClientKey.IsSet()
			if !cert {
				add("tlsClientCert: required when tlsAuth is on")
			}
			if !key {
				add("tlsClientKey: required when tlsAuth is on")
			}
			if cert && key {
				if _, err := tls.X509KeyPair([]byte(f.TLSClientCert.Reveal()), []byte(f.TLSClientKey.Reveal())); err != nil {
					// crypto/tls errors describe the PEM structure, never its content.
					add("tlsClientCert/tlsClientKey: not a usable certificate and key pair: %w", err)
				}
			}
		}
	}

	if !slices.Contains(Dialects, f.Dialect) {
		add("dialect: %q is not one of %s", f.Dialect, quoteList(Dialects))
	}

	if f.Timeout < minTimeout || f.Timeout > maxTimeout {
		add("timeout: %d is not in %d – %d (seconds)", f.Timeout, minTimeout, maxTimeout)
	}
	if f.RowLimit < minRowLimit || f.RowLimit > maxRowLimit {
		add("rowLimit: %d is not in %d – %d (rows)", f.RowLimit, minRowLimit, maxRowLimit)
	}
	if f.ByteLimit < minByteLimit || f.ByteLimit > maxByteLimit {
		add("byteLimit: %d is not in %d – %d (bytes)", f.ByteLimit, int64(minByteLimit), int64(maxByteLimit))
	}

	seen := map[string]int{}
	for _, h := range f.Headers {
		key := fmt.Sprintf("headerName%d", h.Index)
		name := strings.ToLower(h.Name)
		switch {
		case !grpcKey.MatchString(name):
			add("%s: %s is not a valid gRPC metadata key (letters, digits, '-', '_', '.')", key, quote(h.Name))
		case strings.HasPrefix(name, "grpc-") || strings.HasPrefix(name, ":"):
			add("%s: %s is reserved by gRPC", key, quote(h.Name))
		case reservedHeaders[name] != "":
			add("%s: %s cannot be set here (%s)", key, quote(h.Name), reservedHeaders[name])
		}
		if prev, dup := seen[name]; dup {
			add("%s: %s is already set by headerName%d", key, quote(h.Name), prev)
		}
		seen[name] = h.Index
		if !h.Value.IsSet() {
			add("headerValue%d: required when %s is set", h.Index, key)
		} else if err := checkHeaderText(h.Value.Reveal()); err != nil {
			add("headerValue%d: %v", h.Index, err)
		}
	}
	return errors.Join(errs...)
}

// quoteList writes "a", "b", "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func checkAddress(addr string) error {
	if i := strings.Index(addr, "://"); i >= 0 {
		return fmt.Errorf("is not host:port: drop the %s scheme (turn on tlsEnabled for TLS)", quote(addr[:i+3]))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("is not host:port")
	}
	if host == "" {
		return errors.New("is not host:port: the host is missing")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("is not host:port: port %s is not in 1 – 65535", quote(port))
	}
	return nil
}
