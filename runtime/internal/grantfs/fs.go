package grantfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// FS is a directory granted to guests, every path resolved beneath it. It
// implements wazero's experimental sys.FS and is safe for concurrent use
// by several instances.
type FS struct {
	experimentalsys.UnimplementedFS
	root *os.Root
}

// Open opens the host directory dir for guests. Close the FS once no
// instance uses it.
func Open(dir string) (*FS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &FS{root: root}, nil
}

// Close releases the directory.
func (f *FS) Close() error { return f.root.Close() }

// String names the host directory, for wazero's messages.
func (f *FS) String() string { return f.root.Name() }

// rel turns a path wazero hands over (relative to the grant, at times with
// a leading slash) into one os.Root accepts.
func rel(p string) string {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// errno turns an error of the os package into the WASI errno the guest
// sees. os.Root reports a path that would leave the root with an error of
// its own, no system error: that is EPERM, as for any other operation the
// grant does not permit.
func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return experimentalsys.UnwrapOSError(en)
	}
	for _, known := range []error{fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, fs.ErrClosed, fs.ErrInvalid} {
		if errors.Is(err, known) {
			return experimentalsys.UnwrapOSError(known)
		}
	}
	return experimentalsys.EPERM
}

// osFlag translates a WASI open flag into the os package's.
func osFlag(oflag experimentalsys.Oflag) int {
	var flag int
	switch oflag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		flag = os.O_RDWR
	case experimentalsys.O_WRONLY:
		flag = os.O_WRONLY
	default:
		flag = os.O_RDONLY
	}
	for _, m := range []struct {
		wasi experimentalsys.Oflag
		os   int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND},
		{experimentalsys.O_CREAT, os.O_CREATE},
		{experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_SYNC, os.O_SYNC},
		{experimentalsys.O_TRUNC, os.O_TRUNC},
	} {
		if oflag&m.wasi != 0 {
			flag |= m.os
		}
	}
	return flag
}

// OpenFile implements sys.FS.
func (f *FS) OpenFile(p string, oflag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p = rel(p)
	if oflag&experimentalsys.O_DIRECTORY != 0 && oflag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR) != 0 {
		return nil, experimentalsys.EISDIR
	}
	if oflag&experimentalsys.O_NOFOLLOW != 0 {
		// os.Root follows a final link beneath the root; the guest asked
		// not to. A link made between this check and the open is still
		// resolved beneath the root.
		if fi, err := f.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	of, err := f.root.OpenFile(p, osFlag(oflag), perm)
	if err != nil {
		return nil, errno(err)
	}
	if oflag&experimentalsys.O_DIRECTORY != 0 {
		fi, err := of.Stat()
		if err != nil {
			_ = of.Close()
			return nil, errno(err)
		}
		if !fi.IsDir() {
			_ = of.Close()
			return nil, experimentalsys.ENOTDIR
		}
	}
	return newFile(f.root, p, of, oflag&experimentalsys.O_APPEND != 0)
}

// Lstat implements sys.FS.
func (f *FS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := f.root.Lstat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Stat implements sys.FS.
func (f *FS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := f.root.Stat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Mkdir implements sys.FS.
func (f *FS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return errno(f.root.Mkdir(rel(p), perm))
}

// Chmod implements sys.FS.
func (f *FS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return errno(f.root.Chmod(rel(p), perm))
}

// Rename implements sys.FS.
func (f *FS) Rename(from, to string) experimentalsys.Errno {
	return errno(f.root.Rename(rel(from), rel(to)))
}

// Rmdir implements sys.FS: os.Root removes files and empty directories
// alike, so the kind is checked first.
func (f *FS) Rmdir(p string) experimentalsys.Errno {
	p = rel(p)
	fi, err := f.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errno(f.root.Remove(p))
}

// Unlink implements sys.FS.
func (f *FS) Unlink(p string) experimentalsys.Errno {
	p = rel(p)
	fi, err := f.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return errno(f.root.Remove(p))
}

// Link implements sys.FS: both names resolve beneath the root, so a hard
// link can only give a file of the grant a second name in it.
func (f *FS) Link(oldPath, newPath string) experimentalsys.Errno {
	return errno(f.root.Link(rel(oldPath), rel(newPath)))
}

// Symlink implements sys.FS, refusing a target that is absolute or that
// climbs out of the grant from the link's directory as written.
func (f *FS) Symlink(target, link string) experimentalsys.Errno {
	link = rel(link)
	if Escapes(target, link) {
		return experimentalsys.EPERM
	}
	return errno(f.root.Symlink(target, link))
}

// Escapes reports whether a symbolic link at link (a path relative to the
// grant) to target would point outside the grant as written: target is
// absolute, or joined to the link's directory it climbs above the root.
func Escapes(target, link string) bool {
	if target == "" || path.IsAbs(target) || strings.HasPrefix(target, `\`) {
		return true
	}
	joined := path.Join(path.Dir(rel(link)), target)
	return joined == ".." || strings.HasPrefix(joined, "../")
}

// Readlink implements sys.FS.
func (f *FS) Readlink(p string) (string, experimentalsys.Errno) {
	target, err := f.root.Readlink(rel(p))
	if err != nil {
		return "", errno(err)
	}
	return target, 0
}

// Utimens implements sys.FS. UTIME_OMIT leaves a time as it is.
func (f *FS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	return errno(f.root.Chtimes(rel(p), timeOf(atim), timeOf(mtim)))
}

// timeOf converts a WASI timestamp; the zero time leaves it unchanged.
func timeOf(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
