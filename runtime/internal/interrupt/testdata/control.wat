;; Control flow: loops of every shape, recursion, calls without loops,
;; globals imported and defined, a start function, multi-value.
;;
;; call fib 10 -> 55
;; call fib 20 -> 6765
;; call sum_to 100 -> 5050
;; call nested 7 -> 49
;; call loop_params 5 -> 15
;; call loop_result 9 -> 9
;; call typed_block 3 4 -> 7 12
;; call dispatch 0 -> 100
;; call dispatch 1 -> 101
;; call dispatch 7 -> 102
;; call if_else 1 -> 10
;; call if_else 0 -> 20
;; call select_t 1 -> 5
;; call select_t 0 -> 6
;; call started -> 42
;; call imported -> 7
;; call calls_leaf 4 -> 8
;; call dead_code -> 1
;; call escape 0 -> 1119
;; call escape 1 -> 1019
;; call escape 2 -> 19
;; call escape 3 -> 9
;; call escape 7 -> 9
;; spin spin
;; spin spin_calls
;; spin spin_params
;; spin recurse 64
(module
  (type $pair (func (param i32 i32) (result i32 i32)))
  (type $two (func (param i32 i32) (result i32)))
  (import "env" "seven" (global $seven i32))
  (global $started (mut i32) (i32.const 0))
  (global $counter (mut i64) (i64.const 0))
  (func $start (global.set $started (i32.const 42)))
  (start $start)
  (func (export "started") (result i32) (global.get $started))
  (func (export "imported") (result i32) (global.get $seven))

  (func $fib (export "fib") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                     (call $fib (i32.sub (local.get $n) (i32.const 2)))))))

  (func (export "sum_to") (param $n i32) (result i32) (local $s i32)
    (block $out
      (loop $l
        (br_if $out (i32.eqz (local.get $n)))
        (local.set $s (i32.add (local.get $s) (local.get $n)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $s))

  (func (export "nested") (param $n i32) (result i32) (local $i i32) (local $j i32) (local $c i32)
    (loop $outer
      (local.set $j (i32.const 0))
      (loop $inner
        (local.set $c (i32.add (local.get $c) (i32.const 1)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br_if $inner (i32.lt_u (local.get $j) (local.get $n))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $outer (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $c))

  ;; A loop with parameters (multi-value): sums n, n-1, ..., 1 on the stack.
  (func (export "loop_params") (param $n i32) (result i32)
    i32.const 0
    local.get $n
    loop $l (param i32 i32) (result i32)
      local.set $n
      local.get $n
      i32.add
      local.get $n
      i32.const 1
      i32.sub
      local.tee $n
      local.get $n
      br_if $l
      drop
    end)

  (func (export "loop_result") (param $n i32) (result i32)
    (loop $l (result i32) (local.get $n)))

  ;; A block typed by a type index: (i32, i32) -> (i32, i32).
  (func (export "typed_block") (param i32 i32) (result i32 i32)
    (local.get 0) (local.get 1)
    (block (type $pair)
      (local.set 1) (local.set 0)
      (i32.add (local.get 0) (local.get 1))
      (i32.mul (local.get 0) (local.get 1))))

  (func (export "dispatch") (param i32) (result i32)
    (block $c
      (block $b
        (block $a
          (br_table $a $b $c (local.get 0)))
        (return (i32.const 100)))
      (return (i32.const 101)))
    (i32.const 102))

  (func (export "if_else") (param i32) (result i32)
    (if (result i32) (local.get 0) (then (i32.const 10)) (else (i32.const 20))))

  (func (export "select_t") (param i32) (result i32)
    (select (result i32) (i32.const 5) (i32.const 6) (local.get 0)))

  (func $leaf (param i32) (result i32) (i32.add (local.get 0) (local.get 0)))
  (func (export "calls_leaf") (param i32) (result i32) (call $leaf (local.get 0)))

  ;; Instructions after an unconditional branch are still decoded.
  (func (export "dead_code") (result i32)
    (block (result i32) (br 0 (i32.const 1)) (loop (br 0)) (i32.const 2)))

  ;; A br_table out of two nested loops, to blocks and to the function
  ;; itself: the branch depths change when the loops are wrapped.
  (func (export "escape") (param $x i32) (result i32) (local $i i32)
    i32.const 10
    block $b2 (result i32)
      block $b1 (result i32)
        block $b0 (result i32)
          loop $outer
            loop $inner
              local.get $i
              i32.const 1
              i32.add
              local.set $i
              local.get $i
              i32.const 3
              i32.rem_u
              br_if $inner
              local.get $i
              i32.const 9
              i32.lt_u
              br_if $outer
              local.get $i
              local.get $x
              br_table $b0 $b1 $b2 5
            end
            unreachable
          end
          unreachable
        end
        i32.const 100
        i32.add
      end
      i32.const 1000
      i32.add
    end
    i32.add)

  (func (export "spin") (loop $l (global.set $counter (i64.add (global.get $counter) (i64.const 1))) (br $l)))
  (func (export "spin_calls") (loop $l (drop (call $leaf (i32.const 1))) (br $l)))
  (func (export "spin_params") (i32.const 0) (loop $l (param i32) (i32.add (i32.const 1)) (br $l)) (unreachable))

  ;; Exponential recursion without a loop: only an entry check stops it.
  (func $recurse (export "recurse") (param $n i32)
    (if (i32.eqz (local.get $n)) (then (return)))
    (call $recurse (i32.sub (local.get $n) (i32.const 1)))
    (call $recurse (i32.sub (local.get $n) (i32.const 1))))
)
