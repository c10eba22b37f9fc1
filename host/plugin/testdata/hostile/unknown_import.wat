;; unknown_import imports a function the sluice host module does not have.
(module
  (import "sluice" "frobnicate" (func (param i32)))
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
