;; inputs is a map module that declares abi.FeatureInputs (sluice_features
;; returns 1). It overwrites the first byte of each record's value (when it
;; has one) with the ASCII digit of the record's input, read from the low
;; bits of its flags, and emits its input batch: a forwarded record keeps
;; its input in its flags.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (memory (export "memory") 2)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_features") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $off i32) (local $klen i32)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $klen (i32.load offset=20 (local.get $off)))
        ;; value_len at off+24+klen, the value after it
        (if (i32.load offset=24 (i32.add (local.get $off) (local.get $klen)))
          (then
            (i32.store8 offset=28 (i32.add (local.get $off) (local.get $klen))
              (i32.add (i32.const 48) (i32.load16_u offset=8 (local.get $off))))))
        (local.set $off (i32.add (local.get $off) (i32.add (i32.const 4) (i32.load (local.get $off)))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0)))
