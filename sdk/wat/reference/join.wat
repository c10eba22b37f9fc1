;; join.wat: a join function, the reference join of ABI.md section 14,
;; written by hand.
;;
;; A join operator (kind: join) has two inputs, left and right. The host
;; keeps both sides' records, in windows or within an interval, and finds
;; the pairs of records with equal keys; a join plugin only builds each
;; pair's results. Without a plugin the host makes a JSON object of the key
;; and both values; this one makes, for each pair, one result with the
;; pair's key and the value
;;
;;   left value ',' right value
;;
;; where a side the pair lacks (an outer join's record that matched
;; nothing) contributes nothing: a matched pair gives "a,b", a lone left
;; record "a,", a lone right one ",b". The result has no headers; the host
;; sets its time to the pair's (a window's end - 1, or the later of the two
;; records' times for an interval join).
;;
;;   sluice_join  a group batch (section 4), one group per pair. Group g's
;;                head has Origin g, the pair's key, a one-byte value of
;;                the sides it has (1 left, 2 right, 3 both) and, for a
;;                window join, the sluice-window-start, -end and
;;                sluice-firing headers of section 13.4; its members are
;;                the left record, then the right one, those present.
;;                Emits any number of results per pair, each with Origin
;;                the pair's index; reject(g, msg) would dead-letter pair g.
;;
;; Build:  wat2wasm join.wat -o join.wasm   (or sluice plugin build)
;;
;; Pipeline:
;;   operators:
;;     - name: paid
;;       kind: join
;;       plugin: join.wasm
;;       inputs: [orders, payments]     # left, right
;;       join: {type: left}             # a lone left record gives "a,"
;;       window: {type: tumbling, size: 5m}
(module
  (import "sluice" "emit" (func $emit (param $ptr i32) (param $len i32)))
  (import "sluice" "log" (func $log (param $level i32) (param $msg i32) (param $len i32)))
  (memory (export "memory") 2)

  ;; The messages of a batch the module cannot read, each a u32 length
  ;; then its text, logged at level 3 before returning StatusError.
  (data (i32.const 1024) "\1c\00\00\00sluice_join: malformed input")                                     ;; 28
  (data (i32.const 1088) "\34\00\00\00sluice_join: a head's value is not one byte of sides")               ;; 52
  (data (i32.const 1152) "\40\00\00\00sluice_join: a pair's record count differs from its head's sides")   ;; 64

  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  ;; sluice_kinds (section 12): join is bit 128; `sluice plugin build`
  ;; writes it into the module's sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 128))

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

  ;; record checks the record whose size field is at p, with the batch
  ;; ending at end, as section 4 says a decoder must (the checks of
  ;; stateless.wat's sluice_process), and returns the record's end: the
  ;; next record's size field, or the members count after a head. 0 when
  ;; the record is malformed. The module declares no features (section
  ;; 9.1), so every record's flags are 0.
  (func $record (param $p i32) (param $end i32) (result i32)
    (local $size i32) (local $rend i32) (local $f i32) (local $n i32) (local $l i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 32)) (then (return (i32.const 0))))
    (local.set $size (i32.load align=1 (local.get $p)))
    (if (i32.or (i32.lt_u (local.get $size) (i32.const 28))
                (i32.gt_u (local.get $size) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 4))))
      (then (return (i32.const 0))))
    (local.set $rend (i32.add (i32.add (local.get $p) (i32.const 4)) (local.get $size)))
    (if (i32.load offset=8 align=1 (local.get $p)) (then (return (i32.const 0))))   ;; flags
    ;; key_len at +20, then the key, value_len and the value, then
    ;; header_count: each length no more than what is left of the record.
    (local.set $f (i32.add (local.get $p) (i32.const 20)))
    (local.set $n (i32.const 2))
    (loop $kv
      (if (i32.lt_u (i32.sub (local.get $rend) (local.get $f)) (i32.const 4)) (then (return (i32.const 0))))
      (local.set $l (i32.load align=1 (local.get $f)))
      (local.set $f (i32.add (local.get $f) (i32.const 4)))
      (if (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $f))) (then (return (i32.const 0))))
      (local.set $f (i32.add (local.get $f) (local.get $l)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $kv (local.get $n)))
    (if (i32.lt_u (i32.sub (local.get $rend) (local.get $f)) (i32.const 4)) (then (return (i32.const 0))))
    ;; Two lengths per header, a name's and a value's: 8 bytes at least.
    (local.set $n (i32.load align=1 (local.get $f)))
    (local.set $f (i32.add (local.get $f) (i32.const 4)))
    (if (i32.gt_u (local.get $n) (i32.shr_u (i32.sub (local.get $rend) (local.get $f)) (i32.const 3)))
      (then (return (i32.const 0))))
    (local.set $n (i32.shl (local.get $n) (i32.const 1)))
    (block $done (loop $headers
      (br_if $done (i32.eqz (local.get $n)))
      (if (i32.lt_u (i32.sub (local.get $rend) (local.get $f)) (i32.const 4)) (then (return (i32.const 0))))
      (local.set $l (i32.load align=1 (local.get $f)))
      (local.set $f (i32.add (local.get $f) (i32.const 4)))
      (if (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $f))) (then (return (i32.const 0))))
      (local.set $f (i32.add (local.get $f) (local.get $l)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br $headers)))
    ;; No unused bytes at the end of the record.
    (if (i32.ne (local.get $f) (local.get $rend)) (then (return (i32.const 0))))
    (local.get $rend))

  ;; Fields of a checked record, p its size field.
  (func $klen (param $p i32) (result i32) (i32.load offset=20 align=1 (local.get $p)))
  ;; vlen_at returns the address of the record's value_len field; the
  ;; value follows it.
  (func $vlen_at (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 24)) (call $klen (local.get $p))))

  ;; put_value copies the value of the record at p (0: none) to dst and
  ;; returns the address after it.
  (func $put_value (param $dst i32) (param $p i32) (result i32)
    (local $v i32) (local $l i32)
    (if (i32.eqz (local.get $p)) (then (return (local.get $dst))))
    (local.set $v (call $vlen_at (local.get $p)))
    (local.set $l (i32.load align=1 (local.get $v)))
    (memory.copy (local.get $dst) (i32.add (local.get $v) (i32.const 4)) (local.get $l))
    (i32.add (local.get $dst) (local.get $l)))

  ;; value_len returns the length of the value of the record at p, 0 for
  ;; none.
  (func $value_len (param $p i32) (result i32)
    (if (result i32) (local.get $p)
      (then (i32.load align=1 (call $vlen_at (local.get $p))))
      (else (i32.const 0))))

  ;; sluice_join (section 14.1): for each pair, its head, then its members
  ;; count and the left and right records its head's value announces.
  ;; The results go into one output batch after the input region, emitted
  ;; once at the end. Returns 0, or -2 (StatusError) after logging why for
  ;; a batch it cannot read: the host then runs the pairs again one per
  ;; call, and dead-letters a pair whose own call fails.
  (func (export "sluice_join") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32)      ;; end of the batch
    (local $n i32)        ;; pairs in the batch
    (local $g i32)        ;; index of the pair in hand = its results' Origin
    (local $p i32)        ;; read position
    (local $head i32)     ;; the pair's head
    (local $sides i32)    ;; its value: 1 left, 2 right
    (local $left i32) (local $right i32)   ;; its records, 0 for absent
    (local $kl i32) (local $vl i32)
    (local $out i32)      ;; the output batch
    (local $o i32)        ;; its end
    (local $outs i32)     ;; records in it
    (local $msg i32)      ;; the failure's message, when it fails
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $out (global.get $brk))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))     ;; count, written last
    (block $bad
      (local.set $msg (i32.const 1024))
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (local.set $n (i32.load align=1 (local.get $ptr)))
      (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
      (block $done (loop $pairs
        (br_if $done (i32.eq (local.get $g) (local.get $n)))
        ;; -- the head: a record whose value is one byte, 1, 2 or 3
        (local.set $head (local.get $p))
        (local.set $p (call $record (local.get $head) (local.get $end)))
        (br_if $bad (i32.eqz (local.get $p)))
        (local.set $msg (i32.const 1088))
        (br_if $bad (i32.ne (i32.load align=1 (call $vlen_at (local.get $head))) (i32.const 1)))
        (local.set $sides (i32.load8_u offset=4 (call $vlen_at (local.get $head))))
        (br_if $bad (i32.or (i32.eqz (local.get $sides)) (i32.gt_u (local.get $sides) (i32.const 3))))
        ;; -- the members: as many as the sides, left first. A head with
        ;;    window headers is a window join's; this module does not
        ;;    read them.
        (local.set $msg (i32.const 1024))
        (br_if $bad (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)))
        (local.set $msg (i32.const 1152))
        (br_if $bad (i32.ne (i32.load align=1 (local.get $p)) (i32.popcnt (local.get $sides))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $msg (i32.const 1024))
        (local.set $left (i32.const 0))
        (local.set $right (i32.const 0))
        (if (i32.and (local.get $sides) (i32.const 1))
          (then
            (local.set $left (local.get $p))
            (local.set $p (call $record (local.get $p) (local.get $end)))
            (br_if $bad (i32.eqz (local.get $p)))))
        (if (i32.and (local.get $sides) (i32.const 2))
          (then
            (local.set $right (local.get $p))
            (local.set $p (call $record (local.get $p) (local.get $end)))
            (br_if $bad (i32.eqz (local.get $p)))))
        ;; -- the result: origin g, the head's key, left ',' right, no
        ;;    headers; time 0, which the host replaces with the pair's.
        (local.set $kl (call $klen (local.get $head)))
        (local.set $vl (i32.add (i32.add (call $value_len (local.get $left)) (i32.const 1))
                                (call $value_len (local.get $right))))
        ;; The lengths are those of records in the batch: they cannot
        ;; overflow. 32 + 4 = the record's fixed fields and size field.
        (if (i32.eqz (call $grow_to (i32.add (local.get $o) (i32.add (i32.const 36) (i32.add (local.get $kl) (local.get $vl))))))
          (then unreachable))   ;; out of memory: trap, as a panic would
        (i32.store align=1 (local.get $o) (i32.add (i32.const 28) (i32.add (local.get $kl) (local.get $vl))))  ;; size
        (i32.store offset=4 align=1 (local.get $o) (local.get $g))          ;; origin
        (i32.store offset=8 align=1 (local.get $o) (i32.const 0))           ;; flags
        (i64.store offset=12 align=1 (local.get $o) (i64.const 0))          ;; time
        (i32.store offset=20 align=1 (local.get $o) (local.get $kl))        ;; key_len
        (memory.copy (i32.add (local.get $o) (i32.const 24)) (i32.add (local.get $head) (i32.const 24)) (local.get $kl))
        (local.set $o (i32.add (i32.add (local.get $o) (i32.const 24)) (local.get $kl)))
        (i32.store align=1 (local.get $o) (local.get $vl))                  ;; value_len
        (local.set $o (call $put_value (i32.add (local.get $o) (i32.const 4)) (local.get $left)))
        (i32.store8 (local.get $o) (i32.const 0x2c))                        ;; ','
        (local.set $o (call $put_value (i32.add (local.get $o) (i32.const 1)) (local.get $right)))
        (i32.store align=1 (local.get $o) (i32.const 0))                    ;; header_count
        (local.set $o (i32.add (local.get $o) (i32.const 4)))
        (local.set $outs (i32.add (local.get $outs) (i32.const 1)))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $pairs)))
      ;; No bytes after the last pair.
      (br_if $bad (i32.ne (local.get $p) (local.get $end)))
      (if (local.get $outs)
        (then
          (i32.store align=1 (local.get $out) (local.get $outs))
          (call $emit (local.get $out) (i32.sub (local.get $o) (local.get $out)))))
      (global.set $pending (i32.const 0))                   ;; the region is consumed
      (return (i32.const 0)))
    (call $log (i32.const 3) (i32.add (local.get $msg) (i32.const 4)) (i32.load (local.get $msg)))
    (global.set $pending (i32.const 0))
    (i32.const -2)))
