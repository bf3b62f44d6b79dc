package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFlightSQLAllocators bounds the pool and allocator types of the Flight
// SQL source and its series split: one pool, which is also the series'
// arrays' allocator (series.DirtyPool), and the hook that gives a received
// body back to it (bodyBuffer).
const maxFlightSQLAllocators = 2

// TestFlightSQLAllocatorTypes: memory that outlives a call has at most
// maxFlightSQLAllocators owners in pkg/source/flightsql and below, so
// that who may hand a buffer back is read in one or two places. A type
// counts when its methods make it a memory.Allocator (Allocate, Reallocate
// and Free) or when it holds a sync.Pool.
func TestFlightSQLAllocatorTypes(t *testing.T) {
	var types allocatorTypes
	eachProductionFile(t, func(rel string, src []byte) {
		if strings.HasPrefix(rel, filepath.Join("pkg", "source", "flightsql")+string(filepath.Separator)) {
			types.add(t, filepath.Dir(rel), rel, src)
		}
	})
	if got := types.found(); len(got) == 0 || len(got) > maxFlightSQLAllocators {
		t.Errorf("pool and allocator types under pkg/source/flightsql: %q; want 1 to %d", got, maxFlightSQLAllocators)
	}
	var caught allocatorTypes
	caught.add(t, "x", "x.go", []byte(`package x
import "sync"
type a struct{}
func (a) Allocate(int) []byte { return nil }
func (a) Reallocate(int, []byte) []byte { return nil }
func (*a) Free([]byte) {}
type half struct{}
func (half) Free([]byte) {}
type p struct{ tiers []sync.Pool }
type q struct{ n int }
`))
	if got, want := caught.found(), []string{"x.a", "x.p"}; !slices.Equal(got, want) {
		t.Errorf("the check found %q in a snippet with an allocator and a pool, want %q", got, want)
	}
}

// allocatorTypes gathers, package by package, each type's methods and
// whether it holds a sync.Pool.
type allocatorTypes struct {
	methods map[string][]string // "pkg.Type" → method names
	pools   map[string]bool
}

func (a *allocatorTypes) add(t *testing.T, pkg, name string, src []byte) {
	t.Helper()
	if a.methods == nil {
		a.methods, a.pools = map[string][]string{}, map[string]bool{}
	}
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				continue
			}
			recv := d.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if id, ok := recv.(*ast.Ident); ok {
				a.methods[pkg+"."+id.Name] = append(a.methods[pkg+"."+id.Name], d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				ast.Inspect(ts.Type, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Pool" {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "sync" {
							a.pools[pkg+"."+ts.Name.Name] = true
						}
					}
					return true
				})
			}
		}
	}
}

// found lists the pool and allocator types, sorted.
func (a *allocatorTypes) found() []string {
	var out []string
	for typ, ms := range a.methods {
		if slices.Contains(ms, "Allocate") && slices.Contains(ms, "Reallocate") && slices.Contains(ms, "Free") && !a.pools[typ] {
			out = append(out, typ)
		}
	}
	for typ := range a.pools {
		out = append(out, typ)
	}
	slices.Sort(out)
	return out
}
