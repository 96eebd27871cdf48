package tracedat

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/tmigr/tmigr/ftrace/tracedat/internal/zstd"
)

// codec decompresses the blocks and chunks of a version 7 file.
type codec interface {
	// decompress returns the n bytes that src decompresses to; it
	// fails, without allocating more than n bytes, on data that does
	// not decompress to exactly n.
	decompress(src []byte, n int) ([]byte, error)
}

// newCodec returns the codec of a file's compression, nil for "none".
// trace-cmd writes zstd (libzstd's frames) or zlib (zlib's compress2).
func newCodec(name string) (codec, error) {
	switch name {
	case "none":
		return nil, nil
	case "zlib":
		return zlibCodec{}, nil
	case "zstd":
		return zstdCodec{}, nil
	}
	return nil, fmt.Errorf("compression %q: only none, zlib and zstd are known", name)
}

type zlibCodec struct{}

func (zlibCodec) decompress(src []byte, n int) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("data ends before its %d bytes: %w", n, err)
	}
	var one [1]byte
	if k, _ := zr.Read(one[:]); k != 0 {
		return nil, fmt.Errorf("data holds more than its %d bytes", n)
	}
	if err := zr.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

type zstdCodec struct{}

func (zstdCodec) decompress(src []byte, n int) ([]byte, error) {
	return zstd.Decode(src, n)
}
