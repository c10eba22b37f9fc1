;; txnflood makes the host keep more than Limits.MaxOutputBytes in one
;; call (txn_limits_test.go): sluice_plan declares the same operation, with
;; a 1000-byte argument, 100,000 times; sluice_apply, by the request's fn,
;; calls txn_put (fn 0), txn_get (fn 1) or txn_delete (fn 2) 100,000 times
;; with a 1000-byte key (and value), or txn_put once with 10 bytes of each
;; (fn 3). Without a limit, a call keeps 100 MB (200 MB for txn_put).
(module
  (import "sluice" "txn_plan" (func $plan (param i32 i32)))
  (import "sluice" "txn_get" (func $get (param i32 i32 i32 i32 i32) (result i32)))
  (import "sluice" "txn_put" (func $put (param i32 i32 i32 i32 i32) (result i32)))
  (import "sluice" "txn_delete" (func $delete (param i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  ;; event 0, fn 0, flags 0, table 0, an empty key, no reads, then the
  ;; argument's length, 1000: 28 bytes, and the argument's zeros.
  (data (i32.const 4096) "\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\e8\03\00\00")
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param $size i32) (result i32) (i32.const 16384))

  (func (export "sluice_plan") (param $ptr i32) (param $len i32) (result i32)
    (local $i i32)
    (loop $again
      (call $plan (i32.const 4096) (i32.const 1028))
      (br_if $again (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 100000))))
    (i32.const 0))

  (func (export "sluice_apply") (param $ptr i32) (param $len i32) (result i32)
    (local $fn i32) (local $i i32)
    (local.set $fn (i32.load offset=8 (local.get $ptr)))
    (if (i32.eq (local.get $fn) (i32.const 3)) (then
      (drop (call $put (i32.const 0) (i32.const 8192) (i32.const 10) (i32.const 8192) (i32.const 10)))
      (return (i32.const 1))))
    (loop $again
      (if (i32.eqz (local.get $fn)) (then
        (drop (call $put (i32.const 0) (i32.const 8192) (i32.const 1000) (i32.const 8192) (i32.const 1000)))))
      (if (i32.eq (local.get $fn) (i32.const 1)) (then
        (drop (call $get (i32.const 0) (i32.const 8192) (i32.const 1000) (i32.const 0) (i32.const 0)))))
      (if (i32.eq (local.get $fn) (i32.const 2)) (then
        (drop (call $delete (i32.const 0) (i32.const 8192) (i32.const 1000)))))
      (br_if $again (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 100000))))
    (i32.const 1))

  (func (export "sluice_post") (param i32 i32 i32 i32) (result i32) (i32.const 0)))
