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
	// Read at most n+1 bytes, growing the buffer only as data comes: a
	// size from the file allocates nothing the data does not fill.
	var out bytes.Buffer
	if _, err := io.Copy(&out, io.LimitReader(zr, int64(n)+1)); err != nil {
		return nil, err
	}
	if out.Len() > n {
		return nil, fmt.Errorf("data decompresses to more than the %d bytes its header says", n)
	}
	if out.Len() < n {
		return nil, fmt.Errorf("data decompresses to %d bytes, its header says %d", out.Len(), n)
	}
	return out.Bytes(), zr.Close()
}

type zstdCodec struct{}

func (zstdCodec) decompress(src []byte, n int) ([]byte, error) {
	return zstd.Decode(src, n)
}
