package codec

import "testing"

func TestDecodersRegistered(t *testing.T) {
	names := map[string]bool{}
	for i, d := range Decoders {
		if d.Name == "" || names[d.Name] {
			t.Errorf("decoder %d: name %q empty or taken", i, d.Name)
		}
		names[d.Name] = true
		if ParseDecoder(d.Name) != d {
			t.Errorf("ParseDecoder(%q) is not the registered %q", d.Name, d.Name)
		}
		for _, f := range []float64{d.ZstdBatchNs, d.ZstdNsPerByte, d.LZ4BatchNs, d.LZ4NsPerByte} {
			if !(f > 0) {
				t.Errorf("decoder %q: a cost of %v, not above 0", d.Name, f)
			}
		}
		if d.FirstGrafana != "" {
			if _, ok := parseVersion(d.FirstGrafana); !ok {
				t.Errorf("decoder %q: FirstGrafana %q is not major.minor.patch", d.Name, d.FirstGrafana)
			}
		}
	}
	if ParseDecoder("no such") != nil {
		t.Error("ParseDecoder of an unknown name is not nil")
	}
	// Every Grafana released so far links an arrow-go that builds a zstd
	// decoder per batch: the oldest generation is the fallback.
	if Decoders[0].Name != "per-batch" {
		t.Errorf("the fallback generation is %q, not per-batch", Decoders[0].Name)
	}
}

func TestDecoderFor(t *testing.T) {
	perBatch, pooled := ParseDecoder("per-batch"), ParseDecoder("pooled")
	cases := map[string]*Decoder{
		"":               perBatch, // no user agent (Grafana before 10.2)
		"0.0.0":          perBatch, // useragent.Empty
		"10.2.0":         perBatch,
		"12.4.0":         perBatch,
		"13.2.3":         perBatch,
		"99.0.0":         perBatch, // no release is known to link v18.9.0
		"main":           perBatch,
		"12.4":           perBatch,
		"1234567.0.0":    perBatch,
		"12.4.0+sec-01":  perBatch,
		"13.3.0-1234pre": perBatch,
	}
	for v, want := range cases {
		if got := DecoderFor(v); got != want {
			t.Errorf("DecoderFor(%q) = %q, want %q", v, got.Name, want.Name)
		}
	}

	// Once a release is known to link the pooled decoder, it and every
	// later version (pre-releases and builds included) get it.
	was := pooled.FirstGrafana
	pooled.FirstGrafana = "13.3.0"
	defer func() { pooled.FirstGrafana = was }()
	cases = map[string]*Decoder{
		"13.2.3":       perBatch,
		"13.2.99":      perBatch,
		"12.99.0":      perBatch,
		"13.3.0":       pooled,
		"13.3.0-pre":   pooled,
		"13.10.1":      pooled,
		"14.0.0":       pooled,
		"":             perBatch,
		"not-a-semver": perBatch,
	}
	for v, want := range cases {
		if got := DecoderFor(v); got != want {
			t.Errorf("with pooled from 13.3.0: DecoderFor(%q) = %q, want %q", v, got.Name, want.Name)
		}
	}
	if n := testing.AllocsPerRun(100, func() { DecoderFor("13.3.0-pre") }); n != 0 {
		t.Errorf("DecoderFor allocates %v times", n)
	}
}
