package plugin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxModuleBytes is the size limit ReadModule applies by default: 256 MiB,
// some twenty times the largest plugin the SDKs build.
const MaxModuleBytes = 256 << 20

// Errors of ReadModule, matched with errors.Is.
var (
	// ErrNotRegularFile is wrapped by the error for a module path that
	// names a device, a FIFO, a directory or a socket: one could be read
	// forever (/dev/zero), block (a FIFO) or not be read at all.
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrModuleTooLarge is wrapped by the error for a module file over the
	// size limit.
	ErrModuleTooLarge = errors.New("module larger than the limit")
)

// ReadModule reads the module in the file at path, which must be a regular
// file (a symbolic link to one is followed) of at most limit bytes;
// MaxModuleBytes when limit is 0 or less. It checks the file before
// opening it, so that a FIFO does not block, and the opened file again;
// it reads at most limit+1 bytes, whatever the file's size says. Every
// error names path.
func ReadModule(path string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = MaxModuleBytes
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkModuleFile(path, st, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkModuleFile(path, opened, limit); err != nil {
		return nil, err
	}
	b := make([]byte, 0, opened.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("%s: %w of %d bytes", path, ErrModuleTooLarge, limit)
		}
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if len(b) == cap(b) { // the file grew since Stat
			b = append(b, 0)[:len(b)]
		}
	}
}

// checkModuleFile refuses what st describes unless it is a regular file
// of at most limit bytes.
func checkModuleFile(path string, st fs.FileInfo, limit int64) error {
	m := st.Mode()
	if !m.IsRegular() {
		return fmt.Errorf("%s: %w (it is %s): a module is read from a .wasm file", path, ErrNotRegularFile, fileType(m))
	}
	if st.Size() > limit {
		return fmt.Errorf("%s: %w of %d bytes (it has %d)", path, ErrModuleTooLarge, limit, st.Size())
	}
	return nil
}

// fileType says what kind of file m describes, for messages.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}
