package plugin

import (
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql"
)

func newFlightSQL(cfg settings.FlightSQL) (source.Source, error) {
	return flightsql.New(cfg)
}
