;; aggregate.wat: a count per key and window, the reference aggregate of
;; ABI.md section 13, written by hand.
;;
;; An aggregate operator (kind: aggregate) keeps no state of its own: the
;; host keeps, per key and window (or slice of a window), an accumulator
;; of the guest's encoding and hands it back with the records to fold in.
;; Here the accumulator is the count as 8 little-endian bytes; the host
;; marks "none yet" with an empty value, which reads as 0 (an accumulator
;; must take at least one byte, section 13.1).
;;
;;   sluice_agg_add    a group batch: per group, a head (Origin g, the key,
;;                     Value the accumulator) and the records to fold in;
;;                     emits one record per group, Origin g, Value the new
;;                     accumulator.
;;   sluice_agg_merge  2n records, 2j and 2j+1 two accumulators of one key;
;;                     emits one record per pair, Origin j.
;;   sluice_agg_fire   one record per firing window (its accumulator and the
;;                     sluice-window-start, -end and sluice-firing headers);
;;                     emits the results, Origin the firing's index: here
;;                     the key and the count in decimal. The host sets each
;;                     result's time to the window's end - 1.
;;
;; Build:  wat2wasm aggregate.wat -o aggregate.wasm   (or sluice plugin build)
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (memory (export "memory") 2)

  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  ;; sluice_kinds (section 12): aggregate is bit 32; `sluice plugin build`
  ;; writes it into the module's sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 32))

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

  ;; Record fields (section 4); p points at a record's size field.
  (func $next (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 4)) (i32.load (local.get $p))))
  (func $klen (param $p i32) (result i32) (i32.load offset=20 (local.get $p)))
  ;; acc returns the count a record's value holds: 0 when it is empty.
  (func $acc (param $p i32) (result i64)
    (local $v i32)
    (local.set $v (i32.add (local.get $p) (call $klen (local.get $p))))
    (if (result i64) (i32.eq (i32.load offset=24 (local.get $v)) (i32.const 8))
      (then (i64.load offset=28 (local.get $v))) (else (i64.const 0))))

  ;; emit_count emits one record: origin o, no key, the 8-byte count n,
  ;; as a batch of one, written after the input region.
  (func $emit_count (param $o i32) (param $n i64)
    (local $b i32)
    (local.set $b (global.get $brk))
    (if (i32.eqz (call $grow_to (i32.add (local.get $b) (i32.const 64)))) (then unreachable))
    (i32.store (local.get $b) (i32.const 1))              ;; count
    (i32.store offset=4 (local.get $b) (i32.const 36))    ;; size: 28 + 8
    (i32.store offset=8 (local.get $b) (local.get $o))    ;; origin
    (i32.store offset=12 (local.get $b) (i32.const 0))    ;; flags
    (i64.store offset=16 (local.get $b) (i64.const 0))    ;; time
    (i32.store offset=24 (local.get $b) (i32.const 0))    ;; key_len
    (i32.store offset=28 (local.get $b) (i32.const 8))    ;; value_len
    (i64.store offset=32 (local.get $b) (local.get $n))   ;; value
    (i32.store offset=40 (local.get $b) (i32.const 0))    ;; header_count
    (call $emit (local.get $b) (i32.const 44)))

  (func (export "sluice_agg_add") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $g i32) (local $p i32) (local $m i32) (local $k i32) (local $c i64)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $groups
      (br_if $done (i32.ge_u (local.get $g) (local.get $n)))
      (local.set $c (call $acc (local.get $p)))           ;; the head
      (local.set $p (call $next (local.get $p)))
      (local.set $m (i32.load (local.get $p)))            ;; its members
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $k (i32.const 0))
      (block $mdone (loop $members
        (br_if $mdone (i32.ge_u (local.get $k) (local.get $m)))
        (local.set $c (i64.add (local.get $c) (i64.const 1)))
        (local.set $p (call $next (local.get $p)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $members)))
      (call $emit_count (local.get $g) (local.get $c))
      (local.set $g (i32.add (local.get $g) (i32.const 1)))
      (br $groups)))
    (global.set $pending (i32.const 0))                   ;; the region is consumed
    (i32.const 0))

  (func (export "sluice_agg_merge") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $j i32) (local $p i32) (local $c i64)
    (local.set $n (i32.shr_u (i32.load (local.get $ptr)) (i32.const 1)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $pairs
      (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $c (call $acc (local.get $p)))
      (local.set $p (call $next (local.get $p)))
      (local.set $c (i64.add (local.get $c) (call $acc (local.get $p))))
      (local.set $p (call $next (local.get $p)))
      (call $emit_count (local.get $j) (local.get $c))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $pairs)))
    (global.set $pending (i32.const 0))
    (i32.const 0))

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

  (func (export "sluice_agg_fire") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $j i32) (local $p i32) (local $b i32) (local $kl i32) (local $vl i32)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $fires
      (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $kl (call $klen (local.get $p)))
      (local.set $b (global.get $brk))
      (if (i32.eqz (call $grow_to (i32.add (i32.add (local.get $b) (local.get $kl)) (i32.const 128)))) (then unreachable))
      (i32.store (local.get $b) (i32.const 1))
      (i32.store offset=8 (local.get $b) (local.get $j))
      (i32.store offset=12 (local.get $b) (i32.const 0))
      (i64.store offset=16 (local.get $b) (i64.const 0))   ;; the host sets end - 1
      (i32.store offset=24 (local.get $b) (local.get $kl))
      (memory.copy (i32.add (local.get $b) (i32.const 28)) (i32.add (local.get $p) (i32.const 24)) (local.get $kl))
      (local.set $vl (call $fmt (i32.add (i32.add (local.get $b) (i32.const 32)) (local.get $kl)) (call $acc (local.get $p)) (i32.const 0)))
      (i32.store offset=28 (i32.add (local.get $b) (local.get $kl)) (local.get $vl))
      (i32.store offset=32 (i32.add (i32.add (local.get $b) (local.get $kl)) (local.get $vl)) (i32.const 0))
      (i32.store offset=4 (local.get $b) (i32.add (i32.const 28) (i32.add (local.get $kl) (local.get $vl))))
      (call $emit (local.get $b) (i32.add (i32.const 36) (i32.add (local.get $kl) (local.get $vl))))
      (local.set $p (call $next (local.get $p)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $fires)))
    (global.set $pending (i32.const 0))
    (i32.const 0)))
