// Package heapwatch measures how much a piece of code grows the Go heap, for
// the memory bounds of tests and benchmarks.
package heapwatch

import (
	"runtime"
	"sync"
	"time"
)

// Start samples the heap until stop is called and returns the largest
// growth over the baseline taken at start: live is the peak of the live heap
// (sampled right after a forced GC every 20ms, so garbage the runtime may
// collect at any time does not count), alloc the peak of HeapAlloc between
// GCs (live heap plus garbage, which depends on GOGC pacing).
func Start() (stop func() (live, alloc int64)) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peakLive, peakAlloc uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		var m runtime.MemStats
		for i := 0; ; i++ {
			runtime.ReadMemStats(&m)
			peakAlloc = max(peakAlloc, m.HeapAlloc)
			if i%4 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&m)
				peakLive = max(peakLive, m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	})
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		return int64(max(peakLive, base) - base), int64(max(peakAlloc, base) - base)
	}
}
