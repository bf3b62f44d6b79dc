package plugin

import (
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/useragent"

	"github.com/quiverdata/quiver/pkg/codec"
)

// The requesting Grafana's version, from its user agent, picks the decoder
// generation; no user agent, or one the SDK could not parse, picks the
// oldest.
func TestGrafanaDecoder(t *testing.T) {
	ua := func(v string) *useragent.UserAgent {
		u, err := useragent.New(v, "linux", "amd64")
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	perBatch, pooled := codec.ParseDecoder("per-batch"), codec.ParseDecoder("pooled")
	if linkedDecoder != pooled || perBatch == nil {
		t.Fatalf("generations missing: linked %v, per-batch %v", linkedDecoder, perBatch)
	}
	was := pooled.FirstGrafana
	pooled.FirstGrafana = "13.3.0" // as if a release linked arrow-go v18.9.0
	defer func() { pooled.FirstGrafana = was }()
	for _, tc := range []struct {
		ua   *useragent.UserAgent
		want *codec.Decoder
	}{
		{nil, perBatch},
		{useragent.Empty(), perBatch},
		{ua("12.4.0"), perBatch},
		{ua("13.2.3"), perBatch},
		{ua("13.3.0"), pooled},
		{ua("14.0.0-pre"), pooled},
	} {
		if got := grafanaDecoder(backend.PluginContext{UserAgent: tc.ua}); got != tc.want {
			t.Errorf("user agent %v: decoder %q, want %q", tc.ua, got.Name, tc.want.Name)
		}
	}
}
