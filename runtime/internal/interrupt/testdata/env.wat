;; The "env" module control.wasm imports from.
(module (global (export "seven") i32 (i32.const 7)))
