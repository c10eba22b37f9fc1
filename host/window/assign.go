package window

// slicer cuts time into the slices of one assigner (general stream
// slicing): every record falls into exactly one slice, and a window is the
// union of the slices it contains. Tumbling windows are their own slices;
// sliding windows are cut at every window start and end, so at most two
// slices per slide; the global window is one slice. Sessions are not cut
// by a slicer: each session is one slice (session.go).
type slicer struct {
	kind                Assigner
	size, slide, offset int64
}

func newSlicer(s *Spec) slicer {
	sl := slicer{kind: s.Assigner, size: int64(s.Size), slide: int64(s.Slide), offset: int64(s.Offset)}
	if sl.kind == Tumbling {
		sl.slide = sl.size
	}
	return sl
}

// mod returns a mod b in [0, b).
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// sliceOf returns the slice that holds time t.
func (s *slicer) sliceOf(t int64) Window {
	switch s.kind {
	case Global:
		return globalWindow
	case Tumbling:
		start := t - mod(t-s.offset, s.size)
		return Window{start, start + s.size}
	}
	base := t - mod(t-s.offset, s.slide)
	c := s.size % s.slide // the cut inside each slide, where windows end
	switch {
	case c == 0:
		return Window{base, base + s.slide}
	case t-base < c:
		return Window{base, base + c}
	default:
		return Window{base + c, base + s.slide}
	}
}

// firstWindow returns the earliest window that contains slice sl.
func (s *slicer) firstWindow(sl Window) Window {
	if s.kind != Sliding {
		return sl
	}
	lo := sl.End - s.size
	start := lo + mod(s.offset-lo, s.slide)
	return Window{start, start + s.size}
}

// lastWindow returns the latest window that contains slice sl.
func (s *slicer) lastWindow(sl Window) Window {
	if s.kind != Sliding {
		return sl
	}
	start := sl.Start - mod(sl.Start-s.offset, s.slide)
	return Window{start, start + s.size}
}

// next returns the window that starts a slide after w.
func (s *slicer) next(w Window) Window { return Window{w.Start + s.slide, w.End + s.slide} }

// windowsOf calls fn with each window that contains slice sl, earliest
// first.
func (s *slicer) windowsOf(sl Window, fn func(Window)) {
	if s.kind != Sliding {
		fn(sl)
		return
	}
	last := s.lastWindow(sl)
	for w := s.firstWindow(sl); w.Start <= last.Start; w = s.next(w) {
		fn(w)
	}
}
