package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/quiverdata/quiver/pkg/codec"
)

// grafanaDecoder returns the generation of the Arrow decoder of the Grafana
// that sent a request, from the version in its user agent: codec auto
// prices that request's frames by it. Grafana before 10.2 sends no user
// agent; it, and a version codec.DecoderFor does not know, get the oldest
// generation, which is every Grafana released so far.
func grafanaDecoder(pc backend.PluginContext) *codec.Decoder {
	if pc.UserAgent == nil || pc.UserAgent.IsUnknown() {
		return codec.Decoders[0]
	}
	return codec.DecoderFor(pc.UserAgent.GrafanaVersion())
}

// linkedDecoder is the generation of the decoder this plugin links (go.mod:
// arrow-go v18.9.0, pooled zstd decoders): the advisor decodes with it, and
// corrects its figures to the requesting Grafana's generation.
var linkedDecoder = codec.ParseDecoder("pooled")
