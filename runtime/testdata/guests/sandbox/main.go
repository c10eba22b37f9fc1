// Command sandbox is a test guest of the deterministic environment: it
// reads the WASI clocks and random source the way Go programs do, sleeps,
// and tries the files and environment variables a pipeline may grant.
package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

func main() {}

//go:wasmimport wasi_snapshot_preview1 clock_time_get
func clockTimeGet(id uint32, precision uint64, out unsafe.Pointer) uint32

// now_unix_nano reads time.Now, the realtime clock.
//
//go:wasmexport now_unix_nano
func nowUnixNano() int64 { return time.Now().UnixNano() }

// monotonic reads the WASI monotonic clock directly, or returns minus the
// errno.
//
//go:wasmexport monotonic
func monotonic() int64 {
	var t uint64
	if errno := clockTimeGet(1, 0, unsafe.Pointer(&t)); errno != 0 {
		return -int64(errno)
	}
	return int64(t)
}

// sleep_elapsed sleeps ms milliseconds and returns how long the sleep took
// by the monotonic clock, in nanoseconds.
//
//go:wasmexport sleep_elapsed
func sleepElapsed(ms int64) int64 {
	start := time.Now()
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return int64(time.Since(start))
}

// gc_now collects garbage, which reads the monotonic clock, and then reads
// the realtime clock.
//
//go:wasmexport gc_now
func gcNow() int64 {
	hoard = make([]byte, 1<<20)
	goruntime.GC()
	return time.Now().UnixNano()
}

var hoard []byte

// random_u64 reads 8 bytes of crypto/rand, which asks random_get every time.
//
//go:wasmexport random_u64
func randomU64() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// Results of the file exports: the bytes read or written, or one of these.
const (
	errNotExist   = -2
	errBadFD      = -9
	errPermission = -13
	errOther      = -1
)

func fileError(err error) int64 {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errNotExist
	case errors.Is(err, syscall.EBADF):
		return errBadFD
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.ENOTCAPABLE):
		return errPermission
	}
	return errOther
}

// read_file reads /grant/hello.txt.
//
//go:wasmexport read_file
func readFile() int64 {
	b, err := os.ReadFile("/grant/hello.txt")
	if err != nil {
		return fileError(err)
	}
	return int64(len(b))
}

// read_outside reads a file outside every grant.
//
//go:wasmexport read_outside
func readOutside() int64 {
	b, err := os.ReadFile("/etc/hostname")
	if err != nil {
		return fileError(err)
	}
	return int64(len(b))
}

// write_file writes /grant/out.txt.
//
//go:wasmexport write_file
func writeFile() int64 {
	if err := os.WriteFile("/grant/out.txt", []byte("written by the guest"), 0o644); err != nil {
		return fileError(err)
	}
	return int64(len("written by the guest"))
}

// env_count counts the guest's environment variables.
//
//go:wasmexport env_count
func envCount() int32 { return int32(len(os.Environ())) }

// env_len returns the length of SLUICE_GRANT, or -1 when it is unset.
//
//go:wasmexport env_len
func envLen() int32 {
	v, ok := os.LookupEnv("SLUICE_GRANT")
	if !ok {
		return -1
	}
	return int32(len(v))
}

// fsBuf holds the file operation fs_op runs, written by the host.
var fsBuf [1024]byte

// fs_buf returns the address of the buffer fs_op reads.
//
//go:wasmexport fs_buf
func fsBufAddr() int32 { return int32(uintptr(unsafe.Pointer(&fsBuf[0]))) }

// fs_op runs the file operation in the first n bytes of the buffer: an
// operation and its paths separated by NUL bytes. It returns the bytes
// read or written, the entries listed, zero, or minus the WASI errno.
//
//	read PATH | write PATH | append PATH | list DIR | stat PATH | mkdir PATH
//	symlink TARGET LINK | link OLD NEW | rename OLD NEW | remove PATH
//
//go:wasmexport fs_op
func fsOp(n int32) int64 {
	args := strings.Split(string(fsBuf[:n]), "\x00")
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	var (
		size int
		err  error
	)
	switch arg(0) {
	case "read":
		var b []byte
		b, err = os.ReadFile(arg(1))
		size = len(b)
	case "write":
		err = os.WriteFile(arg(1), []byte("written by the guest"), 0o644)
		size = len("written by the guest")
	case "append":
		var f *os.File
		if f, err = os.OpenFile(arg(1), os.O_WRONLY|os.O_APPEND, 0); err == nil {
			size, err = f.WriteString("appended by the guest")
			err = errors.Join(err, f.Close())
		}
	case "list":
		var ents []os.DirEntry
		ents, err = os.ReadDir(arg(1))
		size = len(ents)
	case "stat":
		var fi os.FileInfo
		if fi, err = os.Stat(arg(1)); err == nil {
			size = int(fi.Size())
		}
	case "mkdir":
		err = os.Mkdir(arg(1), 0o755)
	case "symlink":
		err = os.Symlink(arg(1), arg(2))
	case "link":
		err = os.Link(arg(1), arg(2))
	case "rename":
		err = os.Rename(arg(1), arg(2))
	case "remove":
		err = os.Remove(arg(1))
	default:
		return -1000
	}
	var errno syscall.Errno
	switch {
	case err == nil:
		return int64(size)
	case errors.As(err, &errno):
		return -int64(errno)
	}
	return errOther
}
