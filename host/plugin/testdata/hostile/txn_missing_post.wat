;; txn_missing_post is a transactional operator without sluice_post: the
;; problem to report is that export, not those of the batch kinds.
(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_plan") (param i32 i32) (result i32) (i32.const 0))
  (func (export "sluice_apply") (param i32 i32) (result i32) (i32.const 0)))
