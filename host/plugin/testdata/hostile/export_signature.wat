;; export_signature exports sluice_process with one parameter instead of
;; two, and sluice_alloc taking an i64.
(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i64) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32) (result i32) (i32.const 0)))
