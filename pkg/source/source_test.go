package source_test

import (
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
