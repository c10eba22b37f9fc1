;; wordcount: the conformance "wordcount" operator in hand-written
;; WebAssembly text.
;;
;; Behaviour (identical to plugins/wordcount, a Go sluice.Keyed operator):
;; the count of records per key lives in the operator's default state
;; table (handle 0) as decimal ASCII. For each record the stored count is
;; read, one is added (modulo 2^64, as Go's uint64 wraps), the new count is
;; stored and a record is emitted with the input's key and time, the count
;; as value, and no headers. A stored count that is not a decimal number
;; (one or more ASCII digits, at most 2^64-1) dead-letters the record with
;; the Go plugin's message, Go's %q quoting included:
;;
;;   stored count of key "k": empty, want a decimal number
;;   stored count of key "k": "many" is not a decimal number
;;   stored count of key "k": "18446744073709551616" is out of range
;;
;; and leaves the count as it is. No configuration, as upper.
;;
;; Build:  wat2wasm wordcount.wat -o wordcount.wasm
;; See sdk/wat/reference/keyed.wat for the state functions explained.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (import "sluice" "state_get" (func $state_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "sluice" "state_put" (func $state_put (param i32 i32 i32 i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))

  (memory (export "memory") 2)

  ;; Message strings, NUL-terminated (memory past a segment is zero), one
  ;; per 128 bytes from 1024: $m_str appends one.
  (data (i32.const 1024) "invalid configuration: this operator takes no configuration (it registers no sluice.Configure handler)")
  (data (i32.const 1152) "input batch: malformed")
  (data (i32.const 1280) "stored count of key ")
  (data (i32.const 1408) ": ")
  (data (i32.const 1536) "empty, want a decimal number")
  (data (i32.const 1664) " is not a decimal number")
  (data (i32.const 1792) " is out of range")
  (data (i32.const 1920) "0123456789abcdef")
  ;; 2048..2080: the new count's digits (at most 20)

  ;; ---------------------------------------------------------------
  ;; The runtime the conformance modules share, copied into each (a WAT
  ;; module is one file): the allocator (upper has it too), memory growth,
  ;; the output batch, message building and Go's strconv.Quote. Change
  ;; the copies in wordcount, enrich and ledger together.
  ;; ---------------------------------------------------------------

  (global $heap_base (mut i32) (i32.const 65536))
  (global $brk (mut i32) (i32.const 65536))
  (global $pending (mut i32) (i32.const 0))
  ;; The output batch of the call in progress: [out_base, out_end), its
  ;; record count in $out_count (written at out_base when flushed).
  (global $out_base (mut i32) (i32.const 0))
  (global $out_end (mut i32) (i32.const 0))
  (global $out_count (mut i32) (i32.const 0))
  ;; The message being built: [msg_base, mp).
  (global $msg_base (mut i32) (i32.const 0))
  (global $mp (mut i32) (i32.const 0))
  ;; Width of the rune $utf8 decoded last.
  (global $dw (mut i32) (i32.const 0))

  (func (export "sluice_abi_version") (result i32) (i32.const 1))

  ;; sluice_kinds (section 12): the module serves keyed operators (bit 8);
  ;; `sluice plugin build` writes that into its sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 8))

  ;; ensure grows memory so that [0, top) is addressable, or traps: like a
  ;; Go guest that runs out of memory.
  (func $ensure (param $top i32)
    (local $need i32)
    (local.set $need (i32.shr_u (i32.add (local.get $top) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (unreachable))))))

  (func (export "sluice_alloc") (param $size i32) (result i32)
    (local $p i32) (local $top i32) (local $need i32)
    (if (i32.gt_u (local.get $size) (i32.const 0x40000000)) (then (return (i32.const 0))))
    (if (i32.eqz (global.get $pending)) (then (global.set $brk (global.get $heap_base))))
    (local.set $p (global.get $brk))
    (local.set $top (i32.and (i32.add (i32.add (local.get $p) (local.get $size)) (i32.const 7)) (i32.const -8)))
    (local.set $need (i32.shr_u (i32.add (local.get $top) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $brk (local.get $top))
    (global.set $pending (i32.const 1))
    (local.get $p))

  ;; out_start starts the call's output batch at $brk, after the regions
  ;; the host filled.
  (func $out_start
    (global.set $out_base (global.get $brk))
    (global.set $out_end (i32.add (global.get $brk) (i32.const 4)))
    (global.set $out_count (i32.const 0))
    (call $ensure (global.get $out_end)))

  ;; flush hands the gathered outputs to the host and starts over.
  (func $flush
    (if (global.get $out_count)
      (then
        (i32.store align=1 (global.get $out_base) (global.get $out_count))
        (call $emit (global.get $out_base) (i32.sub (global.get $out_end) (global.get $out_base)))
        (global.set $out_end (i32.add (global.get $out_base) (i32.const 4)))
        (global.set $out_count (i32.const 0)))))

  ;; m_start starts a message at p (scratch memory above the outputs).
  (func $m_start (param $p i32)
    (global.set $msg_base (local.get $p))
    (global.set $mp (local.get $p)))

  (func $m_len (result i32) (i32.sub (global.get $mp) (global.get $msg_base)))

  (func $m_byte (param $c i32)
    (call $ensure (i32.add (global.get $mp) (i32.const 1)))
    (i32.store8 (global.get $mp) (local.get $c))
    (global.set $mp (i32.add (global.get $mp) (i32.const 1))))

  (func $m_bytes (param $p i32) (param $n i32)
    (call $ensure (i32.add (global.get $mp) (local.get $n)))
    (memory.copy (global.get $mp) (local.get $p) (local.get $n))
    (global.set $mp (i32.add (global.get $mp) (local.get $n))))

  ;; m_str appends the NUL-terminated string at p.
  (func $m_str (param $p i32)
    (local $c i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.tee $c (i32.load8_u (local.get $p)))))
        (call $m_byte (local.get $c))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $next))))

  ;; m_hex appends the low `digits` hex digits of v, most significant first.
  (func $m_hex (param $v i32) (param $digits i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $digits)))
        (local.set $digits (i32.sub (local.get $digits) (i32.const 1)))
        (call $m_byte (i32.load8_u offset=1920
          (i32.and (i32.shr_u (local.get $v) (i32.shl (local.get $digits) (i32.const 2))) (i32.const 15))))
        (br $next))))

  ;; utf8 decodes the rune at [p, end) as Go's utf8.DecodeRune does: it
  ;; returns the rune and sets $dw to its width; an invalid or incomplete
  ;; sequence gives U+FFFD with width 1.
  (func $utf8 (param $p i32) (param $end i32) (result i32)
    (local $n i32) (local $c0 i32) (local $c1 i32) (local $c2 i32) (local $c3 i32) (local $lo i32) (local $hi i32)
    (local.set $n (i32.sub (local.get $end) (local.get $p)))
    (local.set $c0 (i32.load8_u (local.get $p)))
    (global.set $dw (i32.const 1))
    (if (i32.lt_u (local.get $c0) (i32.const 0x80)) (then (return (local.get $c0))))
    (block $bad
      (br_if $bad (i32.lt_u (local.get $c0) (i32.const 0xc2)))
      (br_if $bad (i32.lt_u (local.get $n) (i32.const 2)))
      (local.set $c1 (i32.load8_u offset=1 (local.get $p)))
      (if (i32.lt_u (local.get $c0) (i32.const 0xe0))
        (then
          (br_if $bad (i32.ne (i32.and (local.get $c1) (i32.const 0xc0)) (i32.const 0x80)))
          (global.set $dw (i32.const 2))
          (return (i32.or (i32.shl (i32.and (local.get $c0) (i32.const 0x1f)) (i32.const 6))
                          (i32.and (local.get $c1) (i32.const 0x3f))))))
      (local.set $lo (i32.const 0x80))
      (local.set $hi (i32.const 0xbf))
      (if (i32.eq (local.get $c0) (i32.const 0xe0)) (then (local.set $lo (i32.const 0xa0))))
      (if (i32.eq (local.get $c0) (i32.const 0xed)) (then (local.set $hi (i32.const 0x9f))))
      (if (i32.eq (local.get $c0) (i32.const 0xf0)) (then (local.set $lo (i32.const 0x90))))
      (if (i32.eq (local.get $c0) (i32.const 0xf4)) (then (local.set $hi (i32.const 0x8f))))
      (br_if $bad (i32.lt_u (local.get $c1) (local.get $lo)))
      (br_if $bad (i32.gt_u (local.get $c1) (local.get $hi)))
      (br_if $bad (i32.lt_u (local.get $n) (i32.const 3)))
      (local.set $c2 (i32.load8_u offset=2 (local.get $p)))
      (br_if $bad (i32.ne (i32.and (local.get $c2) (i32.const 0xc0)) (i32.const 0x80)))
      (if (i32.lt_u (local.get $c0) (i32.const 0xf0))
        (then
          (global.set $dw (i32.const 3))
          (return (i32.or (i32.or (i32.shl (i32.and (local.get $c0) (i32.const 0x0f)) (i32.const 12))
                                  (i32.shl (i32.and (local.get $c1) (i32.const 0x3f)) (i32.const 6)))
                          (i32.and (local.get $c2) (i32.const 0x3f))))))
      (br_if $bad (i32.gt_u (local.get $c0) (i32.const 0xf4)))
      (br_if $bad (i32.lt_u (local.get $n) (i32.const 4)))
      (local.set $c3 (i32.load8_u offset=3 (local.get $p)))
      (br_if $bad (i32.ne (i32.and (local.get $c3) (i32.const 0xc0)) (i32.const 0x80)))
      (global.set $dw (i32.const 4))
      (return (i32.or (i32.or (i32.shl (i32.and (local.get $c0) (i32.const 0x07)) (i32.const 18))
                              (i32.shl (i32.and (local.get $c1) (i32.const 0x3f)) (i32.const 12)))
                      (i32.or (i32.shl (i32.and (local.get $c2) (i32.const 0x3f)) (i32.const 6))
                              (i32.and (local.get $c3) (i32.const 0x3f))))))
    (global.set $dw (i32.const 1))
    (i32.const 0xfffd))

  ;; is_print is Go's strconv.IsPrint: ASCII 0x20-0x7e, and above 0x7f the
  ;; ranges of the table at $print_table (pairs of u32 lo, hi, inclusive,
  ;; ascending), by binary search.
  (func $is_print (param $r i32) (result i32)
    (local $lo i32) (local $hi i32) (local $mid i32)
    (if (i32.lt_u (local.get $r) (i32.const 0x80))
      (then (return (i32.lt_u (i32.sub (local.get $r) (i32.const 0x20)) (i32.const 0x5f)))))
    ;; find the last range whose lo <= r, in [0, $print_ranges)
    (local.set $lo (i32.const 0))
    (local.set $hi (global.get $print_ranges))
    (block $done
      (loop $search
        (br_if $done (i32.ge_u (local.get $lo) (local.get $hi)))
        (local.set $mid (i32.shr_u (i32.add (local.get $lo) (local.get $hi)) (i32.const 1)))
        (if (i32.le_u (i32.load (i32.add (global.get $print_table) (i32.shl (local.get $mid) (i32.const 3))))
                      (local.get $r))
          (then (local.set $lo (i32.add (local.get $mid) (i32.const 1))))
          (else (local.set $hi (local.get $mid))))
        (br $search)))
    (if (i32.eqz (local.get $lo)) (then (return (i32.const 0))))
    (i32.le_u (local.get $r)
      (i32.load offset=4 (i32.add (global.get $print_table) (i32.shl (i32.sub (local.get $lo) (i32.const 1)) (i32.const 3))))))

  ;; m_quote appends [p, p+n) quoted as Go's strconv.Quote (and so fmt's
  ;; %q) does: double quotes; \" and \\; printable runes as they are;
  ;; \a \b \f \n \r \t \v; other bytes under 0x20 and 0x7f as \xNN; other
  ;; non-printable runes as \uNNNN or \UNNNNNNNN; each byte of an invalid
  ;; UTF-8 sequence as \xNN.
  (func $m_quote (param $p i32) (param $n i32)
    (local $end i32) (local $r i32) (local $w i32)
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (call $m_byte (i32.const 0x22))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $r (call $utf8 (local.get $p) (local.get $end)))
        (local.set $w (global.get $dw))
        (block $rune_done
          (if (i32.and (i32.eq (local.get $r) (i32.const 0xfffd)) (i32.eq (local.get $w) (i32.const 1)))
            (then
              (call $m_byte (i32.const 0x5c)) (call $m_byte (i32.const 0x78))   ;; \x
              (call $m_hex (i32.load8_u (local.get $p)) (i32.const 2))
              (br $rune_done)))
          (if (i32.or (i32.eq (local.get $r) (i32.const 0x22)) (i32.eq (local.get $r) (i32.const 0x5c)))
            (then
              (call $m_byte (i32.const 0x5c)) (call $m_byte (local.get $r))
              (br $rune_done)))
          (if (call $is_print (local.get $r))
            (then (call $m_bytes (local.get $p) (local.get $w)) (br $rune_done)))
          (call $m_byte (i32.const 0x5c))
          ;; \a=7 \b=8 \t=9 \n=10 \v=11 \f=12 \r=13
          (if (i32.lt_u (i32.sub (local.get $r) (i32.const 7)) (i32.const 7))
            (then
              (call $m_byte (i32.load8_u offset=2096 (i32.sub (local.get $r) (i32.const 7))))
              (br $rune_done)))
          (if (i32.or (i32.lt_u (local.get $r) (i32.const 0x20)) (i32.eq (local.get $r) (i32.const 0x7f)))
            (then
              (call $m_byte (i32.const 0x78))
              (call $m_hex (local.get $r) (i32.const 2))
              (br $rune_done)))
          (if (i32.lt_u (local.get $r) (i32.const 0x10000))
            (then
              (call $m_byte (i32.const 0x75))
              (call $m_hex (local.get $r) (i32.const 4))
              (br $rune_done)))
          (call $m_byte (i32.const 0x55))
          (call $m_hex (local.get $r) (i32.const 8)))
        (local.set $p (i32.add (local.get $p) (local.get $w)))
        (br $next)))
    (call $m_byte (i32.const 0x22)))
  (data (i32.const 2096) "abtnvfr")

  ;; The printable ranges above U+007F, generated from Go's strconv.IsPrint
  ;; (see sdk/wat/README.md, "Go's %q"): 710 pairs of u32 lo, hi.
  (global $print_table i32 (i32.const 4096))
  (global $print_ranges i32 (i32.const 710))
  (data (i32.const 4096)  "\a1\00\00\00\ac\00\00\00\ae\00\00\00\77\03\00\00\7a\03\00\00\7f\03\00\00\84\03\00\00\8a\03\00\00"
    "\8c\03\00\00\8c\03\00\00\8e\03\00\00\a1\03\00\00\a3\03\00\00\2f\05\00\00\31\05\00\00\56\05\00\00"
    "\59\05\00\00\8a\05\00\00\8d\05\00\00\8f\05\00\00\91\05\00\00\c7\05\00\00\d0\05\00\00\ea\05\00\00"
    "\ef\05\00\00\f4\05\00\00\06\06\00\00\1b\06\00\00\1d\06\00\00\dc\06\00\00\de\06\00\00\0d\07\00\00"
    "\10\07\00\00\4a\07\00\00\4d\07\00\00\b1\07\00\00\c0\07\00\00\fa\07\00\00\fd\07\00\00\2d\08\00\00"
    "\30\08\00\00\3e\08\00\00\40\08\00\00\5b\08\00\00\5e\08\00\00\5e\08\00\00\60\08\00\00\6a\08\00\00"
    "\70\08\00\00\8e\08\00\00\98\08\00\00\e1\08\00\00\e3\08\00\00\83\09\00\00\85\09\00\00\8c\09\00\00"
    "\8f\09\00\00\90\09\00\00\93\09\00\00\a8\09\00\00\aa\09\00\00\b0\09\00\00\b2\09\00\00\b2\09\00\00"
    "\b6\09\00\00\b9\09\00\00\bc\09\00\00\c4\09\00\00\c7\09\00\00\c8\09\00\00\cb\09\00\00\ce\09\00\00"
    "\d7\09\00\00\d7\09\00\00\dc\09\00\00\dd\09\00\00\df\09\00\00\e3\09\00\00\e6\09\00\00\fe\09\00\00"
    "\01\0a\00\00\03\0a\00\00\05\0a\00\00\0a\0a\00\00\0f\0a\00\00\10\0a\00\00\13\0a\00\00\28\0a\00\00"
    "\2a\0a\00\00\30\0a\00\00\32\0a\00\00\33\0a\00\00\35\0a\00\00\36\0a\00\00\38\0a\00\00\39\0a\00\00"
    "\3c\0a\00\00\3c\0a\00\00\3e\0a\00\00\42\0a\00\00\47\0a\00\00\48\0a\00\00\4b\0a\00\00\4d\0a\00\00"
    "\51\0a\00\00\51\0a\00\00\59\0a\00\00\5c\0a\00\00\5e\0a\00\00\5e\0a\00\00\66\0a\00\00\76\0a\00\00"
    "\81\0a\00\00\83\0a\00\00\85\0a\00\00\8d\0a\00\00\8f\0a\00\00\91\0a\00\00\93\0a\00\00\a8\0a\00\00"
    "\aa\0a\00\00\b0\0a\00\00\b2\0a\00\00\b3\0a\00\00\b5\0a\00\00\b9\0a\00\00\bc\0a\00\00\c5\0a\00\00"
    "\c7\0a\00\00\c9\0a\00\00\cb\0a\00\00\cd\0a\00\00\d0\0a\00\00\d0\0a\00\00\e0\0a\00\00\e3\0a\00\00"
    "\e6\0a\00\00\f1\0a\00\00\f9\0a\00\00\ff\0a\00\00\01\0b\00\00\03\0b\00\00\05\0b\00\00\0c\0b\00\00"
    "\0f\0b\00\00\10\0b\00\00\13\0b\00\00\28\0b\00\00\2a\0b\00\00\30\0b\00\00\32\0b\00\00\33\0b\00\00"
    "\35\0b\00\00\39\0b\00\00\3c\0b\00\00\44\0b\00\00\47\0b\00\00\48\0b\00\00\4b\0b\00\00\4d\0b\00\00"
    "\55\0b\00\00\57\0b\00\00\5c\0b\00\00\5d\0b\00\00\5f\0b\00\00\63\0b\00\00\66\0b\00\00\77\0b\00\00"
    "\82\0b\00\00\83\0b\00\00\85\0b\00\00\8a\0b\00\00\8e\0b\00\00\90\0b\00\00\92\0b\00\00\95\0b\00\00"
    "\99\0b\00\00\9a\0b\00\00\9c\0b\00\00\9c\0b\00\00\9e\0b\00\00\9f\0b\00\00\a3\0b\00\00\a4\0b\00\00"
    "\a8\0b\00\00\aa\0b\00\00\ae\0b\00\00\b9\0b\00\00\be\0b\00\00\c2\0b\00\00\c6\0b\00\00\c8\0b\00\00"
    "\ca\0b\00\00\cd\0b\00\00\d0\0b\00\00\d0\0b\00\00\d7\0b\00\00\d7\0b\00\00\e6\0b\00\00\fa\0b\00\00"
    "\00\0c\00\00\0c\0c\00\00\0e\0c\00\00\10\0c\00\00\12\0c\00\00\28\0c\00\00\2a\0c\00\00\39\0c\00\00"
    "\3c\0c\00\00\44\0c\00\00\46\0c\00\00\48\0c\00\00\4a\0c\00\00\4d\0c\00\00\55\0c\00\00\56\0c\00\00"
    "\58\0c\00\00\5a\0c\00\00\5d\0c\00\00\5d\0c\00\00\60\0c\00\00\63\0c\00\00\66\0c\00\00\6f\0c\00\00"
    "\77\0c\00\00\8c\0c\00\00\8e\0c\00\00\90\0c\00\00\92\0c\00\00\a8\0c\00\00\aa\0c\00\00\b3\0c\00\00"
    "\b5\0c\00\00\b9\0c\00\00\bc\0c\00\00\c4\0c\00\00\c6\0c\00\00\c8\0c\00\00\ca\0c\00\00\cd\0c\00\00"
    "\d5\0c\00\00\d6\0c\00\00\dd\0c\00\00\de\0c\00\00\e0\0c\00\00\e3\0c\00\00\e6\0c\00\00\ef\0c\00\00"
    "\f1\0c\00\00\f3\0c\00\00\00\0d\00\00\0c\0d\00\00\0e\0d\00\00\10\0d\00\00\12\0d\00\00\44\0d\00\00"
    "\46\0d\00\00\48\0d\00\00\4a\0d\00\00\4f\0d\00\00\54\0d\00\00\63\0d\00\00\66\0d\00\00\7f\0d\00\00"
    "\81\0d\00\00\83\0d\00\00\85\0d\00\00\96\0d\00\00\9a\0d\00\00\b1\0d\00\00\b3\0d\00\00\bb\0d\00\00"
    "\bd\0d\00\00\bd\0d\00\00\c0\0d\00\00\c6\0d\00\00\ca\0d\00\00\ca\0d\00\00\cf\0d\00\00\d4\0d\00\00"
    "\d6\0d\00\00\d6\0d\00\00\d8\0d\00\00\df\0d\00\00\e6\0d\00\00\ef\0d\00\00\f2\0d\00\00\f4\0d\00\00"
    "\01\0e\00\00\3a\0e\00\00\3f\0e\00\00\5b\0e\00\00\81\0e\00\00\82\0e\00\00\84\0e\00\00\84\0e\00\00"
    "\86\0e\00\00\8a\0e\00\00\8c\0e\00\00\a3\0e\00\00\a5\0e\00\00\a5\0e\00\00\a7\0e\00\00\bd\0e\00\00"
    "\c0\0e\00\00\c4\0e\00\00\c6\0e\00\00\c6\0e\00\00\c8\0e\00\00\ce\0e\00\00\d0\0e\00\00\d9\0e\00\00"
    "\dc\0e\00\00\df\0e\00\00\00\0f\00\00\47\0f\00\00\49\0f\00\00\6c\0f\00\00\71\0f\00\00\97\0f\00\00"
    "\99\0f\00\00\bc\0f\00\00\be\0f\00\00\cc\0f\00\00\ce\0f\00\00\da\0f\00\00\00\10\00\00\c5\10\00\00"
    "\c7\10\00\00\c7\10\00\00\cd\10\00\00\cd\10\00\00\d0\10\00\00\48\12\00\00\4a\12\00\00\4d\12\00\00"
    "\50\12\00\00\56\12\00\00\58\12\00\00\58\12\00\00\5a\12\00\00\5d\12\00\00\60\12\00\00\88\12\00\00"
    "\8a\12\00\00\8d\12\00\00\90\12\00\00\b0\12\00\00\b2\12\00\00\b5\12\00\00\b8\12\00\00\be\12\00\00"
    "\c0\12\00\00\c0\12\00\00\c2\12\00\00\c5\12\00\00\c8\12\00\00\d6\12\00\00\d8\12\00\00\10\13\00\00"
    "\12\13\00\00\15\13\00\00\18\13\00\00\5a\13\00\00\5d\13\00\00\7c\13\00\00\80\13\00\00\99\13\00\00"
    "\a0\13\00\00\f5\13\00\00\f8\13\00\00\fd\13\00\00\00\14\00\00\7f\16\00\00\81\16\00\00\9c\16\00\00"
    "\a0\16\00\00\f8\16\00\00\00\17\00\00\15\17\00\00\1f\17\00\00\36\17\00\00\40\17\00\00\53\17\00\00"
    "\60\17\00\00\6c\17\00\00\6e\17\00\00\70\17\00\00\72\17\00\00\73\17\00\00\80\17\00\00\dd\17\00\00"
    "\e0\17\00\00\e9\17\00\00\f0\17\00\00\f9\17\00\00\00\18\00\00\0d\18\00\00\0f\18\00\00\19\18\00\00"
    "\20\18\00\00\78\18\00\00\80\18\00\00\aa\18\00\00\b0\18\00\00\f5\18\00\00\00\19\00\00\1e\19\00\00"
    "\20\19\00\00\2b\19\00\00\30\19\00\00\3b\19\00\00\40\19\00\00\40\19\00\00\44\19\00\00\6d\19\00\00"
    "\70\19\00\00\74\19\00\00\80\19\00\00\ab\19\00\00\b0\19\00\00\c9\19\00\00\d0\19\00\00\da\19\00\00"
    "\de\19\00\00\1b\1a\00\00\1e\1a\00\00\5e\1a\00\00\60\1a\00\00\7c\1a\00\00\7f\1a\00\00\89\1a\00\00"
    "\90\1a\00\00\99\1a\00\00\a0\1a\00\00\ad\1a\00\00\b0\1a\00\00\ce\1a\00\00\00\1b\00\00\4c\1b\00\00"
    "\50\1b\00\00\7e\1b\00\00\80\1b\00\00\f3\1b\00\00\fc\1b\00\00\37\1c\00\00\3b\1c\00\00\49\1c\00\00"
    "\4d\1c\00\00\88\1c\00\00\90\1c\00\00\ba\1c\00\00\bd\1c\00\00\c7\1c\00\00\d0\1c\00\00\fa\1c\00\00"
    "\00\1d\00\00\15\1f\00\00\18\1f\00\00\1d\1f\00\00\20\1f\00\00\45\1f\00\00\48\1f\00\00\4d\1f\00\00"
    "\50\1f\00\00\57\1f\00\00\59\1f\00\00\59\1f\00\00\5b\1f\00\00\5b\1f\00\00\5d\1f\00\00\5d\1f\00\00"
    "\5f\1f\00\00\7d\1f\00\00\80\1f\00\00\b4\1f\00\00\b6\1f\00\00\c4\1f\00\00\c6\1f\00\00\d3\1f\00\00"
    "\d6\1f\00\00\db\1f\00\00\dd\1f\00\00\ef\1f\00\00\f2\1f\00\00\f4\1f\00\00\f6\1f\00\00\fe\1f\00\00"
    "\10\20\00\00\27\20\00\00\30\20\00\00\5e\20\00\00\70\20\00\00\71\20\00\00\74\20\00\00\8e\20\00\00"
    "\90\20\00\00\9c\20\00\00\a0\20\00\00\c0\20\00\00\d0\20\00\00\f0\20\00\00\00\21\00\00\8b\21\00\00"
    "\90\21\00\00\26\24\00\00\40\24\00\00\4a\24\00\00\60\24\00\00\73\2b\00\00\76\2b\00\00\95\2b\00\00"
    "\97\2b\00\00\f3\2c\00\00\f9\2c\00\00\25\2d\00\00\27\2d\00\00\27\2d\00\00\2d\2d\00\00\2d\2d\00\00"
    "\30\2d\00\00\67\2d\00\00\6f\2d\00\00\70\2d\00\00\7f\2d\00\00\96\2d\00\00\a0\2d\00\00\a6\2d\00\00"
    "\a8\2d\00\00\ae\2d\00\00\b0\2d\00\00\b6\2d\00\00\b8\2d\00\00\be\2d\00\00\c0\2d\00\00\c6\2d\00\00"
    "\c8\2d\00\00\ce\2d\00\00\d0\2d\00\00\d6\2d\00\00\d8\2d\00\00\de\2d\00\00\e0\2d\00\00\5d\2e\00\00"
    "\80\2e\00\00\99\2e\00\00\9b\2e\00\00\f3\2e\00\00\00\2f\00\00\d5\2f\00\00\f0\2f\00\00\fb\2f\00\00"
    "\01\30\00\00\3f\30\00\00\41\30\00\00\96\30\00\00\99\30\00\00\ff\30\00\00\05\31\00\00\2f\31\00\00"
    "\31\31\00\00\8e\31\00\00\90\31\00\00\e3\31\00\00\f0\31\00\00\1e\32\00\00\20\32\00\00\8c\a4\00\00"
    "\90\a4\00\00\c6\a4\00\00\d0\a4\00\00\2b\a6\00\00\40\a6\00\00\f7\a6\00\00\00\a7\00\00\ca\a7\00\00"
    "\d0\a7\00\00\d1\a7\00\00\d3\a7\00\00\d3\a7\00\00\d5\a7\00\00\d9\a7\00\00\f2\a7\00\00\2c\a8\00\00"
    "\30\a8\00\00\39\a8\00\00\40\a8\00\00\77\a8\00\00\80\a8\00\00\c5\a8\00\00\ce\a8\00\00\d9\a8\00\00"
    "\e0\a8\00\00\53\a9\00\00\5f\a9\00\00\7c\a9\00\00\80\a9\00\00\cd\a9\00\00\cf\a9\00\00\d9\a9\00\00"
    "\de\a9\00\00\fe\a9\00\00\00\aa\00\00\36\aa\00\00\40\aa\00\00\4d\aa\00\00\50\aa\00\00\59\aa\00\00"
    "\5c\aa\00\00\c2\aa\00\00\db\aa\00\00\f6\aa\00\00\01\ab\00\00\06\ab\00\00\09\ab\00\00\0e\ab\00\00"
    "\11\ab\00\00\16\ab\00\00\20\ab\00\00\26\ab\00\00\28\ab\00\00\2e\ab\00\00\30\ab\00\00\6b\ab\00\00"
    "\70\ab\00\00\ed\ab\00\00\f0\ab\00\00\f9\ab\00\00\00\ac\00\00\a3\d7\00\00\b0\d7\00\00\c6\d7\00\00"
    "\cb\d7\00\00\fb\d7\00\00\00\f9\00\00\6d\fa\00\00\70\fa\00\00\d9\fa\00\00\00\fb\00\00\06\fb\00\00"
    "\13\fb\00\00\17\fb\00\00\1d\fb\00\00\36\fb\00\00\38\fb\00\00\3c\fb\00\00\3e\fb\00\00\3e\fb\00\00"
    "\40\fb\00\00\41\fb\00\00\43\fb\00\00\44\fb\00\00\46\fb\00\00\c2\fb\00\00\d3\fb\00\00\8f\fd\00\00"
    "\92\fd\00\00\c7\fd\00\00\cf\fd\00\00\cf\fd\00\00\f0\fd\00\00\19\fe\00\00\20\fe\00\00\52\fe\00\00"
    "\54\fe\00\00\66\fe\00\00\68\fe\00\00\6b\fe\00\00\70\fe\00\00\74\fe\00\00\76\fe\00\00\fc\fe\00\00"
    "\01\ff\00\00\be\ff\00\00\c2\ff\00\00\c7\ff\00\00\ca\ff\00\00\cf\ff\00\00\d2\ff\00\00\d7\ff\00\00"
    "\da\ff\00\00\dc\ff\00\00\e0\ff\00\00\e6\ff\00\00\e8\ff\00\00\ee\ff\00\00\fc\ff\00\00\fd\ff\00\00"
    "\00\00\01\00\0b\00\01\00\0d\00\01\00\26\00\01\00\28\00\01\00\3a\00\01\00\3c\00\01\00\3d\00\01\00"
    "\3f\00\01\00\4d\00\01\00\50\00\01\00\5d\00\01\00\80\00\01\00\fa\00\01\00\00\01\01\00\02\01\01\00"
    "\07\01\01\00\33\01\01\00\37\01\01\00\8e\01\01\00\90\01\01\00\9c\01\01\00\a0\01\01\00\a0\01\01\00"
    "\d0\01\01\00\fd\01\01\00\80\02\01\00\9c\02\01\00\a0\02\01\00\d0\02\01\00\e0\02\01\00\fb\02\01\00"
    "\00\03\01\00\23\03\01\00\2d\03\01\00\4a\03\01\00\50\03\01\00\7a\03\01\00\80\03\01\00\9d\03\01\00"
    "\9f\03\01\00\c3\03\01\00\c8\03\01\00\d5\03\01\00\00\04\01\00\9d\04\01\00\a0\04\01\00\a9\04\01\00"
    "\b0\04\01\00\d3\04\01\00\d8\04\01\00\fb\04\01\00\00\05\01\00\27\05\01\00\30\05\01\00\63\05\01\00"
    "\6f\05\01\00\7a\05\01\00\7c\05\01\00\8a\05\01\00\8c\05\01\00\92\05\01\00\94\05\01\00\95\05\01\00"
    "\97\05\01\00\a1\05\01\00\a3\05\01\00\b1\05\01\00\b3\05\01\00\b9\05\01\00\bb\05\01\00\bc\05\01\00"
    "\00\06\01\00\36\07\01\00\40\07\01\00\55\07\01\00\60\07\01\00\67\07\01\00\80\07\01\00\85\07\01\00"
    "\87\07\01\00\b0\07\01\00\b2\07\01\00\ba\07\01\00\00\08\01\00\05\08\01\00\08\08\01\00\08\08\01\00"
    "\0a\08\01\00\35\08\01\00\37\08\01\00\38\08\01\00\3c\08\01\00\3c\08\01\00\3f\08\01\00\55\08\01\00"
    "\57\08\01\00\9e\08\01\00\a7\08\01\00\af\08\01\00\e0\08\01\00\f2\08\01\00\f4\08\01\00\f5\08\01\00"
    "\fb\08\01\00\1b\09\01\00\1f\09\01\00\39\09\01\00\3f\09\01\00\3f\09\01\00\80\09\01\00\b7\09\01\00"
    "\bc\09\01\00\cf\09\01\00\d2\09\01\00\03\0a\01\00\05\0a\01\00\06\0a\01\00\0c\0a\01\00\13\0a\01\00"
    "\15\0a\01\00\17\0a\01\00\19\0a\01\00\35\0a\01\00\38\0a\01\00\3a\0a\01\00\3f\0a\01\00\48\0a\01\00"
    "\50\0a\01\00\58\0a\01\00\60\0a\01\00\9f\0a\01\00\c0\0a\01\00\e6\0a\01\00\eb\0a\01\00\f6\0a\01\00"
    "\00\0b\01\00\35\0b\01\00\39\0b\01\00\55\0b\01\00\58\0b\01\00\72\0b\01\00\78\0b\01\00\91\0b\01\00"
    "\99\0b\01\00\9c\0b\01\00\a9\0b\01\00\af\0b\01\00\00\0c\01\00\48\0c\01\00\80\0c\01\00\b2\0c\01\00"
    "\c0\0c\01\00\f2\0c\01\00\fa\0c\01\00\27\0d\01\00\30\0d\01\00\39\0d\01\00\60\0e\01\00\7e\0e\01\00"
    "\80\0e\01\00\a9\0e\01\00\ab\0e\01\00\ad\0e\01\00\b0\0e\01\00\b1\0e\01\00\fd\0e\01\00\27\0f\01\00"
    "\30\0f\01\00\59\0f\01\00\70\0f\01\00\89\0f\01\00\b0\0f\01\00\cb\0f\01\00\e0\0f\01\00\f6\0f\01\00"
    "\00\10\01\00\4d\10\01\00\52\10\01\00\75\10\01\00\7f\10\01\00\bc\10\01\00\be\10\01\00\c2\10\01\00"
    "\d0\10\01\00\e8\10\01\00\f0\10\01\00\f9\10\01\00\00\11\01\00\34\11\01\00\36\11\01\00\47\11\01\00"
    "\50\11\01\00\76\11\01\00\80\11\01\00\df\11\01\00\e1\11\01\00\f4\11\01\00\00\12\01\00\11\12\01\00"
    "\13\12\01\00\41\12\01\00\80\12\01\00\86\12\01\00\88\12\01\00\88\12\01\00\8a\12\01\00\8d\12\01\00"
    "\8f\12\01\00\9d\12\01\00\9f\12\01\00\a9\12\01\00\b0\12\01\00\ea\12\01\00\f0\12\01\00\f9\12\01\00"
    "\00\13\01\00\03\13\01\00\05\13\01\00\0c\13\01\00\0f\13\01\00\10\13\01\00\13\13\01\00\28\13\01\00"
    "\2a\13\01\00\30\13\01\00\32\13\01\00\33\13\01\00\35\13\01\00\39\13\01\00\3b\13\01\00\44\13\01\00"
    "\47\13\01\00\48\13\01\00\4b\13\01\00\4d\13\01\00\50\13\01\00\50\13\01\00\57\13\01\00\57\13\01\00"
    "\5d\13\01\00\63\13\01\00\66\13\01\00\6c\13\01\00\70\13\01\00\74\13\01\00\00\14\01\00\5b\14\01\00"
    "\5d\14\01\00\61\14\01\00\80\14\01\00\c7\14\01\00\d0\14\01\00\d9\14\01\00\80\15\01\00\b5\15\01\00"
    "\b8\15\01\00\dd\15\01\00\00\16\01\00\44\16\01\00\50\16\01\00\59\16\01\00\60\16\01\00\6c\16\01\00"
    "\80\16\01\00\b9\16\01\00\c0\16\01\00\c9\16\01\00\00\17\01\00\1a\17\01\00\1d\17\01\00\2b\17\01\00"
    "\30\17\01\00\46\17\01\00\00\18\01\00\3b\18\01\00\a0\18\01\00\f2\18\01\00\ff\18\01\00\06\19\01\00"
    "\09\19\01\00\09\19\01\00\0c\19\01\00\13\19\01\00\15\19\01\00\16\19\01\00\18\19\01\00\35\19\01\00"
    "\37\19\01\00\38\19\01\00\3b\19\01\00\46\19\01\00\50\19\01\00\59\19\01\00\a0\19\01\00\a7\19\01\00"
    "\aa\19\01\00\d7\19\01\00\da\19\01\00\e4\19\01\00\00\1a\01\00\47\1a\01\00\50\1a\01\00\a2\1a\01\00"
    "\b0\1a\01\00\f8\1a\01\00\00\1b\01\00\09\1b\01\00\00\1c\01\00\08\1c\01\00\0a\1c\01\00\36\1c\01\00"
    "\38\1c\01\00\45\1c\01\00\50\1c\01\00\6c\1c\01\00\70\1c\01\00\8f\1c\01\00\92\1c\01\00\a7\1c\01\00"
    "\a9\1c\01\00\b6\1c\01\00\00\1d\01\00\06\1d\01\00\08\1d\01\00\09\1d\01\00\0b\1d\01\00\36\1d\01\00"
    "\3a\1d\01\00\3a\1d\01\00\3c\1d\01\00\3d\1d\01\00\3f\1d\01\00\47\1d\01\00\50\1d\01\00\59\1d\01\00"
    "\60\1d\01\00\65\1d\01\00\67\1d\01\00\68\1d\01\00\6a\1d\01\00\8e\1d\01\00\90\1d\01\00\91\1d\01\00"
    "\93\1d\01\00\98\1d\01\00\a0\1d\01\00\a9\1d\01\00\e0\1e\01\00\f8\1e\01\00\00\1f\01\00\10\1f\01\00"
    "\12\1f\01\00\3a\1f\01\00\3e\1f\01\00\59\1f\01\00\b0\1f\01\00\b0\1f\01\00\c0\1f\01\00\f1\1f\01\00"
    "\ff\1f\01\00\99\23\01\00\00\24\01\00\6e\24\01\00\70\24\01\00\74\24\01\00\80\24\01\00\43\25\01\00"
    "\90\2f\01\00\f2\2f\01\00\00\30\01\00\2f\34\01\00\40\34\01\00\55\34\01\00\00\44\01\00\46\46\01\00"
    "\00\68\01\00\38\6a\01\00\40\6a\01\00\5e\6a\01\00\60\6a\01\00\69\6a\01\00\6e\6a\01\00\be\6a\01\00"
    "\c0\6a\01\00\c9\6a\01\00\d0\6a\01\00\ed\6a\01\00\f0\6a\01\00\f5\6a\01\00\00\6b\01\00\45\6b\01\00"
    "\50\6b\01\00\59\6b\01\00\5b\6b\01\00\61\6b\01\00\63\6b\01\00\77\6b\01\00\7d\6b\01\00\8f\6b\01\00"
    "\40\6e\01\00\9a\6e\01\00\00\6f\01\00\4a\6f\01\00\4f\6f\01\00\87\6f\01\00\8f\6f\01\00\9f\6f\01\00"
    "\e0\6f\01\00\e4\6f\01\00\f0\6f\01\00\f1\6f\01\00\00\70\01\00\f7\87\01\00\00\88\01\00\d5\8c\01\00"
    "\00\8d\01\00\08\8d\01\00\f0\af\01\00\f3\af\01\00\f5\af\01\00\fb\af\01\00\fd\af\01\00\fe\af\01\00"
    "\00\b0\01\00\22\b1\01\00\32\b1\01\00\32\b1\01\00\50\b1\01\00\52\b1\01\00\55\b1\01\00\55\b1\01\00"
    "\64\b1\01\00\67\b1\01\00\70\b1\01\00\fb\b2\01\00\00\bc\01\00\6a\bc\01\00\70\bc\01\00\7c\bc\01\00"
    "\80\bc\01\00\88\bc\01\00\90\bc\01\00\99\bc\01\00\9c\bc\01\00\9f\bc\01\00\00\cf\01\00\2d\cf\01\00"
    "\30\cf\01\00\46\cf\01\00\50\cf\01\00\c3\cf\01\00\00\d0\01\00\f5\d0\01\00\00\d1\01\00\26\d1\01\00"
    "\29\d1\01\00\72\d1\01\00\7b\d1\01\00\ea\d1\01\00\00\d2\01\00\45\d2\01\00\c0\d2\01\00\d3\d2\01\00"
    "\e0\d2\01\00\f3\d2\01\00\00\d3\01\00\56\d3\01\00\60\d3\01\00\78\d3\01\00\00\d4\01\00\54\d4\01\00"
    "\56\d4\01\00\9c\d4\01\00\9e\d4\01\00\9f\d4\01\00\a2\d4\01\00\a2\d4\01\00\a5\d4\01\00\a6\d4\01\00"
    "\a9\d4\01\00\ac\d4\01\00\ae\d4\01\00\b9\d4\01\00\bb\d4\01\00\bb\d4\01\00\bd\d4\01\00\c3\d4\01\00"
    "\c5\d4\01\00\05\d5\01\00\07\d5\01\00\0a\d5\01\00\0d\d5\01\00\14\d5\01\00\16\d5\01\00\1c\d5\01\00"
    "\1e\d5\01\00\39\d5\01\00\3b\d5\01\00\3e\d5\01\00\40\d5\01\00\44\d5\01\00\46\d5\01\00\46\d5\01\00"
    "\4a\d5\01\00\50\d5\01\00\52\d5\01\00\a5\d6\01\00\a8\d6\01\00\cb\d7\01\00\ce\d7\01\00\8b\da\01\00"
    "\9b\da\01\00\9f\da\01\00\a1\da\01\00\af\da\01\00\00\df\01\00\1e\df\01\00\25\df\01\00\2a\df\01\00"
    "\00\e0\01\00\06\e0\01\00\08\e0\01\00\18\e0\01\00\1b\e0\01\00\21\e0\01\00\23\e0\01\00\24\e0\01\00"
    "\26\e0\01\00\2a\e0\01\00\30\e0\01\00\6d\e0\01\00\8f\e0\01\00\8f\e0\01\00\00\e1\01\00\2c\e1\01\00"
    "\30\e1\01\00\3d\e1\01\00\40\e1\01\00\49\e1\01\00\4e\e1\01\00\4f\e1\01\00\90\e2\01\00\ae\e2\01\00"
    "\c0\e2\01\00\f9\e2\01\00\ff\e2\01\00\ff\e2\01\00\d0\e4\01\00\f9\e4\01\00\e0\e7\01\00\e6\e7\01\00"
    "\e8\e7\01\00\eb\e7\01\00\ed\e7\01\00\ee\e7\01\00\f0\e7\01\00\fe\e7\01\00\00\e8\01\00\c4\e8\01\00"
    "\c7\e8\01\00\d6\e8\01\00\00\e9\01\00\4b\e9\01\00\50\e9\01\00\59\e9\01\00\5e\e9\01\00\5f\e9\01\00"
    "\71\ec\01\00\b4\ec\01\00\01\ed\01\00\3d\ed\01\00\00\ee\01\00\03\ee\01\00\05\ee\01\00\1f\ee\01\00"
    "\21\ee\01\00\22\ee\01\00\24\ee\01\00\24\ee\01\00\27\ee\01\00\27\ee\01\00\29\ee\01\00\32\ee\01\00"
    "\34\ee\01\00\37\ee\01\00\39\ee\01\00\39\ee\01\00\3b\ee\01\00\3b\ee\01\00\42\ee\01\00\42\ee\01\00"
    "\47\ee\01\00\47\ee\01\00\49\ee\01\00\49\ee\01\00\4b\ee\01\00\4b\ee\01\00\4d\ee\01\00\4f\ee\01\00"
    "\51\ee\01\00\52\ee\01\00\54\ee\01\00\54\ee\01\00\57\ee\01\00\57\ee\01\00\59\ee\01\00\59\ee\01\00"
    "\5b\ee\01\00\5b\ee\01\00\5d\ee\01\00\5d\ee\01\00\5f\ee\01\00\5f\ee\01\00\61\ee\01\00\62\ee\01\00"
    "\64\ee\01\00\64\ee\01\00\67\ee\01\00\6a\ee\01\00\6c\ee\01\00\72\ee\01\00\74\ee\01\00\77\ee\01\00"
    "\79\ee\01\00\7c\ee\01\00\7e\ee\01\00\7e\ee\01\00\80\ee\01\00\89\ee\01\00\8b\ee\01\00\9b\ee\01\00"
    "\a1\ee\01\00\a3\ee\01\00\a5\ee\01\00\a9\ee\01\00\ab\ee\01\00\bb\ee\01\00\f0\ee\01\00\f1\ee\01\00"
    "\00\f0\01\00\2b\f0\01\00\30\f0\01\00\93\f0\01\00\a0\f0\01\00\ae\f0\01\00\b1\f0\01\00\bf\f0\01\00"
    "\c1\f0\01\00\cf\f0\01\00\d1\f0\01\00\f5\f0\01\00\00\f1\01\00\ad\f1\01\00\e6\f1\01\00\02\f2\01\00"
    "\10\f2\01\00\3b\f2\01\00\40\f2\01\00\48\f2\01\00\50\f2\01\00\51\f2\01\00\60\f2\01\00\65\f2\01\00"
    "\00\f3\01\00\d7\f6\01\00\dc\f6\01\00\ec\f6\01\00\f0\f6\01\00\fc\f6\01\00\00\f7\01\00\76\f7\01\00"
    "\7b\f7\01\00\d9\f7\01\00\e0\f7\01\00\eb\f7\01\00\f0\f7\01\00\f0\f7\01\00\00\f8\01\00\0b\f8\01\00"
    "\10\f8\01\00\47\f8\01\00\50\f8\01\00\59\f8\01\00\60\f8\01\00\87\f8\01\00\90\f8\01\00\ad\f8\01\00"
    "\b0\f8\01\00\b1\f8\01\00\00\f9\01\00\53\fa\01\00\60\fa\01\00\6d\fa\01\00\70\fa\01\00\7c\fa\01\00"
    "\80\fa\01\00\88\fa\01\00\90\fa\01\00\bd\fa\01\00\bf\fa\01\00\c5\fa\01\00\ce\fa\01\00\db\fa\01\00"
    "\e0\fa\01\00\e8\fa\01\00\f0\fa\01\00\f8\fa\01\00\00\fb\01\00\92\fb\01\00\94\fb\01\00\ca\fb\01\00"
    "\f0\fb\01\00\f9\fb\01\00\00\00\02\00\df\a6\02\00\00\a7\02\00\39\b7\02\00\40\b7\02\00\1d\b8\02\00"
    "\20\b8\02\00\a1\ce\02\00\b0\ce\02\00\e0\eb\02\00\00\f8\02\00\1d\fa\02\00\00\00\03\00\4a\13\03\00"
    "\50\13\03\00\af\23\03\00\00\01\0e\00\ef\01\0e\00")

  ;; ---------------------------------------------------------------
  ;; Configuration: none, as the Go SDK without a Configure handler.
  ;; ---------------------------------------------------------------

  (func $ascii_space (param $c i32) (result i32)
    (i32.or (i32.eq (local.get $c) (i32.const 0x20))
            (i32.lt_u (i32.sub (local.get $c) (i32.const 9)) (i32.const 5))))

  ;; space3 reports whether a b c encode a 3-byte Unicode white space rune:
  ;; U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
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

  ;; space_prefix returns the length of the white space rune (as
  ;; bytes.TrimSpace sees it) that starts [p, end), or 0.
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

  ;; space_suffix returns the length of the white space rune that ends
  ;; [p, end), or 0.
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
  ;; or `{}`, and refuses anything else with the Go SDK's message.
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
    (if (i32.and (i32.eq (local.get $n) (i32.const 4))
                 (i32.eq (i32.load align=1 (local.get $p)) (i32.const 0x6c6c756e)))   ;; "null"
      (then (return (i32.const 0))))
    (if (i32.and (i32.eq (local.get $n) (i32.const 2))
                 (i32.eq (i32.load16_u align=1 (local.get $p)) (i32.const 0x7d7b)))   ;; "{}"
      (then (return (i32.const 0))))
    (call $m_start (global.get $brk))
    (call $m_str (i32.const 1024))
    (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
    (i32.const -3))

  ;; ---------------------------------------------------------------
  ;; The record decoder: rec checks the record at off (ABI.md section 4,
  ;; abi.Decoder's rules), sets the $r_ globals and returns the offset
  ;; after it, or 0 when the record is malformed.
  ;; ---------------------------------------------------------------

  (global $r_time (mut i64) (i64.const 0))
  (global $r_key (mut i32) (i32.const 0))
  (global $r_klen (mut i32) (i32.const 0))
  (global $r_val (mut i32) (i32.const 0))
  (global $r_vlen (mut i32) (i32.const 0))

  (func $rec (param $off i32) (param $end i32) (result i32)
    (local $size i32) (local $rend i32) (local $klen i32) (local $vlen i32) (local $nh i32) (local $h i32) (local $l i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $off)) (i32.const 32)) (then (return (i32.const 0))))
    (local.set $size (i32.load align=1 (local.get $off)))
    (if (i32.lt_u (local.get $size) (i32.const 28)) (then (return (i32.const 0))))
    (if (i32.gt_u (local.get $size) (i32.sub (i32.sub (local.get $end) (local.get $off)) (i32.const 4)))
      (then (return (i32.const 0))))
    (if (i32.load offset=8 align=1 (local.get $off)) (then (return (i32.const 0))))
    (local.set $rend (i32.add (i32.add (local.get $off) (i32.const 4)) (local.get $size)))
    (local.set $klen (i32.load offset=20 align=1 (local.get $off)))
    (if (i32.gt_u (local.get $klen) (i32.sub (local.get $size) (i32.const 28))) (then (return (i32.const 0))))
    (local.set $h (i32.add (i32.add (local.get $off) (i32.const 24)) (local.get $klen)))
    (local.set $vlen (i32.load align=1 (local.get $h)))
    (if (i32.gt_u (local.get $vlen) (i32.sub (i32.sub (local.get $size) (i32.const 28)) (local.get $klen)))
      (then (return (i32.const 0))))
    (global.set $r_time (i64.load offset=12 align=1 (local.get $off)))
    (global.set $r_key (i32.add (local.get $off) (i32.const 24)))
    (global.set $r_klen (local.get $klen))
    (global.set $r_val (i32.add (local.get $h) (i32.const 4)))
    (global.set $r_vlen (local.get $vlen))
    (local.set $h (i32.add (i32.add (local.get $h) (i32.const 4)) (local.get $vlen)))
    (local.set $nh (i32.load align=1 (local.get $h)))
    (local.set $h (i32.add (local.get $h) (i32.const 4)))
    (if (i32.gt_u (local.get $nh) (i32.shr_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 3)))
      (then (return (i32.const 0))))
    (block $done
      (loop $headers
        (br_if $done (i32.eqz (local.get $nh)))
        (if (i32.lt_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $l (i32.load align=1 (local.get $h)))
        (local.set $h (i32.add (local.get $h) (i32.const 4)))
        (if (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $h))) (then (return (i32.const 0))))
        (local.set $h (i32.add (local.get $h) (local.get $l)))
        (if (i32.lt_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $l (i32.load align=1 (local.get $h)))
        (local.set $h (i32.add (local.get $h) (i32.const 4)))
        (if (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $h))) (then (return (i32.const 0))))
        (local.set $h (i32.add (local.get $h) (local.get $l)))
        (local.set $nh (i32.sub (local.get $nh) (i32.const 1)))
        (br $headers)))
    (if (i32.ne (local.get $h) (local.get $rend)) (then (return (i32.const 0))))
    (local.get $rend))

  ;; ---------------------------------------------------------------
  ;; The operator.
  ;; ---------------------------------------------------------------

  ;; parse_count reads the decimal count at [p, p+n) into $parsed and
  ;; returns 0, or the reason it cannot: 1 empty, 2 not a decimal number,
  ;; 3 out of range; the checks run digit by digit, in the Go plugin's
  ;; order, so "99999999999999999999x" is out of range.
  (global $parsed (mut i64) (i64.const 0))
  (func $parse_count (param $p i32) (param $n i32) (result i32)
    (local $end i32) (local $v i64) (local $d i64)
    (if (i32.eqz (local.get $n)) (then (return (i32.const 1))))
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (block $done
      (loop $digits
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        ;; byte(c - '0'): wraps around below '0', as in Go
        (local.set $d (i64.extend_i32_u (i32.and (i32.sub (i32.load8_u (local.get $p)) (i32.const 0x30)) (i32.const 0xff))))
        (if (i64.gt_u (local.get $d) (i64.const 9)) (then (return (i32.const 2))))
        (if (i64.gt_u (local.get $v) (i64.div_u (i64.sub (i64.const -1) (local.get $d)) (i64.const 10)))
          (then (return (i32.const 3))))
        (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10)) (local.get $d)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $digits)))
    (global.set $parsed (local.get $v))
    (i32.const 0))

  ;; format_count writes v in decimal so that it ends at 2068 and returns
  ;; its first byte's address.
  (func $format_count (param $v i64) (result i32)
    (local $p i32)
    (local.set $p (i32.const 2068))
    (loop $digits
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 0x30) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    (local.get $p))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $count i32) (local $i i32) (local $off i32) (local $next i32)
    (local $buf i32) (local $n i32) (local $why i32) (local $v i64) (local $digits i32) (local $dlen i32)
    (local $o i32) (local $size i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (call $out_start)
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (local.set $count (i32.load align=1 (local.get $ptr)))
      (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
      (block $records_done
        (loop $records
          (br_if $records_done (i32.eq (local.get $i) (local.get $count)))
          (br_if $bad (i32.eqz (local.tee $next (call $rec (local.get $off) (local.get $end)))))
          ;; The stored count, read into scratch memory above the outputs:
          ;; state_get copies the value when it fits in the buffer and
          ;; returns its length either way, so a second call with a buffer
          ;; of that length gets a longer value.
          (local.set $buf (global.get $out_end))
          (call $ensure (i32.add (local.get $buf) (i32.const 64)))
          (local.set $n (call $state_get (i32.const 0) (global.get $r_key) (global.get $r_klen) (local.get $buf) (i32.const 64)))
          (if (i32.gt_s (local.get $n) (i32.const 64))
            (then
              (call $ensure (i32.add (local.get $buf) (local.get $n)))
              (local.set $n (call $state_get (i32.const 0) (global.get $r_key) (global.get $r_klen) (local.get $buf) (local.get $n)))))
          (local.set $v (i64.const 0))
          (if (i32.ge_s (local.get $n) (i32.const 0))
            (then
              (local.set $why (call $parse_count (local.get $buf) (local.get $n)))
              (local.set $v (global.get $parsed))))
          (if (local.get $why)
            (then
              ;; stored count of key %q: <reason>
              (call $m_start (i32.add (local.get $buf) (local.get $n)))
              (call $m_str (i32.const 1280))
              (call $m_quote (global.get $r_key) (global.get $r_klen))
              (call $m_str (i32.const 1408))
              (if (i32.eq (local.get $why) (i32.const 1))
                (then (call $m_str (i32.const 1536)))
                (else
                  (call $m_quote (local.get $buf) (local.get $n))
                  (if (i32.eq (local.get $why) (i32.const 2))
                    (then (call $m_str (i32.const 1664)))
                    (else (call $m_str (i32.const 1792))))))
              (call $reject (local.get $i) (global.get $msg_base) (call $m_len))
              (local.set $why (i32.const 0)))
            (else
              (local.set $digits (call $format_count (i64.add (local.get $v) (i64.const 1))))
              (local.set $dlen (i32.sub (i32.const 2068) (local.get $digits)))
              (call $state_put (i32.const 0) (global.get $r_key) (global.get $r_klen) (local.get $digits) (local.get $dlen))
              ;; The output record: key, count, time, no headers.
              (local.set $o (global.get $out_end))
              (local.set $size (i32.add (i32.add (i32.const 28) (global.get $r_klen)) (local.get $dlen)))
              (call $ensure (i32.add (i32.add (local.get $o) (local.get $size)) (i32.const 4)))
              (i32.store align=1 (local.get $o) (local.get $size))
              (i32.store offset=4 align=1 (local.get $o) (local.get $i))
              (i32.store offset=8 align=1 (local.get $o) (i32.const 0))
              (i64.store offset=12 align=1 (local.get $o) (global.get $r_time))
              (i32.store offset=20 align=1 (local.get $o) (global.get $r_klen))
              (memory.copy (i32.add (local.get $o) (i32.const 24)) (global.get $r_key) (global.get $r_klen))
              (local.set $o (i32.add (i32.add (local.get $o) (i32.const 24)) (global.get $r_klen)))
              (i32.store align=1 (local.get $o) (local.get $dlen))
              (memory.copy (i32.add (local.get $o) (i32.const 4)) (local.get $digits) (local.get $dlen))
              (local.set $o (i32.add (i32.add (local.get $o) (i32.const 4)) (local.get $dlen)))
              (i32.store align=1 (local.get $o) (i32.const 0))
              (global.set $out_end (i32.add (local.get $o) (i32.const 4)))
              (global.set $out_count (i32.add (global.get $out_count) (i32.const 1)))
              (if (i32.ge_u (i32.sub (global.get $out_end) (global.get $out_base)) (i32.const 0x100000))
                (then (call $flush)))))
          (local.set $off (local.get $next))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $records)))
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      (call $flush)
      (global.set $pending (i32.const 0))
      (return (i32.const 0)))
    (call $m_start (global.get $out_end))
    (call $m_str (i32.const 1152))
    (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
    (global.set $pending (i32.const 0))
    (i32.const -2))
)
