;; alloc has a sluice_alloc that misbehaves in the mode its configuration
;; names (one digit), from the first allocation after sluice_configure on:
;;
;;   0 a sane region at offset 1024     1 0xffff0000, past memory
;;   2 0x80000000, 2 GiB in             3 4 bytes before the end of memory
;;   4 0 (out of memory)                5 0 after failing to grow by 2 GiB
;;   6 a trap (unreachable)             7 a loop without end
;;
;; sluice_process emits its input batch unchanged; the transactional
;; exports do nothing (sluice_apply returns ApplyKeep).
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (memory (export "memory") 1)
  (global $mode (mut i32) (i32.const 0))
  (func (export "sluice_abi_version") (result i32) (i32.const 1))

  (func (export "sluice_alloc") (param $size i32) (result i32)
    (local $old i32)
    (if (i32.eq (global.get $mode) (i32.const 1)) (then (return (i32.const 0xffff0000))))
    (if (i32.eq (global.get $mode) (i32.const 2)) (then (return (i32.const 0x80000000))))
    (if (i32.eq (global.get $mode) (i32.const 3)) (then
      (return (i32.sub (i32.mul (memory.size) (i32.const 65536)) (i32.const 4)))))
    (if (i32.eq (global.get $mode) (i32.const 4)) (then (return (i32.const 0))))
    (if (i32.eq (global.get $mode) (i32.const 5)) (then
      (local.set $old (memory.grow (i32.const 32768)))
      (if (i32.eq (local.get $old) (i32.const -1)) (then (return (i32.const 0))))
      (return (i32.mul (local.get $old) (i32.const 65536)))))
    (if (i32.eq (global.get $mode) (i32.const 6)) (then (unreachable)))
    (if (i32.eq (global.get $mode) (i32.const 7)) (then (loop $forever (br $forever))))
    (i32.const 1024))

  (func (export "sluice_configure") (param $ptr i32) (param $len i32) (result i32)
    (if (local.get $len) (then
      (global.set $mode (i32.sub (i32.load8_u (local.get $ptr)) (i32.const 48)))))
    (i32.const 0))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0))

  (func (export "sluice_plan") (param i32 i32) (result i32) (i32.const 0))
  (func (export "sluice_apply") (param i32 i32) (result i32) (i32.const 1))
  (func (export "sluice_post") (param i32 i32 i32 i32) (result i32) (i32.const 0)))
