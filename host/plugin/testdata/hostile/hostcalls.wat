;; hostcalls misuses the sluice host functions the way a buggy or hostile
;; guest would. It imports every host function and exports the functions of
;; every operator kind, so that it loads as map, keyed or transactional, and
;; each export runs one misuse chosen by its input (the selector):
;;
;;   sluice_process, sluice_plan, sluice_post  the time of event/record 0
;;                                             (its low 32 bits)
;;   sluice_apply                              the request's fn
;;   sluice_configure                          the configuration, a decimal
;;
;; Selectors (OOB is pointer 0xffff0000 with length 8, past any memory):
;;
;;    1 emit(OOB)                          2 reject(0, OOB)
;;    3 table_id(OOB)                      4 state_get, key OOB
;;    5 state_get, buffer OOB              6 state_put, key OOB
;;    7 state_put, value OOB               8 state_delete, key OOB
;;    9 log(error, OOB)                   10 txn_plan(OOB)
;;   11 txn_get, key OOB                  12 txn_get, buffer OOB
;;   13 txn_put, key OOB                  14 txn_put, value OOB
;;   15 txn_delete, key OOB
;;   16 emit(0xfffffff0, 0x20): pointer + length wraps past 2^32
;;   17 log(info, memory size, 0): a zero length at the end of memory (valid)
;;   18 log(info, memory size + 1, 0): a zero length past the end
;;   19 txn_put, key at 0xfffffff0 with length 0x20: wraps past 2^32
;;
;; Well-formed calls, for the rules on who may call what and when (the key
;; and value are the byte "k" at offset 0):
;;
;;   20 emit(0, 1)        21 reject(0, 0, 1)       22 state_put(0, k, k)
;;   23 txn_plan(0, 0)    24 txn_get(0, k, 0, 0)   25 txn_put(0, k, k)
;;   26 txn_delete(0, k)  27 table_id(k)
;;
;; sluice_apply only: 30 leaves the result slot pointing at OOB and returns
;; ApplyWrite; 31 leaves it at 0xfffffff0 with length 0x20 (wraps).
;;
;; A configuration of 100 + a selector makes every later sluice_alloc run
;; that selector: a host function called from the allocator.
;;
;; Whatever returns goes on normally: sluice_process emits its input batch
;; unchanged, sluice_apply returns ApplyKeep, the others StatusOK.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (import "sluice" "table_id" (func $table_id (param i32 i32) (result i32)))
  (import "sluice" "state_get" (func $state_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "sluice" "state_put" (func $state_put (param i32 i32 i32 i32 i32)))
  (import "sluice" "state_delete" (func $state_delete (param i32 i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (import "sluice" "txn_plan" (func $txn_plan (param i32 i32)))
  (import "sluice" "txn_get" (func $txn_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "sluice" "txn_put" (func $txn_put (param i32 i32 i32 i32 i32) (result i32)))
  (import "sluice" "txn_delete" (func $txn_delete (param i32 i32 i32) (result i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "k")

  (func (export "sluice_abi_version") (result i32) (i32.const 1))

  ;; The selector sluice_alloc runs; 0 for none.
  (global $alloc_sel (mut i32) (i32.const 0))

  ;; Every input goes to offset 1024: the tests pass small ones.
  (func (export "sluice_alloc") (param $size i32) (result i32)
    (if (global.get $alloc_sel) (then
      (call $misuse (global.get $alloc_sel))))
    (i32.const 1024))

  ;; misuse runs selector $sel; it returns when the host lets the call go on.
  (func $misuse (param $sel i32)
    (local $oob i32)
    (local.set $oob (i32.const 0xffff0000))
    (if (i32.eq (local.get $sel) (i32.const 1)) (then
      (call $emit (local.get $oob) (i32.const 8))))
    (if (i32.eq (local.get $sel) (i32.const 2)) (then
      (call $reject (i32.const 0) (local.get $oob) (i32.const 8))))
    (if (i32.eq (local.get $sel) (i32.const 3)) (then
      (drop (call $table_id (local.get $oob) (i32.const 8)))))
    (if (i32.eq (local.get $sel) (i32.const 4)) (then
      (drop (call $state_get (i32.const 0) (local.get $oob) (i32.const 8) (i32.const 0) (i32.const 0)))))
    (if (i32.eq (local.get $sel) (i32.const 5)) (then
      (drop (call $state_get (i32.const 0) (i32.const 0) (i32.const 1) (local.get $oob) (i32.const 8)))))
    (if (i32.eq (local.get $sel) (i32.const 6)) (then
      (call $state_put (i32.const 0) (local.get $oob) (i32.const 8) (i32.const 0) (i32.const 1))))
    (if (i32.eq (local.get $sel) (i32.const 7)) (then
      (call $state_put (i32.const 0) (i32.const 0) (i32.const 1) (local.get $oob) (i32.const 8))))
    (if (i32.eq (local.get $sel) (i32.const 8)) (then
      (call $state_delete (i32.const 0) (local.get $oob) (i32.const 8))))
    (if (i32.eq (local.get $sel) (i32.const 9)) (then
      (call $log (i32.const 3) (local.get $oob) (i32.const 8))))
    (if (i32.eq (local.get $sel) (i32.const 10)) (then
      (call $txn_plan (local.get $oob) (i32.const 8))))
    (if (i32.eq (local.get $sel) (i32.const 11)) (then
      (drop (call $txn_get (i32.const 0) (local.get $oob) (i32.const 8) (i32.const 0) (i32.const 0)))))
    (if (i32.eq (local.get $sel) (i32.const 12)) (then
      (drop (call $txn_get (i32.const 0) (i32.const 0) (i32.const 1) (local.get $oob) (i32.const 8)))))
    (if (i32.eq (local.get $sel) (i32.const 13)) (then
      (drop (call $txn_put (i32.const 0) (local.get $oob) (i32.const 8) (i32.const 0) (i32.const 1)))))
    (if (i32.eq (local.get $sel) (i32.const 14)) (then
      (drop (call $txn_put (i32.const 0) (i32.const 0) (i32.const 1) (local.get $oob) (i32.const 8)))))
    (if (i32.eq (local.get $sel) (i32.const 15)) (then
      (drop (call $txn_delete (i32.const 0) (local.get $oob) (i32.const 8)))))
    (if (i32.eq (local.get $sel) (i32.const 16)) (then
      (call $emit (i32.const 0xfffffff0) (i32.const 0x20))))
    (if (i32.eq (local.get $sel) (i32.const 17)) (then
      (call $log (i32.const 1) (i32.mul (memory.size) (i32.const 65536)) (i32.const 0))))
    (if (i32.eq (local.get $sel) (i32.const 18)) (then
      (call $log (i32.const 1) (i32.add (i32.mul (memory.size) (i32.const 65536)) (i32.const 1)) (i32.const 0))))
    (if (i32.eq (local.get $sel) (i32.const 19)) (then
      (drop (call $txn_put (i32.const 0) (i32.const 0xfffffff0) (i32.const 0x20) (i32.const 0) (i32.const 1)))))
    (if (i32.eq (local.get $sel) (i32.const 20)) (then
      (call $emit (i32.const 0) (i32.const 1))))
    (if (i32.eq (local.get $sel) (i32.const 21)) (then
      (call $reject (i32.const 0) (i32.const 0) (i32.const 1))))
    (if (i32.eq (local.get $sel) (i32.const 22)) (then
      (call $state_put (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1))))
    (if (i32.eq (local.get $sel) (i32.const 23)) (then
      (call $txn_plan (i32.const 0) (i32.const 0))))
    (if (i32.eq (local.get $sel) (i32.const 24)) (then
      (drop (call $txn_get (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 0)))))
    (if (i32.eq (local.get $sel) (i32.const 25)) (then
      (drop (call $txn_put (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1)))))
    (if (i32.eq (local.get $sel) (i32.const 26)) (then
      (drop (call $txn_delete (i32.const 0) (i32.const 0) (i32.const 1)))))
    (if (i32.eq (local.get $sel) (i32.const 27)) (then
      (drop (call $table_id (i32.const 0) (i32.const 1))))))

  ;; The selector of a batch: the low 32 bits of record 0's time (the
  ;; batch count, then size, origin and flags come first).
  (func $selector (param $batch i32) (result i32)
    (i32.load offset=16 (local.get $batch)))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (call $misuse (call $selector (local.get $ptr)))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0))

  (func (export "sluice_configure") (param $ptr i32) (param $len i32) (result i32)
    (local $sel i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (block $done
      (loop $digit
        (br_if $done (i32.ge_u (local.get $ptr) (local.get $end)))
        (local.set $sel (i32.add (i32.mul (local.get $sel) (i32.const 10))
          (i32.sub (i32.load8_u (local.get $ptr)) (i32.const 48))))
        (local.set $ptr (i32.add (local.get $ptr) (i32.const 1)))
        (br $digit)))
    (if (i32.ge_u (local.get $sel) (i32.const 100)) (then
      (global.set $alloc_sel (i32.sub (local.get $sel) (i32.const 100)))
      (return (i32.const 0))))
    (call $misuse (local.get $sel))
    (i32.const 0))

  (func (export "sluice_plan") (param $ptr i32) (param $len i32) (result i32)
    (call $misuse (call $selector (local.get $ptr)))
    (i32.const 0))

  ;; The request's result slot is its first 8 bytes; fn follows.
  (func (export "sluice_apply") (param $ptr i32) (param $len i32) (result i32)
    (local $sel i32)
    (local.set $sel (i32.load offset=8 (local.get $ptr)))
    (if (i32.eq (local.get $sel) (i32.const 30)) (then
      (i32.store (local.get $ptr) (i32.const 0xffff0000))
      (i32.store offset=4 (local.get $ptr) (i32.const 8))
      (return (i32.const 0))))
    (if (i32.eq (local.get $sel) (i32.const 31)) (then
      (i32.store (local.get $ptr) (i32.const 0xfffffff0))
      (i32.store offset=4 (local.get $ptr) (i32.const 0x20))
      (return (i32.const 0))))
    (call $misuse (local.get $sel))
    (i32.const 1))

  (func (export "sluice_post") (param $events i32) (param $elen i32) (param $out i32) (param $olen i32) (result i32)
    (call $misuse (call $selector (local.get $events)))
    (i32.const 0)))
