package heapwatch

import (
	"testing"
	"time"
)

var sink [][]byte

func TestStartSeesHeldAndGarbage(t *testing.T) {
	stop := Start()
	held := make([]byte, 32<<20)
	for i := range held {
		held[i] = byte(i)
	}
	sink = append(sink, held)
	time.Sleep(60 * time.Millisecond) // a few samples, at least one after a forced GC
	live, alloc := stop()
	sink = nil
	if live < 32<<20 || alloc < live {
		t.Fatalf("holding 32 MiB: live growth %d, alloc growth %d; want live >= 32 MiB and alloc >= live", live, alloc)
	}
	stop = Start()
	time.Sleep(30 * time.Millisecond)
	if live, _ := stop(); live > 8<<20 {
		t.Fatalf("holding nothing new: live growth %d", live)
	}
}
