package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// outputFile is a file a command writes, which appears whole or not at
// all: it is written under a temporary name in the destination's directory
// and renamed over the destination by commit. A run that fails (or is
// killed) before commit leaves the file that was there untouched; abort,
// deferred, removes the temporary file.
//
// Every file a command writes goes through one: --trace, and (once their
// commands adopt it) lab's -o, --out and --console.
//
//	out, err := createOutput(path)
//	if err != nil { ... }
//	defer out.abort()
//	... write to out ...
//	return out.commit()
type outputFile struct {
	*os.File
	path string // the destination
	perm fs.FileMode
	done bool
}

// createOutput starts writing the file at path. The directory must exist.
// A destination that is a symbolic link is replaced through it (its target
// is written), and an existing file keeps its permissions; a new one gets
// 0644.
func createOutput(path string) (*outputFile, error) {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		if !st.Mode().IsRegular() {
			return nil, &fs.PathError{Op: "write", Path: path, Err: errors.New("not a regular file")}
		}
		perm = st.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	return &outputFile{File: f, path: path, perm: perm}, nil
}

// commit closes the file and puts it in place.
func (o *outputFile) commit() error {
	if o.done {
		return errors.New("output " + o.path + " committed twice")
	}
	o.done = true
	err := o.File.Close()
	if err == nil {
		err = os.Chmod(o.Name(), o.perm)
	}
	if err == nil {
		err = os.Rename(o.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.Name())
	}
	return err
}

// abort discards what was written; after commit it does nothing.
func (o *outputFile) abort() {
	if o.done {
		return
	}
	o.done = true
	o.File.Close()
	os.Remove(o.Name())
}

// writeFileAtomic writes data to path through an outputFile.
func writeFileAtomic(path string, data []byte) error {
	out, err := createOutput(path)
	if err != nil {
		return err
	}
	defer out.abort()
	if _, err := out.Write(data); err != nil {
		return err
	}
	return out.commit()
}

// checkWritable says whether a file can be written at path, before the
// long work that produces it: it makes and removes the temporary file an
// outputFile would write, leaving any file at path untouched.
func checkWritable(path string) error {
	out, err := createOutput(path)
	if err != nil {
		return err
	}
	out.abort()
	return nil
}
