;; wincount: the conformance "wincount" aggregate in hand-written
;; WebAssembly text (ABI.md section 13).
;;
;; Behaviour (identical to plugins/wincount, a Go sluice.Aggregate): per
;; key and window, the number of records and the sum of their values, each
;; value a decimal integer (an optional '-', then digits, within int64); a
;; record whose value is not one is rejected with "value is not a decimal
;; integer" and not counted. The accumulator is 16 bytes: count and sum,
;; little-endian i64 (the sum wraps around). sluice_agg_fire emits one
;; record per window: the key, the value "count,sum" in decimal.
;;
;; Read sdk/wat/reference/aggregate.wat for the walk-through of the
;; exports; this file adds the parsing and formatting of integers.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 1024) "value is not a decimal integer") ;; 30 bytes

  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_kinds") (result i32) (i32.const 32)) ;; aggregate

  ;; The allocator of sdk/wat/reference/stateless.wat: regions from 64 KiB
  ;; up, reused after the call that consumes them.
  (global $heap_base i32 (i32.const 65536))
  (global $brk (mut i32) (i32.const 65536))
  (global $pending (mut i32) (i32.const 0))
  (func (export "sluice_alloc") (param $size i32) (result i32)
    (local $p i32) (local $top i32)
    (if (i32.gt_u (local.get $size) (i32.const 0x40000000)) (then (return (i32.const 0))))
    (if (i32.eqz (global.get $pending)) (then (global.set $brk (global.get $heap_base))))
    (local.set $p (global.get $brk))
    (local.set $top (i32.and (i32.add (i32.add (local.get $p) (local.get $size)) (i32.const 7)) (i32.const -8)))
    (if (i32.eqz (call $grow_to (local.get $top))) (then (return (i32.const 0))))
    (global.set $brk (local.get $top))
    (global.set $pending (i32.const 1))
    (local.get $p))
  (func $grow_to (param $top i32) (result i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $top) (i32.const 0xffff)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
        (then (return (i32.const 0))))))
    (i32.const 1))

  ;; Record fields (ABI.md section 4), p the record's size field.
  (func $next (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 4)) (i32.load (local.get $p))))
  (func $klen (param $p i32) (result i32) (i32.load offset=20 (local.get $p)))
  (func $vlen (param $p i32) (result i32)
    (i32.load offset=24 (i32.add (local.get $p) (call $klen (local.get $p)))))
  (func $val (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 28)) (call $klen (local.get $p))))

  ;; parse reads the decimal integer at [s, s+n): it sets $ok to 1 and
  ;; returns it, or sets $ok to 0.
  (global $ok (mut i32) (i32.const 0))
  (func $parse (param $s i32) (param $n i32) (result i64)
    (local $neg i32) (local $i i32) (local $d i32) (local $m i64)
    (global.set $ok (i32.const 0))
    (if (i32.and (i32.gt_u (local.get $n) (i32.const 0)) (i32.eq (i32.load8_u (local.get $s)) (i32.const 0x2d)))
      (then (local.set $neg (i32.const 1)) (local.set $i (i32.const 1))))
    (if (i32.ge_u (local.get $i) (local.get $n)) (then (return (i64.const 0))))
    (block $done (loop $digits
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $d (i32.sub (i32.load8_u (i32.add (local.get $s) (local.get $i))) (i32.const 0x30)))
      (if (i32.gt_u (local.get $d) (i32.const 9)) (then (return (i64.const 0))))
      ;; 922337203685477580 * 10 + 7 is the largest int64, + 8 the
      ;; magnitude of the smallest.
      (if (i64.gt_u (local.get $m) (i64.const 922337203685477580)) (then (return (i64.const 0))))
      (if (i32.and (i64.eq (local.get $m) (i64.const 922337203685477580))
                   (i32.gt_u (local.get $d) (i32.add (i32.const 7) (local.get $neg))))
        (then (return (i64.const 0))))
      (local.set $m (i64.add (i64.mul (local.get $m) (i64.const 10)) (i64.extend_i32_u (local.get $d))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $digits)))
    (global.set $ok (i32.const 1))
    (if (result i64) (local.get $neg) (then (i64.sub (i64.const 0) (local.get $m))) (else (local.get $m))))

  ;; fmt writes v in decimal at dst, signed when $signed, and returns the
  ;; bytes written.
  (func $fmt (param $dst i32) (param $v i64) (param $signed i32) (result i32)
    (local $n i32) (local $i i32) (local $j i32) (local $c i32) (local $start i32)
    (if (i32.and (local.get $signed) (i64.lt_s (local.get $v) (i64.const 0)))
      (then
        (i32.store8 (local.get $dst) (i32.const 0x2d))
        (local.set $n (i32.const 1))
        (local.set $v (i64.sub (i64.const 0) (local.get $v)))))
    (local.set $start (local.get $n))
    ;; Digits in reverse, then turned around.
    (loop $digits
      (i32.store8 (i32.add (local.get $dst) (local.get $n))
        (i32.add (i32.const 0x30) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    (local.set $i (i32.add (local.get $dst) (local.get $start)))
    (local.set $j (i32.sub (i32.add (local.get $dst) (local.get $n)) (i32.const 1)))
    (block $done (loop $swap
      (br_if $done (i32.ge_u (local.get $i) (local.get $j)))
      (local.set $c (i32.load8_u (local.get $i)))
      (i32.store8 (local.get $i) (i32.load8_u (local.get $j)))
      (i32.store8 (local.get $j) (local.get $c))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (local.set $j (i32.sub (local.get $j) (i32.const 1)))
      (br $swap)))
    (local.get $n))

  ;; The count and sum of the accumulator a record at p holds (zero when
  ;; its value is empty: none yet).
  (global $count (mut i64) (i64.const 0))
  (global $sum (mut i64) (i64.const 0))
  (func $read_acc (param $p i32)
    (global.set $count (i64.const 0))
    (global.set $sum (i64.const 0))
    (if (i32.eq (call $vlen (local.get $p)) (i32.const 16))
      (then
        (global.set $count (i64.load (call $val (local.get $p))))
        (global.set $sum (i64.load offset=8 (call $val (local.get $p)))))))

  ;; emit_acc emits the accumulator ($count, $sum) with origin o: a batch of
  ;; one record without key or headers, written after the input region.
  (func $emit_acc (param $o i32)
    (local $b i32)
    (local.set $b (global.get $brk))
    (if (i32.eqz (call $grow_to (i32.add (local.get $b) (i32.const 64)))) (then unreachable))
    (i32.store (local.get $b) (i32.const 1))
    (i32.store offset=4 (local.get $b) (i32.const 44))
    (i32.store offset=8 (local.get $b) (local.get $o))
    (i32.store offset=12 (local.get $b) (i32.const 0))
    (i64.store offset=16 (local.get $b) (i64.const 0))
    (i32.store offset=24 (local.get $b) (i32.const 0))
    (i32.store offset=28 (local.get $b) (i32.const 16))
    (i64.store offset=32 (local.get $b) (global.get $count))
    (i64.store offset=40 (local.get $b) (global.get $sum))
    (i32.store offset=48 (local.get $b) (i32.const 0))
    (call $emit (local.get $b) (i32.const 52)))

  ;; sluice_agg_add: a group batch; each group's head holds the
  ;; accumulator, its members the records to fold in.
  (func (export "sluice_agg_add") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $g i32) (local $p i32) (local $m i32) (local $k i32) (local $v i64)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $groups
      (br_if $done (i32.ge_u (local.get $g) (local.get $n)))
      (call $read_acc (local.get $p))
      (local.set $p (call $next (local.get $p)))
      (local.set $m (i32.load (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $k (i32.const 0))
      (block $mdone (loop $members
        (br_if $mdone (i32.ge_u (local.get $k) (local.get $m)))
        (local.set $v (call $parse (call $val (local.get $p)) (call $vlen (local.get $p))))
        (if (global.get $ok)
          (then
            (global.set $count (i64.add (global.get $count) (i64.const 1)))
            (global.set $sum (i64.add (global.get $sum) (local.get $v))))
          (else (call $reject (i32.load offset=4 (local.get $p)) (i32.const 1024) (i32.const 30))))
        (local.set $p (call $next (local.get $p)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $members)))
      (call $emit_acc (local.get $g))
      (local.set $g (i32.add (local.get $g) (i32.const 1)))
      (br $groups)))
    (global.set $pending (i32.const 0))
    (i32.const 0))

  ;; sluice_agg_merge: records 2j and 2j+1 are two accumulators of a key.
  (func (export "sluice_agg_merge") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $j i32) (local $p i32) (local $c i64) (local $s i64)
    (local.set $n (i32.shr_u (i32.load (local.get $ptr)) (i32.const 1)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $pairs
      (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
      (call $read_acc (local.get $p))
      (local.set $c (global.get $count))
      (local.set $s (global.get $sum))
      (local.set $p (call $next (local.get $p)))
      (call $read_acc (local.get $p))
      (global.set $count (i64.add (global.get $count) (local.get $c)))
      (global.set $sum (i64.add (global.get $sum) (local.get $s)))
      (local.set $p (call $next (local.get $p)))
      (call $emit_acc (local.get $j))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $pairs)))
    (global.set $pending (i32.const 0))
    (i32.const 0))

  ;; sluice_agg_fire: one record per firing window; emits key and
  ;; "count,sum".
  (func (export "sluice_agg_fire") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $j i32) (local $p i32) (local $b i32) (local $kl i32) (local $v i32) (local $vl i32)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $fires
      (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
      (call $read_acc (local.get $p))
      (local.set $kl (call $klen (local.get $p)))
      (local.set $b (global.get $brk))
      (if (i32.eqz (call $grow_to (i32.add (i32.add (local.get $b) (local.get $kl)) (i32.const 128)))) (then unreachable))
      ;; batch count, size (later), origin, flags, time, key
      (i32.store (local.get $b) (i32.const 1))
      (i32.store offset=8 (local.get $b) (local.get $j))
      (i32.store offset=12 (local.get $b) (i32.const 0))
      (i64.store offset=16 (local.get $b) (i64.const 0))
      (i32.store offset=24 (local.get $b) (local.get $kl))
      (memory.copy (i32.add (local.get $b) (i32.const 28)) (i32.add (local.get $p) (i32.const 24)) (local.get $kl))
      ;; the value: count ',' sum
      (local.set $v (i32.add (i32.add (local.get $b) (i32.const 32)) (local.get $kl)))
      (local.set $vl (call $fmt (local.get $v) (global.get $count) (i32.const 0)))
      (i32.store8 (i32.add (local.get $v) (local.get $vl)) (i32.const 0x2c))
      (local.set $vl (i32.add (local.get $vl) (i32.const 1)))
      (local.set $vl (i32.add (local.get $vl)
        (call $fmt (i32.add (local.get $v) (local.get $vl)) (global.get $sum) (i32.const 1))))
      (i32.store offset=28 (i32.add (local.get $b) (local.get $kl)) (local.get $vl))
      (i32.store (i32.add (local.get $v) (local.get $vl)) (i32.const 0)) ;; no headers
      ;; size = 28 + key + value
      (i32.store offset=4 (local.get $b) (i32.add (i32.const 28) (i32.add (local.get $kl) (local.get $vl))))
      (call $emit (local.get $b) (i32.add (i32.const 36) (i32.add (local.get $kl) (local.get $vl))))
      (local.set $p (call $next (local.get $p)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $fires)))
    (global.set $pending (i32.const 0))
    (i32.const 0)))
