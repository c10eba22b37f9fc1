;; missing_export has no sluice_alloc, so the host cannot hand it input.
(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
