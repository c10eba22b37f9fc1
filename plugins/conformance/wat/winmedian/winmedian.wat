;; winmedian: the conformance "winmedian" window function in hand-written
;; WebAssembly text (ABI.md section 13).
;;
;; Behaviour (identical to plugins/winmedian, a Go sluice.WindowFunc): when
;; a key's window fires, one record with the key and the median of the
;; window's values, each a decimal integer (an optional '-', then digits,
;; within int64), in decimal: the middle value once sorted, the upper one
;; of the two middle values for an even count. A value that is not an
;; integer rejects every record of the window, with "record K: value is
;; not a decimal integer" (K the record's index in its window), and the
;; window emits nothing; an empty window emits nothing.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 1024) "record ")
  (data (i32.const 1040) ": value is not a decimal integer") ;; 32 bytes

  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_kinds") (result i32) (i32.const 64)) ;; window

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

  ;; sluice_window_fire: a group batch; each group's head is the window
  ;; (key and headers), its members the window's records.
  (func (export "sluice_window_fire") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $g i32) (local $p i32) (local $head i32) (local $first i32)
    (local $m i32) (local $k i32) (local $i i32) (local $arr i32) (local $v i64) (local $bad i32)
    (local $x i64) (local $b i32) (local $kl i32) (local $vl i32) (local $ml i32)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $groups
      (br_if $done (i32.ge_u (local.get $g) (local.get $n)))
      (local.set $head (local.get $p))
      (local.set $p (call $next (local.get $p)))
      (local.set $m (i32.load (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $first (local.get $p))
      ;; The values, parsed into an i64 array after the input region.
      (local.set $arr (global.get $brk))
      (if (i32.eqz (call $grow_to (i32.add (local.get $arr) (i32.shl (local.get $m) (i32.const 3))))) (then unreachable))
      (local.set $bad (i32.const -1))
      (local.set $k (i32.const 0))
      (block $mdone (loop $members
        (br_if $mdone (i32.ge_u (local.get $k) (local.get $m)))
        (local.set $v (call $parse (call $val (local.get $p)) (call $vlen (local.get $p))))
        (if (i32.and (i32.eqz (global.get $ok)) (i32.lt_s (local.get $bad) (i32.const 0)))
          (then (local.set $bad (local.get $k))))
        (i64.store (i32.add (local.get $arr) (i32.shl (local.get $k) (i32.const 3))) (local.get $v))
        (local.set $p (call $next (local.get $p)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $members)))
      (if (i32.ge_s (local.get $bad) (i32.const 0))
        (then
          ;; The message, "record K: value is not a decimal integer",
          ;; built at 2048; then every member rejected.
          (memory.copy (i32.const 2048) (i32.const 1024) (i32.const 7))
          (local.set $ml (i32.add (i32.const 7) (call $fmt (i32.const 2055) (i64.extend_i32_u (local.get $bad)) (i32.const 0))))
          (memory.copy (i32.add (i32.const 2048) (local.get $ml)) (i32.const 1040) (i32.const 32))
          (local.set $ml (i32.add (local.get $ml) (i32.const 32)))
          (local.set $p (local.get $first))
          (local.set $k (i32.const 0))
          (block $rdone (loop $rejects
            (br_if $rdone (i32.ge_u (local.get $k) (local.get $m)))
            (call $reject (i32.load offset=4 (local.get $p)) (i32.const 2048) (local.get $ml))
            (local.set $p (call $next (local.get $p)))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $rejects))))
        (else (if (i32.gt_u (local.get $m) (i32.const 0))
          (then
            ;; Insertion sort of the m values.
            (local.set $k (i32.const 1))
            (block $sdone (loop $sort
              (br_if $sdone (i32.ge_u (local.get $k) (local.get $m)))
              (local.set $x (i64.load (i32.add (local.get $arr) (i32.shl (local.get $k) (i32.const 3)))))
              (local.set $i (local.get $k))
              (block $idone (loop $insert
                (br_if $idone (i32.eqz (local.get $i)))
                (br_if $idone (i64.le_s (i64.load (i32.add (local.get $arr) (i32.shl (i32.sub (local.get $i) (i32.const 1)) (i32.const 3))))
                                        (local.get $x)))
                (i64.store (i32.add (local.get $arr) (i32.shl (local.get $i) (i32.const 3)))
                  (i64.load (i32.add (local.get $arr) (i32.shl (i32.sub (local.get $i) (i32.const 1)) (i32.const 3)))))
                (local.set $i (i32.sub (local.get $i) (i32.const 1)))
                (br $insert)))
              (i64.store (i32.add (local.get $arr) (i32.shl (local.get $i) (i32.const 3))) (local.get $x))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $sort)))
            ;; One record: the head's key, the median in decimal.
            (local.set $kl (call $klen (local.get $head)))
            (local.set $b (i32.add (local.get $arr) (i32.shl (local.get $m) (i32.const 3))))
            (if (i32.eqz (call $grow_to (i32.add (i32.add (local.get $b) (local.get $kl)) (i32.const 128)))) (then unreachable))
            (i32.store (local.get $b) (i32.const 1))
            (i32.store offset=8 (local.get $b) (local.get $g))
            (i32.store offset=12 (local.get $b) (i32.const 0))
            (i64.store offset=16 (local.get $b) (i64.const 0))
            (i32.store offset=24 (local.get $b) (local.get $kl))
            (memory.copy (i32.add (local.get $b) (i32.const 28)) (i32.add (local.get $head) (i32.const 24)) (local.get $kl))
            (local.set $vl (call $fmt (i32.add (i32.add (local.get $b) (i32.const 32)) (local.get $kl))
              (i64.load (i32.add (local.get $arr) (i32.shl (i32.shr_u (local.get $m) (i32.const 1)) (i32.const 3))))
              (i32.const 1)))
            (i32.store offset=28 (i32.add (local.get $b) (local.get $kl)) (local.get $vl))
            (i32.store offset=32 (i32.add (i32.add (local.get $b) (local.get $kl)) (local.get $vl)) (i32.const 0))
            (i32.store offset=4 (local.get $b) (i32.add (i32.const 28) (i32.add (local.get $kl) (local.get $vl))))
            (call $emit (local.get $b) (i32.add (i32.const 36) (i32.add (local.get $kl) (local.get $vl))))))))
      (local.set $g (i32.add (local.get $g) (i32.const 1)))
      (br $groups)))
    (global.set $pending (i32.const 0))
    (i32.const 0)))
