package grantfs

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

const secret = "outside the grant\n"

// layout makes a directory holding outside/secret.txt and grant/, with
// grant/hello.txt and grant/inner/, and returns both directories.
func layout(t *testing.T) (grant, outside string) {
	t.Helper()
	top := t.TempDir()
	grant, outside = filepath.Join(top, "grant"), filepath.Join(top, "outside")
	for _, d := range []string{grant, outside, filepath.Join(grant, "inner")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "secret.txt"), secret)
	write(t, filepath.Join(grant, "hello.txt"), "hello")
	return grant, outside
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, dir string) *FS {
	t.Helper()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// readAll opens p in f and reads it whole.
func readAll(f *FS, p string) (string, experimentalsys.Errno) {
	file, en := f.OpenFile(p, experimentalsys.O_RDONLY, 0)
	if en != 0 {
		return "", en
	}
	defer file.Close()
	var out []byte
	buf := make([]byte, 64)
	for {
		n, en := file.Read(buf)
		if en != 0 {
			return "", en
		}
		if n == 0 {
			return string(out), 0
		}
		out = append(out, buf[:n]...)
	}
}

// noNewFiles fails the test when dir holds anything but want.
func noNewFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, want) {
		t.Errorf("%s holds %v, want %v: something was written outside the grant", dir, names, want)
	}
}

// Links that lead out of the grant, there before the guest came (made by
// the host) or made through another link, are never followed out: by any
// operation that resolves a path through them.
func TestLinksOutAreNotFollowed(t *testing.T) {
	grant, outside := layout(t)
	for link, target := range map[string]string{
		"rel":        "../outside",
		"deep":       "../../../../../../../../" + outside[1:],
		"abs":        outside,
		"inner/up":   "../../outside",
		"etc":        "../../../../../../../../etc",
		"file":       filepath.Join(outside, "secret.txt"),
		"inner/file": "../../outside/secret.txt",
	} {
		if err := os.Symlink(target, filepath.Join(grant, link)); err != nil {
			t.Fatal(err)
		}
	}
	f := open(t, grant)
	for _, p := range []string{
		"rel/secret.txt", "deep/secret.txt", "abs/secret.txt", "inner/up/secret.txt",
		"file", "inner/file", "etc/passwd", "/rel/secret.txt",
		"inner/../rel/secret.txt", "inner/../../outside/secret.txt", "../outside/secret.txt",
	} {
		if got, en := readAll(f, p); en != experimentalsys.EPERM {
			t.Errorf("read %s = %q, %v; want EPERM", p, got, en)
		}
		if _, en := f.Stat(p); en != experimentalsys.EPERM {
			t.Errorf("stat %s: %v, want EPERM", p, en)
		}
	}
	for name, op := range map[string]func() experimentalsys.Errno{
		"create through a link": func() experimentalsys.Errno {
			file, en := f.OpenFile("rel/new.txt", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o644)
			if en == 0 {
				file.Close()
			}
			return en
		},
		"truncate a file through a link": func() experimentalsys.Errno {
			file, en := f.OpenFile("file", experimentalsys.O_TRUNC|experimentalsys.O_WRONLY, 0)
			if en == 0 {
				file.Close()
			}
			return en
		},
		"mkdir through a link":    func() experimentalsys.Errno { return f.Mkdir("abs/newdir", 0o755) },
		"rename out":              func() experimentalsys.Errno { return f.Rename("hello.txt", "rel/hello.txt") },
		"rename in":               func() experimentalsys.Errno { return f.Rename("rel/secret.txt", "stolen.txt") },
		"hard link in":            func() experimentalsys.Errno { return f.Link("rel/secret.txt", "hard.txt") },
		"hard link out":           func() experimentalsys.Errno { return f.Link("hello.txt", "rel/hard.txt") },
		"unlink through a link":   func() experimentalsys.Errno { return f.Unlink("rel/secret.txt") },
		"rmdir through a link":    func() experimentalsys.Errno { return f.Rmdir("inner/up/../outside") },
		"chmod through a link":    func() experimentalsys.Errno { return f.Chmod("file", 0o777) },
		"utimens through a link":  func() experimentalsys.Errno { return f.Utimens("file", 0, 0) },
		"symlink through a link":  func() experimentalsys.Errno { return f.Symlink("x", "rel/made") },
		"hard link of a dot-dot ": func() experimentalsys.Errno { return f.Link("../outside/secret.txt", "hard2.txt") },
	} {
		if en := op(); en != experimentalsys.EPERM {
			t.Errorf("%s: %v, want EPERM", name, en)
		}
	}
	noNewFiles(t, filepath.Dir(grant), "grant", "outside")
	noNewFiles(t, outside, "secret.txt")
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != secret {
		t.Errorf("the file outside is now %q (%v)", b, err)
	}
	if fi, err := os.Stat(filepath.Join(outside, "secret.txt")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the file outside changed mode: %v %v", fi.Mode(), err)
	}
	// The links themselves are the grant's: they can be read and removed.
	if target, en := f.Readlink("rel"); en != 0 || target != "../outside" {
		t.Errorf("readlink rel = %q, %v", target, en)
	}
	if st, en := f.Lstat("abs"); en != 0 || st.Mode&os.ModeSymlink == 0 {
		t.Errorf("lstat abs = %v, %v; want the link", st.Mode, en)
	}
	if en := f.Unlink("abs"); en != 0 {
		t.Errorf("unlink abs: %v", en)
	}
}

