;; recurse calls itself without end, until the engine's stack is exhausted,
;; when record 0 has a non-empty key; otherwise it emits its input batch
;; unchanged. The call is not in tail position, so no frame can be reused.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param $size i32) (result i32) (i32.const 1024))

  (func $deeper (param $depth i32) (result i32)
    (i32.add (call $deeper (i32.add (local.get $depth) (i32.const 1))) (i32.const 1)))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (if (i32.load offset=24 (local.get $ptr)) (then
      (drop (call $deeper (i32.const 0)))))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0)))
