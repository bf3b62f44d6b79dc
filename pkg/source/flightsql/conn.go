// This file is over 400 lines: one connection's dialling, TLS, credentials,
// session and error wording, which share its state and its secrets list.

package flightsql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// conn holds the gRPC clients of one data-source instance: the configured
// address, plus one client per other endpoint location a server points to.
// Every call carries the custom headers and the authorization header.
type conn struct {
	// cfg is the settings it was made with. With OAuthPassThru a forwarded
	// user identity replaces auth (outgoing); a call without one is refused
	// unless NoForwardedIdentity is settings.NoIdentityConfigured.
	cfg      settings.FlightSQL
	tls      *tls.Config // nil: plaintext
	mem      memory.Allocator
	dialOpts []grpc.DialOption
	headers  []string // key, value pairs
	// userHeaders are the headers sent with a forwarded user's calls: all
	// but those that would carry an identity (settings.Header.CarriesIdentity).
	userHeaders []string
	auth        authenticator
	// locationHosts are the hosts an endpoint location may name: the
	// address's and allowedLocationHosts (lowercase).
	locationHosts []string
	secrets       []string // values never to show in a message

	// received is set once any call got an answer from a server: from then
	// on a closed connection is not a transport mismatch (see hint).
	received atomic.Bool

	main *flightsql.Client

	// The default catalog and schema are sent once as session options.
	sessionTurn turn // held while the options are sent
	sessionSent bool

	dialect *dialectState // the SQL dialect of the macros (dialect.go)

	mu      sync.Mutex
	remotes map[string]*flightsql.Client // by location URI
	closed  bool
}

// maxMessage bounds one gRPC message (one record batch): the byte limit plus
// room for the message that crosses it, at most what gRPC can take.
func maxMessage(byteLimit int64) int {
	return int(min(max(byteLimit+64<<20, 64<<20), math.MaxInt32))
}

func newConn(cfg settings.FlightSQL, mem memory.Allocator, extra []grpc.DialOption) (*conn, error) {
	c := &conn{
		cfg:           cfg,
		mem:           mem,
		remotes:       map[string]*flightsql.Client{},
		dialect:       newDialectState(cfg.Dialect),
		auth:          authenticator{turn: newTurn()},
		sessionTurn:   newTurn(),
		locationHosts: cfg.LocationHosts(),
	}
	for _, s := range []settings.Secret{cfg.Token, cfg.Password, cfg.TLSClientKey, cfg.RedisPassword} {
		if s.IsSet() {
			c.secrets = append(c.secrets, s.Reveal())
		}
	}
	switch cfg.AuthType {
	case settings.AuthToken:
		c.auth.static = "Bearer " + cfg.Token.Reveal()
	case settings.AuthPassword:
		basic := base64.StdEncoding.EncodeToString([]byte(cfg.Username + ":" + cfg.Password.Reveal()))
		c.auth.basic = "Basic " + basic
		c.secrets = append(c.secrets, basic)
	}
	for _, h := range cfg.Headers {
		c.headers = append(c.headers, strings.ToLower(h.Name), h.Value.Reveal())
		if !h.CarriesIdentity() {
			c.userHeaders = append(c.userHeaders, strings.ToLower(h.Name), h.Value.Reveal())
		}
		c.secrets = append(c.secrets, h.Value.Reveal())
	}
	if cfg.TLSEnabled {
		t, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		c.tls = t
	}
	c.dialOpts = slices.Concat([]grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage(cfg.ByteLimit))),
		grpc.WithUserAgent("quiver-flightsql"),
	}, receiveOptions(), c.noteResponses(), extra)
	main, err := c.dial(cfg.Address, c.tls)
	if err != nil {
		return nil, err
	}
	c.main = main
	return c, nil
}

