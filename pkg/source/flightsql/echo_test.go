package flightsql

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// echoServer refuses every query with a message that echoes its SQL, as
// SQL engines do, and with credentials, the credentials the call carried
// (a server that names what it received).
type echoServer struct {
	flightsql.BaseServer
	credentials bool
}

func (s *echoServer) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	msg := "syntax error near " + cmd.GetQuery()
	if s.credentials {
		md, _ := metadata.FromIncomingContext(ctx)
		msg += fmt.Sprintf("; the call carried authorization=%s x-id-token=%s x-key=%s", md.Get("authorization"), md.Get("x-id-token"), md.Get("x-key"))
	}
	return nil, status.Error(codes.InvalidArgument, msg)
}

// longBearer is a BasicAuthValidator that hands out a token long enough to
// be told from other text.
type longBearer struct{ user, pass, token string }

func (v longBearer) Validate(user, pass string) (string, error) {
	if user != v.user || pass != v.pass {
		return "", status.Errorf(codes.Unauthenticated, "invalid password %s for user %s", pass, user)
	}
	return v.token, nil
}

func (v longBearer) IsValid(token string) (any, error) {
	if token != v.token {
		return nil, status.Error(codes.Unauthenticated, "token expired")
	}
	return v.user, nil
}

// echoCase is one way of authenticating, with the secrets it involves.
type echoCase struct {
	name    string
	opts    serverOpts
	cfg     func(cfg *settings.FlightSQL)
	ctx     context.Context
	secrets []string
}

func echoCases() []echoCase {
	const (
		token    = "cfg-token-5a1e0c7d9b"
		header   = "hdr-value-8c2f4e6a1d"
		pass     = "pw-secret-3b7d9f1e5c"
		user     = "svc-reader"
		bearer   = "handshake-bearer-6e2a8c4f0b"
		forward  = "user-access-9d1f3b5e7a"
		idToken  = "user-id-token-2c4e6a8f0d"
		basicRaw = user + ":" + pass
	)
	return []echoCase{
		{name: "token and header", opts: serverOpts{token: token},
			cfg: func(c *settings.FlightSQL) {
				c.AuthType, c.Token = settings.AuthToken, token
				c.Headers = []settings.Header{{Index: 1, Name: "x-key", Value: header}}
			},
			ctx: context.Background(), secrets: []string{token, "Bearer " + token, header}},
		{name: "password and handshake token", opts: serverOpts{auth: longBearer{user, pass, bearer}},
			cfg: func(c *settings.FlightSQL) {
				c.AuthType, c.Username, c.Password = settings.AuthPassword, user, pass
			},
			ctx: context.Background(), secrets: []string{pass, base64.StdEncoding.EncodeToString([]byte(basicRaw)), bearer, "Bearer " + bearer}},
		{name: "forwarded user",
			cfg:     func(c *settings.FlightSQL) { c.OAuthPassThru = true },
			ctx:     source.WithForwarded(context.Background(), "Bearer "+forward, idToken),
			secrets: []string{forward, "Bearer " + forward, idToken}},
	}
}

// echoMessage runs sql against an echoing server and returns its error.
func echoMessage(t *testing.T, s *Source, ctx context.Context, sql string) string {
	t.Helper()
	_, err := runQueryContext(t, ctx, s, sql, FormatTable, source.Limits{})
	if err == nil {
		t.Fatal("the echoing server answered")
	}
	return err.Error()
}

// No message confirms a guess: a query holding a secret among other
// candidates gets the very message it would get with a harmless string of
// the same length in the secret's place (the secret is echoed as the user
// sent it, like the other candidates); and a secret the user did not send
// never appears, even when the server echoes the credentials it received.
func TestMessagesConfirmNoGuess(t *testing.T) {
	for _, ec := range echoCases() {
		t.Run(ec.name, func(t *testing.T) {
			for _, credentials := range []bool{false, true} {
				cfg := baseConfig(startServer(t, &echoServer{credentials: credentials}, ec.opts))
				ec.cfg(&cfg)
				s := newTestSource(t, cfg)
				// The guess comes first, whole within the SQL shown (QuoteMax).
				query := func(guess string) string {
					return fmt.Sprintf("SELECT '%s', 'cand-one-7f3a', 'cand-two-0b9d' FROM t", guess)
				}

				// Nothing the user sent is a secret: no secret appears.
				msg := echoMessage(t, s, ec.ctx, query("cand-three-4e1c"))
				for _, sec := range ec.secrets {
					if strings.Contains(msg, sec) {
						t.Errorf("credentials %t: %q appears in %q", credentials, sec, msg)
					}
				}
				if credentials && !strings.Contains(msg, "[redacted]") {
					t.Errorf("the echoed credentials are not redacted: %q", msg)
				}
				if credentials {
					continue // a server that echoes them beside the guess gives them away (redact)
				}

				// A guess that is a secret reads like any other candidate.
				for _, sec := range ec.secrets {
					harmless := strings.Repeat("z", len(sec))
					got := echoMessage(t, s, ec.ctx, query(sec))
					want := echoMessage(t, s, ec.ctx, query(harmless))
					if strings.ReplaceAll(got, sec, harmless) != want {
						t.Errorf("guess %q: the message tells the secret apart:\n got %q\nwant %q", sec, got, want)
					}
					if strings.Contains(got, "[redacted]") {
						t.Errorf("guess %q: %q", sec, got)
					}
				}
			}
		})
	}
}

// An authentication failure names neither the service user nor the
// password, even when the server's message does.
func TestAuthenticationErrorNamesNoUser(t *testing.T) {
	cfg := baseConfig(startServer(t, oneRowServer(t), serverOpts{auth: longBearer{"svc-reader", "right-password", "handshake-bearer-6e2a8c4f0b"}}))
	cfg.AuthType, cfg.Username, cfg.Password = settings.AuthPassword, "svc-reader", "wrong-password"
	fail(t, newTestSource(t, cfg), "authentication failed: the server rejected the configured user name or its password", "svc-reader", "wrong-password")
}
