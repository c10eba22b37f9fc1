;; v1 is a map module as every module was built before record inputs
;; existed: it exports no sluice_features, so it reads records as version 1
;; first published them. It traps on any record whose flags are not 0 and
;; emits its input batch unchanged, bytes and all.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (memory (export "memory") 2)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $off i32)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        ;; flags, after size and origin
        (if (i32.load offset=8 (local.get $off)) (then unreachable))
        (local.set $off (i32.add (local.get $off) (i32.add (i32.const 4) (i32.load (local.get $off)))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0)))
