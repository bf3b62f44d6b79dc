package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// user can act on, keeps the server's own message, and marks it as an
// upstream failure (a timeout as source.KindTimeout). Errors that are already
// classified pass through.
func (c *conn) upstream(what string, err error) error {
	if err == nil {
		return nil
	}
	if source.KindOf(err) != 0 {
		return err
	}
	st, _ := status.FromError(err) // never nil for a non-nil error
	detail := st.Message()
	msg := "flightsql: " + what + ": "
	if hint := c.hint(err, st.Code(), detail); hint != "" {
		msg += hint + ": "
	}
	msg += detail
	ue := &upstreamError{msg: c.redact(msg), err: err}
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
// server's message.
func (c *conn) hint(err error, code codes.Code, detail string) string {
	d := strings.ToLower(detail)
	switch {
	case timedOut(err):
		return fmt.Sprintf("timed out after %s (raise the timeout setting, or narrow the query)", c.timeout)
	case errors.Is(err, context.Canceled) || code == codes.Canceled:
		return "cancelled"
	case code == codes.Unauthenticated:
		switch c.auth.kind {
		case "token":
			return "authentication failed: the server rejected the token"
		case "password":
			return fmt.Sprintf("authentication failed: the server rejected user %q or its password", c.auth.user)
		}
		return `authentication failed: the server requires credentials (set authType to "token" or "password")`
	case code == codes.PermissionDenied:
		return "permission denied: the credentials are valid but lack access"
	case strings.Contains(d, "no such host") || strings.Contains(d, "produced zero addresses") || strings.Contains(d, "server misbehaving"):
		return fmt.Sprintf("cannot resolve the host of %q (DNS): check the address", c.address)
	case strings.Contains(d, "connection refused"):
		return fmt.Sprintf("connection refused by %q: check the host and port, and that the server is running", c.address)
	case strings.Contains(d, "certificate signed by unknown authority"):
		return "TLS: the server's certificate is not signed by a trusted CA: add the CA certificate (tlsAuthWithCACert + tlsCACert), or for tests only turn on tlsSkipVerify"
	case strings.Contains(d, "certificate is valid for") || strings.Contains(d, "certificate is not valid for"):
		return "TLS: the server's certificate does not match the host name: fix the address or set tlsServerName"
	case strings.Contains(d, "first record does not look like a tls handshake"):
		return "TLS: the server does not speak TLS: turn tlsEnabled off"
	case strings.Contains(d, "certificate required") || strings.Contains(d, "bad certificate") || strings.Contains(d, "unknown certificate authority"):
		return "TLS: the server rejected the client certificate (tlsAuth with tlsClientCert and tlsClientKey)"
	case strings.Contains(d, "x509:") || strings.Contains(d, "tls:"):
		return "TLS handshake failed"
	// A server that closes the connection before any answer may want another
	// transport; once it has answered, the same symptom is a server that went
	// away (c.received), which the TLS hints would only mislead about.
	case code == codes.Unavailable && !c.received.Load() && c.tls != nil && (strings.Contains(d, "broken pipe") || strings.Contains(d, "eof") || strings.Contains(d, "connection reset")):
		return "the server closed the TLS connection: check the client certificate it may require (tlsAuth with tlsClientCert and tlsClientKey)"
	case code == codes.Unavailable && !c.received.Load() && c.tls == nil && (strings.Contains(d, "server preface") || strings.Contains(d, "eof") || strings.Contains(d, "connection reset")):
		return "the server closed the connection during setup: if it requires TLS, turn tlsEnabled on"
	case code == codes.Unavailable && c.received.Load():
		return fmt.Sprintf("the server at %q closed the connection or became unavailable after answering", c.address)
	case code == codes.Unavailable:
		return fmt.Sprintf("the server at %q is unavailable", c.address)
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
	if errors.Is(err, io.EOF) {
		err = nil
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
	default:
		c.received.Store(true)
	}
}

// redact removes every secret value from msg.
func (c *conn) redact(msg string) string {
	for _, s := range c.secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return msg
}
