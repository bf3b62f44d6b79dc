package flightsql

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
// upstream failure. Errors that are already classified pass through.
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
	return source.Upstream(&upstreamError{msg: c.redact(msg), err: err})
}

// hint explains the common failures; "" when there is nothing to add to the
// server's message.
func (c *conn) hint(err error, code codes.Code, detail string) string {
	d := strings.ToLower(detail)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || code == codes.DeadlineExceeded:
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
	case code == codes.Unavailable && c.tls != nil && (strings.Contains(d, "broken pipe") || strings.Contains(d, "eof") || strings.Contains(d, "connection reset")):
		return "the server closed the TLS connection: check the client certificate it may require (tlsAuth with tlsClientCert and tlsClientKey)"
	case code == codes.Unavailable && c.tls == nil && (strings.Contains(d, "server preface") || strings.Contains(d, "eof") || strings.Contains(d, "connection reset")):
		return "the server closed the connection during setup: if it requires TLS, turn tlsEnabled on"
	case code == codes.Unavailable:
		return fmt.Sprintf("the server at %q is unavailable", c.address)
	case code == codes.ResourceExhausted && strings.Contains(d, "larger than max"):
		return "a single record batch is larger than the byte limit allows (raise byteLimit)"
	}
	return ""
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
