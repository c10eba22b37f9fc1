;; spin loops forever where its input asks it to, and otherwise behaves:
;; sluice_process and sluice_plan spin when record 0 has a non-empty key,
;; sluice_apply when the request's fn is not 0. Otherwise sluice_process
;; emits its input batch unchanged, sluice_apply returns ApplyKeep, and the
;; others StatusOK.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param $size i32) (result i32) (i32.const 1024))

  (func $spin (loop $forever (br $forever)))

  ;; Record 0's key length follows count, size, origin, flags and time.
  (func $keyed (param $batch i32) (result i32)
    (i32.ne (i32.load offset=24 (local.get $batch)) (i32.const 0)))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (if (call $keyed (local.get $ptr)) (then (call $spin)))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0))

  (func (export "sluice_plan") (param $ptr i32) (param $len i32) (result i32)
    (if (call $keyed (local.get $ptr)) (then (call $spin)))
    (i32.const 0))

  (func (export "sluice_apply") (param $ptr i32) (param $len i32) (result i32)
    (if (i32.load offset=8 (local.get $ptr)) (then (call $spin)))
    (i32.const 1))

  (func (export "sluice_post") (param i32 i32 i32 i32) (result i32) (i32.const 0)))