func tlsConfig(cfg settings.FlightSQL) (*tls.Config, error) {
	t := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         cfg.TLSServerName,
		InsecureSkipVerify: cfg.TLSSkipVerify, //nolint:gosec // an explicit, unsafe-labelled setting
	}
	if cfg.TLSAuthWithCACert {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cfg.TLSCACert.Reveal())) {
			return nil, errors.New("flightsql: tlsCACert: no PEM certificate found")
		}
		t.RootCAs = pool
	}
	if cfg.TLSAuth {
		cert, err := tls.X509KeyPair([]byte(cfg.TLSClientCert.Reveal()), []byte(cfg.TLSClientKey.Reveal()))
		if err != nil {
			return nil, fmt.Errorf("flightsql: tlsClientCert/tlsClientKey: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

func (c *conn) dial(address string, t *tls.Config) (*flightsql.Client, error) {
	creds := insecure.NewCredentials()
	if t != nil {
		creds = credentials.NewTLS(t)
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, c.dialOpts...)
	// The cookie middleware keeps the server's session (and the session
	// options sent once per connection). With oauthPassThru the connection
	// serves every user, so it keeps no cookie: one user's session (or an
	// auth cookie a server sets) must not be replayed for another.
	var mw []flight.ClientMiddleware
	if !c.cfg.OAuthPassThru {
		mw = append(mw, flight.CreateClientMiddleware(flight.NewCookieMiddleware()))
	}
	// An explicit dns:/// target: without one gRPC reads a host named
	// "unix" (or "dns", "passthrough") as a resolver scheme.
	cl, err := flightsql.NewClient("dns:///"+address, nil, mw, opts...)
	if err != nil {
		return nil, fmt.Errorf("flightsql: connecting to %q: %w", address, err)
	}
	cl.Alloc = c.mem
	return cl, nil
}

// clientFor returns the client that serves an endpoint: the main one when the
// endpoint names no location (or asks to reuse the connection), otherwise a
// client for the first location this package can reach.
func (c *conn) clientFor(ep *flight.FlightEndpoint) (*flightsql.Client, error) {
	if len(ep.GetLocation()) == 0 {
		return c.main, nil
	}
	var errs []error
	for i, loc := range ep.GetLocation() {
		cl, err := c.remote(loc.GetUri())
		if err == nil {
			return cl, nil
		}
		if i < maxLocationErrors {
			errs = append(errs, err)
		}
	}
	if n := len(ep.GetLocation()); n > maxLocationErrors {
		errs = append(errs, fmt.Errorf("and %d more locations", n-maxLocationErrors))
	}
	return nil, errors.Join(errs...)
}

// maxLocationErrors bounds the refused locations an error names: a server
// may name thousands.
const maxLocationErrors = 3

// maxRemotes bounds the clients a source keeps for endpoint locations (one
// per scheme and host): each holds a connection until the source closes.
const maxRemotes = 64

// remote returns the client of an endpoint location. A message names the
// location by its scheme and host only: its user information, path and
// query are the server's to fill, with anything (the credentials it was
// sent, say); so are its scheme and host, which it names whole or not at
// all (named).
func (c *conn) remote(uri string) (*flightsql.Client, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, errors.New("flightsql: an endpoint location the server sent is not a URL")
	}
	key := u.Scheme + "://" + u.Host
	name := named(key)
	var t *tls.Config
	switch u.Scheme {
	case "arrow-flight-reuse-connection":
		return c.main, nil
	case "grpc", "grpc+tcp":
		if c.tls != nil {
			return nil, fmt.Errorf("flightsql: endpoint location %s is plaintext while TLS is on; refusing to send credentials without TLS", name)
		}
	case "grpc+tls":
		if c.tls == nil {
			return nil, fmt.Errorf("flightsql: endpoint location %s needs TLS: turn tlsEnabled on", name)
		}
		t = c.tls.Clone()
		t.ServerName = "" // verify the location's own host name
	default:
		return nil, fmt.Errorf("flightsql: endpoint location %s: scheme %s is not supported (grpc, grpc+tcp, grpc+tls)", name, named(u.Scheme))
	}
	if !c.allowed(u.Hostname()) {
		return nil, &source.Error{Kind: source.KindQuery, Err: fmt.Errorf("%w: the server sent the query to host %s, which is neither the host of address nor listed in allowedLocationHosts: "+
			"the plugin sends credentials and forwarded user tokens only there (an administrator may add the host to allowedLocationHosts)", ErrLocationHost, named(u.Hostname()))}
	}
	if u.Host == c.cfg.Address && (t == nil) == (c.tls == nil) {
		return c.main, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if cl, ok := c.remotes[key]; ok {
		return cl, nil
	}
	if len(c.remotes) >= maxRemotes {
		return nil, fmt.Errorf("flightsql: endpoint location %s: the server has named %d other locations, the most this data source keeps connections to", name, maxRemotes)
	}
	cl, err := c.dial(u.Host, t)
	if err != nil {
		return nil, err
	}
	c.remotes[key] = cl
	return cl, nil
}

// named quotes text of the server's choosing whole, so that redaction
// (conn.upstream), which replaces whole secrets, finds one the server put
// there; text longer than a message quotes is only measured, since a cut
// secret would escape redaction.
func named(s string) string {
	if len(s) > source.QuoteMax {
		return fmt.Sprintf("(%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// ErrLocationHost is the error of an endpoint location on a host the
// settings do not allow (allowedLocationHosts).
var ErrLocationHost = errors.New("flightsql: endpoint location on a host that is not allowed")

// allowed says whether an endpoint location's host is the address's host
// or one of allowedLocationHosts. Every call carries the credentials, the
// custom headers or the user's forwarded token, so a host the
// administrator did not name is not dialled at all (rather than dialled
// without them, which would hand a server's choice of host the plugin's
// network position). Host names are compared as written, without resolving
// them: "localhost" and "127.0.0.1" are two hosts.
func (c *conn) allowed(host string) bool {
	return slices.Contains(c.locationHosts, strings.ToLower(host))
}

// errClosed is the error of a call on a closed connection: the data source's
// instance was replaced (its settings saved) or the plugin is stopping.
var errClosed = errors.New("flightsql: the data source was closed (its settings were saved, or the plugin is stopping): run the query again")

func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	errs := []error{c.main.Close()}
	for _, cl := range c.remotes {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}

// session sends the default catalog and schema settings as the Flight SQL
// session options "catalog" and "schema", once per connection, before the
// first query; the cookie middleware carries the session on later calls. A
// server that does not implement session options is asked once and then
// left alone: the defaults still serve schema browsing and the $__catalog /
// $__schema macros. An option the server refuses fails the query, naming it.
func (c *conn) session(ctx context.Context) error {
	if (c.cfg.Catalog == "" && c.cfg.Schema == "") || c.cfg.OAuthPassThru {
		return nil // with oauthPassThru no session is kept (see dial)
	}
	if err := c.sessionTurn.take(ctx); err != nil {
		return c.upstream(ctx, "waiting for another call to set the default catalog and schema", err)
	}
	defer c.sessionTurn.give()
	if c.sessionSent {
		return nil
	}
	opts := map[string]*flight.SessionOptionValue{}
	for name, v := range map[string]string{"catalog": c.cfg.Catalog, "schema": c.cfg.Schema} {
		if v != "" {
			opts[name] = &flight.SessionOptionValue{OptionValue: &flightgen.SessionOptionValue_StringValue{StringValue: v}}
		}
	}
	res, err := do(ctx, c, func(cctx context.Context) (*flight.SetSessionOptionsResult, error) {
		return c.main.SetSessionOptions(cctx, &flight.SetSessionOptionsRequest{SessionOptions: opts})
	})
	if err != nil && status.Code(err) != codes.Unimplemented {
		return c.upstream(ctx, "setting the default catalog and schema", err)
	}
	// Unimplemented comes with a nil result, which refuses nothing.
	if refused := res.GetErrors(); len(refused) > 0 {
		var msgs []string
		for _, n := range slices.Sorted(maps.Keys(refused)) {
			msgs = append(msgs, fmt.Sprintf("%s (%s)", n, strings.ToLower(refused[n].GetValue().String())))
		}
		msg := fmt.Sprintf("flightsql: the server refused the session options %s: check the catalog and schema settings", strings.Join(msgs, ", "))
		return source.Upstream(errors.New(c.redact(ctx, msg, false)))
	}
	c.sessionSent = true
	return nil
}

// ErrNoSignedInUser is the error of a call without a forwarded identity
// while oauthPassThru is on and noForwardedIdentity is "refuse".
var ErrNoSignedInUser = errors.New("flightsql: no signed-in user to forward")

// errNoSignedInUser says what was refused and what the administrator can
// change; the plugin's side (KindQuery), not the server's.
var errNoSignedInUser error = &source.Error{Kind: source.KindQuery, Err: fmt.Errorf(
	"%w: oauthPassThru is on and this call carries no user's OAuth identity (an expired token, a public dashboard, a basic-auth user, "+
		"a service account or an alert rule); an administrator may set noForwardedIdentity to %q to send such calls with the configured credentials",
	ErrNoSignedInUser, settings.NoIdentityConfigured)}

// passThruRule says which rule applies to calls without a forwarded
// identity, for the health check; "" when oauthPassThru is off.
func (c *conn) passThruRule() string {
	switch {
	case !c.cfg.OAuthPassThru:
		return ""
	case c.cfg.NoForwardedIdentity == settings.NoIdentityConfigured:
		return fmt.Sprintf("oauthPassThru: calls without a signed-in user are sent with the configured credentials (noForwardedIdentity %q)", settings.NoIdentityConfigured)
	}
	return fmt.Sprintf("oauthPassThru: calls without a signed-in user are refused (noForwardedIdentity %q)", settings.NoIdentityRefuse)
}

// forwards reports whether a call with ctx goes out with a user's
// forwarded identity rather than the data source's own credentials.
func (c *conn) forwards(ctx context.Context) bool {
	_, ok := source.ForwardedFrom(ctx)
	return ok && c.cfg.OAuthPassThru
}

// outgoing returns ctx carrying the headers and authorization of a call, and
// the configured authorization value it used. With oauthPassThru on, the
// user's identity forwarded in ctx (source.WithForwarded) replaces the
// configured authorization, and "" is returned: it is nothing to renew; a
// call without one is refused (ErrNoSignedInUser) unless noForwardedIdentity
// is "configured".
func (c *conn) outgoing(ctx context.Context) (context.Context, string, error) {
	if c.cfg.OAuthPassThru {
		fw, ok := source.ForwardedFrom(ctx)
		switch {
		case ok:
			kv := append(c.userHeaders[:len(c.userHeaders):len(c.userHeaders)], "authorization", fw.Authorization())
			if fw.IDToken() != "" {
				kv = append(kv, "x-id-token", fw.IDToken())
			}
			return metadata.AppendToOutgoingContext(ctx, kv...), "", nil
		case c.cfg.NoForwardedIdentity != settings.NoIdentityConfigured:
			return nil, "", errNoSignedInUser
		}
	}
	authz, err := c.auth.value(ctx, c)
	if err != nil {
		return nil, "", err
	}
	kv := c.headers
	if authz != "" {
		kv = append(kv[:len(kv):len(kv)], "authorization", authz)
	}
	if len(kv) == 0 {
		return ctx, "", nil
	}
	return metadata.AppendToOutgoingContext(ctx, kv...), authz, nil
}

// do runs fn with c's call metadata and returns its result. When the server
// answers Unauthenticated to a token obtained by the password handshake, it
// authenticates again and retries fn once.
func do[T any](ctx context.Context, c *conn, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed { // its clients are gone: a call would find none
		return zero, errClosed
	}
	for attempt := 0; ; attempt++ {
		cctx, authz, err := c.outgoing(ctx)
		if err != nil {
			return zero, err
		}
		v, err := fn(cctx)
		if err == nil || attempt > 0 || authz == "" || c.cfg.AuthType != settings.AuthPassword || status.Code(err) != codes.Unauthenticated {
			return v, err
		}
		c.auth.invalidate(authz)
	}
}

// authenticator supplies the authorization header: a static bearer token, or
// one obtained by the Flight SQL basic handshake and kept until rejected.
type authenticator struct {
	static string // "Bearer <token>" with authType token, else ""
	basic  string // "Basic <base64>"

	turn turn // held by the call that runs the handshake

	mu     sync.Mutex
	bearer string
	// recent are the last bearer tokens the handshake obtained, newest
	// last: a server may echo a stale one after it was renewed (redact).
	recent []string
	// refused is the server's refusal of the user name or password and
	// when it came: for refusedFor, the calls that would run the handshake
	// again get it instead.
	refused   error
	refusedAt time.Time
}

// refusedFor is how long a refused password is not sent again: a burst of
// queries sends the server one wrong password, not one a query (which an
// account lockout policy would count). Saved settings build a new
// connection, which tries at once.
const refusedFor = 10 * time.Second

// keptBearers is how many handshake tokens redact knows of.
const keptBearers = 4

// authenticating is what a handshake error says was being done.
const authenticating = "authenticating"

// issued returns the bearer tokens the handshake obtained lately, each with
// and without its scheme.
func (a *authenticator) issued() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, b := range a.recent {
		out = append(out, withoutScheme(b)...)
	}
	return out
}

// kept returns the bearer token obtained last, "" if none is kept.
func (a *authenticator) kept() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bearer
}

// value returns the authorization header. Without a kept token, one call
// runs the handshake while the others wait for its token, each no longer
// than its own context; a refusal is theirs too, for refusedFor.
func (a *authenticator) value(ctx context.Context, c *conn) (string, error) {
	if c.cfg.AuthType != settings.AuthPassword {
		return a.static, nil
	}
	if tok := a.kept(); tok != "" {
		return tok, nil
	}
	if err := a.turn.take(ctx); err != nil {
		return "", c.upstream(ctx, "waiting for another call's "+authenticating, err)
	}
	defer a.turn.give()
	if tok := a.kept(); tok != "" {
		return tok, nil // the call that ran before this one got it
	}
	a.mu.Lock()
	refused := a.refused
	if refused != nil && time.Since(a.refusedAt) >= refusedFor {
		refused = nil
	}
	a.mu.Unlock()
	if refused != nil {
		return "", refused
	}
	tok, err := c.handshake(ctx, a.basic)
	a.mu.Lock()
	defer a.mu.Unlock()
	if code := status.Code(err); code == codes.Unauthenticated || code == codes.PermissionDenied {
		a.refused, a.refusedAt = err, time.Now()
	}
	if err != nil {
		return "", err
	}
	a.refused = nil
	a.bearer = tok
	a.recent = append(a.recent, tok)
	if len(a.recent) > keptBearers {
		a.recent = append(a.recent[:0], a.recent[len(a.recent)-keptBearers:]...)
	}
	return tok, nil
}

func (a *authenticator) invalidate(stale string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bearer == stale {
		a.bearer = ""
	}
}

// turn lets one call at a time run a call to the server that the others
// wait for (the password handshake, the session options); each waits no
// longer than its own context, so a stalled server holds up only the calls
// that reach it.
type turn chan struct{}

func newTurn() turn { return make(turn, 1) }

// take waits for the turn, or returns ctx's error once it ends first.
func (t turn) take(ctx context.Context) error {
	select {
	case t <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t turn) give() { <-t }

// handshake runs the Flight SQL basic-auth handshake: the Handshake call
// carries "authorization: Basic …" and the server answers with
// "authorization: Bearer …" in its headers or trailers.
func (c *conn) handshake(ctx context.Context, basic string) (string, error) {
	kv := append(c.headers[:len(c.headers):len(c.headers)], "authorization", basic)
	hctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, kv...))
	defer cancel()
	stream, err := c.main.Client.Handshake(hctx)
	if err != nil {
		return "", c.upstream(ctx, authenticating, err)
	}
	if err := stream.CloseSend(); err != nil {
		return "", c.upstream(ctx, authenticating, err)
	}
	header, err := stream.Header()
	if err != nil {
		return "", c.upstream(ctx, authenticating, err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", c.upstream(ctx, authenticating, err)
		}
	}
	for _, v := range metadata.Join(header, stream.Trailer()).Get("authorization") {
		if v != "" {
			return v, nil
		}
	}
	return "", c.upstream(ctx, authenticating, errors.New("the server accepted the handshake but returned no bearer token"))
}
