;; sluice.kinds: aggregate
;;
;; agg is a count per key: its accumulator is the count as 8 little-endian
;; bytes, an empty one counting 0. Tags drive its misbehaviour, for the
;; tests: a group head (or merge pair) whose key begins with "d" gets two
;; accumulators, "n" none, "o" one with an origin out of range; a member
;; whose value begins with "b" is rejected (and not counted), "t" traps,
;; "e" fails the call with StatusError. In sluice_agg_fire, a firing whose
;; key begins with "r" is rejected and one with "t" traps; the others are
;; emitted as they came (accumulator and headers), their time zeroed.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 512) "bad recordfailed")
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_kinds") (result i32) (i32.const 32))
  (func (export "sluice_alloc") (param $n i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $n) (i32.const 100000))
      (then (i32.const 0)) (else (i32.const 1024))))

  (func $next (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 4)) (i32.load (local.get $p))))
  (func $klen (param $p i32) (result i32) (i32.load offset=20 (local.get $p)))
  (func $vlen (param $p i32) (result i32)
    (i32.load offset=24 (i32.add (local.get $p) (call $klen (local.get $p)))))
  (func $val (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 28)) (call $klen (local.get $p))))
  (func $ktag (param $p i32) (result i32)
    (if (result i32) (call $klen (local.get $p))
      (then (i32.load8_u offset=24 (local.get $p))) (else (i32.const 0))))
  (func $vtag (param $p i32) (result i32)
    (if (result i32) (call $vlen (local.get $p))
      (then (i32.load8_u (call $val (local.get $p)))) (else (i32.const 0))))
  (func $acc (param $p i32) (result i64)
    (if (result i64) (i32.eq (call $vlen (local.get $p)) (i32.const 8))
      (then (i64.load (call $val (local.get $p)))) (else (i64.const 0))))

  ;; emitAcc emits one record: origin, no key, the 8-byte value v.
  (func $emitAcc (param $origin i32) (param $v i64)
    (i32.store (i32.const 256) (i32.const 1))
    (i32.store (i32.const 260) (i32.const 36))
    (i32.store (i32.const 264) (local.get $origin))
    (i32.store (i32.const 268) (i32.const 0))
    (i64.store (i32.const 272) (i64.const 0))
    (i32.store (i32.const 280) (i32.const 0))
    (i32.store (i32.const 284) (i32.const 8))
    (i64.store (i32.const 288) (local.get $v))
    (i32.store (i32.const 296) (i32.const 0))
    (call $emit (i32.const 256) (i32.const 44)))

  ;; accs emits the accumulator v of group g as its key's tag asks.
  (func $accs (param $g i32) (param $tag i32) (param $v i64)
    (if (i32.eq (local.get $tag) (i32.const 0x6e)) (then (return))) ;; n
    (if (i32.eq (local.get $tag) (i32.const 0x6f)) ;; o
      (then (call $emitAcc (i32.const 1000) (local.get $v)) (return)))
    (call $emitAcc (local.get $g) (local.get $v))
    (if (i32.eq (local.get $tag) (i32.const 0x64)) ;; d
      (then (call $emitAcc (local.get $g) (local.get $v)))))

  ;; forward emits the record at p as it is, with origin o: the 4 bytes
  ;; before it hold the batch count during the call.
  (func $forward (param $p i32) (param $o i32)
    (local $saved i32) (local $b i32)
    (i32.store offset=4 (local.get $p) (local.get $o))
    (local.set $b (i32.sub (local.get $p) (i32.const 4)))
    (local.set $saved (i32.load (local.get $b)))
    (i32.store (local.get $b) (i32.const 1))
    (call $emit (local.get $b) (i32.add (i32.const 8) (i32.load (local.get $p))))
    (i32.store (local.get $b) (local.get $saved)))

  (func (export "sluice_agg_add") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $g i32) (local $p i32) (local $m i32) (local $k i32)
    (local $acc i64) (local $origin i32) (local $tag i32) (local $vt i32)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $groups
      (br_if $done (i32.ge_u (local.get $g) (local.get $n)))
      (local.set $acc (call $acc (local.get $p)))
      (local.set $tag (call $ktag (local.get $p)))
      (local.set $p (call $next (local.get $p)))
      (local.set $m (i32.load (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (local.set $k (i32.const 0))
      (block $mdone (loop $members
        (br_if $mdone (i32.ge_u (local.get $k) (local.get $m)))
        (local.set $vt (call $vtag (local.get $p)))
        (if (i32.eq (local.get $vt) (i32.const 0x74)) (then unreachable)) ;; t
        (if (i32.eq (local.get $vt) (i32.const 0x65)) ;; e
          (then (call $log (i32.const 3) (i32.const 522) (i32.const 6)) (return (i32.const -2))))
        (if (i32.eq (local.get $vt) (i32.const 0x62)) ;; b
          (then (call $reject (i32.load offset=4 (local.get $p)) (i32.const 512) (i32.const 10)))
          (else (local.set $acc (i64.add (local.get $acc) (i64.const 1)))))
        (local.set $p (call $next (local.get $p)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $members)))
      (call $accs (local.get $g) (local.get $tag) (local.get $acc))
      (local.set $g (i32.add (local.get $g) (i32.const 1)))
      (br $groups)))
    (i32.const 0))

  (func (export "sluice_agg_merge") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $j i32) (local $p i32) (local $a i64) (local $tag i32)
    (local.set $n (i32.shr_u (i32.load (local.get $ptr)) (i32.const 1)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $pairs
      (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $tag (call $ktag (local.get $p)))
      (if (i32.eq (local.get $tag) (i32.const 0x74)) (then unreachable))
      (local.set $a (call $acc (local.get $p)))
      (local.set $p (call $next (local.get $p)))
      (local.set $a (i64.add (local.get $a) (call $acc (local.get $p))))
      (local.set $p (call $next (local.get $p)))
      (call $accs (local.get $j) (local.get $tag) (local.get $a))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $pairs)))
    (i32.const 0))

  (func (export "sluice_agg_fire") (param $ptr i32) (param $len i32) (result i32)
    (local $n i32) (local $j i32) (local $p i32) (local $q i32) (local $tag i32)
    (local.set $n (i32.load (local.get $ptr)))
    (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
    (block $done (loop $fires
      (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $tag (call $ktag (local.get $p)))
      (local.set $q (call $next (local.get $p)))
      (if (i32.eq (local.get $tag) (i32.const 0x74)) (then unreachable))
      (if (i32.eq (local.get $tag) (i32.const 0x72)) ;; r
        (then (call $reject (local.get $j) (i32.const 512) (i32.const 10)))
        (else
          (i64.store offset=12 (local.get $p) (i64.const 0))
          (call $forward (local.get $p) (local.get $j))))
      (local.set $p (local.get $q))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $fires)))
    (i32.const 0)))
