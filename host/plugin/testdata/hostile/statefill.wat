;; statefill writes keyed state the way a guest that hoards would. With N
;; the low 32 bits of record 0's time, sluice_process stores, under the key
;; "k" of table 0:
;;
;;   record 0 without a key   N values of 1 KiB, one after another
;;   record 0 with key "big"  one value of N bytes
;;   record 0 with key "del"  nothing, but deletes "k" N times
;;
;; and then emits its input batch unchanged.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "state_put" (func $state_put (param i32 i32 i32 i32 i32)))
  (import "sluice" "state_delete" (func $state_delete (param i32 i32 i32)))
  (memory (export "memory") 300)
  (data (i32.const 0) "k")
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  ;; Inputs go to offset 1024; values are read from offset 65536.
  (func (export "sluice_alloc") (param $size i32) (result i32) (i32.const 1024))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32)
    (local $mode i32)
    (local.set $n (i32.load offset=16 (local.get $ptr)))
    ;; key_len at offset 24, the key's first byte at 28.
    (if (i32.load offset=24 (local.get $ptr))
      (then (local.set $mode (i32.load8_u offset=28 (local.get $ptr)))))
    (if (i32.eq (local.get $mode) (i32.const 98)) ;; 'b'
      (then
        (call $state_put (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 65536) (local.get $n))
        (local.set $n (i32.const 0))))
    (block $done
      (loop $again
        (br_if $done (i32.eqz (local.get $n)))
        (if (i32.eq (local.get $mode) (i32.const 100)) ;; 'd'
          (then (call $state_delete (i32.const 0) (i32.const 0) (i32.const 1)))
          (else (call $state_put (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 65536) (i32.const 1024))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $again)))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0)))
