package settings

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
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

// Header is one custom gRPC metadata header (jsonData.headerNameN +
// secureJsonData.headerValueN).
type Header struct {
	Index int // N in headerNameN
	Name  string
	Value Secret
}

// identityHeaders carry the signed-in user's identity with oauthPassThru on
// (the ID token; a session cookie would be one for every user): a
// configured one is not sent with a forwarded user's calls.
var identityHeaders = []string{"x-id-token", "cookie"}

// CarriesIdentity reports whether h is a header that, with oauthPassThru
// on, is sent only with calls that forward no user (identityHeaders).
func (h Header) CarriesIdentity() bool {
	return slices.Contains(identityHeaders, strings.ToLower(h.Name))
}

// identityWarnings are the warnings about the configured credentials: a
// token pasted with its scheme, and the headers that a forwarded user's
// calls go without (CarriesIdentity).
func (f FlightSQL) identityWarnings() []string {
	var ws []string
	if t := f.Token.Reveal(); f.AuthType == AuthToken && len(t) > 7 && strings.EqualFold(t[:7], "bearer ") {
		ws = append(ws, `token: starts with "Bearer ", which Quiver writes itself: the server is sent "Bearer Bearer …"; set the token alone`)
	}
	for _, h := range f.Headers {
		if f.OAuthPassThru && h.CarriesIdentity() {
			ws = append(ws, fmt.Sprintf("headerName%d: %s is not sent with a signed-in user's calls (oauthPassThru forwards the user's own identity)", h.Index, quote(h.Name)))
		}
	}
	return ws
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
	// NoForwardedIdentity is NoIdentityRefuse or NoIdentityConfigured: what
	// a call without a forwarded identity gets while OAuthPassThru is on.
	NoForwardedIdentity string `json:"noForwardedIdentity"`
	// AllowedLocationHosts lists, comma-separated, the hosts besides the
	// address's that endpoint locations may name (LocationHosts).
	AllowedLocationHosts string `json:"allowedLocationHosts"`
	// Dialect is one of Dialects; "" is read as DialectAuto.
	Dialect string `json:"dialect"`
	// Timeout is the query timeout in seconds.
	Timeout   int64 `json:"timeout"`
	RowLimit  int64 `json:"rowLimit"`
	ByteLimit int64 `json:"byteLimit"`
	// IncrementalQueries: a time-series or logs query asked again for a later
	// range reads only what is new (IncrementalOverlap seconds before the
	// end of its kept answer on) and serves the rest from the result cache,
	// which holds at most ResultCacheBytes.
	IncrementalQueries bool  `json:"incrementalQueries"`
	IncrementalOverlap int64 `json:"incrementalOverlap"`
	ResultCacheBytes   int64 `json:"resultCacheBytes"`
	// IncrementalNotice shows a query's incremental stats as an info
	// notice on its first frame (the panel header's icon).
	IncrementalNotice bool `json:"incrementalNotice"`
	// RedisAddress, when set, keeps the result cache in Redis (or Valkey)
	// at host:port instead of the plugin's memory, shared by every Grafana
	// replica; entries expire after RedisTTL seconds.
	RedisAddress   string `json:"redisAddress"`
	RedisTLS       bool   `json:"redisTLS"`
	RedisUsername  string `json:"redisUsername"`
	RedisKeyPrefix string `json:"redisKeyPrefix"`
	RedisTTL       int64  `json:"redisTTL"`

	// Headers are sorted by Index.
	Headers []Header `json:"-"`

	Token         Secret `json:"-"`
	Password      Secret `json:"-"`
	TLSCACert     Secret `json:"-"`
	TLSClientCert Secret `json:"-"`
	TLSClientKey  Secret `json:"-"`
	RedisPassword Secret `json:"-"`
}

// OverlapDuration returns IncrementalOverlap as a time.Duration.
func (f FlightSQL) OverlapDuration() time.Duration {
	return time.Duration(f.IncrementalOverlap) * time.Second
}

// TimeoutDuration returns Timeout as a time.Duration.
func (f FlightSQL) TimeoutDuration() time.Duration { return time.Duration(f.Timeout) * time.Second }

