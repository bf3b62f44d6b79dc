package plugin

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/pipeline"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/demo"
	"github.com/quiverdata/quiver/pkg/source/flightsql"
)

// Instance is one configured data source: its settings, codec, source and a
// pool of frame encoders configured with that codec.
type Instance struct {
	settings settings.Settings
	// invalid is the settings error; an instance with invalid settings
	// fails its health check and every query with this message.
	invalid error
	source  source.Source
	// optional capabilities of source, found once
	reporter  source.HealthReporter
	resources backend.CallResourceHandler

	encoders *pipeline.Encoders // configured with the instance's codec
	metrics  codecMetrics
	// version is the settings' version (when Grafana last saved them): a
	// kept answer is for these settings only (source.Query.Scope).
	version string
	// dsName and dsUID name the data source in log lines without a
	// request (Dispose), as contextualLoggerMiddleware does in a request's.
	dsName, dsUID string
	// kept is the memory budget's account of what source keeps between
	// queries (source.MemoryKeeper); nil when it keeps nothing.
	kept *pipeline.Kept

	// The requests holding the instance (hold, let): Dispose waits for
	// them, so that one whose data source's settings were saved meanwhile
	// ends as it began, not on a closed connection.
	mu        sync.Mutex
	holders   int
	disposing bool
	idle      chan struct{} // closed by the last let once disposing
}

var _ instancemgmt.InstanceDisposer = (*Instance)(nil)

// scope is what a query of inst that acct accounts for may share kept
// answers within (source.Query.Scope): its tenant, org, data source and
// settings version.
func (inst *Instance) scope(acct *pipeline.Account) string { return acct.Share() + "/" + inst.version }

// SourceFactory builds the source of an instance whose settings are valid.
// Options.Sources sets it, so that tests can substitute a source.
type SourceFactory func(ctx context.Context, s settings.Settings) (source.Source, error)

// DefaultSources builds the demo source, or the Flight SQL source.
func DefaultSources(_ context.Context, s settings.Settings) (source.Source, error) {
	switch s.Upstream {
	case settings.UpstreamDemo:
		return demo.New(), nil
	case settings.UpstreamFlightSQL:
		return flightsql.New(s.FlightSQL, flightsql.WithCacheObserver(cacheMetrics{}))
	}
	return nil, fmt.Errorf("settings: upstream: %q is not one of %q, %q", s.Upstream, settings.UpstreamDemo, settings.UpstreamFlightSQL)
}

// newInstance parses and validates the instance settings once. Invalid
// settings do not fail the factory (which would hide the reason behind a
// generic error): the instance keeps the error and reports it.
func newInstance(ctx context.Context, ds backend.DataSourceInstanceSettings, sources SourceFactory, p *pipeline.Pipeline) *Instance {
	inst := &Instance{version: strconv.FormatInt(ds.Updated.UnixNano(), 10), dsName: ds.Name, dsUID: ds.UID}
	inst.idle = make(chan struct{})
	s, err := settings.Parse(ds.JSONData, ds.DecryptedSecureJSONData)
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		inst.invalid = err
		return inst
	}
	inst.settings = s
	o, err := encoderOptions(s.Codec, s.CodecLevel(), s.CodecPreference, s.MinSavings)
	if err == nil {
		inst.metrics = newCodecMetrics(o.Codec.String())
		inst.encoders, err = pipeline.NewEncoders(o)
	}
	if err != nil {
		inst.invalid = fmt.Errorf("settings: %w", err)
		return inst
	}
	src, err := sources(ctx, s)
	if err != nil {
		inst.invalid = err
		return inst
	}
	inst.source = src
	if mk, ok := src.(source.MemoryKeeper); ok {
		inst.kept = p.Keep(mk.Shrink)
		mk.KeepIn(inst.kept)
	}
	inst.reporter, _ = src.(source.HealthReporter)
	if rh, ok := src.(source.ResourceHandler); ok {
		inst.resources = httpadapter.New(rh.Resources())
	}
	return inst
}

// hold marks a request as using inst until it calls let; false once inst
// is being disposed.
func (inst *Instance) hold() bool {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.disposing {
		return false
	}
	inst.holders++
	return true
}

func (inst *Instance) let() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.holders--; inst.holders == 0 && inst.disposing {
		close(inst.idle)
	}
}

// disposeWait bounds how long Dispose waits for the requests holding the
// instance: a Flight SQL query ends within its timeout setting, a demo
// query at once. Past it, the source is closed under what still runs.
func (inst *Instance) disposeWait() time.Duration {
	return time.Duration(max(inst.settings.FlightSQL.Timeout, settings.DefaultFlightSQLTimeout))*time.Second + 5*time.Second
}

// Dispose closes the instance's source when Grafana replaces the instance
// (its settings changed) or the plugin stops, once the requests holding it
// have ended (at most disposeWait). Grafana calls it on a goroutine of its
// own, after the requests already given the instance had some seconds.
func (inst *Instance) Dispose() {
	inst.mu.Lock()
	inst.disposing = true
	busy := inst.holders > 0
	inst.mu.Unlock()
	logger := backend.Logger.With("pluginId", PluginID, "dsName", inst.dsName, "dsUid", inst.dsUID)
	if busy {
		t := time.NewTimer(inst.disposeWait())
		select {
		case <-inst.idle:
		case <-t.C:
			logger.Warn("closing a replaced data source under requests still running", "after", inst.disposeWait())
		}
		t.Stop()
	}
	if c, ok := inst.source.(io.Closer); ok {
		if err := c.Close(); err != nil {
			logger.Warn("closing data source", "error", err)
		}
	}
	if inst.kept != nil {
		inst.kept.Close()
	}
}

// encoderOptions are the encoder options of a codec setting: the codec
// named name at level, and for auto the preference named pref.
func encoderOptions(name string, level int, pref string, minSavings float64) (arrowipc.Options, error) {
	kind, err := codec.ParseKind(name)
	if err != nil {
		return arrowipc.Options{}, err
	}
	c, err := codec.New(kind, level)
	if err != nil {
		return arrowipc.Options{}, err
	}
	o := arrowipc.Options{Codec: c, MinSavings: minSavings}
	if kind == codec.Auto {
		o.Preference, err = codec.ParsePreference(pref)
	}
	return o, err
}
