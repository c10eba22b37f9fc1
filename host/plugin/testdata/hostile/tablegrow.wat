;; tablegrow asks, when record 0 has a non-empty key, to grow a table by
;; 2^30 entries (8 GiB of host memory at 8 bytes an entry, outside the
;; memory limit). The host must refuse (table.grow returns -1), and the
;; module then emits its input batch; if the table grew, it logs so at
;; error level and returns StatusError.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (table 0 funcref)
  (memory (export "memory") 1)
  (data (i32.const 16) "table.grow succeeded")
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param $size i32) (result i32) (i32.const 1024))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (if (i32.load offset=24 (local.get $ptr)) (then
      (if (i32.ne (table.grow 0 (ref.null func) (i32.const 0x40000000)) (i32.const -1)) (then
        (call $log (i32.const 3) (i32.const 16) (i32.const 20))
        (return (i32.const -2))))))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0)))
