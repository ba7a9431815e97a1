package cloudwatchslog

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzTruncate(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add(strings.Repeat("€", 10), 7)
	f.Add("\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 {
			n = -n
		}
		got := truncate(s, n)
		if len(got) > n && len(s) > n {
			t.Fatalf("truncate(%q, %d) = %q: longer than %d", s, n, got, n)
		}
		if !strings.HasPrefix(s, got) {
			t.Fatalf("truncate(%q, %d) = %q: not a prefix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("truncate(%q, %d) = %q: split a UTF-8 sequence", s, n, got)
		}
		if len(s) <= n && got != s {
			t.Fatalf("truncate(%q, %d) = %q: cut a string that fits", s, n, got)
		}
	})
}

// FuzzSplitBatches: events decoded from data (timestamp delta, message
// size) are cut into batches that each satisfy PutLogEvents' constraints
// and together hold every event once, in time order.
func FuzzSplitBatches(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 10, 255, 255, 255, 255, 1, 0}, uint16(3), uint32(200))
	f.Add(make([]byte, 600), uint16(10000), uint32(MaxBatchBytes))
	f.Fuzz(func(t *testing.T, data []byte, maxEvents uint16, maxBytes uint32) {
		me := int(maxEvents)%MaxBatchEvents + 1
		mb := int(maxBytes)%MaxBatchBytes + 1
		var events []event
		var ts int64
		for i := 0; i+6 <= len(data); i += 6 {
			// signed delta of up to ±2^31 ms (~24 days), message of 1..65536 bytes
			ts += int64(int32(binary.BigEndian.Uint32(data[i:])))
			size := int(binary.BigEndian.Uint16(data[i+4:])) + 1
			events = append(events, event{ts: ts, msg: strings.Repeat("x", size)})
		}
		n := len(events)
		batches := splitBatches(events, me, mb)
		total := 0
		var last int64
		for bi, b := range batches {
			if len(b) == 0 || len(b) > me {
				t.Fatalf("batch %d has %d events (max %d)", bi, len(b), me)
			}
			size := 0
			for i, ev := range b {
				size += len(ev.msg) + EventOverhead
				if (bi > 0 || i > 0) && ev.ts < last {
					t.Fatalf("batch %d event %d: time %d before %d", bi, i, ev.ts, last)
				}
				last = ev.ts
			}
			if size > mb && len(b) > 1 {
				t.Fatalf("batch %d: %d bytes > %d", bi, size, mb)
			}
			if span := b[len(b)-1].ts - b[0].ts; span > MaxBatchSpan.Milliseconds() {
				t.Fatalf("batch %d spans %d ms", bi, span)
			}
			total += len(b)
		}
		if total != n {
			t.Fatalf("%d events in, %d out", n, total)
		}
	})
}
