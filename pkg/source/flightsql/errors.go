package flightsql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/source"
)

// upstreamError carries a message for the user (with secrets removed) and
// the original error for errors.Is/As.
type upstreamError struct {
	msg string
	err error
}

func (e *upstreamError) Error() string { return e.msg }
func (e *upstreamError) Unwrap() error { return e.err }

// upstream describes err, which happened while doing what, in words the
// user can act on, keeps the server's own message (redacted: see redact)
// and marks it as an upstream failure (a timeout as source.KindTimeout).
// Errors that are already classified pass through. err is not nil.
func (c *conn) upstream(ctx context.Context, what string, err error) error {
	if kind := source.KindOf(err); kind != 0 {
		// Classified on this side, but it may quote what the server sent
		// (an endpoint location's host).
		if msg := c.redact(ctx, err.Error(), false); msg != err.Error() {
			return &source.Error{Kind: kind, Err: &upstreamError{msg: msg, err: err}}
		}
		return err
	}
	st, _ := status.FromError(err) // never nil for a non-nil error
	detail := st.Message()
	msg := "flightsql: " + what + ": "
	hint := c.hint(err, st.Code(), detail)
	if st.Code() == codes.Unauthenticated && c.forwards(ctx) {
		// Not the configured credentials: the signed-in user's.
		hint = "authentication failed: the server rejected the signed-in user's forwarded token (expired, or not one it accepts): sign in to Grafana again"
	}
	if hint != "" {
		msg += hint + ": "
	}
	msg += detail
	ue := &upstreamError{msg: c.redact(ctx, msg, st.Code() == codes.Unauthenticated || what == authenticating), err: err}
	if timedOut(err) {
		return &source.Error{Kind: source.KindTimeout, Err: ue}
	}
	return source.Upstream(ue)
}

