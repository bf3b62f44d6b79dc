package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/pkg/source"
)

// The forwarded identity is redacted from a query's message only where the
// query did not send it: a guess of the user's token reads like any other
// candidate.
func TestRedactIdentityConfirmsNoGuess(t *testing.T) {
	const tok, id = "user-access-9d1f3b5e7a", "user-id-token-2c4e6a8f0d"
	ctx := source.WithForwarded(context.Background(), "Bearer "+tok, id)
	for _, sec := range []string{tok, "Bearer " + tok, id} {
		harmless := strings.Repeat("z", len(sec))
		query := func(guess string) string { return `{"rawSql":"SELECT '` + guess + `', 'cand-one'"}` }
		echo := func(guess string) string { return "syntax error near SELECT '" + guess + "', 'cand-one'" }
		got := redactIdentitySent(ctx, echo(sec), query(sec))
		want := redactIdentitySent(ctx, echo(harmless), query(harmless))
		if strings.ReplaceAll(got, sec, harmless) != want || strings.Contains(got, "[redacted]") {
			t.Errorf("guess %q: %q against %q", sec, got, want)
		}
	}
	// Not sent: redacted, with and without its scheme.
	msg := redactIdentitySent(ctx, "rejected Bearer "+tok+" and "+id+" ("+tok+")", `{"rawSql":"SELECT 1"}`)
	if strings.Contains(msg, tok) || strings.Contains(msg, id) || strings.Count(msg, "[redacted]") != 3 {
		t.Errorf("not sent: %q", msg)
	}
}

// A query's message is redacted against that query's own JSON, in a
// unary and in a chunked answer: the query that sent the identity reads
// the echo as is, another of the same request sees it redacted.
func TestRedactAgainstTheQuerysOwnJSON(t *testing.T) {
	s := newTestService(t, &identitySource{}, 1)
	headers := map[string]string{"Authorization": "Bearer user-access-token", "X-Id-Token": "user-id-token"}
	const echo = "token Bearer user-access-token and id user-id-token rejected"
	queries := []*pluginv2.DataQuery{query("A", `"Bearer user-access-token user-id-token"`), query("B", `"ok"`)}
	check := func(how string, msgs map[string]string) {
		t.Helper()
		if msgs["A"] != echo {
			t.Errorf("%s: A, which sent the identity: %q", how, msgs["A"])
		}
		if b := msgs["B"]; strings.Contains(b, "user-access-token") || strings.Contains(b, "user-id-token") || !strings.Contains(b, "[redacted]") {
			t.Errorf("%s: B: %q", how, b)
		}
	}
	resp, err := s.QueryData(context.Background(), &pluginv2.QueryDataRequest{PluginContext: pluginContext(`{}`), Headers: headers, Queries: queries})
	if err != nil {
		t.Fatal(err)
	}
	check("unary", map[string]string{"A": resp.Responses["A"].Error, "B": resp.Responses["B"].Error})
	stream := &fakeStream{ctx: context.Background()}
	if err := s.QueryChunkedData(&pluginv2.QueryChunkedDataRequest{PluginContext: pluginContext(`{}`), Headers: headers, Queries: queries}, stream); err != nil {
		t.Fatal(err)
	}
	msgs := map[string]string{}
	for _, c := range stream.chunks {
		msgs[c.RefId] = c.Error
	}
	check("chunked", msgs)

}
