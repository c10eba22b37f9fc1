// Package grantfs is the file system a guest sees in a directory granted
// to it: WASI file operations confined beneath one host directory.
//
// wazero's own directory mount joins the guest's path to the host
// directory and hands the result to the operating system, which follows
// symbolic links wherever they lead: a link in the granted directory, made
// by the guest or there before, opened the host's files outside it.
// grantfs resolves every path through an os.Root instead, which walks it
// one component at a time, follows links only while they stay beneath the
// root, and refuses ".." above it. So no file a guest opens, stats,
// renames, links or removes lies outside its grant, whatever links the
// directory holds or gains meanwhile: a path that would leave fails with
// EPERM.
//
// On top of that, creating a symbolic link is refused (EPERM) when its
// target is absolute (it would name a host path, not a guest one) or,
// read from the link's directory as written, climbs out of the grant. A
// link that escapes only through other links is never followed out, by
// the resolution above. Hard links can only join two names beneath the
// root.
//
// A read-only grant is an FS wrapped in wazero's sysfs.ReadFS.
package grantfs
