package grantfs

import (
	"io/fs"
	"os"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// file is a file or directory a guest opened beneath its grant. Once
// opened it is the file itself, wherever links and renames move its names.
//
// Reads, writes, seeks and directory listings are wazero's own adapter of
// an fs.File (sysfs.AdaptFS) over the *os.File opened here; file adds what
// that adapter leaves to the file system beneath it: append mode, truncate
// and sync.
type file struct {
	experimentalsys.File
	h      *handle
	append bool
}

// newFile wraps f, opened from root as name, for wazero.
func newFile(root *os.Root, name string, f *os.File, appendMode bool) (*file, experimentalsys.Errno) {
	h := &handle{root: root, name: name, cur: f, fresh: true}
	adapted, en := (&sysfs.AdaptFS{FS: h}).OpenFile(name, experimentalsys.O_RDONLY, 0)
	if en != 0 {
		_ = f.Close()
		return nil, en
	}
	return &file{File: adapted, h: h, append: appendMode}, 0
}

// IsAppend implements sys.File.
func (f *file) IsAppend() bool { return f.append }

// Truncate implements sys.File.
func (f *file) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	return errno(f.h.cur.Truncate(size))
}

// Sync implements sys.File.
func (f *file) Sync() experimentalsys.Errno { return errno(f.h.cur.Sync()) }

// Datasync implements sys.File, with a full sync.
func (f *file) Datasync() experimentalsys.Errno { return f.Sync() }

// handle is the fs.FS through which wazero's adapter reaches one open
// file: the first Open hands it the file opened with the guest's flags;
// later ones, which the adapter makes to rewind a directory, open the
// name again beneath the root, read-only.
type handle struct {
	root  *os.Root
	name  string
	cur   *os.File
	fresh bool
}

// Open implements fs.FS.
func (h *handle) Open(string) (fs.File, error) {
	if h.fresh {
		h.fresh = false
		return h.cur, nil
	}
	f, err := h.root.Open(h.name)
	if err != nil {
		return nil, err
	}
	h.cur = f
	return f, nil
}