// String describes the settings without any secret value.
func (f FlightSQL) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FlightSQL{address=%q tls=%t authType=%q username=%q catalog=%q schema=%q dialect=%q oauthPassThru=%t noForwardedIdentity=%q allowedLocationHosts=%q timeout=%d rowLimit=%d byteLimit=%d incrementalQueries=%t incrementalOverlap=%d resultCacheBytes=%d incrementalNotice=%t",
		withoutUserinfo(f.Address), f.TLSEnabled, f.AuthType, f.Username, f.Catalog, f.Schema, f.Dialect, f.OAuthPassThru, f.NoForwardedIdentity, withoutUserinfo(f.AllowedLocationHosts), f.Timeout, f.RowLimit, f.ByteLimit,
		f.IncrementalQueries, f.IncrementalOverlap, f.ResultCacheBytes, f.IncrementalNotice)
	if f.RedisAddress != "" {
		fmt.Fprintf(&b, " redisAddress=%q redisTLS=%t redisUsername=%q redisKeyPrefix=%q redisTTL=%d", withoutUserinfo(f.RedisAddress), f.RedisTLS, f.RedisUsername, f.RedisKeyPrefix, f.RedisTTL)
	}
	for _, h := range f.Headers {
		fmt.Fprintf(&b, " header%d=%q", h.Index, h.Name)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so %#v prints no secret either.
func (f FlightSQL) GoString() string { return f.String() }

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
	s := Settings{FlightSQL: f}
	errs := s.check(UpstreamFlightSQL)
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("settings: "+format, args...)) }

	if f.Address == "" {
		add(`address: required when upstream is "flightsql" (host:port)`)
	} else if err := checkAddress(f.Address, "tlsEnabled"); err != nil {
		add("address: %s %v", quote(withoutUserinfo(f.Address)), err)
	}

	switch f.AuthType {
	case AuthToken:
		if !f.Token.IsSet() {
			add(`token: required when authType is "token"`)
		} else if err := checkHeaderText(f.Token.Reveal()); err != nil {
			add("token: %v", err)
		}
	case AuthPassword:
		if strings.TrimSpace(f.Username) == "" {
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
	}

	if f.TLSEnabled {
		f.checkTLS(add)
	}

	for _, h := range strings.Split(f.AllowedLocationHosts, ",") {
		if err := checkHost(strings.TrimSpace(h)); err != nil {
			add("allowedLocationHosts: %s %v", quote(withoutUserinfo(strings.TrimSpace(h))), err)
		}
	}

	f.checkHeaders(add)
	if f.RedisAddress != "" {
		if err := checkAddress(f.RedisAddress, "redisTLS"); err != nil {
			add("redisAddress: %s %v", quote(withoutUserinfo(f.RedisAddress)), err)
		}
		if err := checkNoControl(f.RedisUsername + f.RedisKeyPrefix + f.RedisPassword.Reveal()); err != nil {
			add("redisUsername, redisKeyPrefix or redisPassword: %v", err)
		}
	}
	return errors.Join(errs...)
}

// checkTLS adds the errors of the TLS sub-settings (tlsEnabled on).
func (f FlightSQL) checkTLS(add func(format string, args ...any)) {
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

// checkHeaders adds the errors of the custom metadata headers.
func (f FlightSQL) checkHeaders(add func(format string, args ...any)) {
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
}

// LocationHosts returns the hosts endpoint locations may name: the host of
// Address first, then those of AllowedLocationHosts, lowercased, IPv6
// addresses without brackets. Entries Validate refuses are left out.
func (f FlightSQL) LocationHosts() []string {
	var hosts []string
	if h, _, err := net.SplitHostPort(f.Address); err == nil {
		hosts = append(hosts, strings.ToLower(h))
	}
	for _, h := range strings.Split(f.AllowedLocationHosts, ",") {
		if h = strings.TrimSpace(h); h != "" && checkHost(h) == nil {
			hosts = append(hosts, strings.ToLower(strings.Trim(h, "[]")))
		}
	}
	return hosts
}

// HostName matches a DNS host name (labels of letters, digits, '-' and
// '_'); the editor checks allowedLocationHosts with the same pattern.
const HostName = `^[0-9A-Za-z_]([0-9A-Za-z_-]*[0-9A-Za-z_])?(\.[0-9A-Za-z_]([0-9A-Za-z_-]*[0-9A-Za-z_])?)*\.?$`

var hostName = regexp.MustCompile(HostName)

// withoutUserinfo returns an address or host setting as a message may
// quote it: what is written before its last "@" (a URL's user name and
// password) replaced. Settings messages are shown to every user of the
// data source and logged with each query that fails with them.
func withoutUserinfo(v string) string {
	at := strings.LastIndex(v, "@")
	if at < 0 {
		return v
	}
	start := 0
	if i := strings.Index(v, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	return v[:start] + "[redacted]" + v[at:]
}

// checkHost reports what is wrong with one entry of allowedLocationHosts:
// a host name or an IP address (IPv6 with or without brackets), no scheme,
// port or path. An empty entry is no entry.
func checkHost(h string) error {
	switch {
	case h == "":
		return nil
	case strings.Contains(h, "://"):
		return errors.New("is not a host: drop the scheme (a host name or an IP address)")
	case net.ParseIP(strings.Trim(h, "[]")) != nil:
		return nil
	case strings.Contains(h, ":"):
		return errors.New("is not a host: drop the port (every port of an allowed host is allowed)")
	case len(h) > 253 || !hostName.MatchString(h):
		return errors.New("is not a host name or an IP address")
	}
	return nil
}

// checkAddress reports what is wrong with a host:port setting; tlsKey
// names the setting that turns TLS on for it.
func checkAddress(addr, tlsKey string) error {
	if i := strings.Index(addr, "://"); i >= 0 {
		return fmt.Errorf("is not host:port: drop the %s scheme (turn on %s for TLS)", quote(addr[:i+3]), tlsKey)
	}
	if strings.Contains(addr, "@") {
		return errors.New(`is not host:port: drop the user name and password before "@" (credentials have settings of their own)`)
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
