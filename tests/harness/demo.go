package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"gopkg.in/yaml.v3"

	"github.com/quiverdata/quiver/pkg/frame"
)

// DemoDataSource is a provisioned data source.
type DemoDataSource struct {
	Name     string         `yaml:"name"`
	UID      string         `yaml:"uid"`
	Type     string         `yaml:"type"`
	Default  bool           `yaml:"isDefault"`
	JSONData map[string]any `yaml:"jsonData"`
}

// DemoPanel is a dashboard panel with the queries it runs.
type DemoPanel struct {
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []map[string]any `json:"targets"`
}

// LoadProvisioning reads the provisioned data sources of the plugin and the
// panels of the provisioned dashboards under root/provisioning.
func LoadProvisioning(root string) ([]DemoDataSource, []DemoPanel, error) {
	b, err := os.ReadFile(filepath.Join(root, "provisioning", "datasources", "quiver.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var dsFile struct {
		Datasources []DemoDataSource `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(b, &dsFile); err != nil {
		return nil, nil, fmt.Errorf("harness: provisioning/datasources/quiver.yaml: %w", err)
	}
	dashboards, err := filepath.Glob(filepath.Join(root, "provisioning", "dashboards", "*.json"))
	if err != nil {
		return nil, nil, err
	}
	var panels []DemoPanel
	for _, path := range dashboards {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		var d struct {
			Panels []DemoPanel `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, nil, fmt.Errorf("harness: %s: %w", path, err)
		}
		panels = append(panels, d.Panels...)
	}
	return dsFile.Datasources, panels, nil
}

// DemoRow is what one query of the demo returned.
type DemoRow struct {
	DataSource, Codec, Query string
	Frames, Rows             int
	RawBody, WireBody        float64 // body bytes, from the frames' stats
	FrameBytes               int     // whole frames on the wire
	Encode                   time.Duration
	Wall                     time.Duration
	Err                      string
}

// extraCodecs are run besides the provisioned data sources, so that the
// demo compares more levels than the dashboard shows.
var extraCodecs = []map[string]any{
	{"codec": "zstd", "level": 1}, {"codec": "zstd", "level": 7}, {"codec": "zstd", "level": 19}, {"codec": "lz4", "level": 9},
}

// RunDemo runs the queries of the provisioned dashboard against every
// provisioned demo data source (and a few more codec levels) through the
// running plugin, over the last 6 hours with 1000 points per series, and
// returns a row per query.
func RunDemo(ctx context.Context, p *Plugin, root string) ([]DemoRow, error) {
	sources, panels, err := LoadProvisioning(root)
	if err != nil {
		return nil, err
	}
	// The dashboard's queries, by the data source they were written for;
	// every demo data source runs the queries of the first one's panels.
	var queries []DemoPanel
	firstUID := ""
	for _, ds := range sources {
		if ds.JSONData["upstream"] == "demo" && firstUID == "" {
			firstUID = ds.UID
		}
	}
	for _, pnl := range panels {
		if pnl.Datasource.UID == firstUID {
			queries = append(queries, pnl)
		}
	}
	if len(queries) == 0 {
		return nil, fmt.Errorf("harness: no panel of the provisioned dashboards uses the demo data source %q", firstUID)
	}
	var demos []DemoDataSource
	for _, ds := range sources {
		if ds.Type == "quiver-arrow-datasource" && ds.JSONData["upstream"] == "demo" {
			demos = append(demos, ds)
		}
	}
	for _, c := range extraCodecs {
		jd := map[string]any{"upstream": "demo", "minSavings": 0.1}
		for k, v := range c {
			jd[k] = v
		}
		demos = append(demos, DemoDataSource{Name: fmt.Sprintf("extra: %v %v", c["codec"], c["level"]), JSONData: jd})
	}

	to := time.Now().UTC().Truncate(time.Minute)
	from := to.Add(-6 * time.Hour)
	var rows []DemoRow
	for i, ds := range demos {
		jd, err := json.Marshal(ds.JSONData)
		if err != nil {
			return nil, err
		}
		pc := Context(int64(1000+i), string(jd), nil)
		for _, pnl := range queries {
			for _, target := range pnl.Targets {
				delete(target, "datasource")
				q := Query("A", target, from, to, 6*time.Hour/1000, 1000)
				start := time.Now()
				resp, err := p.QueryData(ctx, pc, pluginv2.DataFrameFormat_ARROW, q)
				row := DemoRow{DataSource: ds.Name, Query: queryName(pnl.Title), Wall: time.Since(start)}
				if err != nil {
					return nil, err
				}
				summarise(&row, resp.Responses["A"])
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

func summarise(row *DemoRow, dr *pluginv2.DataResponse) {
	if dr == nil {
		row.Err = "no response"
		return
	}
	if dr.Error != "" {
		row.Err = dr.Error
		return
	}
	frames, err := data.UnmarshalArrowFrames(dr.Frames)
	if err != nil {
		row.Err = err.Error()
		return
	}
	row.Frames = len(frames)
	for i, f := range frames {
		row.Rows += f.Rows()
		row.FrameBytes += len(dr.Frames[i])
		if f.Meta == nil {
			continue
		}
		for _, s := range f.Meta.Stats {
			switch {
			case s.DisplayName == frame.StatRawBytes:
				row.RawBody += s.Value
			case s.DisplayName == frame.StatWireBytes:
				row.WireBody += s.Value
			case s.DisplayName == frame.StatEncode:
				row.Encode += time.Duration(s.Value * float64(time.Millisecond))
			case len(s.DisplayName) > len(frame.StatCodec) && s.DisplayName[:len(frame.StatCodec)] == frame.StatCodec:
				row.Codec = s.DisplayName[len(frame.StatCodec):]
			}
		}
	}
}

// PrintDemo writes rows as a table.
func PrintDemo(w io.Writer, rows []DemoRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "data source\tcodec\tquery\tframes\trows\traw body B\twire body B\tratio\tframes B\tencode\twall\t")
	for _, r := range rows {
		if r.Err != "" {
			fmt.Fprintf(tw, "%s\t\t%s\terror: %s\t\t\t\t\t\t\t\t\n", r.DataSource, r.Query, r.Err)
			continue
		}
		ratio := "-"
		if r.WireBody > 0 {
			ratio = strconv.FormatFloat(r.RawBody/r.WireBody, 'f', 2, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.0f\t%.0f\t%s\t%d\t%s\t%s\t\n", r.DataSource, r.Codec, r.Query, r.Frames, r.Rows,
			r.RawBody, r.WireBody, ratio, r.FrameBytes, r.Encode.Round(time.Microsecond), r.Wall.Round(time.Microsecond))
	}
	return tw.Flush()
}

// queryName is a panel title without the data source it names after " — ".
func queryName(title string) string {
	if i := strings.Index(title, " — "); i > 0 {
		return title[:i]
	}
	return title
}
