;; ledger: the conformance "ledger" operator, MorphStream's Streaming
;; Ledger, in hand-written WebAssembly text: a transactional operator.
;;
;; Behaviour (identical to plugins/ledger and plugins/ledger/ledgerop, a Go
;; sluice.Transactional operator): events are those of
;; txn/apps/ledger/event; tables 0 "accounts" and 1 "book_entries" hold
;; balances (int64, 8 bytes little endian; an absent key holds 0) under
;; 8-digit decimal keys.
;;
;;   plan   a deposit declares two operations: credit (fn 0) its account,
;;          then its book entry. A transfer declares four, each reading the
;;          source account as a parametric dependency: debit-if-funded
;;          (fn 2) the source book entry, credit-if-funded (fn 1) the
;;          destination account and book entry, and last debit-if-funded
;;          the source account itself (no read: its own balance). The
;;          argument of every operation is the amount (int64) and the
;;          busy-ns (uint32), little endian. An event that does not decode
;;          declares nothing.
;;   apply  each operation first spins for the event's busy-ns (the Go
;;          plugin's busy.Spin loop), then: credit adds the amount; the
;;          if-funded functions abort when the source balance (read 0, or
;;          the own balance without reads) is below the amount, and
;;          debit-if-funded also when the own balance is, so a transfer
;;          commits only when both the source account and the source book
;;          entry hold the amount; a result that overflows int64 aborts. A balance that is not 0 or 8 bytes
;;          fails the batch with the Go plugin's message.
;;   post   one output per event, with the event's key and time and no
;;          headers, whose value is
;;            deposit committed|aborted <account> <book entry>
;;            transfer committed|aborted <src account> <src book> <dst account> <dst book>
;;          the balances each event read before changing them, "-" for one
;;          its transaction never read. An event that does not decode is
;;          dead-lettered with the decoder's message ("ledger event: field
;;          flags at byte 1: unknown flag bits").
;;
;; No configuration, as upper. See sdk/wat/reference/transactional.wat for
;; the transactional ABI explained step by step.
;;
;; Build:  wat2wasm ledger.wat -o ledger.wasm
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (import "sluice" "txn_plan" (func $txn_plan (param i32 i32)))

  (memory (export "memory") 2)

  ;; The strings of messages, NUL-terminated, one per 128-byte slot, each
  ;; with a global holding its address: $S_ texts, $F_ event field names,
  ;; $R_ reasons, $W_ the words of the result text.
  (global $S_NO_CONFIG i32 (i32.const 1024))
  (data (i32.const 1024) "invalid configuration: this operator takes no configuration (it registers no sluice.Configure handler)")
  (global $S_MALFORMED i32 (i32.const 1152))
  (data (i32.const 1152) "input batch: malformed")
  (global $S_BAD_OUTCOMES i32 (i32.const 1280))
  (data (i32.const 1280) "post: malformed outcomes")
  (global $S_BAD_REQUEST i32 (i32.const 1408))
  (data (i32.const 1408) "apply: malformed request")
  (global $S_APPLY_EVENT i32 (i32.const 1536))
  (data (i32.const 1536) "apply: event ")
  (global $S_OPERATION i32 (i32.const 1664))
  (data (i32.const 1664) " operation ")
  (global $S_FUNCTION i32 (i32.const 1792))
  (data (i32.const 1792) ": function ")
  (global $S_FAILED i32 (i32.const 1920))
  (data (i32.const 1920) " failed: ")
  (global $S_NAMES_FUNCTION i32 (i32.const 2048))
  (data (i32.const 2048) " names function ")
  (global $S_HAS_3 i32 (i32.const 2176))
  (data (i32.const 2176) ", but the operator has 3 functions (Txn.Funcs)")
  (global $S_OP_ON_KEY i32 (i32.const 2304))
  (data (i32.const 2304) "ledger: operation on key ")
  (global $S_ARG_OF i32 (i32.const 2432))
  (data (i32.const 2432) ": argument of ")
  (global $S_WANT_12 i32 (i32.const 2560))
  (data (i32.const 2560) " bytes, want 12")
  (global $S_LEDGER_KEY i32 (i32.const 2688))
  (data (i32.const 2688) "ledger: key ")
  (global $S_COLON i32 (i32.const 2816))
  (data (i32.const 2816) ": ")
  (global $S_BALANCE_LENGTH i32 (i32.const 2944))
  (data (i32.const 2944) "ledger balance: field balance at byte 0: length ")
  (global $S_WANT_0_8 i32 (i32.const 3072))
  (data (i32.const 3072) ", want 0 or 8")
  (global $S_SOURCE_ACCOUNT i32 (i32.const 3200))
  (data (i32.const 3200) "source account")
  (global $S_EVENT_FIELD i32 (i32.const 3328))
  (data (i32.const 3328) "ledger event: field ")
  (global $S_AT_BYTE i32 (i32.const 3456))
  (data (i32.const 3456) " at byte ")
  (global $F_TAG i32 (i32.const 3584))
  (data (i32.const 3584) "tag")
  (global $F_FLAGS i32 (i32.const 3712))
  (data (i32.const 3712) "flags")
  (global $F_ACCOUNT i32 (i32.const 3840))
  (data (i32.const 3840) "account")
  (global $F_BOOK i32 (i32.const 3968))
  (data (i32.const 3968) "book")
  (global $F_DST_ACCOUNT i32 (i32.const 4096))
  (data (i32.const 4096) "dst account")
  (global $F_DST_BOOK i32 (i32.const 4224))
  (data (i32.const 4224) "dst book")
  (global $F_AMOUNT i32 (i32.const 4352))
  (data (i32.const 4352) "amount")
  (global $F_BUSY i32 (i32.const 4480))
  (data (i32.const 4480) "busy-ns")
  (global $F_END i32 (i32.const 4608))
  (data (i32.const 4608) "end")
  (global $R_TRUNCATED i32 (i32.const 4736))
  (data (i32.const 4736) "truncated")
  (global $R_OVERFLOW i32 (i32.const 4864))
  (data (i32.const 4864) "varint overflows 64 bits")
  (global $R_OVER i32 (i32.const 4992))
  (data (i32.const 4992) "out of range (over ")
  (global $R_MAX_KEY i32 (i32.const 5120))
  (data (i32.const 5120) "99999999)")
  (global $R_MAX_U32 i32 (i32.const 5248))
  (data (i32.const 5248) "4294967295)")
  (global $R_MAX_I63 i32 (i32.const 5376))
  (data (i32.const 5376) "2^63-1)")
  (global $R_FLAGS i32 (i32.const 5504))
  (data (i32.const 5504) "unknown flag bits")
  (global $R_TAG i32 (i32.const 5632))
  (data (i32.const 5632) "not a Streaming Ledger event (tag 0x")
  (global $R_TAG_WANT i32 (i32.const 5760))
  (data (i32.const 5760) ", want 0x4c)")
  (global $R_TRAILING i32 (i32.const 5888))
  (data (i32.const 5888) " trailing bytes")
  (global $W_DEPOSIT i32 (i32.const 6016))
  (data (i32.const 6016) "deposit")
  (global $W_TRANSFER i32 (i32.const 6144))
  (data (i32.const 6144) "transfer")
  (global $W_COMMITTED i32 (i32.const 6272))
  (data (i32.const 6272) " committed")
  (global $W_ABORTED i32 (i32.const 6400))
  (data (i32.const 6400) " aborted")
  (global $W_UNREAD i32 (i32.const 6528))
  (data (i32.const 6528) " -")
  (global $S_HEX i32 (i32.const 6656))
  (data (i32.const 6656) "0123456789abcdef")
  (global $S_ESCAPES i32 (i32.const 6784))
  (data (i32.const 6784) "abtnvfr")
  ;; string table ends at 6912


  ;; ---------------------------------------------------------------
  ;; The runtime shared by the conformance modules (see wordcount.wat).
  ;; ---------------------------------------------------------------

  (global $heap_base (mut i32) (i32.const 65536))
  (global $brk (mut i32) (i32.const 65536))
  (global $pending (mut i32) (i32.const 0))
  (global $out_base (mut i32) (i32.const 0))
  (global $out_end (mut i32) (i32.const 0))
  (global $out_count (mut i32) (i32.const 0))
  (global $msg_base (mut i32) (i32.const 0))
  (global $mp (mut i32) (i32.const 0))
  (global $dw (mut i32) (i32.const 0))

  (func (export "sluice_abi_version") (result i32) (i32.const 1))

  ;; sluice_kinds (section 12): the module serves transactional operators (bit 16);
  ;; `sluice plugin build` writes that into its sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 16))

  (func $ensure (param $top i32)
    (local $need i32)
    (local.set $need (i32.shr_u (i32.add (local.get $top) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (unreachable))))))

  ;; sluice_alloc. A transactional guest must keep the region it handed
  ;; out valid until its next sluice_alloc, because the host writes apply
  ;; request after apply request into it (ABI.md sections 2.2, 10.6): this
  ;; allocator does, since it reuses memory only on the next call.
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

  (func $out_start
    (global.set $out_base (global.get $brk))
    (global.set $out_end (i32.add (global.get $brk) (i32.const 4)))
    (global.set $out_count (i32.const 0))
    (call $ensure (global.get $out_end)))

  (func $flush
    (if (global.get $out_count)
      (then
        (i32.store align=1 (global.get $out_base) (global.get $out_count))
        (call $emit (global.get $out_base) (i32.sub (global.get $out_end) (global.get $out_base)))
        (global.set $out_end (i32.add (global.get $out_base) (i32.const 4)))
        (global.set $out_count (i32.const 0)))))

  (func $m_start (param $p i32)
    (global.set $msg_base (local.get $p))
    (global.set $mp (local.get $p)))

  (func $m_len (result i32) (i32.sub (global.get $mp) (global.get $msg_base)))

  (func $m_byte (param $c i32)
    (call $ensure (i32.add (global.get $mp) (i32.const 1)))
    (i32.store8 (global.get $mp) (local.get $c))
    (global.set $mp (i32.add (global.get $mp) (i32.const 1))))

  (func $m_i32 (param $v i32)
    (call $ensure (i32.add (global.get $mp) (i32.const 4)))
    (i32.store align=1 (global.get $mp) (local.get $v))
    (global.set $mp (i32.add (global.get $mp) (i32.const 4))))

  (func $m_i64 (param $v i64)
    (call $ensure (i32.add (global.get $mp) (i32.const 8)))
    (i64.store align=1 (global.get $mp) (local.get $v))
    (global.set $mp (i32.add (global.get $mp) (i32.const 8))))

  (func $m_bytes (param $p i32) (param $n i32)
    (call $ensure (i32.add (global.get $mp) (local.get $n)))
    (memory.copy (global.get $mp) (local.get $p) (local.get $n))
    (global.set $mp (i32.add (global.get $mp) (local.get $n))))

  (func $m_str (param $p i32)
    (local $c i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.tee $c (i32.load8_u (local.get $p)))))
        (call $m_byte (local.get $c))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $next))))

  (func $m_hex (param $v i32) (param $digits i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $digits)))
        (local.set $digits (i32.sub (local.get $digits) (i32.const 1)))
        (call $m_byte (i32.load8_u (i32.add (global.get $S_HEX)
          (i32.and (i32.shr_u (local.get $v) (i32.shl (local.get $digits) (i32.const 2))) (i32.const 15)))))
        (br $next))))

  ;; m_uint appends v in decimal (strconv.AppendUint).
  (func $m_uint (param $v i64)
    (local $p i32) (local $n i32)
    ;; digits are produced last first into 20 bytes of scratch after mp
    (call $ensure (i32.add (global.get $mp) (i32.const 40)))
    (local.set $p (i32.add (global.get $mp) (i32.const 40)))
    (loop $digits
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 0x30) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    (local.set $n (i32.sub (i32.add (global.get $mp) (i32.const 40)) (local.get $p)))
    (memory.copy (global.get $mp) (local.get $p) (local.get $n))
    (global.set $mp (i32.add (global.get $mp) (local.get $n))))

  ;; m_int appends v in decimal (strconv.AppendInt).
  (func $m_int (param $v i64)
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then
        (call $m_byte (i32.const 0x2d))
        (local.set $v (i64.sub (i64.const 0) (local.get $v)))))   ;; MinInt64 stays 2^63 unsigned
    (call $m_uint (local.get $v)))

  ;; utf8, is_print, m_quote: Go's strconv.Quote, as in wordcount.wat.
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

  (global $print_table i32 (i32.const 8192))
  (global $print_ranges i32 (i32.const 710))
  (func $is_print (param $r i32) (result i32)
    (local $lo i32) (local $hi i32) (local $mid i32)
    (if (i32.lt_u (local.get $r) (i32.const 0x80))
      (then (return (i32.lt_u (i32.sub (local.get $r) (i32.const 0x20)) (i32.const 0x5f)))))
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
              (call $m_byte (i32.const 0x5c)) (call $m_byte (i32.const 0x78))
              (call $m_hex (i32.load8_u (local.get $p)) (i32.const 2))
              (br $rune_done)))
          (if (i32.or (i32.eq (local.get $r) (i32.const 0x22)) (i32.eq (local.get $r) (i32.const 0x5c)))
            (then
              (call $m_byte (i32.const 0x5c)) (call $m_byte (local.get $r))
              (br $rune_done)))
          (if (call $is_print (local.get $r))
            (then (call $m_bytes (local.get $p) (local.get $w)) (br $rune_done)))
          (call $m_byte (i32.const 0x5c))
          (if (i32.lt_u (i32.sub (local.get $r) (i32.const 7)) (i32.const 7))
            (then
              (call $m_byte (i32.load8_u (i32.add (global.get $S_ESCAPES) (i32.sub (local.get $r) (i32.const 7)))))
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

  ;; The printable ranges above U+007F (Go's strconv.IsPrint), 710 pairs
  ;; of u32 lo, hi: see sdk/wat/README.md, "Go's %q".
  (data (i32.const 8192)  "\a1\00\00\00\ac\00\00\00\ae\00\00\00\77\03\00\00\7a\03\00\00\7f\03\00\00\84\03\00\00\8a\03\00\00"
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
  ;; Configuration: none (see upper.wat).
  ;; ---------------------------------------------------------------

  (func $ascii_space (param $c i32) (result i32)
    (i32.or (i32.eq (local.get $c) (i32.const 0x20))
            (i32.lt_u (i32.sub (local.get $c) (i32.const 9)) (i32.const 5))))

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
                 (i32.eq (i32.load align=1 (local.get $p)) (i32.const 0x6c6c756e)))
      (then (return (i32.const 0))))
    (if (i32.and (i32.eq (local.get $n) (i32.const 2))
                 (i32.eq (i32.load16_u align=1 (local.get $p)) (i32.const 0x7d7b)))
      (then (return (i32.const 0))))
    (call $m_start (global.get $brk))
    (call $m_str (global.get $S_NO_CONFIG))
    (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
    (i32.const -3))

  ;; ---------------------------------------------------------------
  ;; Records (see wordcount.wat).
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
  ;; Events: txn/apps/ledger/event's DecodeEvent, with its messages.
  ;; ---------------------------------------------------------------

  ;; The decoded event.
  (global $ev_deposit (mut i32) (i32.const 0))
  (global $ev_account (mut i32) (i32.const 0))
  (global $ev_book (mut i32) (i32.const 0))
  (global $ev_dst_account (mut i32) (i32.const 0))
  (global $ev_dst_book (mut i32) (i32.const 0))
  (global $ev_amount (mut i64) (i64.const 0))
  (global $ev_busy (mut i32) (i32.const 0))
  ;; The first failure: field, byte offset, reason (a string), and for
  ;; some reasons a number: the tag byte, or the trailing byte count.
  (global $ef_field (mut i32) (i32.const 0))
  (global $ef_off (mut i32) (i32.const 0))
  (global $ef_reason (mut i32) (i32.const 0))
  (global $ef_arg (mut i32) (i32.const 0))
  ;; The reader's state over [ev_p, ev_p+ev_n).
  (global $ev_p (mut i32) (i32.const 0))
  (global $ev_n (mut i32) (i32.const 0))
  (global $ev_off (mut i32) (i32.const 0))
  (global $ev_v (mut i64) (i64.const 0))

  (func $efail (param $field i32) (param $off i32) (param $reason i32) (result i32)
    (global.set $ef_field (local.get $field))
    (global.set $ef_off (local.get $off))
    (global.set $ef_reason (local.get $reason))
    (i32.const 0))

  ;; uvarint reads an unsigned LEB128 varint into $ev_v: 1, or 0 after
  ;; recording the failure (truncated; a tenth byte over 1 overflows).
  (func $uvarint (param $field i32) (result i32)
    (local $i i32) (local $c i32) (local $v i64) (local $at i32)
    (block $truncated
      (loop $next
        (local.set $at (i32.add (global.get $ev_off) (local.get $i)))
        (br_if $truncated (i32.ge_u (local.get $at) (global.get $ev_n)))
        (local.set $c (i32.load8_u (i32.add (global.get $ev_p) (local.get $at))))
        (if (i32.eq (local.get $i) (i32.const 9))
          (then
            (if (i32.gt_u (local.get $c) (i32.const 1))
              (then (return (call $efail (local.get $field) (global.get $ev_off) (global.get $R_OVERFLOW)))))
            (global.set $ev_off (i32.add (global.get $ev_off) (i32.const 10)))
            (global.set $ev_v (i64.or (local.get $v) (i64.shl (i64.extend_i32_u (local.get $c)) (i64.const 63))))
            (return (i32.const 1))))
        (if (i32.lt_u (local.get $c) (i32.const 0x80))
          (then
            (global.set $ev_off (i32.add (local.get $at) (i32.const 1)))
            (global.set $ev_v (i64.or (local.get $v)
              (i64.shl (i64.extend_i32_u (local.get $c)) (i64.extend_i32_u (i32.mul (local.get $i) (i32.const 7))))))
            (return (i32.const 1))))
        (local.set $v (i64.or (local.get $v)
          (i64.shl (i64.extend_i32_u (i32.and (local.get $c) (i32.const 0x7f))) (i64.extend_i32_u (i32.mul (local.get $i) (i32.const 7))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (call $efail (local.get $field) (global.get $ev_off) (global.get $R_TRUNCATED)))

  ;; uvarint_max reads a varint that must be at most max (inclusive);
  ;; maxstr is the reason's bound.
  (func $uvarint_max (param $field i32) (param $max i64) (param $maxstr i32) (result i32)
    (local $start i32)
    (local.set $start (global.get $ev_off))
    (if (i32.eqz (call $uvarint (local.get $field))) (then (return (i32.const 0))))
    (if (i64.gt_u (global.get $ev_v) (local.get $max))
      (then
        (global.set $ef_arg (local.get $maxstr))
        (return (call $efail (local.get $field) (local.get $start) (global.get $R_OVER)))))
    (i32.const 1))

  ;; decode_event decodes the event at [p, p+n): 1, or 0 with the failure.
  (func $decode_event (param $p i32) (param $n i32) (result i32)
    (local $c i32)
    (global.set $ev_p (local.get $p))
    (global.set $ev_n (local.get $n))
    (if (i32.eqz (local.get $n)) (then (return (call $efail (global.get $F_TAG) (i32.const 0) (global.get $R_TRUNCATED)))))
    (local.set $c (i32.load8_u (local.get $p)))
    (if (i32.ne (local.get $c) (i32.const 0x4c))
      (then
        (global.set $ef_arg (local.get $c))
        (return (call $efail (global.get $F_TAG) (i32.const 0) (global.get $R_TAG)))))
    (if (i32.lt_u (local.get $n) (i32.const 2)) (then (return (call $efail (global.get $F_FLAGS) (i32.const 1) (global.get $R_TRUNCATED)))))
    (local.set $c (i32.load8_u offset=1 (local.get $p)))
    (if (i32.gt_u (local.get $c) (i32.const 1)) (then (return (call $efail (global.get $F_FLAGS) (i32.const 1) (global.get $R_FLAGS)))))
    (global.set $ev_deposit (local.get $c))
    (global.set $ev_off (i32.const 2))
    (if (i32.eqz (call $uvarint_max (global.get $F_ACCOUNT) (i64.const 99999999) (global.get $R_MAX_KEY))) (then (return (i32.const 0))))
    (global.set $ev_account (i32.wrap_i64 (global.get $ev_v)))
    (if (i32.eqz (call $uvarint_max (global.get $F_BOOK) (i64.const 99999999) (global.get $R_MAX_KEY))) (then (return (i32.const 0))))
    (global.set $ev_book (i32.wrap_i64 (global.get $ev_v)))
    (if (i32.eqz (global.get $ev_deposit))
      (then
        (if (i32.eqz (call $uvarint_max (global.get $F_DST_ACCOUNT) (i64.const 99999999) (global.get $R_MAX_KEY))) (then (return (i32.const 0))))
        (global.set $ev_dst_account (i32.wrap_i64 (global.get $ev_v)))
        (if (i32.eqz (call $uvarint_max (global.get $F_DST_BOOK) (i64.const 99999999) (global.get $R_MAX_KEY))) (then (return (i32.const 0))))
        (global.set $ev_dst_book (i32.wrap_i64 (global.get $ev_v)))))
    (if (i32.eqz (call $uvarint_max (global.get $F_AMOUNT) (i64.const 0x7fffffffffffffff) (global.get $R_MAX_I63))) (then (return (i32.const 0))))
    (global.set $ev_amount (global.get $ev_v))
    (if (i32.eqz (call $uvarint_max (global.get $F_BUSY) (i64.const 0xffffffff) (global.get $R_MAX_U32))) (then (return (i32.const 0))))
    (global.set $ev_busy (i32.wrap_i64 (global.get $ev_v)))
    (if (i32.ne (global.get $ev_off) (local.get $n))
      (then
        (global.set $ef_arg (i32.sub (local.get $n) (global.get $ev_off)))
        (return (call $efail (global.get $F_END) (global.get $ev_off) (global.get $R_TRAILING)))))
    (i32.const 1))

  ;; m_event_error appends the failure's message:
  ;; "ledger event: field <field> at byte <off>: <reason>".
  (func $m_event_error
    (local $r i32)
    (call $m_str (global.get $S_EVENT_FIELD))
    (call $m_str (global.get $ef_field))
    (call $m_str (global.get $S_AT_BYTE))
    (call $m_uint (i64.extend_i32_u (global.get $ef_off)))
    (call $m_str (global.get $S_COLON))
    (local.set $r (global.get $ef_reason))
    (if (i32.eq (local.get $r) (global.get $R_TRAILING))
      (then (call $m_uint (i64.extend_i32_u (global.get $ef_arg)))))
    (call $m_str (local.get $r))
    (if (i32.eq (local.get $r) (global.get $R_OVER)) (then (call $m_str (global.get $ef_arg))))
    (if (i32.eq (local.get $r) (global.get $R_TAG))
      (then
        (call $m_hex (global.get $ef_arg) (i32.const 2))
        (call $m_str (global.get $R_TAG_WANT)))))

  ;; ---------------------------------------------------------------
  ;; Plan.
  ;; ---------------------------------------------------------------

  ;; m_key appends the 8-digit decimal key of k (wire.AppendKey).
  (func $m_key (param $k i32)
    (local $i i32)
    (call $ensure (i32.add (global.get $mp) (i32.const 8)))
    (local.set $i (i32.const 8))
    (loop $digits
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (i32.store8 (i32.add (global.get $mp) (local.get $i)) (i32.add (i32.const 0x30) (i32.rem_u (local.get $k) (i32.const 10))))
      (local.set $k (i32.div_u (local.get $k) (i32.const 10)))
      (br_if $digits (local.get $i)))
    (global.set $mp (i32.add (global.get $mp) (i32.const 8))))

  ;; decl appends one operation declaration (ABI.md section 10.5) of
  ;; event i: function fn writes key k of table t, reading key src of
  ;; accounts when reads is 1, with the event's amount and busy-ns as
  ;; argument.
  (func $decl (param $i i32) (param $fn i32) (param $t i32) (param $k i32) (param $reads i32) (param $src i32)
    (call $m_i32 (local.get $i))            ;; event
    (call $m_i32 (local.get $fn))           ;; fn
    (call $m_i32 (i32.const 0))             ;; flags: deterministic
    (call $m_i32 (local.get $t))            ;; table
    (call $m_i32 (i32.const 8))             ;; key
    (call $m_key (local.get $k))
    (call $m_i32 (local.get $reads))        ;; read_count
    (if (local.get $reads)
      (then
        (call $m_i32 (i32.const 0))         ;; read: table accounts
        (call $m_i32 (i32.const 8))
        (call $m_key (local.get $src))))
    (call $m_i32 (i32.const 12))            ;; arg: amount, busy-ns
    (call $m_i64 (global.get $ev_amount))
    (call $m_i32 (global.get $ev_busy)))

  ;; sluice_plan declares each event's operations, gathering the
  ;; declarations in scratch memory and handing them to txn_plan once per
  ;; MiB and at the end.
  (func (export "sluice_plan") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $count i32) (local $i i32) (local $off i32) (local $next i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (call $m_start (global.get $brk))
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (local.set $count (i32.load align=1 (local.get $ptr)))
      (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
      (block $events_done
        (loop $events
          (br_if $events_done (i32.eq (local.get $i) (local.get $count)))
          (br_if $bad (i32.eqz (local.tee $next (call $rec (local.get $off) (local.get $end)))))
          (if (call $decode_event (global.get $r_val) (global.get $r_vlen))
            (then
              (if (global.get $ev_deposit)
                (then
                  (call $decl (local.get $i) (i32.const 0) (i32.const 0) (global.get $ev_account) (i32.const 0) (i32.const 0))
                  (call $decl (local.get $i) (i32.const 0) (i32.const 1) (global.get $ev_book) (i32.const 0) (i32.const 0)))
                (else
                  (call $decl (local.get $i) (i32.const 2) (i32.const 1) (global.get $ev_book) (i32.const 1) (global.get $ev_account))
                  (call $decl (local.get $i) (i32.const 1) (i32.const 0) (global.get $ev_dst_account) (i32.const 1) (global.get $ev_account))
                  (call $decl (local.get $i) (i32.const 1) (i32.const 1) (global.get $ev_dst_book) (i32.const 1) (global.get $ev_account))
                  (call $decl (local.get $i) (i32.const 2) (i32.const 0) (global.get $ev_account) (i32.const 0) (i32.const 0))))))
          (if (i32.ge_u (call $m_len) (i32.const 0x100000))
            (then
              (call $txn_plan (global.get $msg_base) (call $m_len))
              (global.set $mp (global.get $msg_base))))
          (local.set $off (local.get $next))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $events)))
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      (if (call $m_len) (then (call $txn_plan (global.get $msg_base) (call $m_len))))
      (global.set $pending (i32.const 0))
      (return (i32.const 0)))
    (call $m_start (global.get $brk))
    (call $m_str (global.get $S_MALFORMED))
    (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
    (global.set $pending (i32.const 0))
    (i32.const -2))

  ;; ---------------------------------------------------------------
  ;; Apply.
  ;; ---------------------------------------------------------------

  ;; The request's fields (ABI.md section 10.5).
  (global $q_fn (mut i32) (i32.const 0))
  (global $q_event (mut i32) (i32.const 0))
  (global $q_op (mut i32) (i32.const 0))
  (global $q_key (mut i32) (i32.const 0))
  (global $q_klen (mut i32) (i32.const 0))
  (global $q_own (mut i32) (i32.const 0))
  (global $q_ownlen (mut i32) (i32.const 0))
  (global $q_reads (mut i32) (i32.const 0))
  (global $q_read0 (mut i32) (i32.const 0))
  (global $q_read0len (mut i32) (i32.const 0))
  (global $q_arg (mut i32) (i32.const 0))
  (global $q_arglen (mut i32) (i32.const 0))
  ;; The value of the last busy-work loop, kept so the loop has a use.
  (global $spun (mut i64) (i64.const 0))
  ;; A balance decoded by $balance.
  (global $bal (mut i64) (i64.const 0))

  ;; bytes reads a bytes field (len:u32 byte{len}) at p, before end: it
  ;; returns the offset after it, or 0 when it does not fit; the bytes'
  ;; address is p+4.
  (func $bytes (param $p i32) (param $end i32) (result i32)
    (local $n i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
    (local.set $n (i32.load align=1 (local.get $p)))
    (if (i32.gt_u (local.get $n) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 4))) (then (return (i32.const 0))))
    (i32.add (i32.add (local.get $p) (i32.const 4)) (local.get $n)))

  ;; decode_request checks the request at [p, end) and fills the $q_
  ;; globals: 1, or 0 when it is malformed.
  (func $decode_request (param $p i32) (param $end i32) (result i32)
    (local $q i32) (local $n i32) (local $i i32) (local $found i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 28)) (then (return (i32.const 0))))
    (global.set $q_fn (i32.load offset=8 align=1 (local.get $p)))
    (global.set $q_event (i32.load offset=12 align=1 (local.get $p)))
    (global.set $q_op (i32.load offset=16 align=1 (local.get $p)))
    (local.set $q (i32.add (local.get $p) (i32.const 28)))
    (global.set $q_key (i32.add (local.get $q) (i32.const 4)))
    (if (i32.eqz (local.tee $q (call $bytes (local.get $q) (local.get $end)))) (then (return (i32.const 0))))
    (global.set $q_klen (i32.sub (local.get $q) (global.get $q_key)))
    (global.set $q_own (i32.add (local.get $q) (i32.const 4)))
    (if (i32.eqz (local.tee $q (call $bytes (local.get $q) (local.get $end)))) (then (return (i32.const 0))))
    (global.set $q_ownlen (i32.sub (local.get $q) (global.get $q_own)))
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $q)) (i32.const 4)) (then (return (i32.const 0))))
    (local.set $n (i32.load align=1 (local.get $q)))
    (local.set $q (i32.add (local.get $q) (i32.const 4)))
    ;; each read takes 16 bytes at least
    (if (i32.gt_u (local.get $n) (i32.shr_u (i32.sub (local.get $end) (local.get $q)) (i32.const 4))) (then (return (i32.const 0))))
    (global.set $q_reads (local.get $n))
    (block $done
      (loop $reads
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $q)) (i32.const 4)) (then (return (i32.const 0))))
        (if (i32.eqz (local.tee $q (call $bytes (i32.add (local.get $q) (i32.const 4)) (local.get $end)))) (then (return (i32.const 0))))
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $q)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $found (i32.load align=1 (local.get $q)))
        (if (i32.gt_u (local.get $found) (i32.const 1)) (then (return (i32.const 0))))
        (if (i32.eqz (local.get $i)) (then (global.set $q_read0 (i32.add (local.get $q) (i32.const 8)))))
        (if (i32.eqz (local.tee $q (call $bytes (i32.add (local.get $q) (i32.const 4)) (local.get $end)))) (then (return (i32.const 0))))
        (if (i32.eqz (local.get $i)) (then (global.set $q_read0len (i32.sub (local.get $q) (global.get $q_read0)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $reads)))
    (global.set $q_arg (i32.add (local.get $q) (i32.const 4)))
    (if (i32.eqz (local.tee $q (call $bytes (local.get $q) (local.get $end)))) (then (return (i32.const 0))))
    (global.set $q_arglen (i32.sub (local.get $q) (global.get $q_arg)))
    (i32.eq (local.get $q) (local.get $end)))

  ;; balance decodes the balance [p, p+n) into $bal: 1, or 0 when its
  ;; length is neither 0 nor 8 (event.DecodeBalance).
  (func $balance (param $p i32) (param $n i32) (result i32)
    (if (i32.eqz (local.get $n)) (then (global.set $bal (i64.const 0)) (return (i32.const 1))))
    (if (i32.ne (local.get $n) (i32.const 8)) (then (return (i32.const 0))))
    (global.set $bal (i64.load align=1 (local.get $p)))
    (i32.const 1))

  ;; fail_start starts the message of a failed operation at scratch p:
  ;; "apply: event E operation O: function F failed: ".
  (func $fail_start (param $p i32)
    (call $m_start (local.get $p))
    (call $m_str (global.get $S_APPLY_EVENT))
    (call $m_uint (i64.extend_i32_u (global.get $q_event)))
    (call $m_str (global.get $S_OPERATION))
    (call $m_uint (i64.extend_i32_u (global.get $q_op)))
    (call $m_str (global.get $S_FUNCTION))
    (call $m_uint (i64.extend_i32_u (global.get $q_fn)))
    (call $m_str (global.get $S_FAILED)))

  ;; fail_balance logs the failure of a balance of n bytes at key
  ;; [k, k+kn) and returns StatusError.
  (func $fail_balance (param $at i32) (param $k i32) (param $kn i32) (param $n i32) (result i32)
    (call $fail_start (local.get $at))
    (call $m_str (global.get $S_LEDGER_KEY))
    (call $m_quote (local.get $k) (local.get $kn))
    (call $m_str (global.get $S_COLON))
    (call $m_str (global.get $S_BALANCE_LENGTH))
    (call $m_uint (i64.extend_i32_u (local.get $n)))
    (call $m_str (global.get $S_WANT_0_8))
    (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
    (i32.const -2))

  ;; spin is the Go plugin's busy.Spin: about ns nanoseconds of
  ;; deterministic work.
  (func $spin (param $ns i32)
    (local $n i64) (local $h i64)
    (local.set $n (i64.div_u (i64.mul (i64.extend_i32_u (local.get $ns)) (i64.const 600)) (i64.const 1000)))
    (local.set $h (i64.or (i64.extend_i32_u (local.get $ns)) (i64.const 1)))
    (block $done
      (loop $next
        (br_if $done (i64.eqz (local.get $n)))
        (local.set $h (i64.xor (local.get $h) (i64.shr_u (local.get $h) (i64.const 31))))
        (local.set $h (i64.mul (local.get $h) (i64.const 0x9e3779b97f4a7c15)))
        (local.set $n (i64.sub (local.get $n) (i64.const 1)))
        (br $next)))
    (global.set $spun (local.get $h)))

  ;; sluice_apply computes one operation: FnCredit (0), FnCreditIfFunded
  ;; (1) or FnDebitIfFunded (2). It writes the new balance at 14336 and
  ;; points the result slot at it (ApplyWrite), or returns ApplyAbort
  ;; (3), or StatusError (-2) after logging why.
  (func (export "sluice_apply") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $amount i64) (local $own i64) (local $src i64) (local $v i64) (local $scratch i32)
    ;; The region stays valid, and ours only to read, until the next
    ;; sluice_alloc: the host may write the next request into it.
    (global.set $pending (i32.const 0))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    ;; Messages are built after every region handed out (ABI.md 2.2: the
    ;; apply region, even its unused tail, is not ours to write).
    (local.set $scratch (global.get $brk))
    (if (i32.eqz (call $decode_request (local.get $ptr) (local.get $end)))
      (then
        (call $m_start (local.get $scratch))
        (call $m_str (global.get $S_BAD_REQUEST))
        (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
        (return (i32.const -2))))
    (if (i32.gt_u (global.get $q_fn) (i32.const 2))
      (then
        (call $m_start (local.get $scratch))
        (call $m_str (global.get $S_APPLY_EVENT))
        (call $m_uint (i64.extend_i32_u (global.get $q_event)))
        (call $m_str (global.get $S_OPERATION))
        (call $m_uint (i64.extend_i32_u (global.get $q_op)))
        (call $m_str (global.get $S_NAMES_FUNCTION))
        (call $m_uint (i64.extend_i32_u (global.get $q_fn)))
        (call $m_str (global.get $S_HAS_3))
        (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
        (return (i32.const -2))))
    ;; args: amount and busy-ns
    (if (i32.ne (global.get $q_arglen) (i32.const 12))
      (then
        (call $fail_start (local.get $scratch))
        (call $m_str (global.get $S_OP_ON_KEY))
        (call $m_quote (global.get $q_key) (global.get $q_klen))
        (call $m_str (global.get $S_ARG_OF))
        (call $m_uint (i64.extend_i32_u (global.get $q_arglen)))
        (call $m_str (global.get $S_WANT_12))
        (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
        (return (i32.const -2))))
    (call $spin (i32.load offset=8 align=1 (global.get $q_arg)))
    (local.set $amount (i64.load align=1 (global.get $q_arg)))
    ;; the own balance
    (if (i32.eqz (call $balance (global.get $q_own) (global.get $q_ownlen)))
      (then (return (call $fail_balance (local.get $scratch) (global.get $q_key) (global.get $q_klen) (global.get $q_ownlen)))))
    (local.set $own (global.get $bal))
    (if (i32.eqz (global.get $q_fn))
      (then
        ;; credit: own + amount, aborting on overflow
        (local.set $v (i64.add (local.get $own) (local.get $amount)))
        (if (i32.ne (i64.gt_s (local.get $v) (local.get $own)) (i64.gt_s (local.get $amount) (i64.const 0)))
          (then (return (i32.const 3)))))
      (else
        ;; funded: the source balance (read 0), or the own one, covers it
        (local.set $src (local.get $own))
        (if (global.get $q_reads)
          (then
            (if (i32.eqz (call $balance (global.get $q_read0) (global.get $q_read0len)))
              (then (return (call $fail_balance (local.get $scratch) (global.get $S_SOURCE_ACCOUNT) (i32.const 14) (global.get $q_read0len)))))
            (local.set $src (global.get $bal))))
        (if (i64.lt_s (local.get $src) (local.get $amount)) (then (return (i32.const 3))))
        ;; a debit also needs the own balance to cover it
        (if (i32.and (i32.eq (global.get $q_fn) (i32.const 2)) (i64.lt_s (local.get $own) (local.get $amount)))
          (then (return (i32.const 3))))
        (if (i32.eq (global.get $q_fn) (i32.const 1))
          (then
            (local.set $v (i64.add (local.get $own) (local.get $amount)))
            (if (i32.ne (i64.gt_s (local.get $v) (local.get $own)) (i64.gt_s (local.get $amount) (i64.const 0)))
              (then (return (i32.const 3)))))
          (else
            (local.set $v (i64.sub (local.get $own) (local.get $amount)))
            (if (i32.ne (i64.lt_s (local.get $v) (local.get $own)) (i64.gt_s (local.get $amount) (i64.const 0)))
              (then (return (i32.const 3))))))))
    ;; ApplyWrite: the value's pointer and length in the result slot
    (i64.store (i32.const 14336) (local.get $v))
    (i32.store align=1 (local.get $ptr) (i32.const 14336))
    (i32.store offset=4 align=1 (local.get $ptr) (i32.const 8))
    (i32.const 0))

  ;; ---------------------------------------------------------------
  ;; Post.
  ;; ---------------------------------------------------------------

  ;; What post reads of an event's outcome, for its first three
  ;; operations: whether each ran ($o_exec), the own value's bytes, and
  ;; for the first one its declared read 0 ($o_read: 1 when present).
  (global $o_committed (mut i32) (i32.const 0))
  (global $o_ops (mut i32) (i32.const 0))
  (global $o_read (mut i32) (i32.const 0))
  (global $o_read_p (mut i32) (i32.const 0))
  (global $o_read_n (mut i32) (i32.const 0))
  ;; per operation m < 3: executed, own ptr, own len at 14352 + 12m

  ;; value reads a value (found:u32 bytes) at p: the offset after it, or
  ;; 0; the bytes are at p+8, their length at p+4.
  (func $value (param $p i32) (param $end i32) (result i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
    (if (i32.gt_u (i32.load align=1 (local.get $p)) (i32.const 1)) (then (return (i32.const 0))))
    (call $bytes (i32.add (local.get $p) (i32.const 4)) (local.get $end)))

  ;; outcome reads the event outcome at [p, end): the offset after it, or
  ;; 0 when it is malformed.
  (func $outcome (param $p i32) (param $end i32) (result i32)
    (local $ops i32) (local $m i32) (local $n i32) (local $j i32) (local $at i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 8)) (then (return (i32.const 0))))
    (global.set $o_committed (i32.load align=1 (local.get $p)))
    (if (i32.gt_u (global.get $o_committed) (i32.const 1)) (then (return (i32.const 0))))
    (local.set $ops (i32.load offset=4 align=1 (local.get $p)))
    (local.set $p (i32.add (local.get $p) (i32.const 8)))
    (if (i32.gt_u (local.get $ops) (i32.div_u (i32.sub (local.get $end) (local.get $p)) (i32.const 20))) (then (return (i32.const 0))))
    (global.set $o_ops (local.get $ops))
    (global.set $o_read (i32.const 0))
    (block $done
      (loop $op
        (br_if $done (i32.ge_u (local.get $m) (local.get $ops)))
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $at (i32.add (i32.const 14352) (i32.mul (local.get $m) (i32.const 12))))
        (if (i32.gt_u (i32.load align=1 (local.get $p)) (i32.const 1)) (then (return (i32.const 0))))
        (if (i32.lt_u (local.get $m) (i32.const 3))
          (then
            (i32.store (local.get $at) (i32.load align=1 (local.get $p)))
            (i32.store offset=4 (local.get $at) (i32.add (local.get $p) (i32.const 12)))
            (i32.store offset=8 (local.get $at) (i32.load offset=8 align=1 (local.get $p)))))
        ;; own value
        (if (i32.eqz (local.tee $p (call $value (i32.add (local.get $p) (i32.const 4)) (local.get $end)))) (then (return (i32.const 0))))
        ;; reads
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $n (i32.load align=1 (local.get $p)))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (if (i32.gt_u (local.get $n) (i32.shr_u (i32.sub (local.get $end) (local.get $p)) (i32.const 3))) (then (return (i32.const 0))))
        (if (i32.and (i32.eqz (local.get $m)) (i32.ne (local.get $n) (i32.const 0)))
          (then
            (global.set $o_read (i32.const 1))
            (global.set $o_read_p (i32.add (local.get $p) (i32.const 8)))
            (global.set $o_read_n (i32.load offset=4 align=1 (local.get $p)))))
        (local.set $j (i32.const 0))
        (block $reads_done
          (loop $reads
            (br_if $reads_done (i32.ge_u (local.get $j) (local.get $n)))
            (if (i32.eqz (local.tee $p (call $value (local.get $p) (local.get $end)))) (then (return (i32.const 0))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $reads)))
        ;; gets: table, key, value
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $n (i32.load align=1 (local.get $p)))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (if (i32.gt_u (local.get $n) (i32.shr_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4))) (then (return (i32.const 0))))
        (local.set $j (i32.const 0))
        (block $gets_done
          (loop $gets
            (br_if $gets_done (i32.ge_u (local.get $j) (local.get $n)))
            (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
            (if (i32.eqz (local.tee $p (call $bytes (i32.add (local.get $p) (i32.const 4)) (local.get $end)))) (then (return (i32.const 0))))
            (if (i32.eqz (local.tee $p (call $value (local.get $p) (local.get $end)))) (then (return (i32.const 0))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $gets)))
        (local.set $m (i32.add (local.get $m) (i32.const 1)))
        (br $op)))
    (local.get $p))

  ;; m_own appends operation m's own balance, or " -" when it did not
  ;; run: 1, or 0 when the balance does not decode.
  (func $m_own (param $m i32) (result i32)
    (local $at i32)
    (local.set $at (i32.add (i32.const 14352) (i32.mul (local.get $m) (i32.const 12))))
    (if (i32.or (i32.ge_u (local.get $m) (global.get $o_ops)) (i32.eqz (i32.load (local.get $at))))
      (then (call $m_str (global.get $W_UNREAD)) (return (i32.const 1))))
    (call $m_balance (i32.load offset=4 (local.get $at)) (i32.load offset=8 (local.get $at))))

  ;; m_balance appends " " and the balance [p, p+n): 1, or 0 when it does
  ;; not decode (its length is left in $bal).
  (func $m_balance (param $p i32) (param $n i32) (result i32)
    (if (i32.eqz (call $balance (local.get $p) (local.get $n)))
      (then (global.set $bal (i64.extend_i32_u (local.get $n))) (return (i32.const 0))))
    (call $m_byte (i32.const 0x20))
    (call $m_int (global.get $bal))
    (i32.const 1))

  ;; post_event emits event i's result (the $r_ globals hold the event,
  ;; the $o_ ones its outcome), or dead-letters it.
  (func $post_event (param $i i32)
    (local $o i32) (local $vlen_at i32) (local $ok i32)
    (if (i32.eqz (call $decode_event (global.get $r_val) (global.get $r_vlen)))
      (then
        (call $m_start (call $align8 (global.get $out_end)))
        (call $m_event_error)
        (call $reject (local.get $i) (global.get $msg_base) (call $m_len))
        (return)))
    ;; The output record, built at the end of the outputs.
    (call $m_start (global.get $out_end))
    (call $m_i32 (i32.const 0))                          ;; size, below
    (call $m_i32 (local.get $i))                         ;; origin
    (call $m_i32 (i32.const 0))                          ;; flags
    (call $m_i64 (global.get $r_time))
    (call $m_i32 (global.get $r_klen))
    (call $m_bytes (global.get $r_key) (global.get $r_klen))
    (local.set $vlen_at (global.get $mp))
    (call $m_i32 (i32.const 0))                          ;; value length, below
    (if (global.get $ev_deposit)
      (then (call $m_str (global.get $W_DEPOSIT)))
      (else (call $m_str (global.get $W_TRANSFER))))
    (if (global.get $o_committed)
      (then (call $m_str (global.get $W_COMMITTED)))
      (else (call $m_str (global.get $W_ABORTED))))
    (local.set $ok (i32.const 1))
    (block $balances
      (if (global.get $ev_deposit)
        (then
          (br_if $balances (i32.eqz (local.tee $ok (call $m_own (i32.const 0)))))
          (local.set $ok (call $m_own (i32.const 1)))
          (br $balances)))
      ;; a transfer: the source account (read 0 of operation 0), then the
      ;; own balances of operations 0, 1 and 2
      (if (i32.and (i32.ne (global.get $o_read) (i32.const 0))
                   (i32.and (i32.ne (global.get $o_ops) (i32.const 0)) (i32.ne (i32.load (i32.const 14352)) (i32.const 0))))
        (then (br_if $balances (i32.eqz (local.tee $ok (call $m_balance (global.get $o_read_p) (global.get $o_read_n))))))
        (else (call $m_str (global.get $W_UNREAD))))
      (br_if $balances (i32.eqz (local.tee $ok (call $m_own (i32.const 0)))))
      (br_if $balances (i32.eqz (local.tee $ok (call $m_own (i32.const 1)))))
      (local.set $ok (call $m_own (i32.const 2))))
    (if (i32.eqz (local.get $ok))
      (then
        ;; ledger balance: field balance at byte 0: length N, want 0 or 8
        (call $m_start (global.get $out_end))
        (call $m_str (global.get $S_BALANCE_LENGTH))
        (call $m_uint (global.get $bal))
        (call $m_str (global.get $S_WANT_0_8))
        (call $reject (local.get $i) (global.get $msg_base) (call $m_len))
        (return)))
    (i32.store align=1 (local.get $vlen_at) (i32.sub (global.get $mp) (i32.add (local.get $vlen_at) (i32.const 4))))
    (call $m_i32 (i32.const 0))                          ;; no headers
    (i32.store align=1 (global.get $msg_base) (i32.sub (call $m_len) (i32.const 4)))
    (global.set $out_end (global.get $mp))
    (global.set $out_count (i32.add (global.get $out_count) (i32.const 1))))

  (func $align8 (param $p i32) (result i32)
    (i32.and (i32.add (local.get $p) (i32.const 7)) (i32.const -8)))

  ;; sluice_post: the events, then their outcomes, in one region.
  (func (export "sluice_post") (param $ptr i32) (param $len i32) (param $optr i32) (param $olen i32) (result i32)
    (local $end i32) (local $oend i32) (local $count i32) (local $i i32) (local $off i32) (local $next i32) (local $oc i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $oend (i32.add (local.get $optr) (local.get $olen)))
    (call $out_start)
    (block $bad
      (block $bad_outcomes
        (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
        (local.set $count (i32.load align=1 (local.get $ptr)))
        (br_if $bad_outcomes (i32.lt_u (local.get $olen) (i32.const 4)))
        (br_if $bad_outcomes (i32.ne (i32.load align=1 (local.get $optr)) (local.get $count)))
        (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
        (local.set $oc (i32.add (local.get $optr) (i32.const 4)))
        (block $events_done
          (loop $events
            (br_if $events_done (i32.eq (local.get $i) (local.get $count)))
            (br_if $bad (i32.eqz (local.tee $next (call $rec (local.get $off) (local.get $end)))))
            (br_if $bad_outcomes (i32.eqz (local.tee $oc (call $outcome (local.get $oc) (local.get $oend)))))
            (call $post_event (local.get $i))
            (if (i32.ge_u (i32.sub (global.get $out_end) (global.get $out_base)) (i32.const 0x100000))
              (then (call $flush)))
            (local.set $off (local.get $next))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $events)))
        (br_if $bad (i32.ne (local.get $off) (local.get $end)))
        (br_if $bad_outcomes (i32.ne (local.get $oc) (local.get $oend)))
        (call $flush)
        (global.set $pending (i32.const 0))
        (return (i32.const 0)))
      (call $m_start (global.get $out_end))
      (call $m_str (global.get $S_BAD_OUTCOMES))
      (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
      (global.set $pending (i32.const 0))
      (return (i32.const -2)))
    (call $m_start (global.get $out_end))
    (call $m_str (global.get $S_MALFORMED))
    (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
    (global.set $pending (i32.const 0))
    (i32.const -2))
)
