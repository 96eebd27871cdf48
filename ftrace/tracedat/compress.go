package tracedat

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
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

// zstdDecoder is one decoder for every file: DecodeAll may be called from
// several goroutines at once, and with a concurrency of 1 the decoder starts
// no goroutines of its own. Its memory bound is the largest block or chunk
// this package accepts, so no frame, whatever size it claims, makes it
// allocate more.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(max(MaxChunk, MaxSection)),
		zstd.WithDecoderMaxWindow(max(MaxChunk, MaxSection)))
})

func (zstdCodec) decompress(src []byte, n int) ([]byte, error) {
	d, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	// A first buffer of at most 1 MiB that grows as data comes: a size
	// from the file allocates nothing the data does not fill.
	out, err := d.DecodeAll(src, make([]byte, 0, min(n, 1<<20)))
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("data decompresses to %d bytes, its header says %d", len(out), n)
	}
	return out, nil
}