// timedOut reports whether err is a deadline that expired, on this side or
// on the server's.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// hint explains the common failures; "" when there is nothing to add to the
// server's message. The transport's and TLS's are read from the message
// of an Unavailable status only: a server's own status (a syntax error)
// may echo any text of the query.
func (c *conn) hint(err error, code codes.Code, detail string) string {
	d := strings.ToLower(detail)
	transport := code == codes.Unavailable
	switch {
	// gRPC's own words for a call that found no ready connection: the
	// server never completed the connection's setup.
	case timedOut(err) && d == "context deadline exceeded while waiting for connections to become ready":
		return fmt.Sprintf("timed out after %s with no connection to %q: nothing there completed a gRPC connection (an unreachable host, a firewall that drops the traffic, or a port that is not the server's Flight SQL port): check the address and port, or raise the timeout setting on a slow network", c.cfg.TimeoutDuration(), c.cfg.Address)
	case timedOut(err):
		return fmt.Sprintf("timed out after %s (raise the timeout setting, or narrow the query)", c.cfg.TimeoutDuration())
	case errors.Is(err, context.Canceled) || code == codes.Canceled:
		return "cancelled"
	case code == codes.Unauthenticated:
		switch c.cfg.AuthType {
		case "token":
			return "authentication failed: the server rejected the token"
		case "password":
			return "authentication failed: the server rejected the configured user name or its password"
		}
		return `authentication failed: the server requires credentials (set authType to "token" or "password")`
	case code == codes.PermissionDenied:
		return "permission denied: the credentials are valid but lack access"
	// A gRPC server without the Flight service (gRPC-Go's and gRPC-Java's
	// words, at the start of the message: not a server's echo of a query).
	case code == codes.Unimplemented && (strings.HasPrefix(d, "unknown service arrow.flight.protocol.flightservice") || strings.HasPrefix(d, "method not found: arrow.flight.protocol.flightservice/")):
		return fmt.Sprintf("the server at %q speaks gRPC but does not serve Arrow Flight: check the address and port (the server's Flight SQL port)", c.cfg.Address)
	case transport && (strings.Contains(d, "no such host") || strings.Contains(d, "produced zero addresses") || strings.Contains(d, "server misbehaving")):
		return fmt.Sprintf("cannot resolve the host of %q (DNS): check the address", c.cfg.Address)
	case transport && strings.Contains(d, "connection refused"):
		return fmt.Sprintf("connection refused by %q: check the host and port, and that the server is running", c.cfg.Address)
	case transport && strings.Contains(d, "certificate signed by unknown authority"):
		return "TLS: the server's certificate is not signed by a trusted CA: add the CA certificate (tlsAuthWithCACert + tlsCACert), or for tests only turn on tlsSkipVerify"
	case transport && (strings.Contains(d, "certificate is valid for") || strings.Contains(d, "certificate is not valid for")):
		return "TLS: the server's certificate does not match the host name: fix the address or set tlsServerName"
	case transport && strings.Contains(d, "first record does not look like a tls handshake"):
		return "TLS: the server does not speak TLS: turn tlsEnabled off"
	case transport && (strings.Contains(d, "missing selected alpn property") || strings.Contains(d, "no application protocol")):
		return fmt.Sprintf(`TLS: the server at %q does not negotiate HTTP/2 (ALPN "h2"), which gRPC needs: check that the port is the server's Flight SQL port, not an HTTPS web port; a TLS proxy in front of the server must offer ALPN "h2"`, c.cfg.Address)
	case transport && strings.Contains(d, "looked like an http/1.1 header"):
		return fmt.Sprintf("the server at %q answered in HTTP/1.1, not gRPC: check the port (the server's Flight SQL port, not a web or REST port)", c.cfg.Address)
	case transport && (strings.Contains(d, "certificate required") || strings.Contains(d, "bad certificate") || strings.Contains(d, "unknown certificate authority")):
		return "TLS: the server rejected the client certificate (tlsAuth with tlsClientCert and tlsClientKey)"
	case transport && (strings.Contains(d, "x509:") || strings.Contains(d, "tls:")):
		return "TLS handshake failed"
	// A server that closes the connection before any answer may want another
	// transport; once it has answered, the same symptom is a server that went
	// away (c.received), which the TLS hints would only mislead about.
	case code == codes.Unavailable && !c.received.Load() && c.tls != nil && (strings.Contains(d, "broken pipe") || strings.Contains(d, "eof") || strings.Contains(d, "connection reset")):
		return "the server closed the TLS connection: check the client certificate it may require (tlsAuth with tlsClientCert and tlsClientKey)"
	case code == codes.Unavailable && !c.received.Load() && c.tls == nil && (strings.Contains(d, "server preface") || strings.Contains(d, "eof") || strings.Contains(d, "connection reset")):
		return "the server closed the connection during setup: if it requires TLS, turn tlsEnabled on"
	case code == codes.Unavailable && c.received.Load():
		return fmt.Sprintf("the server at %q closed the connection or became unavailable after answering", c.cfg.Address)
	case code == codes.Unavailable:
		return fmt.Sprintf("the server at %q is unavailable", c.cfg.Address)
	case code == codes.ResourceExhausted && strings.Contains(d, "larger than max"):
		return "a single record batch is larger than the byte limit allows (raise byteLimit)"
	}
	return ""
}

// noteResponses is the client interceptor pair that sets c.received once
// any call on the connection got an answer from the server: a message, or a
// status the server sent (anything but the transport's own Unavailable,
// DeadlineExceeded or Canceled).
func (c *conn) noteResponses() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		c.note(err)
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &notingStream{ClientStream: s, c: c}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// notingStream notes every receive of a stream (see conn.note).
type notingStream struct {
	grpc.ClientStream
	c *conn
}

func (s *notingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	s.c.note(err)
	return err
}

// note records the outcome of a call or a receive: nil and io.EOF (the
// end of a stream) are answers, and so is every status the server sends.
func (c *conn) note(err error) {
	switch status.Code(err) { // OK for nil, Unknown for io.EOF
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
	default:
		c.received.Store(true)
	}
}

