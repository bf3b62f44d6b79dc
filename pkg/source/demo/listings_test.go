package demo

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/pkg/source"
)

func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{`{"scenario":"labels","seriesCount":3}`, []string{"host-1", "host-2", "host-3"}},
		{`{"scenario":"labels","label":"host","seriesCount":2}`, []string{"host-1", "host-2"}},
		{`{"scenario":"labels","label":"region","seriesCount":8}`, regions},
		{`{"scenario":"labels","label":"region","seriesCount":2}`, regions[:2]},
		{`{"scenario":"labels","label":"job","seriesCount":13}`, jobs[:3]},
	} {
		frames, err := run(t, query(tc.query))
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if len(frames) != 1 || len(frames[0].Fields) != 1 || frames[0].RefID != "A" {
			t.Fatalf("%s: %d frames", tc.query, len(frames))
		}
		f := frames[0].Fields[0]
		var got []string
		for i := range f.Len() {
			got = append(got, f.At(i).(string))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	// The labels of the listing are the labels the random walks carry.
	frames, err := run(t, query(`{"scenario":"random_walk","seriesCount":4}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if h := f.Fields[1].Labels["host"]; h != "host-"+string(rune('1'+i)) {
			t.Errorf("series %d host %s", i, h)
		}
	}
}

func TestLabelsErrorsAndLimits(t *testing.T) {
	for _, tc := range []struct {
		query string
		kind  source.Kind
		msg   string
	}{
		{`{"scenario":"labels","label":"zone"}`, source.KindQuery, `label "zone" is not one of ["host" "region" "job"]`},
		{`{"scenario":"labels","seriesCount":101}`, source.KindLimit, "seriesCount 101 is more than 100 series, this data source's limit per query (setting maxSeries)"},
		{`{"scenario":"labels","seriesCount":0}`, source.KindQuery, "seriesCount 0 must be at least 1"},
		{`{"scenario":"lables"}`, source.KindQuery, `scenario "lables" is not one of`},
	} {
		_, err := run(t, query(tc.query))
		if err == nil || source.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v (kind %d), want kind %d %q", tc.query, err, source.KindOf(err), tc.kind, tc.msg)
		}
	}
	q := query(`{"scenario":"labels","seriesCount":5}`)
	q.Limits.MaxPoints = 4
	if _, err := run(t, q); source.KindOf(err) != source.KindLimit || !strings.Contains(err.Error(), "5 values are more than 4 points, this data source's limit per query (setting maxPoints)") {
		t.Errorf("maxPoints: %v", err)
	}
}

func TestEvents(t *testing.T) {
	q := query(`{"scenario":"events","seriesCount":5,"seed":2}`)
	q.From = t0.Add(-48 * time.Hour)
	frames, err := run(t, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 {
		t.Fatalf("%d frames", len(frames))
	}
	f := frames[0]
	names := []string{}
	for _, fl := range f.Fields {
		names = append(names, fl.Name)
	}
	if strings.Join(names, ",") != "time,timeEnd,text,tags" {
		t.Fatalf("fields %v", names)
	}
	if f.Rows() == 0 || f.Rows() > 48 {
		t.Fatalf("%d events in 48 one-hour slots", f.Rows())
	}
	regions, instants := 0, 0
	for i := range f.Rows() {
		at, end := f.Fields[0].At(i).(time.Time), f.Fields[1].At(i).(time.Time)
		if at.Before(q.From) || at.After(q.To) || end.Before(at) {
			t.Fatalf("event %d at %v..%v outside %v..%v", i, at, end, q.From, q.To)
		}
		var tags []string
		if err := json.Unmarshal(f.Fields[3].At(i).(json.RawMessage), &tags); err != nil || len(tags) != 3 {
			t.Fatalf("tags %s: %v", f.Fields[3].At(i), err)
		}
		text := f.Fields[2].At(i).(string)
		if !strings.Contains(text, tags[1]) || !strings.HasPrefix(tags[1], "host-") {
			t.Errorf("text %q tags %v", text, tags)
		}
		switch tags[0] {
		case "incident":
			regions++
			if !end.After(at) {
				t.Errorf("incident %d has no duration", i)
			}
		case "deploy":
			instants++
			if !end.Equal(at) {
				t.Errorf("deploy %d has a duration", i)
			}
		default:
			t.Errorf("kind %q", tags[0])
		}
	}
	if regions == 0 || instants == 0 {
		t.Errorf("%d incidents, %d deploys: want both", regions, instants)
	}

	// The same instant gets the same event on a narrower range.
	q2 := q
	q2.From = t0.Add(-24 * time.Hour)
	narrow, err := run(t, q2)
	if err != nil {
		t.Fatal(err)
	}
	wide := map[time.Time]string{}
	for i := range f.Rows() {
		wide[f.Fields[0].At(i).(time.Time)] = f.Fields[2].At(i).(string)
	}
	for i := range narrow[0].Rows() {
		at := narrow[0].Fields[0].At(i).(time.Time)
		if wide[at] != narrow[0].Fields[2].At(i).(string) {
			t.Errorf("event at %v differs between ranges", at)
		}
	}

	limited := q
	limited.Limits.MaxPoints = int64(f.Rows() - 1)
	if _, err := run(t, limited); source.KindOf(err) != source.KindLimit {
		t.Errorf("maxPoints %d: %v", limited.Limits.MaxPoints, err)
	}

	// A year stays within maxEvents.
	q.From = t0.Add(-365 * 24 * time.Hour)
	frames, err = run(t, q)
	if err != nil || frames[0].Rows() > maxEvents {
		t.Fatalf("a year: %v, %d events", err, frames[0].Rows())
	}
	q.From = q.To
	if _, err := run(t, q); source.KindOf(err) != source.KindQuery {
		t.Errorf("empty range: %v", err)
	}
}
