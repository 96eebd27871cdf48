package ftrace

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// largestTrace is the biggest recording (1.3 MB, 8792 events).
const largestTrace = tracesDir + "/vm18-2node-mixed.txt"

// BenchmarkReadLargest parses the largest recording from memory: every line
// split, every payload decoded.
func BenchmarkReadLargest(b *testing.B) {
	data, err := os.ReadFile(largestTrace)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data))
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 8792 {
			b.Fatalf("%d events", n)
		}
	}
}

// BenchmarkWriteLargest prints the largest recording's events again.
func BenchmarkWriteLargest(b *testing.B) {
	data, err := os.ReadFile(largestTrace)
	if err != nil {
		b.Fatal(err)
	}
	h, events, _ := readAll(b, data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteTrace(io.Discard, h, events); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPayloads decodes every payload case's text and prints it again.
func BenchmarkPayloads(b *testing.B) {
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		for _, tc := range payloadCases {
			p, err := DecodePayload(tc.want.Name(), tc.text)
			if err != nil {
				b.Fatal(err)
			}
			if buf, err = AppendPayload(buf[:0], p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
