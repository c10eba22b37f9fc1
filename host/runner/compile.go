package runner

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// compileProgressEvery is how often the host says that a plugin it
// compiles at start is still compiling: compiling a large module takes
// tens of seconds, which must not pass in silence.
const compileProgressEvery = 5 * time.Second

// compileReport tells the log what happens to one operator's plugin at
// start: that it is loading, that it is still compiling every so often,
// and at the end whether it was compiled (and cached for later starts) or
// loaded from the compile cache.
type compileReport struct {
	log      *slog.Logger
	cacheDir string
	before   map[string]bool // the cache's entries when the load began
	start    time.Time
	done     chan struct{}
	stopped  chan struct{}
}

// startCompileReport logs that the plugin of the operator log names is
// loading, and then, every interval until finish, that it is still
// compiling.
func startCompileReport(log *slog.Logger, cacheDir string, interval time.Duration) *compileReport {
	r := &compileReport{
		log: log, cacheDir: cacheDir, before: cacheEntries(cacheDir), start: time.Now(),
		done: make(chan struct{}), stopped: make(chan struct{}),
	}
	log.Info("loading plugin")
	go func() {
		defer close(r.stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.done:
				return
			case <-t.C:
				log.Info("still compiling plugin", "elapsed", time.Since(r.start).Round(time.Second).String())
			}
		}
	}()
	return r
}

// finish stops the progress lines and logs how the load ended: err is the
// load's error, which the caller reports.
func (r *compileReport) finish(err error) {
	close(r.done)
	<-r.stopped
	if err != nil {
		return
	}
	took := time.Since(r.start).Round(time.Millisecond).String()
	for name := range cacheEntries(r.cacheDir) {
		if !r.before[name] {
			r.log.Info("plugin compiled", "took", took, "cache", r.cacheDir)
			return
		}
	}
	r.log.Info("plugin loaded from the compile cache", "took", took, "cache", r.cacheDir)
}

// cacheEntries returns the entries of the compilation cache in dir: the
// files the engine names by a hash of what they compile, in one directory
// per engine version and platform (see runtime's wazero_cache.go), less
// the temporary files of writes in progress.
func cacheEntries(dir string) map[string]bool {
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	entries := make(map[string]bool, len(paths))
	for _, p := range paths {
		if filepath.Ext(p) == ".tmp" {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			entries[p] = true
		}
	}
	return entries
}
