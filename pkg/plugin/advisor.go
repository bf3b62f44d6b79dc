package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
	"github.com/quiverdata/quiver/pkg/frame"
	"github.com/quiverdata/quiver/pkg/pipeline"
	"github.com/quiverdata/quiver/pkg/source"
)

// The codec advisor: the resource POST advise runs a query the
// administrator gives (a demo scenario, or SQL with a time range), encodes
// its frames under every setting of adviseSettings, decodes each with the
// SDK's data.UnmarshalArrowFrame as Grafana does, and answers what each
// setting costs on both sides of the wire. It is bounded: at most
// adviseMaxPoints rows and adviseMaxSeries frames (or the instance's lower
// limits), adviseTimeout for the query and the measuring, every frame held
// in the process's memory budget, one measurement at a time, and only for
// users who may edit the data source (adviseRoles).
const (
	// AdvisePath is the resource path of the advisor.
	AdvisePath       = "advise"
	adviseMaxPoints  = 1_000_000
	adviseMaxSeries  = 1_000
	adviseTimeout    = 30 * time.Second
	adviseMaxBody    = 64 << 10
	adviseMaxDefault = 1000 // maxDataPoints when the request sets none
)

// adviseRoles are the organisation roles Grafana sends (PluginContext.User)
// that may run the advisor: those that may edit a data source. A Viewer's
// measurement would load the CPU and hold the process's one slot for
// everyone else; the settings page, the advisor's only caller, is theirs.
var adviseRoles = []string{"Editor", "Admin"}

// adviseAllowed returns nil when user may run the advisor, else why not.
func adviseAllowed(user *backend.User) error {
	if user == nil {
		return errors.New("advise: the request carries no signed-in user; the advisor is for users who may edit the data source (role Editor or Admin)")
	}
	if slices.Contains(adviseRoles, user.Role) {
		return nil
	}
	return fmt.Errorf("advise: role %s may not run the advisor; it is for users who may edit the data source (role Editor or Admin)", source.Quote(user.Role))
}

// adviseSetting is one codec setting the advisor measures.
type adviseSetting struct {
	Codec      string `json:"codec"`
	Level      int    `json:"level"`
	Preference string `json:"codecPreference,omitempty"`
}

// adviseSettings: the default, auto preferring bytes, and the explicit
// codecs at a spread of levels.
var adviseSettings = []adviseSetting{
	{Codec: "auto", Preference: "cpu"}, {Codec: "auto", Preference: "bytes"},
	{Codec: "none"}, {Codec: "lz4", Level: 0}, {Codec: "lz4", Level: 9},
	{Codec: "zstd", Level: 1}, {Codec: "zstd", Level: 3}, {Codec: "zstd", Level: 7}, {Codec: "zstd", Level: 19},
}

// AdviseRequest is the body of POST advise.
type AdviseRequest struct {
	// Query is the query model, as the query editor stores it.
	Query json.RawMessage `json:"query"`
	// From and To are the time range in epoch milliseconds; the last hour
	// when both are 0.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// MaxDataPoints as Grafana would send it; 1000 when 0.
	MaxDataPoints int64 `json:"maxDataPoints"`
}

// AdviseResult is the advisor's answer.
type AdviseResult struct {
	Frames int   `json:"frames"`
	Rows   int64 `json:"rows"`
	// Decoder names the generation of the requesting Grafana's decoder
	// (codec.Decoders) that auto priced frames by and the decode figures
	// are for.
	Decoder  string          `json:"grafanaDecoder"`
	Settings []AdviseFigures `json:"settings"`
}

// AdviseFigures is what one setting costs for the query's frames.
type AdviseFigures struct {
	adviseSetting
	// WireBytes is the frames' size as sent; Ratio is codec none's size
	// over it.
	WireBytes int64   `json:"wireBytes"`
	Ratio     float64 `json:"ratio"`
	// Per frame, in microseconds: the plugin's encode (in its steady state,
	// after one warm-up pass), Grafana's decode, and their sum. The decode
	// is measured with the plugin's own decoder (linkedDecoder) and
	// corrected, by the difference of the two generations' figures, to the
	// requesting Grafana's.
	EncodeMicros float64 `json:"encodeMicrosPerFrame"`
	DecodeMicros float64 `json:"decodeMicrosPerFrame"`
	TotalMicros  float64 `json:"totalMicrosPerFrame"`
	// Body buffers compressed, stored raw after trying, skipped untried.
	Compressed int `json:"buffersCompressed"`
	Raw        int `json:"buffersRaw"`
	Skipped    int `json:"buffersSkipped"`
	// FramesAs counts the frames by the codec their batch declares.
	FramesAs map[string]int `json:"framesAs"`
}

