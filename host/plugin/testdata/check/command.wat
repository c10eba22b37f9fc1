;; command is a WASI command: it exports _start (and no _initialize), as
;; clang makes without -mexec-model=reactor and Go without
;; -buildmode=c-shared. Its ABI exports are otherwise complete.
(module
  (memory (export "memory") 1)
  (func (export "_start"))
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
