;; flood hands the host more than a call may: with N the low 32 bits of
;; record 0's time, sluice_process emits its input batch N times, or, when
;; record 0 has a non-empty key, rejects record 0 N times with a 1 KiB
;; message. sluice_post does the same with its events.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param $size i32) (result i32) (i32.const 2048))

  (func $flood (param $ptr i32) (param $len i32)
    (local $n i32)
    (local.set $n (i32.load offset=16 (local.get $ptr)))
    (block $done
      (loop $again
        (br_if $done (i32.eqz (local.get $n)))
        (if (i32.load offset=24 (local.get $ptr))
          (then (call $reject (i32.const 0) (i32.const 0) (i32.const 1024)))
          (else (call $emit (local.get $ptr) (local.get $len))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $again))))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (call $flood (local.get $ptr) (local.get $len))
    (i32.const 0))

  (func (export "sluice_plan") (param i32 i32) (result i32) (i32.const 0))
  (func (export "sluice_apply") (param i32 i32) (result i32) (i32.const 1))
  (func (export "sluice_post") (param $ptr i32) (param $len i32) (param i32 i32) (result i32)
    (call $flood (local.get $ptr) (local.get $len))
    (i32.const 0)))
