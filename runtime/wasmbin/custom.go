package wasmbin

import "iter"

// CustomSections yields the name and contents of each custom section of
// wasm, in order. It reads the sections' framing only and stops at the
// first section that is malformed: bytes that are not a WebAssembly module
// have no custom sections.
func CustomSections(wasm []byte) iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
			return
		}
		r := &Reader{B: wasm, Pos: 8}
		for !r.Done() {
			id, err := r.Byte()
			if err != nil {
				return
			}
			size, err := r.U32()
			if err != nil {
				return
			}
			body, err := r.Bytes(uint64(size))
			if err != nil {
				return
			}
			if id != 0 {
				continue
			}
			br := &Reader{B: body}
			name, err := br.Name()
			if err != nil {
				continue // a custom section without a name is no one's
			}
			if !yield(name, body[br.Pos:]) {
				return
			}
		}
	}
}
