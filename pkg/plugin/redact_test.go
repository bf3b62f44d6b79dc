package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

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

// sentJSON finds a query's JSON by refId, the first query's of a refId
// sent twice, and "" for a refId not sent.
func TestSentJSON(t *testing.T) {
	if got := sentJSON(nil)("A"); got != "" {
		t.Errorf("no queries: %q", got)
	}
	sent := sentJSON([]backend.DataQuery{{RefID: "A", JSON: []byte(`{"a":1}`)}, {RefID: "B", JSON: []byte(`{"b":1}`)}, {RefID: "A", JSON: []byte(`{"a":2}`)}})
	for refID, want := range map[string]string{"A": `{"a":1}`, "B": `{"b":1}`, "C": ""} {
		if got := sent(refID); got != want {
			t.Errorf("%s: %q, want %q", refID, got, want)
		}
	}
}
