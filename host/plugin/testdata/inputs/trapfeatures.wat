;; trapfeatures traps in sluice_features: the host refuses it at load,
;; naming the export, rather than guess what it declares.
(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_features") (result i32) unreachable)
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
