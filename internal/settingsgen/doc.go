// Command gen writes what is generated from the settings table
// (settings.Table) and package codec's codecs (codec.Specs):
//
//   - pkg/settings/codecs_gen.go: the codecs' names, level ranges and what
//     each level becomes, so that package settings (standard library only)
//     validates levels with package codec's facts;
//   - src/generated/settings.ts: the editor's defaults, ranges, accepted
//     values, help text, message templates and level mapping;
//   - src/generated/messages.json: for out-of-range values of every numeric
//     setting (and a bad value of every fixed-set setting), the message
//     settings.Validate gives; a jest test checks that the editor's
//     validate gives the same;
//   - the settings table of README.md, between its settings markers.
//
// Run it with `go generate ./pkg/settings` (or `go tool mage generate`);
// TestGeneratedFilesAreCurrent fails when a file is stale. It imports
// package settings, so pkg/settings/codecs_gen.go must compile for it to
// run: change codec.Specs, then run it.
//
// It imports package codec and package settings, which
// package settings itself may not: this is how codec's facts reach the
// settings table without settings importing anything but the standard
// library.
package main
