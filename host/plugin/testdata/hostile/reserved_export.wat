;; reserved_export is a map operator that also exports sluice_on_timer, a
;; name ABI version 1 reserves for a later version (abi/ABI.md section 11).
(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0))
  (func (export "sluice_on_timer") (param i32 i32) (result i32) (i32.const 0)))