// A guest cannot make a link that points out as written: absolute, or
// climbing above the grant from the link's directory. A link that escapes
// only through another link can be made, and is not followed out.
func TestSymlinkCreation(t *testing.T) {
	grant, _ := layout(t)
	f := open(t, grant)
	for _, c := range []struct{ target, link string }{
		{"/etc", "abs"},
		{"../../../../etc", "esc"},
		{"..", "up"},
		{"../outside/secret.txt", "out"},
		{"../../outside", "inner/out"},
		{"x/../../..", "inner/sneak"},
		{"", "empty"},
	} {
		if en := f.Symlink(c.target, c.link); en != experimentalsys.EPERM {
			t.Errorf("symlink %s -> %s: %v, want EPERM", c.link, c.target, en)
		}
		if _, err := os.Lstat(filepath.Join(grant, c.link)); err == nil {
			t.Errorf("symlink %s -> %s was made", c.link, c.target)
		}
	}
	// Links that stay inside work as links.
	for _, c := range []struct{ target, link string }{
		{"hello.txt", "ln"},
		{"../hello.txt", "inner/ln"},
		{"inner", "dir"},
		{".", "self"},
	} {
		if en := f.Symlink(c.target, c.link); en != 0 {
			t.Fatalf("symlink %s -> %s: %v", c.link, c.target, en)
		}
	}
	for _, p := range []string{"ln", "inner/ln", "dir/ln", "self/self/hello.txt"} {
		if got, en := readAll(f, p); en != 0 || got != "hello" {
			t.Errorf("read %s = %q, %v; want hello", p, got, en)
		}
	}
	// self -> "." makes "self/chain -> ../outside" look inside as written;
	// resolved, it climbs out, and is refused.
	if en := f.Symlink("../outside", "self/chain"); en != 0 {
		t.Fatalf("symlink self/chain: %v", en)
	}
	if got, en := readAll(f, "self/chain/secret.txt"); en != experimentalsys.EPERM {
		t.Errorf("read through a chain of links = %q, %v; want EPERM", got, en)
	}
	if got, en := readAll(f, "chain/secret.txt"); en != experimentalsys.EPERM {
		t.Errorf("read chain/secret.txt = %q, %v; want EPERM", got, en)
	}
}

// Hard links join two names beneath the root; a hard link's name cannot
// reach out.
func TestHardLinks(t *testing.T) {
	grant, outside := layout(t)
	f := open(t, grant)
	if en := f.Link("hello.txt", "inner/hard.txt"); en != 0 {
		t.Fatalf("link inside: %v", en)
	}
	if got, en := readAll(f, "inner/hard.txt"); en != 0 || got != "hello" {
		t.Errorf("read the hard link = %q, %v", got, en)
	}
	for _, c := range []struct{ old, new string }{
		{"../outside/secret.txt", "h1"},
		{filepath.Join(outside, "secret.txt"), "h2"},
		{"hello.txt", "../outside/h3"},
		{"hello.txt", "/../outside/h4"},
	} {
		if en := f.Link(c.old, c.new); en == 0 {
			t.Errorf("link %s -> %s was made", c.new, c.old)
		}
	}
	noNewFiles(t, outside, "secret.txt")
	noNewFiles(t, grant, "hello.txt", "inner")
}

