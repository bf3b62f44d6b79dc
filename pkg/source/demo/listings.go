package demo

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// Scenarios that list rather than generate series: the values of one label
// (for dashboard variables) and events (for annotations).
const (
	Labels = "labels"
	Events = "events"
)

// listings are the scenarios answered with one frame built from the query
// alone (series count and seed), a table (Source.Query names it after
// the query and sets its meta).
var listings = map[string]func(q source.Query, series int, seed uint64) (*data.Frame, error){
	Labels: labelValues,
	Events: events,
}

// labelNames are the labels every demo series carries, in the order the
// query editor offers them; DefaultLabel is listed when the query names none.
var labelNames = []string{"host", "region", "job"}

// DefaultLabel is the label a labels query lists when it names none.
const DefaultLabel = "host"

// maxEvents is the most events one events query returns; the slot width
// grows with the range (eventSteps) so that a long range stays readable.
const maxEvents = 50

// eventSteps are the widths of the slots events fall in, smallest first.
// Slots are aligned to the Unix epoch, so an instant gets the same event
// whatever the range.
var eventSteps = []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 28 * 24 * time.Hour}

// listingQuery is the part of the query model only listings read.
type listingQuery struct {
	Label string `json:"label"`
}

// labelValues answers a labels query: one frame with one text column named
// after the label, holding its distinct values over the first series
// series, in the order the series carry them.
func labelValues(q source.Query, series int, _ uint64) (*data.Frame, error) {
	var lq listingQuery
	if err := json.Unmarshal(q.JSON, &lq); err != nil {
		return nil, source.BadQuery("demo query: %v", err)
	}
	if lq.Label == "" {
		lq.Label = DefaultLabel
	}
	if !slices.Contains(labelNames, lq.Label) {
		return nil, source.BadQuery("demo query: label %s is not one of %q", source.Quote(lq.Label), labelNames)
	}
	if q.Limits.MaxSeries > 0 && series > q.Limits.MaxSeries {
		return nil, q.Limits.Series("series").Exceeded(fmt.Sprintf("demo query: seriesCount %d is", series), "lower seriesCount")
	}
	// Every host is distinct; regions and jobs repeat within the first
	// len(regions)×len(jobs) series.
	scan := series
	if lq.Label != "host" {
		scan = min(series, len(regions)*len(jobs))
	} else if q.Limits.MaxPoints > 0 && int64(series) > q.Limits.MaxPoints {
		return nil, q.Limits.Points("points").Exceeded(fmt.Sprintf("demo query: %d values are", series), "lower seriesCount")
	}
	seen := map[string]bool{}
	var values []string
	for i := range scan {
		v := seriesLabels(i)[lq.Label]
		if !seen[v] {
			seen[v] = true
			values = append(values, v)
		}
	}
	if q.Limits.MaxPoints > 0 && int64(len(values)) > q.Limits.MaxPoints {
		return nil, q.Limits.Points("points").Exceeded(fmt.Sprintf("demo query: %d values are", len(values)), "lower seriesCount")
	}
	return data.NewFrame(lq.Label, data.NewField(lq.Label, nil, values)), nil
}

// events answers an events query: deploys (instants) and incidents (regions)
// on the hosts of the first series series, one slot in three holding one,
// with the columns Grafana's annotation queries read: time, timeEnd, text and
// tags (a JSON list).
func events(q source.Query, series int, seed uint64) (*data.Frame, error) {
	if !q.To.After(q.From) {
		return nil, source.BadQuery("demo query: the time range is empty (from %s to %s)", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	step := eventSteps[len(eventSteps)-1]
	for _, s := range eventSteps {
		if q.To.Sub(q.From)/s <= maxEvents {
			step = s
			break
		}
	}
	var (
		start, end []time.Time
		text       []string
		tags       []json.RawMessage
	)
	for slot := q.From.Truncate(step); !slot.After(q.To) && len(start) < maxEvents; slot = slot.Add(step) {
		r := rand.New(rand.NewPCG(seed, uint64(slot.Unix())))
		if r.IntN(3) != 0 {
			continue
		}
		at := slot.Add(time.Duration(r.Int64N(int64(step))))
		if at.Before(q.From) || at.After(q.To) {
			continue
		}
		l := seriesLabels(r.IntN(series))
		kind, until := "deploy", at
		msg := fmt.Sprintf("Deployed %s v1.%d.%d on %s", l["job"], r.IntN(20), r.IntN(10), l["host"])
		if r.IntN(4) == 0 {
			kind, until = "incident", at.Add(step/4)
			msg = fmt.Sprintf("Incident: %s on %s", messages["error"][r.IntN(len(messages["error"]))], l["host"])
		}
		tag, err := json.Marshal([]string{kind, l["host"], l["region"]})
		if err != nil {
			return nil, fmt.Errorf("demo: events: %w", err)
		}
		start, end = append(start, at.UTC()), append(end, until.UTC())
		text, tags = append(text, msg), append(tags, tag)
	}
	if q.Limits.MaxPoints > 0 && int64(len(start)) > q.Limits.MaxPoints {
		return nil, q.Limits.Points("points").Exceeded(fmt.Sprintf("demo query: %d events are", len(start)), "narrow the time range")
	}
	return data.NewFrame("events",
		data.NewField("time", nil, start),
		data.NewField("timeEnd", nil, end),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
	), nil
}
