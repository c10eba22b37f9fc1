package join

import (
	"context"
	"sync"
)

// parallel runs f on workers goroutines, f(0) on the caller's, and returns
// once all have: the barrier between a kernel's phases.
func parallel(workers int, f func(w int)) {
	if workers <= 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { f(w) })
	}
	f(0)
	wg.Wait()
}

// lazyBuf is the window buffer of a lazy kernel driven through Add and
// Close.
type lazyBuf struct {
	r, s []Tuple
}

func (b *lazyBuf) add(side Side, ts []Tuple) error {
	switch side {
	case R:
		b.r = append(b.r, ts...)
	case S:
		b.s = append(b.s, ts...)
	default:
		return ErrSide
	}
	return nil
}

// closeWith joins the buffered window with join and empties the buffer.
func (b *lazyBuf) closeWith(ctx context.Context, join func(context.Context, []Tuple, []Tuple, Emit) error, emit Emit) error {
	err := join(ctx, b.r, b.s, emit)
	b.r, b.s = b.r[:0], b.s[:0]
	return err
}

// check returns ctx's error every 64Ki iterations of a kernel's loop, so a
// cancelled window stops within a fraction of a millisecond without a
// context check per tuple.
func check(ctx context.Context, i int) bool {
	return i&0xffff == 0xffff && ctx.Err() != nil
}
