package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/quiverdata/quiver/tests/harness"
)

// maxMessage bounds every error message a hostile input may get back.
const maxMessage = 1024

// The hostile queries of the issue, each beside a good query: each answered
// with its own 400 naming what was wrong, in a bounded message, the good
// one answered and the process alive.
func TestHostileQueries(t *testing.T) {
	pc := instance(`{}`, nil)
	long := strings.Repeat("s", 10<<20)
	invalid := strings.Repeat("\xff\xfe", 5<<20)
	under := strings.Repeat("s", 900<<10) // below the 1 MiB query limit: parsed
	year := func(y int) time.Time { return time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		q    *pluginv2.DataQuery
		want []string
	}{
		{harness.Query("L", `{"scenario":"logs","seriesCount":50000}`, from, t0, time.Minute, 1000),
			[]string{"seriesCount 50000", "(setting maxSeries)"}},
		{harness.Query("M", `{"scenario":"logs","seriesCount":9223372036854775807}`, from, t0, time.Minute, 1000),
			[]string{"seriesCount 9223372036854775807", "(setting maxSeries)"}},
		{harness.Query("W", `{"scenario":"random_walk","seriesCount":9223372036854775807}`, from, t0, time.Minute, 1000),
			[]string{"seriesCount 9223372036854775807", "(setting maxSeries)"}},
		{harness.Query("T", `{"scenario":"table","seriesCount":9223372036854775807}`, from, t0, time.Minute, 1000),
			[]string{"9223372036854775807 rows", "(setting maxPoints"}},
		{harness.Query("S", `{"scenario":"`+long+`"}`, from, t0, time.Minute, 1000),
			[]string{"query JSON is 10485775 bytes", "1048576 bytes"}},
		{harness.Query("U", `{"scenario":"`+invalid+`"}`, from, t0, time.Minute, 1000),
			[]string{"query JSON is 10485775 bytes", "1048576 bytes"}},
		{harness.Query("R", invalid, from, t0, time.Minute, 1000),
			[]string{"query JSON is 10485760 bytes"}},
		{harness.Query("P", `{"scenario":"`+under+`"}`, from, t0, time.Minute, 1000),
			[]string{`scenario "ssss`, "(921600 bytes) is not one of"}},
		{harness.Query("I", `{"scenario":"`+invalid[:800<<10]+`"}`, from, t0, time.Minute, 1000),
			[]string{"scenario", "is not one of"}},
		{harness.Query("Y1", `{}`, year(1), year(2000), time.Minute, 1000),
			[]string{"time range from 0001-06-01", "outside what Quiver can represent", "1677-09-21 to 2262-04-11"}},
		{harness.Query("Y9", `{}`, year(2000), year(9999), time.Minute, 1000),
			[]string{"to 9999-06-01", "outside what Quiver can represent"}},
	}
	// One request per hostile query (a gRPC message holds 16 MiB), each
	// beside a good query.
	for _, c := range cases {
		start := time.Now()
		resp, err := plug.QueryData(ctx(t), pc, pluginv2.DataFrameFormat_ARROW, walk("A", 2), c.q)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", c.q.RefId, err)
		}
		if frames := decode(t, resp.Responses["A"], "zstd"); len(frames) != 2 {
			t.Errorf("%s: the good query beside it: %d frames", c.q.RefId, len(frames))
		}
		dr := resp.Responses[c.q.RefId]
		if dr == nil {
			t.Fatalf("%s: no response", c.q.RefId)
		}
		if dr.Status != 400 || len(dr.Frames) != 0 || len(dr.Error) > maxMessage {
			t.Errorf("%s: status %d, %d frames, %d-byte message %.300q", c.q.RefId, dr.Status, len(dr.Frames), len(dr.Error), dr.Error)
		}
		for _, w := range c.want {
			if !strings.Contains(dr.Error, w) {
				t.Errorf("%s: %.300q does not say %q", c.q.RefId, dr.Error, w)
			}
		}
		t.Logf("%s: answered in %s: %.200s", c.q.RefId, took.Round(time.Millisecond), dr.Error)
	}
	alive(t)
}

// Hostile settings: health fails (or warns) naming the key, in a bounded
// message that never echoes a secret, and the process stays alive.
func TestHostileSettings(t *testing.T) {
	long := strings.Repeat("z", 10<<20)
	for _, c := range []struct {
		name, js string
		secure   map[string]string
		ok       bool // health OK (with a warning)
		want     []string
	}{
		{"10 MB codec", `{"codec":"` + long + `"}`, nil, false, []string{"jsonData is 10485772 bytes, more than the 1048576 bytes"}},
		{"900 KB codec", `{"codec":"` + long[:900<<10] + `"}`, nil, false, []string{`codec: "zzzz`, "(921600 bytes) is not one of"}},
		{"900 KB level", `{"level":"` + long[:900<<10] + `"}`, nil, false, []string{"level:", "(921600 bytes) is not a whole number"}},
		{"2^40 level", `{"codec":"zstd","level":1099511627776}`, nil, false, []string{"level: 1099511627776 is not within 1 to 22 (zstd levels)"}},
		{"2^40 maxSeries", `{"maxSeries":1099511627776}`, nil, false, []string{"maxSeries: 1099511627776 is not within"}},
		{"CR/LF in headerValue1", `{"upstream":"flightsql","address":"db:1","headerName1":"x-a"}`,
			map[string]string{"headerValue1": "v\r\nx-evil: 1"}, false, []string{"headerValue1: contains a line break"}},
		{"NUL in token", `{"upstream":"flightsql","address":"db:1","authType":"token"}`,
			map[string]string{"token": "abc\x00zq9secret"}, false, []string{"token: contains a NUL byte"}},
		{"misspelled keys", `{"maxseries":5,"Codec":"lz4"}`, map[string]string{"headerValue3": "s3cr3t"}, true, []string{
			`"maxseries" is not a Quiver setting (did you mean "maxSeries"?)`,
			`"Codec" is not a Quiver setting (did you mean "codec"?)`,
			`"headerValue3" is not sent: headerName3 is not set`}},
		{"a host named unix", `{"upstream":"flightsql","address":"unix:1","timeout":2}`, nil, false, []string{"unix:1"}},
	} {
		start := time.Now()
		res, err := plug.Health(ctx(t), instance(c.js, c.secure))
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		wantStatus := pluginv2.CheckHealthResponse_ERROR
		if c.ok {
			wantStatus = pluginv2.CheckHealthResponse_OK
		}
		if res.Status != wantStatus || len(res.Message) > maxMessage {
			t.Errorf("%s: health %v, %d-byte message %.300q", c.name, res.Status, len(res.Message), res.Message)
		}
		for _, w := range c.want {
			if !strings.Contains(res.Message, w) {
				t.Errorf("%s: %q does not say %q", c.name, res.Message, w)
			}
		}
		for _, secret := range []string{"x-evil", "zq9secret", "s3cr3t", "dial unix"} {
			if strings.Contains(res.Message, secret) {
				t.Errorf("%s: the message echoes %q: %q", c.name, secret, res.Message)
			}
		}
		t.Logf("%s: answered in %s: %.200s", c.name, took.Round(time.Millisecond), res.Message)
	}
	alive(t)
}

// alive checks that the plugin process still answers.
func alive(t *testing.T) {
	t.Helper()
	res, err := plug.Health(ctx(t), instance(`{}`, nil))
	if err != nil || res.Status != pluginv2.CheckHealthResponse_OK {
		t.Fatalf("the plugin no longer answers: %v %v", err, res)
	}
}
