;; noalloc lacks sluice_alloc, the SDK's allocator, as a plugin built
;; without linking its SDK does.
(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