// advise serves POST advise for inst.
func (s *Service) advise(ctx context.Context, inst *Instance, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	reply := func(status int, v any) error {
		body, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("plugin: advise: encoding the answer: %w", err)
		}
		return sender.Send(&backend.CallResourceResponse{Status: status, Headers: map[string][]string{"Content-Type": {"application/json"}}, Body: body})
	}
	fail := func(status int, msg string) error {
		return reply(status, map[string]string{"error": redactIdentity(ctx, msg)})
	}
	if err := adviseAllowed(req.PluginContext.User); err != nil {
		return fail(http.StatusForbidden, err.Error())
	}
	if req.Method != http.MethodPost {
		return fail(http.StatusMethodNotAllowed, "advise: use POST with the query to measure")
	}
	if len(req.Body) > adviseMaxBody {
		return fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("advise: the request is %d bytes, more than %d", len(req.Body), adviseMaxBody))
	}
	var ar AdviseRequest
	if err := json.Unmarshal(req.Body, &ar); err != nil {
		return fail(http.StatusBadRequest, "advise: the request is not JSON of {query, from, to, maxDataPoints}: "+err.Error())
	}
	if len(ar.Query) == 0 {
		return fail(http.StatusBadRequest, "advise: query: the query to measure is missing")
	}
	select {
	case s.adviseSlot <- struct{}{}:
		defer func() { <-s.adviseSlot }()
	default:
		return fail(http.StatusTooManyRequests, "advise: another measurement is running; try again when it is done")
	}
	ctx, cancel := context.WithTimeout(ctx, adviseTimeout)
	defer cancel()
	if inst.reporter != nil {
		if _, err := inst.reporter.HealthReport(ctx); err != nil {
			// The request's own fault (no signed-in user to forward) is
			// its status; the upstream's is a failed dependency.
			if status, _, msg := classify(err); status < 500 {
				return fail(int(status), "advise: "+msg)
			}
			return fail(http.StatusFailedDependency, "advise: the data source fails its health check: "+oneLine(err))
		}
	}
	res, err := s.measure(ctx, inst, req.PluginContext, ar)
	if err != nil {
		status, _, msg := classify(err)
		return fail(int(status), "advise: "+msg)
	}
	return reply(http.StatusOK, res)
}

// measure runs the query into memory, within the advisor's limits and the
// memory budget share of pc's data source, then measures every setting on
// its frames for the Grafana of pc (its decoder's generation).
func (s *Service) measure(ctx context.Context, inst *Instance, pc backend.PluginContext, ar AdviseRequest) (*AdviseResult, error) {
	gd := grafanaDecoder(pc)
	to, from := time.UnixMilli(ar.To), time.UnixMilli(ar.From)
	if ar.From == 0 && ar.To == 0 {
		to = time.Now()
		from = to.Add(-time.Hour)
	}
	if err := rangeError(from.UnixMilli(), to.UnixMilli()); err != nil {
		return nil, err
	}
	if !from.Before(to) {
		return nil, source.BadQuery("from (%d) is not before to (%d)", ar.From, ar.To)
	}
	mdp := ar.MaxDataPoints
	if mdp <= 0 {
		mdp = adviseMaxDefault
	}
	lim := source.Limits{
		MaxSeries: min(int(inst.settings.MaxSeries), adviseMaxSeries),
		MaxPoints: min(inst.settings.MaxPoints, adviseMaxPoints),
	}
	lim.MaxBytes = lim.MaxPoints * source.PointBytes // within the data source's (runQuery)
	acct := s.pipeline.Account(budgetShare(ctx, pc))
	defer acct.Close()
	col := &collector{acct: acct, limits: lim}
	defer col.release()
	sq := source.Query{
		RefID: "A", JSON: ar.Query, From: from, To: to,
		Interval: max(to.Sub(from)/time.Duration(mdp), time.Millisecond), MaxDataPoints: mdp, Limits: lim,
		Scope: inst.scope(acct),
	}
	if err := s.pipeline.RunSource(ctx, inst.source, sq, col); err != nil {
		if set := source.SettingOf(err); set == "maxSeries" && lim.MaxSeries < int(inst.settings.MaxSeries) ||
			set == "maxPoints" && lim.MaxPoints < inst.settings.MaxPoints {
			// The advisor's own bound, not the setting the message names.
			return nil, source.LimitExceeded("the query is larger than the advisor measures (at most %d series and %d points, or this data source's maxSeries and maxPoints where lower); measure a narrower time range or fewer series",
				lim.MaxSeries, lim.MaxPoints)
		}
		return nil, err
	}
	if len(col.inputs) == 0 {
		return nil, source.BadQuery("the query returned no frames to measure")
	}
	res := &AdviseResult{Frames: len(col.inputs), Rows: col.rows, Decoder: gd.Name}
	var buf []byte
	var none int64
	for _, st := range adviseSettings {
		fig, err := measureSetting(ctx, st, inst.settings.MinSavings, gd, col.inputs, &buf)
		if err != nil {
			return nil, err
		}
		if st.Codec == "none" {
			none = fig.WireBytes
		}
		res.Settings = append(res.Settings, fig)
	}
	for i := range res.Settings {
		if w := res.Settings[i].WireBytes; w > 0 {
			res.Settings[i].Ratio = float64(none) / float64(w)
		}
	}
	return res, nil
}

