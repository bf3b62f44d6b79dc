// This file is the same in tests/decoders and tests/decoders/old
// (TestBenchCopiesAgree): one benchmark, run against the arrow-go and SDK
// each module links.

package decoders_test

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

var framesDir = flag.String("frames", "", "directory of the *.frames files BenchmarkGrafanaDecode decodes (written by TestWriteFrames -write)")

// readFrames reads a file of (uint32 little-endian length, Arrow IPC file)
// pairs.
func readFrames(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("%s: truncated length", path)
		}
		n := int(binary.LittleEndian.Uint32(b))
		if len(b) < 4+n {
			return nil, fmt.Errorf("%s: truncated frame", path)
		}
		out = append(out, b[4:4+n])
		b = b[4+n:]
	}
	return out, nil
}

// BenchmarkGrafanaDecode decodes each file's frames with the SDK's
// data.UnmarshalArrowFrame, as Grafana does every frame of a response: one
// op is the whole file (one query's frames).
func BenchmarkGrafanaDecode(b *testing.B) {
	if *framesDir == "" {
		b.Skip("-frames names no directory")
	}
	files, err := filepath.Glob(filepath.Join(*framesDir, "*.frames"))
	if err != nil {
		b.Fatal(err)
	}
	if len(files) == 0 {
		b.Fatalf("no *.frames file in %s", *framesDir)
	}
	sort.Strings(files)
	for _, path := range files {
		frames, err := readFrames(path)
		if err != nil {
			b.Fatal(err)
		}
		shape, setting, _ := strings.Cut(strings.TrimSuffix(filepath.Base(path), ".frames"), ".")
		wire := 0
		for _, f := range frames {
			wire += len(f)
		}
		b.Run("frame="+shape+"/codec="+setting, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, f := range frames {
					if _, err := data.UnmarshalArrowFrame(f); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(wire), "wire-B/op")
		})
	}
}
