// Memory a source keeps between queries, counted in the process's memory
// budget.

package source

// MemoryKeeper is implemented by sources that keep memory between queries
// (a result cache). The plugin counts it in the process's memory budget:
// it registers Shrink, which the budget calls (outside its locks) when a
// query would wait for memory, to have about n bytes given back, and hands
// the source its Kept memory once, before any query.
type MemoryKeeper interface {
	KeepIn(k Kept)
	Shrink(n int64)
}

// Kept is the budget's account of what a MemoryKeeper keeps: TryTake
// takes n bytes when they are free now (false: keep nothing), and Give
// gives back bytes taken.
type Kept interface {
	TryTake(n int64) bool
	Give(n int64)
}