// measureSetting encodes inputs under st twice (the first pass warms the
// encoder and the skip's history up), decoding each frame of the second
// pass with the SDK; auto prices frames by gd, and the decode time is
// corrected to gd (decodeCorrection).
func measureSetting(ctx context.Context, st adviseSetting, minSavings float64, gd *codec.Decoder, inputs []frame.Input, buf *[]byte) (AdviseFigures, error) {
	fig := AdviseFigures{adviseSetting: st, FramesAs: map[string]int{}}
	o, err := encoderOptions(st.Codec, st.Level, st.Preference, minSavings)
	if err != nil {
		return fig, fmt.Errorf("plugin: advise: %w", err)
	}
	o.Decoder = gd
	e, err := frame.NewEncoder(o)
	if err != nil {
		return fig, fmt.Errorf("plugin: advise: %w", err)
	}
	for _, in := range inputs {
		if *buf, _, err = e.Append((*buf)[:0], in, nil); err != nil {
			return fig, err
		}
	}
	var dec time.Duration
	var sum frame.Summary
	for _, in := range inputs {
		if err := ctx.Err(); err != nil {
			return fig, source.Upstream(fmt.Errorf("measuring %s: %w", st.Codec, err))
		}
		t0 := time.Now()
		var bs arrowipc.BodyStats
		if *buf, bs, err = e.Append((*buf)[:0], in, nil); err != nil {
			return fig, err
		}
		t1 := time.Now()
		if _, err := data.UnmarshalArrowFrame(*buf); err != nil {
			return fig, fmt.Errorf("plugin: advise: a %s frame does not decode: %w", st.Codec, err)
		}
		dec += time.Since(t1) + decodeCorrection(gd, bs)
		sum.Add(bs, t1.Sub(t0))
		fig.WireBytes += int64(len(*buf))
		fig.FramesAs[bs.Codec.String()]++
	}
	n := float64(len(inputs))
	fig.EncodeMicros = float64(sum.Encode.Nanoseconds()) / 1e3 / n
	fig.DecodeMicros = float64(dec.Nanoseconds()) / 1e3 / n
	fig.TotalMicros = fig.EncodeMicros + fig.DecodeMicros
	fig.Compressed, fig.Raw, fig.Skipped = sum.Compressed, sum.Raw, sum.Skipped
	return fig, nil
}

// decodeCorrection is what decoding a batch of stats bs costs a decoder of
// generation gd more than linkedDecoder, the one the advisor measures with,
// by the two generations' figures.
func decodeCorrection(gd *codec.Decoder, bs arrowipc.BodyStats) time.Duration {
	var packed float64
	for _, b := range bs.PerBuffer {
		if b.Outcome == arrowipc.BufferCompressed {
			packed += float64(b.RawBytes)
		}
	}
	ld := linkedDecoder
	switch bs.Codec {
	case codec.Zstd:
		return time.Duration(gd.ZstdBatchNs - ld.ZstdBatchNs + (gd.ZstdNsPerByte-ld.ZstdNsPerByte)*packed)
	case codec.LZ4:
		return time.Duration(gd.LZ4BatchNs - ld.LZ4BatchNs + (gd.LZ4NsPerByte-ld.LZ4NsPerByte)*packed)
	}
	return 0
}

// collector is the advisor's sink: it keeps every frame, within the limits
// and the memory budget (see source.Reserver).
type collector struct {
	acct     *pipeline.Account
	limits   source.Limits
	reserved int64
	rows     int64
	inputs   []frame.Input
}

var (
	_ source.Sink     = (*collector)(nil)
	_ source.Reserver = (*collector)(nil)
)

// Reserve implements source.Reserver.
func (c *collector) Reserve(ctx context.Context, n int64) error {
	if err := c.acct.Acquire(ctx, n); err != nil {
		return err
	}
	c.reserved += n
	return nil
}

func (c *collector) hold(ctx context.Context, rows, n int64) error {
	if len(c.inputs) >= c.limits.MaxSeries {
		return source.LimitExceeded("the query returned more than %d frames, the advisor's limit", c.limits.MaxSeries)
	}
	if c.rows+rows > c.limits.MaxPoints {
		return source.LimitExceeded("the query returned more than %d rows, the advisor's limit; narrow the time range", c.limits.MaxPoints)
	}
	c.rows += rows
	taken := min(n, c.reserved) // reserved ahead (Reserve)
	c.reserved -= taken
	return c.acct.Acquire(ctx, n-taken) // nothing for 0
}

// Frame implements source.Sink.
func (c *collector) Frame(ctx context.Context, f *data.Frame) error {
	if err := c.hold(ctx, int64(f.Rows()), pipeline.FrameBytes(f)); err != nil {
		return err
	}
	c.inputs = append(c.inputs, frame.Input{Frame: f})
	return nil
}

// Record implements source.Sink.
func (c *collector) Record(ctx context.Context, rec arrow.RecordBatch) error {
	if err := c.hold(ctx, rec.NumRows(), pipeline.RecordBytes(rec)); err != nil {
		rec.Release()
		return err
	}
	c.inputs = append(c.inputs, frame.Input{Record: rec})
	return nil
}

// release drops the records the collector holds.
func (c *collector) release() {
	for _, in := range c.inputs {
		if in.Record != nil {
			in.Record.Release()
		}
	}
	c.inputs = nil
}
