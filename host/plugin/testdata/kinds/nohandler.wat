;; nohandler is a module whose plugin registered no handler: its
;; sluice_kinds export logs why, as an SDK does, and names no kind.
(module
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "no handler registered: register one")
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_kinds") (result i32)
    (call $log (i32.const 3) (i32.const 16) (i32.const 35))
    (i32.const 0))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