// The file operations a guest uses work beneath the grant: create, write,
// append, seek, pread and pwrite, truncate, list and rewind, rename, remove.
func TestFileOperations(t *testing.T) {
	grant, _ := layout(t)
	f := open(t, grant)
	file, en := f.OpenFile("inner/new.txt", experimentalsys.O_CREAT|experimentalsys.O_RDWR|experimentalsys.O_EXCL, 0o600)
	if en != 0 {
		t.Fatalf("create: %v", en)
	}
	if n, en := file.Write([]byte("hello world")); en != 0 || n != 11 {
		t.Fatalf("write = %d, %v", n, en)
	}
	if n, en := file.Pwrite([]byte("W"), 6); en != 0 || n != 1 {
		t.Fatalf("pwrite = %d, %v", n, en)
	}
	if off, en := file.Seek(0, io.SeekStart); en != 0 || off != 0 {
		t.Fatalf("seek = %d, %v", off, en)
	}
	buf := make([]byte, 32)
	if n, en := file.Read(buf); en != 0 || string(buf[:n]) != "hello World" {
		t.Fatalf("read = %q, %v", buf[:n], en)
	}
	if n, en := file.Pread(buf[:5], 6); en != 0 || string(buf[:n]) != "World" {
		t.Fatalf("pread = %q, %v", buf[:n], en)
	}
	if en := file.Truncate(5); en != 0 {
		t.Fatalf("truncate: %v", en)
	}
	if en := file.Sync(); en != 0 {
		t.Fatalf("sync: %v", en)
	}
	if st, en := file.Stat(); en != 0 || st.Size != 5 {
		t.Fatalf("stat = %d bytes, %v", st.Size, en)
	}
	if isDir, en := file.IsDir(); en != 0 || isDir {
		t.Fatalf("IsDir = %v, %v", isDir, en)
	}
	if en := file.Close(); en != 0 {
		t.Fatalf("close: %v", en)
	}
	if _, en := f.OpenFile("inner/new.txt", experimentalsys.O_CREAT|experimentalsys.O_EXCL|experimentalsys.O_WRONLY, 0o600); en != experimentalsys.EEXIST {
		t.Errorf("create again with O_EXCL: %v, want EEXIST", en)
	}
	app, en := f.OpenFile("inner/new.txt", experimentalsys.O_WRONLY|experimentalsys.O_APPEND, 0)
	if en != 0 || !app.IsAppend() {
		t.Fatalf("open to append: %v", en)
	}
	if _, en := app.Write([]byte("!")); en != 0 {
		t.Fatalf("append: %v", en)
	}
	app.Close()
	if got, _ := readAll(f, "inner/new.txt"); got != "hello!" {
		t.Errorf("after append: %q", got)
	}
	if en := f.Mkdir("inner/sub", 0o755); en != 0 {
		t.Fatalf("mkdir: %v", en)
	}
	dir, en := f.OpenFile("inner", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
	if en != 0 {
		t.Fatalf("open dir: %v", en)
	}
	defer dir.Close()
	list := func() []string {
		t.Helper()
		ents, en := dir.Readdir(-1)
		if en != 0 {
			t.Fatalf("readdir: %v", en)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
		}
		slices.Sort(names)
		return names
	}
	if got := list(); !slices.Equal(got, []string{"new.txt", "sub"}) {
		t.Errorf("readdir = %v", got)
	}
	if got := list(); len(got) != 0 {
		t.Errorf("readdir again = %v, want nothing left", got)
	}
	if _, en := dir.Seek(0, io.SeekStart); en != 0 {
		t.Fatalf("rewind: %v", en)
	}
	if got := list(); !slices.Equal(got, []string{"new.txt", "sub"}) {
		t.Errorf("readdir after rewind = %v", got)
	}
	if _, en := f.OpenFile("hello.txt", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0); en != experimentalsys.ENOTDIR {
		t.Errorf("open a file as a directory: %v, want ENOTDIR", en)
	}
	if en := f.Symlink("hello.txt", "ln"); en != 0 {
		t.Fatal(en)
	}
	if _, en := f.OpenFile("ln", experimentalsys.O_RDONLY|experimentalsys.O_NOFOLLOW, 0); en != experimentalsys.ELOOP {
		t.Errorf("open a link with O_NOFOLLOW: %v, want ELOOP", en)
	}
	if en := f.Rename("inner/new.txt", "renamed.txt"); en != 0 {
		t.Fatalf("rename: %v", en)
	}
	if en := f.Rmdir("renamed.txt"); en != experimentalsys.ENOTDIR {
		t.Errorf("rmdir a file: %v, want ENOTDIR", en)
	}
	if en := f.Unlink("inner/sub"); en != experimentalsys.EISDIR {
		t.Errorf("unlink a directory: %v, want EISDIR", en)
	}
	if en := f.Unlink("renamed.txt"); en != 0 {
		t.Errorf("unlink: %v", en)
	}
	if en := f.Rmdir("inner/sub"); en != 0 {
		t.Errorf("rmdir: %v", en)
	}
	if _, en := f.Stat("renamed.txt"); en != experimentalsys.ENOENT {
		t.Errorf("stat a removed file: %v, want ENOENT", en)
	}
}

func TestEscapes(t *testing.T) {
	for _, c := range []struct {
		target, link string
		want         bool
	}{
		{"a", "l", false},
		{"a/../b", "l", false},
		{"../x", "d/l", false},
		{".", "l", false},
		{"..", "l", true},
		{"../x", "l", true},
		{"../../x", "d/l", true},
		{"/x", "l", true},
		{"", "l", true},
		{"a/../../x", "l", true},
		{"..x", "l", false},
	} {
		if got := Escapes(c.target, c.link); got != c.want {
			t.Errorf("Escapes(%q, %q) = %v, want %v", c.target, c.link, got, c.want)
		}
	}
}
