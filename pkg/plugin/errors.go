package plugin

import (
	"context"
	"errors"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/quiverdata/quiver/pkg/pipeline"
	"github.com/quiverdata/quiver/pkg/source"
)

// classify maps an error of a query to the status and error source Grafana
// shows, and the message: once, here, at the edge.
func classify(err error) (backend.Status, backend.ErrorSource, string) {
	msg := oneLine(err)
	switch source.KindOf(err) {
	case source.KindQuery, source.KindLimit:
		return backend.StatusBadRequest, backend.ErrorSourcePlugin, msg
	case source.KindTimeout:
		return backend.StatusTimeout, backend.ErrorSourceDownstream, msg
	case source.KindUpstream:
		if errors.Is(err, context.DeadlineExceeded) {
			return backend.StatusTimeout, backend.ErrorSourceDownstream, msg
		}
		return backend.StatusBadGateway, backend.ErrorSourceDownstream, msg
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return backend.StatusTimeout, backend.ErrorSourceDownstream, "query timed out: " + msg
	case errors.Is(err, context.Canceled):
		return backend.StatusTimeout, backend.ErrorSourceDownstream, "query cancelled: " + msg
	case errors.Is(err, errInvalidSettings), errors.Is(err, pipeline.ErrTooLarge):
		return backend.StatusBadRequest, backend.ErrorSourcePlugin, msg
	case errors.Is(err, pipeline.ErrBusy):
		return backend.StatusTooManyRequests, backend.ErrorSourcePlugin, msg
	}
	return backend.StatusInternal, backend.ErrorSourcePlugin, msg
}

// errInvalidSettings marks the settings error of an instance when it is
// returned for a query.
var errInvalidSettings = errors.New("invalid data source settings")

type settingsError struct{ err error }

func (e settingsError) Error() string { return e.err.Error() }
func (e settingsError) Unwrap() []error {
	return []error{e.err, errInvalidSettings}
}

// oneLine joins the lines of err's message (errors.Join uses newlines),
// for messages shown in one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// resourceErrorSource is the error source of a failed resource response
// by its HTTP status: a gateway status means the upstream failed.
func resourceErrorSource(status int) backend.ErrorSource {
	switch status {
	case 502, 503, 504:
		return backend.ErrorSourceDownstream
	}
	return backend.ErrorSourcePlugin
}
