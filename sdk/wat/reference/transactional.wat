;; transactional.wat: a complete Sluice transactional operator in
;; WebAssembly text: money transfers over one table, with a fee whose
;; recipient is read from state. Read stateless.wat first (allocator,
;; record encoding); this file explains ABI.md section 10: plan, apply,
;; post, the apply region and its result slot, and a non-deterministic
;; operation's txn_get and txn_put.
;;
;; Table 0, the operator's first table, holds balances: u64 little endian,
;; 8 bytes; an absent key holds 0. An event's value is
;;   amount:u64  src_len:u8  src:byte{src_len}  dst:byte{rest}
;; (at least one byte of dst). Each event runs three operations, in order:
;;   0  credit dst with amount, if src's balance covers it, else abort
;;      (fn 0; reads src as a declared read: a parametric dependency)
;;   1  debit src by amount (fn 1; reads only its own key)
;;   2  charge a fee of 1 from src to the account whose key is stored at
;;      key "fee-account" (fn 2; non-deterministic: the key it credits
;;      depends on a value it reads, so it cannot be declared in plan);
;;      no "fee-account" key, no fee; a src that cannot pay it aborts
;; and the event emits "committed <src balance>" or "aborted <src
;; balance>", the balance operation 0 read (or "-" if it never ran).
;;
;; Build and check:
;;   wat2wasm transactional.wat -o transactional.wasm
;;   sluice plugin check transactional.wasm
;;
;; Pipeline:
;;   operators:
;;     - name: transfers
;;       plugin: transactional.wasm
;;       kind: transactional
;;       tables: [{name: balances}]
;;       punctuation: {events: 1024}
(module
  ;; ---------------------------------------------------------------------
  ;; Imports (sections 3 and 10.4).
  ;; ---------------------------------------------------------------------

  ;; emit and reject work in sluice_post as in sluice_process, with the
  ;; event's index in its batch as origin. A rejected event's outputs are
  ;; dropped; its state effects stand (section 10.7).
  (import "sluice" "emit" (func $emit (param $ptr i32) (param $len i32)))
  (import "sluice" "reject" (func $reject (param $origin i32) (param $msg i32) (param $len i32)))
  (import "sluice" "log" (func $log (param $level i32) (param $msg i32) (param $len i32)))

  ;; txn_plan(ptr, len): during sluice_plan only, appends operation
  ;; declarations (encoded back to back, section 10.5) to the batch. Any
  ;; number of calls; event indices never decrease. The host copies them.
  (import "sluice" "txn_plan" (func $txn_plan (param $ptr i32) (param $len i32)))

  ;; txn_get(table, key_ptr, key_len, buf_ptr, buf_cap) -> n: during
  ;; sluice_apply only; state_get's buffer protocol (-1 absent; n bytes,
  ;; copied when n <= buf_cap), reading as of the operation's place in
  ;; event order. -4 (StatusUndeclared) for a key the operation may not
  ;; read: the batch then fails whatever the guest returns.
  (import "sluice" "txn_get"
    (func $txn_get (param $table i32) (param $key i32) (param $klen i32) (param $buf i32) (param $cap i32) (result i32)))

  ;; txn_put(table, key_ptr, key_len, val_ptr, val_len) -> status: during
  ;; sluice_apply of a non-deterministic operation only, writes a key of
  ;; its table: 0, or -4 (StatusUndeclared). txn_delete(table, key_ptr,
  ;; key_len) -> status deletes likewise; not used here.
  (import "sluice" "txn_put"
    (func $txn_put (param $table i32) (param $key i32) (param $klen i32) (param $val i32) (param $vlen i32) (result i32)))

  (memory (export "memory") 2)

  (data (i32.const 1024) "invalid configuration: this operator takes none")   ;; 47
  (data (i32.const 1088) "malformed transfer event")                          ;; 24
  (data (i32.const 1120) "malformed batch")                                   ;; 15
  (data (i32.const 1152) "fee-account")                                       ;; 11
  (data (i32.const 1184) "fee-account value over 64 bytes")                   ;; 31
  (data (i32.const 1216) "state access refused")                              ;; 20
  (data (i32.const 1248) "committed ")                                        ;; 10
  (data (i32.const 1264) "aborted ")                                          ;; 8
  ;; 1280-1343: the fee account's key; 1344-1351: a balance; 1360-1391:
  ;; decimal digits

  (func (export "sluice_abi_version") (result i32) (i32.const 1))

  ;; sluice_kinds (section 12): the module serves transactional operators (bit 16);
  ;; `sluice plugin build` writes that into its sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 16))

  ;; The allocator of stateless.wat. Its last rule matters here: the host
  ;; writes apply request after apply request into one region without
  ;; asking again (section 10.6), so a region must stay valid, and unused
  ;; by the guest, until the guest's next sluice_alloc. Regions are reused
  ;; only by that call, which resets $brk.
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
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 1))

  (func (export "sluice_configure") (param $ptr i32) (param $len i32) (result i32)
    (global.set $pending (i32.const 0))
    (if (i32.eqz (local.get $len)) (then (return (i32.const 0))))
    (if (i32.and (i32.eq (local.get $len) (i32.const 4))
                 (i32.eq (i32.load align=1 (local.get $ptr)) (i32.const 0x6c6c756e)))   ;; "null"
      (then (return (i32.const 0))))
    (call $log (i32.const 3) (i32.const 1024) (i32.const 47))
    (i32.const -3))

  ;; ---------------------------------------------------------------------
  ;; Records and events.
  ;; ---------------------------------------------------------------------

  ;; rec checks the record at off, before end (the rules of stateless.wat),
  ;; and returns the offset after it, or 0. It leaves the key, value and
  ;; time of the record in $r_*.
  (global $r_key (mut i32) (i32.const 0))
  (global $r_klen (mut i32) (i32.const 0))
  (global $r_val (mut i32) (i32.const 0))
  (global $r_vlen (mut i32) (i32.const 0))
  (global $r_time (mut i64) (i64.const 0))
  (func $rec (param $off i32) (param $end i32) (result i32)
    (local $size i32) (local $rend i32) (local $h i32) (local $n i32) (local $l i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $off)) (i32.const 32)) (then (return (i32.const 0))))
    (local.set $size (i32.load align=1 (local.get $off)))
    (if (i32.lt_u (local.get $size) (i32.const 28)) (then (return (i32.const 0))))
    (if (i32.gt_u (local.get $size) (i32.sub (i32.sub (local.get $end) (local.get $off)) (i32.const 4))) (then (return (i32.const 0))))
    (local.set $rend (i32.add (i32.add (local.get $off) (i32.const 4)) (local.get $size)))
    (if (i32.load offset=8 align=1 (local.get $off)) (then (return (i32.const 0))))
    (global.set $r_time (i64.load offset=12 align=1 (local.get $off)))
    (global.set $r_klen (i32.load offset=20 align=1 (local.get $off)))
    (if (i32.gt_u (global.get $r_klen) (i32.sub (local.get $size) (i32.const 28))) (then (return (i32.const 0))))
    (global.set $r_key (i32.add (local.get $off) (i32.const 24)))
    (local.set $h (i32.add (global.get $r_key) (global.get $r_klen)))
    (global.set $r_vlen (i32.load align=1 (local.get $h)))
    (if (i32.gt_u (global.get $r_vlen) (i32.sub (i32.sub (local.get $size) (i32.const 28)) (global.get $r_klen)))
      (then (return (i32.const 0))))
    (global.set $r_val (i32.add (local.get $h) (i32.const 4)))
    (local.set $h (i32.add (global.get $r_val) (global.get $r_vlen)))
    (local.set $n (i32.load align=1 (local.get $h)))
    (local.set $h (i32.add (local.get $h) (i32.const 4)))
    (if (i32.gt_u (local.get $n) (i32.shr_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 3))) (then (return (i32.const 0))))
    (block $done
      (loop $headers
        (br_if $done (i32.eqz (local.get $n)))
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
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $headers)))
    (if (i32.ne (local.get $h) (local.get $rend)) (then (return (i32.const 0))))
    (local.get $rend))

  ;; event checks the value of the record in $r_* as a transfer: 1 with
  ;; $src, $srclen, $dst, $dstlen set, or 0.
  (global $src (mut i32) (i32.const 0))
  (global $srclen (mut i32) (i32.const 0))
  (global $dst (mut i32) (i32.const 0))
  (global $dstlen (mut i32) (i32.const 0))
  (func $event (result i32)
    (if (i32.lt_u (global.get $r_vlen) (i32.const 11)) (then (return (i32.const 0))))
    (global.set $srclen (i32.load8_u offset=8 (global.get $r_val)))
    (global.set $src (i32.add (global.get $r_val) (i32.const 9)))
    (global.set $dst (i32.add (global.get $src) (global.get $srclen)))
    (if (i32.eqz (global.get $srclen)) (then (return (i32.const 0))))
    ;; at least one byte of dst after src
    (if (i32.ge_u (i32.add (i32.const 9) (global.get $srclen)) (global.get $r_vlen)) (then (return (i32.const 0))))
    (global.set $dstlen (i32.sub (global.get $r_vlen) (i32.add (i32.const 9) (global.get $srclen))))
    (i32.const 1))

  ;; ---------------------------------------------------------------------
  ;; sluice_plan(ptr, len) -> status (section 10.2): the batch's events,
  ;; encoded as a record batch (event i has origin i, its timestamp in the
  ;; batch). Declare each event's operations with txn_plan.
  ;;
  ;; A declaration (section 10.5), little endian, no padding:
  ;;   event:u32  fn:u32  flags:u32  table:u32  key_len:u32 key
  ;;   read_count:u32  {table:u32 key_len:u32 key}{read_count}
  ;;   arg_len:u32 arg
  ;; fn is our own number, handed back in the apply request; flags is 0,
  ;; or 1 (OpFlagNonDet) for a non-deterministic operation, whose key is
  ;; empty and whose table is the one it may touch. arg is handed back
  ;; unchanged: put in it what apply needs of the event.
  ;;
  ;; The host may cut a batch into parts and plan them on different
  ;; instances (each part numbered from 0): plan each event on its own.
  ;; ---------------------------------------------------------------------

  ;; w32 and wbytes append to the buffer at $w.
  (global $w (mut i32) (i32.const 0))
  (func $w32 (param $v i32)
    (i32.store align=1 (global.get $w) (local.get $v))
    (global.set $w (i32.add (global.get $w) (i32.const 4))))
  (func $wbytes (param $p i32) (param $n i32)
    (call $w32 (local.get $n))
    (memory.copy (global.get $w) (local.get $p) (local.get $n))
    (global.set $w (i32.add (global.get $w) (local.get $n))))

  (func (export "sluice_plan") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $count i32) (local $i i32) (local $off i32) (local $next i32) (local $buf i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $buf (global.get $brk))   ;; declarations gather after the input
    (global.set $w (local.get $buf))
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (local.set $count (i32.load align=1 (local.get $ptr)))
      (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
      (block $done
        (loop $events
          (br_if $done (i32.eq (local.get $i) (local.get $count)))
          (br_if $bad (i32.eqz (local.tee $next (call $rec (local.get $off) (local.get $end)))))
          ;; A malformed event declares nothing (an empty transaction,
          ;; which commits); post dead-letters it.
          (if (call $event)
            (then
              ;; Three declarations take at most 3*40 bytes plus the keys.
              (if (i32.eqz (call $grow_to (i32.add (global.get $w) (i32.add (i32.const 128) (i32.mul (global.get $r_vlen) (i32.const 3))))))
                (then (unreachable)))
              ;; op 0: fn 0 writes dst, reading src
              (call $w32 (local.get $i)) (call $w32 (i32.const 0)) (call $w32 (i32.const 0)) (call $w32 (i32.const 0))
              (call $wbytes (global.get $dst) (global.get $dstlen))
              (call $w32 (i32.const 1))
              (call $w32 (i32.const 0)) (call $wbytes (global.get $src) (global.get $srclen))
              (call $wbytes (global.get $r_val) (i32.const 8))               ;; arg: the amount
              ;; op 1: fn 1 writes src, no reads
              (call $w32 (local.get $i)) (call $w32 (i32.const 1)) (call $w32 (i32.const 0)) (call $w32 (i32.const 0))
              (call $wbytes (global.get $src) (global.get $srclen))
              (call $w32 (i32.const 0))
              (call $wbytes (global.get $r_val) (i32.const 8))
              ;; op 2: fn 2, non-deterministic over table 0, no key
              (call $w32 (local.get $i)) (call $w32 (i32.const 2)) (call $w32 (i32.const 1)) (call $w32 (i32.const 0))
              (call $w32 (i32.const 0))                                       ;; key_len 0
              (call $w32 (i32.const 0))
              (call $wbytes (global.get $src) (global.get $srclen))          ;; arg: who pays
              ))
          (local.set $off (local.get $next))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $events)))
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      ;; One call for the batch. (Flush every MiB or so in real code.)
      (if (i32.gt_u (global.get $w) (local.get $buf))
        (then (call $txn_plan (local.get $buf) (i32.sub (global.get $w) (local.get $buf)))))
      (global.set $pending (i32.const 0))
      (return (i32.const 0)))
    (call $log (i32.const 3) (i32.const 1120) (i32.const 15))
    (global.set $pending (i32.const 0))
    (i32.const -2))

  ;; ---------------------------------------------------------------------
  ;; sluice_apply(ptr, len) -> code (sections 10.2, 10.5, 10.6): compute
  ;; one operation. The request, in the apply region:
  ;;   +0   result:byte{8}   zero; the result slot (below)
  ;;   +8   fn:u32           the fn the declaration named
  ;;   +12  event:u32        the event's index in the batch
  ;;   +16  op:u32           the operation's index in its event
  ;;   +20  flags:u32        bit 0 non-deterministic; bit 1 own key found
  ;;   +24  table:u32
  ;;   +28  key_len:u32 key              the own key (empty for non-det)
  ;;   ...  own_len:u32 own              its value before the operation
  ;;   ...  read_count:u32
  ;;        {table:u32 key_len:u32 key found:u32 val_len:u32 val}{read_count}
  ;;   ...  arg_len:u32 arg
  ;; Returns 0 ApplyWrite (the new value's pointer and length stored as
  ;; two u32 in the result slot, +0 and +4), 1 ApplyKeep, 2 ApplyDelete,
  ;; 3 ApplyAbort (the event aborts: its writes are undone), or -2
  ;; StatusError (fails the batch; log why first). For a
  ;; non-deterministic operation 0, 1 and 2 all mean "done".
  ;;
  ;; The host may call apply several times for one operation, on any
  ;; instance (re-execution after an abort): compute only from the request
  ;; and txn_get, keep nothing between calls.
  ;; ---------------------------------------------------------------------
  (func (export "sluice_apply") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $p i32) (local $fn i32) (local $own i64) (local $amount i64) (local $src i64)
    (local $n i32) (local $nreads i32) (local $arg i32) (local $arglen i32)
    ;; Consumed. The region itself stays ours to read until the next
    ;; sluice_alloc; the host may write the next request into it.
    (global.set $pending (i32.const 0))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 44)))   ;; the fixed fields
      (local.set $fn (i32.load offset=8 align=1 (local.get $ptr)))
      ;; own key: skip it; own value: at most 8 bytes, a balance
      (local.set $p (i32.add (local.get $ptr) (i32.const 28)))
      (local.set $n (i32.load align=1 (local.get $p)))
      (br_if $bad (i32.gt_u (local.get $n) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 8))))
      (local.set $p (i32.add (i32.add (local.get $p) (i32.const 4)) (local.get $n)))
      (local.set $n (i32.load align=1 (local.get $p)))                        ;; own_len
      (br_if $bad (i32.gt_u (local.get $n) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 8))))
      (local.set $own (call $balance (i32.add (local.get $p) (i32.const 4)) (local.get $n)))
      (local.set $p (i32.add (i32.add (local.get $p) (i32.const 4)) (local.get $n)))
      (local.set $nreads (i32.load align=1 (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (br_if $bad (i32.gt_u (local.get $nreads) (i32.const 1)))
      (if (local.get $nreads)
        (then
          ;; read 0: table, key (skipped), found, value
          (br_if $bad (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 16)))
          (local.set $n (i32.load offset=4 align=1 (local.get $p)))            ;; key_len
          (br_if $bad (i32.gt_u (local.get $n) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 16))))
          (local.set $p (i32.add (i32.add (local.get $p) (i32.const 8)) (local.get $n)))
          (local.set $n (i32.load offset=4 align=1 (local.get $p)))            ;; val_len, after found
          (br_if $bad (i32.gt_u (local.get $n) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 8))))
          (local.set $src (call $balance (i32.add (local.get $p) (i32.const 8)) (local.get $n)))
          (local.set $p (i32.add (i32.add (local.get $p) (i32.const 8)) (local.get $n)))))
      (br_if $bad (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)))
      (local.set $arglen (i32.load align=1 (local.get $p)))
      (local.set $arg (i32.add (local.get $p) (i32.const 4)))
      (br_if $bad (i32.ne (local.get $arglen) (i32.sub (local.get $end) (local.get $arg))))

      (if (i32.eq (local.get $fn) (i32.const 2))
        (then (return (call $fee (local.get $arg) (local.get $arglen)))))
      (br_if $bad (i32.ne (local.get $arglen) (i32.const 8)))
      (local.set $amount (i64.load align=1 (local.get $arg)))
      (if (i32.eqz (local.get $fn))
        (then
          ;; credit dst when src covers the amount
          (if (i64.lt_u (local.get $src) (local.get $amount)) (then (return (i32.const 3))))
          (local.set $own (i64.add (local.get $own) (local.get $amount))))
        (else
          ;; debit src
          (if (i64.lt_u (local.get $own) (local.get $amount)) (then (return (i32.const 3))))
          (local.set $own (i64.sub (local.get $own) (local.get $amount)))))
      ;; ApplyWrite: the value must stay put until apply returns; the host
      ;; copies it right after. Here: 8 bytes of static memory.
      (i64.store (i32.const 1344) (local.get $own))
      (i32.store align=1 (local.get $ptr) (i32.const 1344))                  ;; result: ptr
      (i32.store offset=4 align=1 (local.get $ptr) (i32.const 8))            ;; result: len
      (return (i32.const 0)))
    (call $log (i32.const 3) (i32.const 1120) (i32.const 15))
    (i32.const -2))

  ;; balance decodes a balance: 8 bytes, else 0 (absent or empty).
  (func $balance (param $p i32) (param $n i32) (result i64)
    (if (result i64) (i32.eq (local.get $n) (i32.const 8))
      (then (i64.load align=1 (local.get $p)))
      (else (i64.const 0))))

  ;; fee is the non-deterministic operation: the key it credits is the
  ;; value of "fee-account", known only when it runs. Every txn_get and
  ;; txn_put goes through the host, which records the real read and write
  ;; set, orders the operation against every other one on the table, and
  ;; undoes its writes if the event aborts.
  (func $fee (param $src i32) (param $srclen i32) (result i32)
    (local $n i32) (local $bal i64)
    ;; the recipient: the value of "fee-account", at most 64 bytes here
    (local.set $n (call $txn_get (i32.const 0) (i32.const 1152) (i32.const 11) (i32.const 1280) (i32.const 64)))
    (if (i32.eq (local.get $n) (i32.const -1)) (then (return (i32.const 1))))   ;; none: no fee
    (if (i32.eq (local.get $n) (i32.const -4)) (then (return (call $refused))))
    (if (i32.gt_s (local.get $n) (i32.const 64))
      (then
        (call $log (i32.const 3) (i32.const 1184) (i32.const 31))
        (return (i32.const -2))))
    ;; src pays 1, if it can
    (local.set $bal (call $get_balance (local.get $src) (local.get $srclen)))
    (if (global.get $denied) (then (return (call $refused))))
    (if (i64.eqz (local.get $bal)) (then (return (i32.const 3))))
    (if (call $put_balance (local.get $src) (local.get $srclen) (i64.sub (local.get $bal) (i64.const 1)))
      (then (return (call $refused))))
    ;; the recipient gets it (it sees src's new balance if it is src)
    (local.set $bal (call $get_balance (i32.const 1280) (local.get $n)))
    (if (global.get $denied) (then (return (call $refused))))
    (if (call $put_balance (i32.const 1280) (local.get $n) (i64.add (local.get $bal) (i64.const 1)))
      (then (return (call $refused))))
    (i32.const 0))

  ;; get_balance reads a balance through the host; $denied says whether
  ;; the host refused the access.
  (global $denied (mut i32) (i32.const 0))
  (func $get_balance (param $key i32) (param $klen i32) (result i64)
    (local $n i32)
    (local.set $n (call $txn_get (i32.const 0) (local.get $key) (local.get $klen) (i32.const 1344) (i32.const 8)))
    (global.set $denied (i32.eq (local.get $n) (i32.const -4)))
    (if (global.get $denied) (then (return (i64.const 0))))
    (if (i32.ne (local.get $n) (i32.const 8)) (then (return (i64.const 0))))   ;; absent, or not a balance
    (i64.load (i32.const 1344)))

  ;; put_balance writes a balance through the host: 0, or -4 when refused.
  (func $put_balance (param $key i32) (param $klen i32) (param $v i64) (result i32)
    (i64.store (i32.const 1344) (local.get $v))
    (call $txn_put (i32.const 0) (local.get $key) (local.get $klen) (i32.const 1344) (i32.const 8)))

  ;; refused: an access outside the declaration has failed the operation
  ;; already; return StatusError at once.
  (func $refused (result i32)
    (call $log (i32.const 3) (i32.const 1216) (i32.const 20))
    (i32.const -2))

  ;; ---------------------------------------------------------------------
  ;; sluice_post(events_ptr, events_len, out_ptr, out_len) -> status
  ;; (sections 10.2, 10.5, 10.7): the batch's events again, and right
  ;; after them in the same region their outcomes:
  ;;   event_count:u32
  ;;   per event:  committed:u32  op_count:u32
  ;;     per op:   executed:u32   own: found:u32 len:u32 bytes
  ;;               read_count:u32 {found:u32 len:u32 bytes}{read_count}
  ;;               get_count:u32  {table:u32 key_len:u32 key found:u32 len:u32 bytes}{get_count}
  ;; executed is 0 for the operations after the one that aborted; the
  ;; values are those of the execution that counts (a serial one's).
  ;; ---------------------------------------------------------------------

  ;; skip_value skips found:u32 len:u32 bytes at p: the offset after, or 0.
  (func $skip_value (param $p i32) (param $end i32) (result i32)
    (local $n i32)
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 8)) (then (return (i32.const 0))))
    (local.set $n (i32.load offset=4 align=1 (local.get $p)))
    (if (i32.gt_u (local.get $n) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 8))) (then (return (i32.const 0))))
    (i32.add (i32.add (local.get $p) (i32.const 8)) (local.get $n)))

  ;; outcome reads one event's outcome at p: the offset after it, or 0.
  ;; It sets $committed, and $read0 / $read0len to operation 0's read 0
  ;; ($read0 = 0 when operation 0 did not run or read nothing).
  (global $committed (mut i32) (i32.const 0))
  (global $read0 (mut i32) (i32.const 0))
  (global $read0len (mut i32) (i32.const 0))
  (func $outcome (param $p i32) (param $end i32) (result i32)
    (local $ops i32) (local $m i32) (local $n i32) (local $j i32) (local $executed i32)
    (global.set $read0 (i32.const 0))
    (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 8)) (then (return (i32.const 0))))
    (global.set $committed (i32.load align=1 (local.get $p)))
    (local.set $ops (i32.load offset=4 align=1 (local.get $p)))
    (local.set $p (i32.add (local.get $p) (i32.const 8)))
    (block $done
      (loop $op
        (br_if $done (i32.ge_u (local.get $m) (local.get $ops)))
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $executed (i32.load align=1 (local.get $p)))
        (if (i32.eqz (local.tee $p (call $skip_value (i32.add (local.get $p) (i32.const 4)) (local.get $end))))
          (then (return (i32.const 0))))                                     ;; own
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $n (i32.load align=1 (local.get $p)))                       ;; read_count
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $j (i32.const 0))
        (block $reads_done
          (loop $reads
            (br_if $reads_done (i32.ge_u (local.get $j) (local.get $n)))
            (if (i32.and (i32.and (i32.eqz (local.get $m)) (i32.eqz (local.get $j))) (local.get $executed))
              (then
                (global.set $read0 (i32.add (local.get $p) (i32.const 8)))
                (global.set $read0len (i32.load offset=4 align=1 (local.get $p)))))
            (if (i32.eqz (local.tee $p (call $skip_value (local.get $p) (local.get $end)))) (then (return (i32.const 0))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $reads)))
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 4)) (then (return (i32.const 0))))
        (local.set $n (i32.load align=1 (local.get $p)))                       ;; get_count
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $j (i32.const 0))
        (block $gets_done
          (loop $gets
            (br_if $gets_done (i32.ge_u (local.get $j) (local.get $n)))
            ;; table:u32 key_len:u32 key, then a value
            (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 8)) (then (return (i32.const 0))))
            (if (i32.gt_u (i32.load offset=4 align=1 (local.get $p)) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 8)))
              (then (return (i32.const 0))))
            (local.set $p (i32.add (i32.add (local.get $p) (i32.const 8)) (i32.load offset=4 align=1 (local.get $p))))
            (if (i32.eqz (local.tee $p (call $skip_value (local.get $p) (local.get $end)))) (then (return (i32.const 0))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $gets)))
        (local.set $m (i32.add (local.get $m) (i32.const 1)))
        (br $op)))
    (local.get $p))

  (func (export "sluice_post") (param $ptr i32) (param $len i32) (param $optr i32) (param $olen i32) (result i32)
    (local $end i32) (local $oend i32) (local $count i32) (local $i i32) (local $off i32) (local $next i32)
    (local $oc i32) (local $out i32) (local $o i32) (local $outs i32) (local $vlen_at i32) (local $d i32) (local $v i64)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $oend (i32.add (local.get $optr) (local.get $olen)))
    (local.set $out (global.get $brk))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (br_if $bad (i32.lt_u (local.get $olen) (i32.const 4)))
      (local.set $count (i32.load align=1 (local.get $ptr)))
      (br_if $bad (i32.ne (i32.load align=1 (local.get $optr)) (local.get $count)))
      (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
      (local.set $oc (i32.add (local.get $optr) (i32.const 4)))
      (block $done
        (loop $events
          (br_if $done (i32.eq (local.get $i) (local.get $count)))
          (br_if $bad (i32.eqz (local.tee $next (call $rec (local.get $off) (local.get $end)))))
          (br_if $bad (i32.eqz (local.tee $oc (call $outcome (local.get $oc) (local.get $oend)))))
          (if (i32.eqz (call $event))
            (then (call $reject (local.get $i) (i32.const 1088) (i32.const 24)))
            (else
              ;; The output: the event's key and time, "committed N" or
              ;; "aborted N", no headers.
              (if (i32.eqz (call $grow_to (i32.add (local.get $o) (i32.add (global.get $r_klen) (i32.const 64)))))
                (then (unreachable)))
              (i32.store offset=4 align=1 (local.get $o) (local.get $i))        ;; origin
              (i32.store offset=8 align=1 (local.get $o) (i32.const 0))         ;; flags
              (i64.store offset=12 align=1 (local.get $o) (global.get $r_time))
              (i32.store offset=20 align=1 (local.get $o) (global.get $r_klen))
              (memory.copy (i32.add (local.get $o) (i32.const 24)) (global.get $r_key) (global.get $r_klen))
              (global.set $w (i32.add (i32.add (local.get $o) (i32.const 24)) (global.get $r_klen)))
              (local.set $vlen_at (global.get $w))
              (global.set $w (i32.add (global.get $w) (i32.const 4)))
              (if (global.get $committed)
                (then (memory.copy (global.get $w) (i32.const 1248) (i32.const 10))
                      (global.set $w (i32.add (global.get $w) (i32.const 10))))
                (else (memory.copy (global.get $w) (i32.const 1264) (i32.const 8))
                      (global.set $w (i32.add (global.get $w) (i32.const 8)))))
              (if (global.get $read0)
                (then
                  (local.set $v (call $balance (global.get $read0) (global.get $read0len)))
                  (local.set $d (i32.const 1392))
                  (loop $digits
                    (local.set $d (i32.sub (local.get $d) (i32.const 1)))
                    (i32.store8 (local.get $d) (i32.add (i32.const 0x30) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
                    (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
                    (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
                  (memory.copy (global.get $w) (local.get $d) (i32.sub (i32.const 1392) (local.get $d)))
                  (global.set $w (i32.add (global.get $w) (i32.sub (i32.const 1392) (local.get $d)))))
                (else
                  (i32.store8 (global.get $w) (i32.const 0x2d))                ;; "-"
                  (global.set $w (i32.add (global.get $w) (i32.const 1)))))
              (i32.store align=1 (local.get $vlen_at) (i32.sub (global.get $w) (i32.add (local.get $vlen_at) (i32.const 4))))
              (call $w32 (i32.const 0))                                        ;; header_count
              (i32.store align=1 (local.get $o) (i32.sub (i32.sub (global.get $w) (local.get $o)) (i32.const 4)))   ;; size
              (local.set $o (global.get $w))
              (local.set $outs (i32.add (local.get $outs) (i32.const 1)))))
          (local.set $off (local.get $next))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $events)))
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      (br_if $bad (i32.ne (local.get $oc) (local.get $oend)))
      (if (local.get $outs)
        (then
          (i32.store align=1 (local.get $out) (local.get $outs))
          (call $emit (local.get $out) (i32.sub (local.get $o) (local.get $out)))))
      (global.set $pending (i32.const 0))
      (return (i32.const 0)))
    (call $log (i32.const 3) (i32.const 1120) (i32.const 15))
    (global.set $pending (i32.const 0))
    (i32.const -2))
)
