;; upper: the conformance "upper" operator in hand-written WebAssembly text.
;;
;; Behaviour (identical to plugins/upper, a Go sluice.MapInPlace operator):
;; each record's value has its ASCII letters a-z upper-cased; every other
;; byte, UTF-8 sequences included, is left as it is; key, time and headers
;; pass unchanged; one output per input. The operator takes no
;; configuration: an absent, empty, `null` or `{}` config is accepted and
;; anything else is refused with the Go SDK's message.
;;
;; How: the input batch is already a valid output batch (input record i
;; has Origin i, ABI.md section 2.4), so sluice_process checks each record
;; as abi.Decoder does, upper-cases its value where it lies, and hands the
;; whole input region back with one `emit`. No copy, no output buffer.
;;
;; Build:  wat2wasm upper.wat -o upper.wasm
;; Read sdk/wat/README.md and sdk/wat/reference/stateless.wat for the ABI
;; walk-through; this file is commented for what differs from them.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))

  (memory (export "memory") 2)

  ;; Static data, below $heap_base (64 KiB).
  (data (i32.const 1024) "invalid configuration: this operator takes no configuration (it registers no sluice.Configure handler)")
  ;; 1024 + 102 = 1126
  (data (i32.const 1152) "input batch: malformed")
  ;; 22 bytes

  ;; The allocator (see sdk/wat/README.md, "memory protocol"): regions are
  ;; bumped from $heap_base; a region stays valid until the next
  ;; sluice_alloc after the call that consumed it ($pending = 0).
  (global $heap_base i32 (i32.const 65536))
  (global $brk (mut i32) (i32.const 65536))
  (global $pending (mut i32) (i32.const 0))

  (func (export "sluice_abi_version") (result i32) (i32.const 1))

  ;; sluice_kinds (section 12): the module serves map operators (bit 1);
  ;; `sluice plugin build` writes that into its sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 1))

  ;; ensure grows memory so that [0, top) is addressable; 0 on failure.
  (func $ensure (param $top i32) (result i32)
    (local $need i32)
    ;; pages needed, computed on unsigned values: top <= 2^31 + 2^30 here.
    (local.set $need (i32.shr_u (i32.add (local.get $top) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 1))

  (func (export "sluice_alloc") (param $size i32) (result i32)
    (local $p i32) (local $top i32)
    (if (i32.gt_u (local.get $size) (i32.const 0x40000000)) (then (return (i32.const 0))))
    (if (i32.eqz (global.get $pending)) (then (global.set $brk (global.get $heap_base))))
    (local.set $p (global.get $brk))
    (local.set $top (i32.and (i32.add (i32.add (local.get $p) (local.get $size)) (i32.const 7)) (i32.const -8)))
    (if (i32.eqz (call $ensure (local.get $top))) (then (return (i32.const 0))))
    (global.set $brk (local.get $top))
    (global.set $pending (i32.const 1))
    (local.get $p))

  ;; is_space_at returns the length of the Unicode white space (as
  ;; bytes.TrimSpace sees it) starting at p, or 0; prefix mode (dir 1)
  ;; looks at [p, end), suffix mode (dir 0) at the bytes ending at end.
  ;; ASCII: \t \n \v \f \r and space; U+0085 and U+00A0 (2 bytes); U+1680,
  ;; U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (3 bytes).
  (func $space3 (param $a i32) (param $b i32) (param $c i32) (result i32)
    (if (i32.and (i32.eq (local.get $a) (i32.const 0xe1))
                 (i32.and (i32.eq (local.get $b) (i32.const 0x9a)) (i32.eq (local.get $c) (i32.const 0x80))))
      (then (return (i32.const 1))))
    (if (i32.and (i32.eq (local.get $a) (i32.const 0xe2)) (i32.eq (local.get $b) (i32.const 0x80)))
      (then
        (return (i32.or (i32.le_u (local.get $c) (i32.const 0x8a))
                  (i32.or (i32.eq (local.get $c) (i32.const 0xa8))
                    (i32.or (i32.eq (local.get $c) (i32.const 0xa9)) (i32.eq (local.get $c) (i32.const 0xaf))))))))
    (if (i32.and (i32.eq (local.get $a) (i32.const 0xe2))
                 (i32.and (i32.eq (local.get $b) (i32.const 0x81)) (i32.eq (local.get $c) (i32.const 0x9f))))
      (then (return (i32.const 1))))
    (i32.and (i32.eq (local.get $a) (i32.const 0xe3))
             (i32.and (i32.eq (local.get $b) (i32.const 0x80)) (i32.eq (local.get $c) (i32.const 0x80)))))

  (func $ascii_space (param $c i32) (result i32)
    (i32.or (i32.eq (local.get $c) (i32.const 0x20))
            (i32.and (i32.ge_u (local.get $c) (i32.const 9)) (i32.le_u (local.get $c) (i32.const 13)))))

  ;; space_prefix: length of the white space rune at [p, end), or 0.
  (func $space_prefix (param $p i32) (param $end i32) (result i32)
    (local $n i32) (local $a i32) (local $b i32)
    (local.set $n (i32.sub (local.get $end) (local.get $p)))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (local.set $a (i32.load8_u (local.get $p)))
    (if (call $ascii_space (local.get $a)) (then (return (i32.const 1))))
    (if (i32.lt_u (local.get $n) (i32.const 2)) (then (return (i32.const 0))))
    (local.set $b (i32.load8_u offset=1 (local.get $p)))
    (if (i32.and (i32.eq (local.get $a) (i32.const 0xc2))
                 (i32.or (i32.eq (local.get $b) (i32.const 0x85)) (i32.eq (local.get $b) (i32.const 0xa0))))
      (then (return (i32.const 2))))
    (if (i32.lt_u (local.get $n) (i32.const 3)) (then (return (i32.const 0))))
    (if (call $space3 (local.get $a) (local.get $b) (i32.load8_u offset=2 (local.get $p)))
      (then (return (i32.const 3))))
    (i32.const 0))

  ;; space_suffix: length of the white space rune ending at end (not before
  ;; p), or 0.
  (func $space_suffix (param $p i32) (param $end i32) (result i32)
    (local $n i32) (local $a i32) (local $b i32)
    (local.set $n (i32.sub (local.get $end) (local.get $p)))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (if (call $ascii_space (i32.load8_u (i32.sub (local.get $end) (i32.const 1))))
      (then (return (i32.const 1))))
    (if (i32.lt_u (local.get $n) (i32.const 2)) (then (return (i32.const 0))))
    (local.set $a (i32.load8_u (i32.sub (local.get $end) (i32.const 2))))
    (local.set $b (i32.load8_u (i32.sub (local.get $end) (i32.const 1))))
    (if (i32.and (i32.eq (local.get $a) (i32.const 0xc2))
                 (i32.or (i32.eq (local.get $b) (i32.const 0x85)) (i32.eq (local.get $b) (i32.const 0xa0))))
      (then (return (i32.const 2))))
    (if (i32.lt_u (local.get $n) (i32.const 3)) (then (return (i32.const 0))))
    (if (call $space3 (i32.load8_u (i32.sub (local.get $end) (i32.const 3))) (local.get $a) (local.get $b))
      (then (return (i32.const 3))))
    (i32.const 0))

  ;; sluice_configure accepts, after trimming white space, nothing, `null`
  ;; or `{}`, as the Go SDK does for an operator without a Configure
  ;; handler.
  (func (export "sluice_configure") (param $p i32) (param $n i32) (result i32)
    (local $end i32) (local $w i32)
    (global.set $pending (i32.const 0))
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (block $done
      (loop $left
        (br_if $done (i32.eqz (local.tee $w (call $space_prefix (local.get $p) (local.get $end)))))
        (local.set $p (i32.add (local.get $p) (local.get $w)))
        (br $left)))
    (block $done
      (loop $right
        (br_if $done (i32.eqz (local.tee $w (call $space_suffix (local.get $p) (local.get $end)))))
        (local.set $end (i32.sub (local.get $end) (local.get $w)))
        (br $right)))
    (local.set $n (i32.sub (local.get $end) (local.get $p)))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    ;; "null" is 0x6c6c756e little endian; "{}" is 0x7d7b.
    (if (i32.and (i32.eq (local.get $n) (i32.const 4))
                 (i32.eq (i32.load align=1 (local.get $p)) (i32.const 0x6c6c756e)))
      (then (return (i32.const 0))))
    (if (i32.and (i32.eq (local.get $n) (i32.const 2))
                 (i32.eq (i32.load16_u align=1 (local.get $p)) (i32.const 0x7d7b)))
      (then (return (i32.const 0))))
    (call $log (i32.const 3) (i32.const 1024) (i32.const 102))
    (i32.const -3))

  ;; upper_value upper-cases the ASCII letters of [p, p+n) in place, eight
  ;; bytes at a time: for each byte b with the high bit clear,
  ;; b + (0x80 - 'a') has the high bit set exactly when b >= 'a', and
  ;; b + (0x80 - 'z' - 1) exactly when b > 'z'; their XOR marks a-z, and
  ;; bytes with the high bit set (UTF-8) are masked out. The adds cannot
  ;; carry between bytes because every byte is below 0x80 after masking.
  ;; Then 0x80 >> 2 is the case bit 0x20.
  (func $upper_value (param $p i32) (param $n i32)
    (local $end i32) (local $w i64) (local $low i64) (local $c i32)
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (block $words_done
      (loop $words
        (br_if $words_done (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 8)))
        (local.set $w (i64.load align=1 (local.get $p)))
        (local.set $low (i64.and (local.get $w) (i64.const 0x7f7f7f7f7f7f7f7f)))
        (i64.store align=1 (local.get $p)
          (i64.xor (local.get $w)
            (i64.shr_u
              (i64.and
                (i64.and
                  (i64.xor (i64.add (local.get $low) (i64.const 0x1f1f1f1f1f1f1f1f))   ;; 0x80 - 'a' = 0x1f
                           (i64.add (local.get $low) (i64.const 0x0505050505050505)))  ;; 0x80 - 'z' - 1 = 0x05
                  (i64.xor (local.get $w) (i64.const -1)))
                (i64.const 0x8080808080808080))
              (i64.const 2))))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (br $words)))
    (block $bytes_done
      (loop $bytes
        (br_if $bytes_done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (if (i32.lt_u (i32.sub (local.get $c) (i32.const 0x61)) (i32.const 26))
          (then (i32.store8 (local.get $p) (i32.sub (local.get $c) (i32.const 0x20)))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $bytes))))

  ;; sluice_process checks each record as abi.Decoder does (ABI.md section
  ;; 4), upper-cases its value in place and emits the batch. A malformed
  ;; batch fails the call with StatusError.
  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $count i32) (local $i i32) (local $off i32)
    (local $size i32) (local $rend i32) (local $klen i32) (local $vlen i32)
    (local $nh i32) (local $h i32) (local $l i32)
    (global.set $pending (i32.const 0))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (local.set $count (i32.load align=1 (local.get $ptr)))
      ;; every record takes at least 32 bytes
      (br_if $bad (i32.gt_u (local.get $count) (i32.shr_u (i32.sub (local.get $len) (i32.const 4)) (i32.const 5))))
      (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
      (block $records_done
        (loop $records
          (br_if $records_done (i32.eq (local.get $i) (local.get $count)))
          ;; size:u32, then 28 fixed bytes at least, all inside the batch
          (br_if $bad (i32.lt_u (i32.sub (local.get $end) (local.get $off)) (i32.const 32)))
          (local.set $size (i32.load align=1 (local.get $off)))
          (br_if $bad (i32.lt_u (local.get $size) (i32.const 28)))
          (br_if $bad (i32.gt_u (local.get $size) (i32.sub (i32.sub (local.get $end) (local.get $off)) (i32.const 4))))
          (local.set $rend (i32.add (i32.add (local.get $off) (i32.const 4)) (local.get $size)))
          (br_if $bad (i32.load offset=8 align=1 (local.get $off)))          ;; flags
          (local.set $klen (i32.load offset=20 align=1 (local.get $off)))
          (br_if $bad (i32.gt_u (local.get $klen) (i32.sub (local.get $size) (i32.const 28))))
          (local.set $h (i32.add (i32.add (local.get $off) (i32.const 24)) (local.get $klen)))
          (local.set $vlen (i32.load align=1 (local.get $h)))
          (br_if $bad (i32.gt_u (local.get $vlen)
                        (i32.sub (i32.sub (local.get $size) (i32.const 28)) (local.get $klen))))
          (call $upper_value (i32.add (local.get $h) (i32.const 4)) (local.get $vlen))
          (local.set $h (i32.add (i32.add (local.get $h) (i32.const 4)) (local.get $vlen)))
          (local.set $nh (i32.load align=1 (local.get $h)))
          (local.set $h (i32.add (local.get $h) (i32.const 4)))
          (br_if $bad (i32.gt_u (local.get $nh) (i32.shr_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 3))))
          (block $headers_done
            (loop $headers
              (br_if $headers_done (i32.eqz (local.get $nh)))
              ;; name then value: len:u32 bytes{len}, each inside the record
              (br_if $bad (i32.lt_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 4)))
              (local.set $l (i32.load align=1 (local.get $h)))
              (local.set $h (i32.add (local.get $h) (i32.const 4)))
              (br_if $bad (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $h))))
              (local.set $h (i32.add (local.get $h) (local.get $l)))
              (br_if $bad (i32.lt_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 4)))
              (local.set $l (i32.load align=1 (local.get $h)))
              (local.set $h (i32.add (local.get $h) (i32.const 4)))
              (br_if $bad (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $h))))
              (local.set $h (i32.add (local.get $h) (local.get $l)))
              (local.set $nh (i32.sub (local.get $nh) (i32.const 1)))
              (br $headers)))
          (br_if $bad (i32.ne (local.get $h) (local.get $rend)))
          ;; origin = i: the input's own origin, written as the SDK does
          (i32.store offset=4 align=1 (local.get $off) (local.get $i))
          (local.set $off (local.get $rend))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $records)))
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      (if (local.get $count) (then (call $emit (local.get $ptr) (local.get $len))))
      (return (i32.const 0)))
    (call $log (i32.const 3) (i32.const 1152) (i32.const 22))
    (i32.const -2))
)
