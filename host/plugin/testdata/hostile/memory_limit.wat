;; memory_limit starts with 128 MiB of memory, over the default limit of
;; 64 MiB per instance.
(module
  (memory (export "memory") 2048)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