// What a message may show. The rule, and why:
//
// A message never confirms a guess. A Viewer may put candidate strings in a
// query; if the plugin replaced a configured secret wherever it appears in
// the server's answer (which echoes the query), "[redacted]" would mark the
// candidate that is the secret. So a secret is replaced only where the user
// did not send it: a secret that occurs in the text the user sent with the
// call (the query's SQL, or a schema browsing call's catalog, schema and
// table) is left as is everywhere in the message, which then reads the same
// whichever candidate is the secret, and tells the user nothing they did not
// type. A secret the user did not send is replaced wherever it appears
// (a server that names the credentials it received). The SQL Quiver shows
// beside a server's message is the SQL sent, as sent (cut to
// source.QuoteMax bytes), never redacted.
//
// The secrets: the configured token, password (and its basic-auth
// encoding), TLS client key and header values, the bearer tokens the
// password handshake obtained, and the forwarded user's access token (with
// and without its scheme) and ID token. In the messages of authentication
// failures the configured user name is replaced too: a server may name the
// user it rejected.
//
// A secret shorter than shortSecret is replaced only where it stands alone
// (replaceSecret): a header value "1" replaced inside "127.0.0.1" would
// garble the message and spell the secret out.
//
// What the rule cannot do: a value the query computes rather than spells
// (concat('ab', 'cd')) that a server then echoes is not text the user sent,
// and is replaced if it is a secret; and a server that echoes the
// credentials it received in the same message as a secret the user sent
// shows them. Neither can be told apart from the message alone.
func (c *conn) redact(ctx context.Context, msg string, auth bool) string {
	sent := sentFrom(ctx)
	secrets := c.secretsOf(ctx, auth)
	// Longest first, so that a secret inside another leaves no tail behind.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if s != "" && !strings.Contains(sent, s) {
			msg = replaceSecret(msg, s)
		}
	}
	return msg
}

// shortSecret is the length under which a secret is replaced only where it
// stands alone (replaceSecret).
const shortSecret = 8

// replaceSecret replaces s in msg with "[redacted]": everywhere, or, for a
// secret shorter than shortSecret (a header value "1"), only where no
// token character touches it, since replacing it inside other words
// ("127.0.0.1") would garble the message and show which characters the
// secret is.
func replaceSecret(msg, s string) string {
	if len(s) >= shortSecret {
		return strings.ReplaceAll(msg, s, "[redacted]")
	}
	var b strings.Builder
	start := 0
	for i := 0; ; {
		j := strings.Index(msg[i:], s)
		if j < 0 {
			break
		}
		j += i
		i = j + 1
		if end := j + len(s); (j == 0 || !isTokenByte(msg[j-1])) && (end == len(msg) || !isTokenByte(msg[end])) {
			b.WriteString(msg[start:j])
			b.WriteString("[redacted]")
			start, i = end, end
		}
	}
	if start == 0 {
		return msg
	}
	b.WriteString(msg[start:])
	return b.String()
}

// isTokenByte says whether c may be part of a word, a host, a port or a
// number: a letter, a digit, "_", "-", "." or ":".
func isTokenByte(c byte) bool {
	return isNameByte(c) || c == '-' || c == '.' || c == ':'
}

// secretsOf lists the values redact replaces for a call under ctx (see
// redact); with auth, the configured user name too.
func (c *conn) secretsOf(ctx context.Context, auth bool) []string {
	secrets := slices.Concat(c.secrets, c.auth.issued())
	if fw, ok := source.ForwardedFrom(ctx); ok {
		secrets = append(secrets, withoutScheme(fw.Authorization())...)
		secrets = append(secrets, fw.IDToken())
	}
	if auth && c.cfg.Username != "" {
		secrets = append(secrets, c.cfg.Username)
	}
	return secrets
}

// withoutScheme returns an authorization value and, when it has a scheme
// ("Bearer …"), the credential alone.
func withoutScheme(authz string) []string {
	if _, cred, ok := strings.Cut(authz, " "); ok && cred != "" {
		return []string{authz, cred}
	}
	return []string{authz}
}

type sentKey struct{}

// withSent returns ctx carrying the text the user sent with a call (the
// query's SQL), which messages of the call may show unredacted (redact).
func withSent(ctx context.Context, text string) context.Context {
	return context.WithValue(ctx, sentKey{}, text)
}

// sentFrom returns the text withSent put in ctx, or "".
func sentFrom(ctx context.Context) string {
	s, _ := ctx.Value(sentKey{}).(string)
	return s
}
