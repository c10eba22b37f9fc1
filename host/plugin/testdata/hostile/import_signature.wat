;; import_signature imports sluice.log with the wrong signature: the host's
;; is (i32, i32, i32).
(module
  (import "sluice" "log" (func (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
