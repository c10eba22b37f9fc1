;; tables grows two tables of different reference types, one of them in a
;; loop and behind a start function, for the table limit (tables_test.go).
(module
  (table $f 2 funcref)
  (table $e 0 externref)
  (global $started (mut i32) (i32.const 0))
  (func $start (global.set $started (i32.const 1)))
  (start $start)
  (func (export "started") (result i32) (global.get $started))
  (func (export "grow_f") (param $n i32) (result i32)
    (table.grow $f (ref.null func) (local.get $n)))
  (func (export "grow_e") (param $n i32) (result i32)
    (table.grow $e (ref.null extern) (local.get $n)))
  (func (export "size_f") (result i32) (table.size $f))
  (func (export "size_e") (result i32) (table.size $e))
  ;; loop_grow grows $f by one entry $k times (k >= 1) and returns what
  ;; the last table.grow returned.
  (func (export "loop_grow") (param $k i32) (result i32)
    (local $r i32)
    (loop $l
      (local.set $r (table.grow $f (ref.null func) (i32.const 1)))
      (br_if $l (local.tee $k (i32.sub (local.get $k) (i32.const 1)))))
    (local.get $r)))
