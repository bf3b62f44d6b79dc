package source_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/quiverdata/quiver/pkg/source"
)

// Every limit error says what went over, the limit's value and unit, and
// the setting that controls it, in one wording.
func TestLimitExceeded(t *testing.T) {
	for _, tc := range []struct {
		limit        source.Limit
		what, remedy string
		want         string
	}{
		{source.Limit{Max: 15, Unit: "points", Setting: "maxPoints"}, "flightsql: the query returns", "narrow the time range",
			"flightsql: the query returns more than 15 points, this data source's limit per query (setting maxPoints); narrow the time range, or raise maxPoints"},
		{source.Limit{Max: 100, Unit: "series", Setting: "maxSeries"}, "the query returned", "",
			"the query returned more than 100 series, this data source's limit per query (setting maxSeries); raise maxSeries"},
		{source.Limit{Max: 160, Unit: "bytes", Setting: "maxPoints", Note: "10 points × 16 bytes"}, "9 rows (about 200 bytes) weigh", "lower seriesCount",
			"9 rows (about 200 bytes) weigh more than 160 bytes, this data source's limit per query (setting maxPoints; 10 points × 16 bytes); lower seriesCount, or raise maxPoints"},
	} {
		err := tc.limit.Exceeded(tc.what, tc.remedy)
		if source.KindOf(err) != source.KindLimit || err.Error() != tc.want {
			t.Errorf("%+v: %v (kind %d),\nwant %s", tc.limit, err, source.KindOf(err), tc.want)
		}
	}
}

type countingReserver struct{ n int64 }

func (c *countingReserver) Reserve(ctx context.Context, n int64) error { c.n += n; return nil }

// ReserveIn reserves on the context's Reserver, and does nothing without
// one; StatusOf finds the status WithStatus gave an error, however wrapped.
func TestReserveInAndStatus(t *testing.T) {
	if err := source.ReserveIn(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	r := &countingReserver{}
	ctx := source.WithReserver(context.Background(), r)
	if err := source.ReserveIn(ctx, 10); err != nil || r.n != 10 {
		t.Errorf("reserved %d, %v", r.n, err)
	}
	err := fmt.Errorf("outer: %w", source.WithStatus(429, errors.New("busy")))
	if source.StatusOf(err, 502) != 429 || source.StatusOf(errors.New("plain"), 502) != 502 || source.WithStatus(429, nil) != nil || err.Error() != "outer: busy" {
		t.Errorf("StatusOf %d, %q", source.StatusOf(err, 502), err)
	}
}
