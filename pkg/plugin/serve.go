package plugin

import (
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/tracing"
	goplugin "github.com/hashicorp/go-plugin"
)

// Serve runs the plugin until Grafana stops it: health checks and resource
// calls through the SDK's handlers and middlewares (and its standalone debug
// mode), and Quiver's own Data service registered as the "data" plugin,
// with its own service descriptor (dataservice.go).
// QueryDataHandler stays nil, so the SDK registers no "data" plugin of its
// own (grpcplugin.Serve copies ExtraPlugins and adds "data" only for one).
// The Data service's responses are written with their frames not copied
// (wire.go), by a "proto" codec registered here, before anything uses gRPC.
func Serve(o Options) error {
	if err := registerWireCodec(); err != nil {
		return err
	}
	backend.SetupPluginEnvironment(PluginID)
	if err := backend.SetupTracer(PluginID, tracing.Opts{}); err != nil {
		return fmt.Errorf("plugin: setting up tracing: %w", err)
	}
	svc := NewService(o)
	defer svc.Close()
	return backend.Manage(PluginID, backend.ServeOpts{
		CheckHealthHandler:  svc,
		CallResourceHandler: svc,
		// After the SDK's defaults, as on the query chain (middleware.go).
		HandlerMiddlewares: []backend.HandlerMiddleware{identityMiddleware},
		ExtraPlugins: goplugin.PluginSet{
			"data": &dataPlugin{srv: svc},
		},
	})
}
