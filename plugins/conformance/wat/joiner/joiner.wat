;; joiner: the conformance "joiner" join function in hand-written
;; WebAssembly text (ABI.md section 14).
;;
;; Behaviour (identical to plugins/joiner, a Go sluice.JoinFunc): for each
;; pair of records the host's join matched, one record with the pair's key
;; and the value "L|R", L the left record's value and R the right one's
;; ("-" for a side an outer join left empty), and, for a window join, a
;; header "window" holding the window's start and end as two 8-byte
;; little-endian integers. A left value "twice" emits the result twice, a
;; left value "none" emits nothing, and a value "bad" on either side
;; rejects the pair with "bad value in pair".
;;
;; A batch it cannot read fails the call with the Go SDK's reasons: a
;; malformed record, a head whose headers are not a window's, whose value
;; is not one byte of sides, or whose members do not match its sides.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 1024) "bad value in pair")                            ;; 17
  (data (i32.const 1056) "window")                                       ;; 6
  (data (i32.const 1072) "sluice-window-start")                          ;; 19
  (data (i32.const 1104) "sluice-window-end")                            ;; 17
  (data (i32.const 1136) "sluice-firing")                                ;; 13
  (data (i32.const 1152) "early")                                        ;; 5
  (data (i32.const 1160) "on-time")                                      ;; 7
  (data (i32.const 1168) "late")                                         ;; 4
  (data (i32.const 1176) "twice")                                        ;; 5
  (data (i32.const 1184) "none")                                         ;; 4
  (data (i32.const 1192) "bad")                                          ;; 3
  (data (i32.const 1200) "-")                                            ;; 1
  (data (i32.const 1216) "sluice_join: malformed input")                 ;; 28
  (data (i32.const 1248) "sluice_join: pair ")                           ;; 18
  (data (i32.const 1280) " has headers that are not a window's")         ;; 36
  (data (i32.const 1328) ": the head's value is not one byte of sides")  ;; 43
  (data (i32.const 1376) " has ")                                        ;; 5
  (data (i32.const 1392) " records, and its head says ")                 ;; 28

  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_kinds") (result i32) (i32.const 128)) ;; join

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

  ;; record checks the record at p (its size field), in a batch ending at
  ;; end, as sdk/wat/reference/join.wat does, and returns its end, or 0
  ;; when it is malformed.
  (func $record (param $p i32) (param $end i32) (result i32)
    (local $size i32) (local $rend i32) (local $f i32) (local $n i32) (local $l i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 32)) (then (return (i32.const 0))))
    (local.set $size (i32.load align=1 (local.get $p)))
    (if (i32.or (i32.lt_u (local.get $size) (i32.const 28))
                (i32.gt_u (local.get $size) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 4))))
      (then (return (i32.const 0))))
    (local.set $rend (i32.add (i32.add (local.get $p) (i32.const 4)) (local.get $size)))
    (if (i32.load offset=8 align=1 (local.get $p)) (then (return (i32.const 0))))
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
    (if (i32.ne (local.get $f) (local.get $rend)) (then (return (i32.const 0))))
    (local.get $rend))

  ;; Fields of a checked record, p its size field: the key at p + 24, the
  ;; value_len field after it, then the value and the header_count field.
  (func $klen (param $p i32) (result i32) (i32.load offset=20 align=1 (local.get $p)))
  (func $vlen_at (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 24)) (call $klen (local.get $p))))
  (func $hdrs_at (param $p i32) (result i32)
    (local $v i32)
    (local.set $v (call $vlen_at (local.get $p)))
    (i32.add (i32.add (local.get $v) (i32.const 4)) (i32.load align=1 (local.get $v))))

  ;; eq reports whether the n bytes at a and b are equal.
  (func $eq (param $a i32) (param $b i32) (param $n i32) (result i32)
    (local $i i32)
    (block $done (loop $bytes
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (if (i32.ne (i32.load8_u (i32.add (local.get $a) (local.get $i))) (i32.load8_u (i32.add (local.get $b) (local.get $i))))
        (then (return (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $bytes)))
    (i32.const 1))
  ;; is reports whether the n bytes at a are the ln bytes at lit.
  (func $is (param $a i32) (param $n i32) (param $lit i32) (param $ln i32) (result i32)
    (if (result i32) (i32.eq (local.get $n) (local.get $ln))
      (then (call $eq (local.get $a) (local.get $lit) (local.get $n)))
      (else (i32.const 0))))

  ;; header returns the address of the value_len field of the first
  ;; header of the record at p named by the nl bytes at name, or 0.
  (func $header (param $p i32) (param $name i32) (param $nl i32) (result i32)
    (local $n i32) (local $h i32) (local $l i32)
    (local.set $h (call $hdrs_at (local.get $p)))
    (local.set $n (i32.load align=1 (local.get $h)))
    (local.set $h (i32.add (local.get $h) (i32.const 4)))
    (block $done (loop $headers
      (br_if $done (i32.eqz (local.get $n)))
      (local.set $l (i32.load align=1 (local.get $h)))
      (if (call $is (i32.add (local.get $h) (i32.const 4)) (local.get $l) (local.get $name) (local.get $nl))
        (then (return (i32.add (i32.add (local.get $h) (i32.const 4)) (local.get $l)))))
      (local.set $h (i32.add (i32.add (local.get $h) (i32.const 4)) (local.get $l)))
      (local.set $h (i32.add (i32.add (local.get $h) (i32.const 4)) (i32.load align=1 (local.get $h))))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br $headers)))
    (i32.const 0))

  ;; fmt writes v in decimal at dst and returns the bytes written.
  (func $fmt (param $dst i32) (param $v i32) (result i32)
    (local $n i32) (local $i i32) (local $j i32) (local $c i32)
    (loop $digits
      (i32.store8 (i32.add (local.get $dst) (local.get $n))
        (i32.add (i32.const 0x30) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $digits (local.get $v)))
    (local.set $i (local.get $dst))
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

  ;; The failure message, built at 2048: $msg_at ends it at dst, $put
  ;; appends the n bytes at src to what ends at dst, $put_int a number.
  (func $put (param $dst i32) (param $src i32) (param $n i32) (result i32)
    (memory.copy (local.get $dst) (local.get $src) (local.get $n))
    (i32.add (local.get $dst) (local.get $n)))
  (func $put_int (param $dst i32) (param $v i32) (result i32)
    (i32.add (local.get $dst) (call $fmt (local.get $dst) (local.get $v))))
  ;; pair_msg writes "sluice_join: pair G" at 2048 and returns its end.
  (func $pair_msg (param $g i32) (result i32)
    (call $put_int (call $put (i32.const 2048) (i32.const 1248) (i32.const 18)) (local.get $g)))

  ;; window reports whether the head at p has the window headers, with
  ;; 8-byte start and end and a known firing, and sets $start and $end.
  (global $start (mut i64) (i64.const 0))
  (global $end (mut i64) (i64.const 0))
  (func $window (param $p i32) (result i32)
    (local $s i32) (local $e i32) (local $f i32)
    (local.set $s (call $header (local.get $p) (i32.const 1072) (i32.const 19)))
    (local.set $e (call $header (local.get $p) (i32.const 1104) (i32.const 17)))
    (local.set $f (call $header (local.get $p) (i32.const 1136) (i32.const 13)))
    (if (i32.or (i32.or (i32.eqz (local.get $s)) (i32.eqz (local.get $e))) (i32.eqz (local.get $f)))
      (then (return (i32.const 0))))
    (if (i32.or (i32.ne (i32.load align=1 (local.get $s)) (i32.const 8)) (i32.ne (i32.load align=1 (local.get $e)) (i32.const 8)))
      (then (return (i32.const 0))))
    (global.set $start (i64.load offset=4 align=1 (local.get $s)))
    (global.set $end (i64.load offset=4 align=1 (local.get $e)))
    (i32.or (i32.or
      (call $is (i32.add (local.get $f) (i32.const 4)) (i32.load align=1 (local.get $f)) (i32.const 1152) (i32.const 5))
      (call $is (i32.add (local.get $f) (i32.const 4)) (i32.load align=1 (local.get $f)) (i32.const 1160) (i32.const 7)))
      (call $is (i32.add (local.get $f) (i32.const 4)) (i32.load align=1 (local.get $f)) (i32.const 1168) (i32.const 4))))

  ;; sluice_join: a group batch, one group per pair; each group's head is
  ;; the pair (key, sides, window headers), its members the left record,
  ;; then the right one, those present.
  (func (export "sluice_join") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $n i32) (local $g i32) (local $p i32) (local $head i32)
    (local $win i32) (local $sides i32) (local $m i32) (local $want i32)
    (local $left i32) (local $right i32) (local $lv i32) (local $ll i32) (local $rv i32) (local $rl i32)
    (local $out i32) (local $o i32) (local $outs i32) (local $r i32) (local $kl i32) (local $vl i32)
    (local $size i32) (local $msg_end i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $out (global.get $brk))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))
    (block $malformed
      (block $fail
        (br_if $malformed (i32.lt_u (local.get $len) (i32.const 4)))
        (local.set $n (i32.load align=1 (local.get $ptr)))
        (local.set $p (i32.add (local.get $ptr) (i32.const 4)))
        (block $done (loop $pairs
          (br_if $done (i32.eq (local.get $g) (local.get $n)))
          (local.set $head (local.get $p))
          (local.set $p (call $record (local.get $head) (local.get $end)))
          (br_if $malformed (i32.eqz (local.get $p)))
          ;; The window, when the head has headers.
          (local.set $win (i32.ne (i32.load align=1 (call $hdrs_at (local.get $head))) (i32.const 0)))
          (if (i32.and (local.get $win) (i32.eqz (call $window (local.get $head))))
            (then
              (local.set $msg_end (call $put (call $pair_msg (local.get $g)) (i32.const 1280) (i32.const 36)))
              (br $fail)))
          ;; The sides: one byte, 1, 2 or 3.
          (local.set $sides (i32.const 0))
          (if (i32.eq (i32.load align=1 (call $vlen_at (local.get $head))) (i32.const 1))
            (then (local.set $sides (i32.load8_u offset=4 (call $vlen_at (local.get $head))))))
          (if (i32.or (i32.eqz (local.get $sides)) (i32.gt_u (local.get $sides) (i32.const 3)))
            (then
              (local.set $msg_end (call $put (call $pair_msg (local.get $g)) (i32.const 1328) (i32.const 43)))
              (br $fail)))
          ;; The members: as many as the sides, left first.
          (br_if $malformed (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)))
          (local.set $m (i32.load align=1 (local.get $p)))
          (local.set $p (i32.add (local.get $p) (i32.const 4)))
          (local.set $want (i32.popcnt (local.get $sides)))
          (if (i32.ne (local.get $m) (local.get $want))
            (then
              (local.set $msg_end (call $put (call $pair_msg (local.get $g)) (i32.const 1376) (i32.const 5)))
              (local.set $msg_end (call $put_int (local.get $msg_end) (local.get $m)))
              (local.set $msg_end (call $put (local.get $msg_end) (i32.const 1392) (i32.const 28)))
              (local.set $msg_end (call $put_int (local.get $msg_end) (local.get $want)))
              (br $fail)))
          (local.set $left (i32.const 0))
          (local.set $right (i32.const 0))
          (if (i32.and (local.get $sides) (i32.const 1))
            (then
              (local.set $left (local.get $p))
              (local.set $p (call $record (local.get $p) (local.get $end)))
              (br_if $malformed (i32.eqz (local.get $p)))))
          (if (i32.and (local.get $sides) (i32.const 2))
            (then
              (local.set $right (local.get $p))
              (local.set $p (call $record (local.get $p) (local.get $end)))
              (br_if $malformed (i32.eqz (local.get $p)))))
          ;; The values, "-" for an absent side.
          (local.set $lv (i32.const 1200)) (local.set $ll (i32.const 1))
          (if (local.get $left)
            (then
              (local.set $lv (i32.add (call $vlen_at (local.get $left)) (i32.const 4)))
              (local.set $ll (i32.load align=1 (call $vlen_at (local.get $left))))))
          (local.set $rv (i32.const 1200)) (local.set $rl (i32.const 1))
          (if (local.get $right)
            (then
              (local.set $rv (i32.add (call $vlen_at (local.get $right)) (i32.const 4)))
              (local.set $rl (i32.load align=1 (call $vlen_at (local.get $right))))))
          (if (i32.or (call $is (local.get $lv) (local.get $ll) (i32.const 1192) (i32.const 3))
                      (call $is (local.get $rv) (local.get $rl) (i32.const 1192) (i32.const 3)))
            (then (call $reject (local.get $g) (i32.const 1024) (i32.const 17)))
            (else (if (i32.eqz (i32.and (i32.ne (local.get $left) (i32.const 0))
                                        (call $is (local.get $lv) (local.get $ll) (i32.const 1184) (i32.const 4))))
              (then
                ;; One record: the head's key, L|R, and the window header.
                (local.set $kl (call $klen (local.get $head)))
                (local.set $vl (i32.add (i32.add (local.get $ll) (i32.const 1)) (local.get $rl)))
                (local.set $size (i32.add (i32.const 28) (i32.add (local.get $kl) (local.get $vl))))
                (if (local.get $win) (then (local.set $size (i32.add (local.get $size) (i32.const 30)))))
                ;; Room for it twice.
                (if (i32.eqz (call $grow_to (i32.add (local.get $o) (i32.shl (i32.add (local.get $size) (i32.const 4)) (i32.const 1)))))
                  (then unreachable))
                (local.set $r (local.get $o))
                (i32.store align=1 (local.get $o) (local.get $size))
                (i32.store offset=4 align=1 (local.get $o) (local.get $g))
                (i32.store offset=8 align=1 (local.get $o) (i32.const 0))
                (i64.store offset=12 align=1 (local.get $o) (i64.const 0))
                (i32.store offset=20 align=1 (local.get $o) (local.get $kl))
                (local.set $o (call $put (i32.add (local.get $o) (i32.const 24)) (i32.add (local.get $head) (i32.const 24)) (local.get $kl)))
                (i32.store align=1 (local.get $o) (local.get $vl))
                (local.set $o (call $put (i32.add (local.get $o) (i32.const 4)) (local.get $lv) (local.get $ll)))
                (i32.store8 (local.get $o) (i32.const 0x7c))       ;; '|'
                (local.set $o (call $put (i32.add (local.get $o) (i32.const 1)) (local.get $rv) (local.get $rl)))
                (if (local.get $win)
                  (then
                    (i32.store align=1 (local.get $o) (i32.const 1))
                    (i32.store offset=4 align=1 (local.get $o) (i32.const 6))
                    (memory.copy (i32.add (local.get $o) (i32.const 8)) (i32.const 1056) (i32.const 6))
                    (i32.store offset=14 align=1 (local.get $o) (i32.const 16))
                    (i64.store offset=18 align=1 (local.get $o) (global.get $start))
                    (i64.store offset=26 align=1 (local.get $o) (global.get $end))
                    (local.set $o (i32.add (local.get $o) (i32.const 34))))
                  (else
                    (i32.store align=1 (local.get $o) (i32.const 0))
                    (local.set $o (i32.add (local.get $o) (i32.const 4)))))
                (local.set $outs (i32.add (local.get $outs) (i32.const 1)))
                (if (i32.and (i32.ne (local.get $left) (i32.const 0))
                             (call $is (local.get $lv) (local.get $ll) (i32.const 1176) (i32.const 5)))
                  (then
                    (local.set $o (call $put (local.get $o) (local.get $r) (i32.sub (local.get $o) (local.get $r))))
                    (local.set $outs (i32.add (local.get $outs) (i32.const 1)))))))))
          (local.set $g (i32.add (local.get $g) (i32.const 1)))
          (br $pairs)))
        (br_if $malformed (i32.ne (local.get $p) (local.get $end)))
        (if (local.get $outs)
          (then
            (i32.store align=1 (local.get $out) (local.get $outs))
            (call $emit (local.get $out) (i32.sub (local.get $o) (local.get $out)))))
        (global.set $pending (i32.const 0))
        (return (i32.const 0)))
      ;; $fail: the message is at 2048.
      (call $log (i32.const 3) (i32.const 2048) (i32.sub (local.get $msg_end) (i32.const 2048)))
      (global.set $pending (i32.const 0))
      (return (i32.const -2)))
    (call $log (i32.const 3) (i32.const 1216) (i32.const 28))
    (global.set $pending (i32.const 0))
    (i32.const -2)))
