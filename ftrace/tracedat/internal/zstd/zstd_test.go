package zstd

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files in testdata were compressed by the zstd command (1.5.4) from
// the file of the same name without ".zst" and the suffix: levels 1, 3 and
// 19, without checksum or content size, an empty file, a file of random
// bytes (raw blocks), and 300000 bytes of "tmigr\n" (rle.zst).

func original(t testing.TB, zst string) []byte {
	base := strings.TrimSuffix(filepath.Base(zst), ".zst")
	if base == "rle" {
		return bytes.Repeat([]byte("tmigr\n"), 50000)
	}
	base, _, _ = strings.Cut(base, "-")
	b, err := os.ReadFile(filepath.Join("testdata", base))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func vectors(t testing.TB) []string {
	files, err := filepath.Glob("testdata/*.zst")
	if err != nil || len(files) < 10 {
		t.Fatalf("test vectors: %v %v", files, err)
	}
	return files
}

func TestVectors(t *testing.T) {
	for _, z := range vectors(t) {
		src, err := os.ReadFile(z)
		if err != nil {
			t.Fatal(err)
		}
		want := original(t, z)
		got, err := Decode(src, len(want))
		if err != nil {
			t.Errorf("%s: %v", z, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: decoded data differs", z)
		}
	}
}

// TestFrames: several frames in a row, and skippable frames, decode to
// the concatenation.
func TestFrames(t *testing.T) {
	a, _ := os.ReadFile("testdata/text-3.zst")
	b, _ := os.ReadFile("testdata/bin-1.zst")
	skip := binary.LittleEndian.AppendUint32(nil, skippableMagic+5)
	skip = binary.LittleEndian.AppendUint32(skip, 3)
	skip = append(skip, 1, 2, 3)
	src := append(append(append(bytes.Clone(a), skip...), b...), skip...)
	want := append(bytes.Clone(original(t, "text-3.zst")), original(t, "bin-1.zst")...)
	got, err := Decode(src, len(want))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("err %v, equal %v", err, bytes.Equal(got, want))
	}
}

// TestCorrupt: damaged input is an error, and the output never grows past
// the size asked for.
func TestCorrupt(t *testing.T) {
	src, _ := os.ReadFile("testdata/text-19.zst")
	want := original(t, "text-19.zst")
	for _, tc := range []struct {
		name string
		in   []byte
		n    int
		err  string
	}{
		{"size too small", src, len(want) - 1, "more than"},
		{"size too large", src, len(want) + 1, "expected"},
		{"bad magic", append([]byte{0, 1, 2, 3}, src[4:]...), len(want), "magic"},
		{"truncated", src[:len(src)/2], len(want), ""},
		{"no checksum", src[:len(src)-4], len(want), "checksum"},
		{"bad checksum", append(bytes.Clone(src[:len(src)-1]), src[len(src)-1]^1), len(want), "checksum"},
		{"reserved bit", append(append(bytes.Clone(src[:4]), src[4]|8), src[5:]...), len(want), "reserved"},
		{"dictionary", append(append(bytes.Clone(src[:4]), src[4]|1, 5), src[5:]...), len(want), "dictionar"},
	} {
		got, err := Decode(tc.in, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v (want %q)", tc.name, err, tc.err)
		}
		if len(got) > tc.n {
			t.Errorf("%s: %d bytes out", tc.name, len(got))
		}
	}
	// Every byte flipped in turn: an error or the right data, never a
	// panic.
	for i := range src {
		bad := bytes.Clone(src)
		bad[i] ^= 0x5a
		if got, err := Decode(bad, len(want)); err == nil && !bytes.Equal(got, want) {
			t.Fatalf("byte %d flipped: wrong data without an error", i)
		}
	}
}

func TestPredefinedTables(t *testing.T) {
	for _, c := range []struct {
		norm []int16
		log  int
	}{{llDefault, 6}, {mlDefault, 6}, {ofDefault, 5}} {
		sum := 0
		for _, v := range c.norm {
			if v < 0 {
				sum++
			} else {
				sum += int(v)
			}
		}
		if sum != 1<<c.log {
			t.Errorf("distribution sums to %d, want %d", sum, 1<<c.log)
		}
	}
}

func TestXXH64(t *testing.T) {
	// Reference values of XXH64 with seed 0.
	for in, want := range map[string]uint64{
		"":    0xef46db3751d8e999,
		"a":   0xd24ec4f1a98c6e5b,
		"abc": 0x44bc2cf5ad770999,
		"Nobody inspects the spammish repetition": 0xfbcea83c8a378bf1,
	} {
		if got := xxh64([]byte(in)); got != want {
			t.Errorf("xxh64(%q) = %#x, want %#x", in, got, want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, z := range vectors(f) {
		b, _ := os.ReadFile(z)
		f.Add(b, len(original(f, z)))
	}
	f.Fuzz(func(t *testing.T, src []byte, n int) {
		n = n & (1<<20 - 1)
		got, err := Decode(src, n)
		if err == nil && len(got) != n {
			t.Fatalf("%d bytes without an error, asked for %d", len(got), n)
		}
		if len(got) > n {
			t.Fatalf("%d bytes, asked for %d", len(got), n)
		}
	})
}
