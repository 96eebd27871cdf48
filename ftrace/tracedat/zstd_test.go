package tracedat

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files in testdata/zstd were compressed by the zstd command (1.5.4)
// from the file of the same name without ".zst" and the suffix: levels 1, 3
// and 19, without checksum or content size, an empty file, a file of random
// bytes (raw blocks), and 300000 bytes of "tmigr\n" (rle.zst). trace-cmd's
// own zstd output is read by TestRealVersions.

func zstdOriginal(t testing.TB, zst string) []byte {
	base := strings.TrimSuffix(filepath.Base(zst), ".zst")
	if base == "rle" {
		return bytes.Repeat([]byte("tmigr\n"), 50000)
	}
	base, _, _ = strings.Cut(base, "-")
	b, err := os.ReadFile(filepath.Join("testdata", "zstd", base))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func zstdVectors(t testing.TB) []string {
	files, err := filepath.Glob("testdata/zstd/*.zst")
	if err != nil || len(files) < 8 {
		t.Fatalf("test vectors: %v %v", files, err)
	}
	return files
}

func TestZstdVectors(t *testing.T) {
	for _, z := range zstdVectors(t) {
		src, err := os.ReadFile(z)
		if err != nil {
			t.Fatal(err)
		}
		want := zstdOriginal(t, z)
		got, err := zstdCodec{}.decompress(src, len(want))
		if err != nil {
			t.Errorf("%s: %v", z, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: decoded data differs", z)
		}
	}
}

// TestZstdCorrupt: damaged input, or a size that the data does not
// decompress to, is an error, never a panic.
func TestZstdCorrupt(t *testing.T) {
	src, err := os.ReadFile("testdata/zstd/text-19.zst")
	if err != nil {
		t.Fatal(err)
	}
	want := zstdOriginal(t, "text-19.zst")
	for _, tc := range []struct {
		name string
		in   []byte
		n    int
	}{
		{"size too small", src, len(want) - 1},
		{"size too large", src, len(want) + 1},
		{"bad magic", append([]byte{0, 1, 2, 3}, src[4:]...), len(want)},
		{"truncated", src[:len(src)/2], len(want)},
		{"no checksum", src[:len(src)-4], len(want)},
		{"bad checksum", append(bytes.Clone(src[:len(src)-1]), src[len(src)-1]^1), len(want)},
		{"reserved bit", append(append(bytes.Clone(src[:4]), src[4]|8), src[5:]...), len(want)},
		{"empty", nil, len(want)},
	} {
		if _, err := (zstdCodec{}).decompress(tc.in, tc.n); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	// Every byte flipped in turn: an error or the right data, never a
	// panic.
	for i := range src {
		bad := bytes.Clone(src)
		bad[i] ^= 0x5a
		if got, err := (zstdCodec{}).decompress(bad, len(want)); err == nil && !bytes.Equal(got, want) {
			t.Fatalf("byte %d flipped: wrong data without an error", i)
		}
	}
}

// TestZstdBlock: a version 7 block whose zstd data is cut short is an
// error naming the compression, not a panic.
func TestZstdBlock(t *testing.T) {
	src, err := os.ReadFile("testdata/zstd/text-3.zst")
	if err != nil {
		t.Fatal(err)
	}
	want := zstdOriginal(t, "text-3.zst")
	le := binary.LittleEndian
	f := &File{order: le, comp: zstdCodec{}, Compression: "zstd"}
	block := func(z []byte, n int) []byte {
		b := le.AppendUint32(nil, uint32(len(z)))
		b = le.AppendUint32(b, uint32(n))
		return append(b, z...)
	}
	if got, err := f.uncompressBlock(block(src, len(want)), MaxSection); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("whole block: err %v, equal %v", err, bytes.Equal(got, want))
	}
	_, err = f.uncompressBlock(block(src[:len(src)-20], len(want)), MaxSection)
	if err == nil || !strings.HasPrefix(err.Error(), "zstd: ") {
		t.Fatalf("truncated block: %v, want an error naming zstd", err)
	}
}

func FuzzZstd(f *testing.F) {
	for _, z := range zstdVectors(f) {
		b, err := os.ReadFile(z)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, len(zstdOriginal(f, z)))
	}
	f.Fuzz(func(t *testing.T, src []byte, n int) {
		n = n & (1<<20 - 1)
		got, err := zstdCodec{}.decompress(src, n)
		if err == nil && len(got) != n {
			t.Fatalf("%d bytes without an error, asked for %d", len(got), n)
		}
	})
}
