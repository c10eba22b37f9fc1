;; keyed.wat: a complete Sluice keyed operator in WebAssembly text: a
;; counter. Read stateless.wat first (the allocator, the batch encoding and
;; its checks are explained there); this file explains state.
;;
;; What it does: for each record, adds one to the count of its key, kept
;; in the operator's default table (handle 0) as a u64 little endian (8
;; bytes), and emits a record with the key, the record's time and the new
;; count in decimal ASCII. A stored count that is not 8 bytes long
;; dead-letters the record (its state is left alone). When the pipeline
;; declares a second table called "last", the record's time (8 bytes) is
;; stored there too, to show table_id.
;;
;; Build and check:
;;   wat2wasm keyed.wat -o keyed.wasm
;;   sluice plugin check keyed.wasm
;;
;; Pipeline:
;;   operators:
;;     - name: count
;;       plugin: keyed.wasm
;;       kind: keyed
;;       state: [counts, last]     # the first is the default table (handle 0)
(module
  ;; ---------------------------------------------------------------------
  ;; Imports (ABI.md section 3). The state functions are granted to keyed
  ;; operators only, and only during sluice_process; they act on the key
  ;; groups of the worker running the instance, which always hold the
  ;; keys of the records it is given.
  ;; ---------------------------------------------------------------------

  (import "sluice" "emit" (func $emit (param $ptr i32) (param $len i32)))
  (import "sluice" "reject" (func $reject (param $origin i32) (param $msg i32) (param $len i32)))
  (import "sluice" "log" (func $log (param $level i32) (param $msg i32) (param $len i32)))

  ;; table_id(name_ptr, name_len) -> handle: the handle of a table the
  ;; pipeline declares for this operator, or -1 (StatusNotFound). Handle 0
  ;; is always the first declared table and needs no lookup. Handles never
  ;; change for the life of the instance: resolve once, keep it.
  (import "sluice" "table_id" (func $table_id (param $name i32) (param $len i32) (result i32)))

  ;; state_get(table, key_ptr, key_len, buf_ptr, buf_cap) -> n:
  ;;   -1 (StatusNotFound)  the key is absent; nothing written;
  ;;   n <= buf_cap         the value (n bytes, possibly 0) copied to buf;
  ;;   n >  buf_cap         nothing written: call again with n bytes.
  ;; The whole buffer [buf_ptr, buf_ptr+buf_cap) must lie in memory even
  ;; when nothing is written.
  (import "sluice" "state_get"
    (func $state_get (param $table i32) (param $key i32) (param $klen i32) (param $buf i32) (param $cap i32) (result i32)))

  ;; state_put(table, key_ptr, key_len, val_ptr, val_len): sets the value
  ;; (empty is a value, unlike absent). The host copies both at once.
  (import "sluice" "state_put"
    (func $state_put (param $table i32) (param $key i32) (param $klen i32) (param $val i32) (param $vlen i32)))

  ;; state_delete(table, key_ptr, key_len) exists too; this operator does
  ;; not import it. Changes are visible to later reads at once, within
  ;; the batch. When a record is rejected, the host undoes the batch and
  ;; runs it again one record per call to tell the records' writes apart:
  ;; an operator must compute the same thing from the same record and
  ;; state every time (section 6).

  (memory (export "memory") 2)

  (data (i32.const 1024) "invalid configuration: this operator takes none")   ;; 47
  (data (i32.const 1088) "stored count is not 8 bytes")                       ;; 27
  (data (i32.const 1120) "input batch: malformed")                            ;; 22
  (data (i32.const 1152) "last")                                              ;; 4
  ;; 1280-1311: scratch for the count's decimal digits
  ;; 1312-1319: the count read from state, and the time for "last"

  (func (export "sluice_abi_version") (result i32) (i32.const 1))

  ;; sluice_kinds (section 12): the module serves keyed operators (bit 8);
  ;; `sluice plugin build` writes that into its sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 8))

  ;; The allocator of stateless.wat.
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
    ;; table_id may not be called here: only log is allowed in configure.
    (call $log (i32.const 3) (i32.const 1024) (i32.const 47))
    (i32.const -3))

  ;; The handle of "last": -2 until resolved, then the handle or -1.
  (global $last (mut i32) (i32.const -2))

  ;; get reads key's value in table into a buffer, the 8 bytes at 1312 or,
  ;; when the value does not fit them, scratch memory: the protocol every
  ;; SDK implements. It returns the value's length, or -1 when the key is
  ;; absent, and leaves the value at $getbuf.
  (global $getbuf (mut i32) (i32.const 1312))
  (global $getcap (mut i32) (i32.const 8))
  (func $get (param $table i32) (param $key i32) (param $klen i32) (param $scratch i32) (result i32)
    (local $n i32)
    (global.set $getbuf (i32.const 1312))
    (global.set $getcap (i32.const 8))
    (local.set $n (call $state_get (local.get $table) (local.get $key) (local.get $klen)
                                   (global.get $getbuf) (global.get $getcap)))
    (if (i32.gt_s (local.get $n) (global.get $getcap))
      (then
        ;; Too large for the buffer: ask again with a buffer of n bytes,
        ;; here in scratch memory above the outputs (valid until the
        ;; outputs grow, which is after the value is used).
        (if (i32.eqz (call $grow_to (i32.add (local.get $scratch) (local.get $n)))) (then (unreachable)))
        (global.set $getbuf (local.get $scratch))
        (global.set $getcap (local.get $n))
        (local.set $n (call $state_get (local.get $table) (local.get $key) (local.get $klen)
                                       (global.get $getbuf) (global.get $getcap)))))
    (local.get $n))

  ;; digits writes v in decimal so that it ends at 1312 and returns where
  ;; it starts.
  (func $digits (param $v i64) (result i32)
    (local $p i32)
    (local.set $p (i32.const 1312))
    (loop $next
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 0x30) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $next (i64.ne (local.get $v) (i64.const 0))))
    (local.get $p))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $count i32) (local $i i32) (local $off i32) (local $size i32) (local $rend i32)
    (local $key i32) (local $klen i32) (local $time i64) (local $h i32) (local $n i32) (local $l i32)
    (local $out i32) (local $o i32) (local $outs i32) (local $v i64) (local $d i32) (local $dlen i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $out (global.get $brk))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))
    ;; Resolve "last" once per instance, in the first call that may.
    (if (i32.eq (global.get $last) (i32.const -2))
      (then (global.set $last (call $table_id (i32.const 1152) (i32.const 4)))))
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (local.set $count (i32.load align=1 (local.get $ptr)))
      (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
      (block $records_done
        (loop $records
          (br_if $records_done (i32.eq (local.get $i) (local.get $count)))
          ;; The checks of stateless.wat, compactly.
          (br_if $bad (i32.lt_u (i32.sub (local.get $end) (local.get $off)) (i32.const 32)))
          (local.set $size (i32.load align=1 (local.get $off)))
          (br_if $bad (i32.lt_u (local.get $size) (i32.const 28)))
          (br_if $bad (i32.gt_u (local.get $size) (i32.sub (i32.sub (local.get $end) (local.get $off)) (i32.const 4))))
          (local.set $rend (i32.add (i32.add (local.get $off) (i32.const 4)) (local.get $size)))
          (br_if $bad (i32.load offset=8 align=1 (local.get $off)))
          (local.set $time (i64.load offset=12 align=1 (local.get $off)))
          (local.set $klen (i32.load offset=20 align=1 (local.get $off)))
          (br_if $bad (i32.gt_u (local.get $klen) (i32.sub (local.get $size) (i32.const 28))))
          (local.set $key (i32.add (local.get $off) (i32.const 24)))
          (local.set $h (i32.add (local.get $key) (local.get $klen)))
          (local.set $l (i32.load align=1 (local.get $h)))
          (br_if $bad (i32.gt_u (local.get $l) (i32.sub (i32.sub (local.get $size) (i32.const 28)) (local.get $klen))))
          (local.set $h (i32.add (i32.add (local.get $h) (i32.const 4)) (local.get $l)))
          (local.set $n (i32.load align=1 (local.get $h)))
          (local.set $h (i32.add (local.get $h) (i32.const 4)))
          (br_if $bad (i32.gt_u (local.get $n) (i32.shr_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 3))))
          (block $headers_done
            (loop $headers
              (br_if $headers_done (i32.eqz (local.get $n)))
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
              (local.set $n (i32.sub (local.get $n) (i32.const 1)))
              (br $headers)))
          (br_if $bad (i32.ne (local.get $h) (local.get $rend)))

          ;; The count: absent is 0; 8 bytes is a u64; anything else
          ;; dead-letters the record. The key passed to the state
          ;; functions points into the input batch: no copy needed.
          (local.set $n (call $get (i32.const 0) (local.get $key) (local.get $klen)
                                   (i32.add (local.get $o) (i32.const 64))))
          (block $next_record
            (local.set $v (i64.const 0))
            (if (i32.ge_s (local.get $n) (i32.const 0))
              (then
                (if (i32.ne (local.get $n) (i32.const 8))
                  (then
                    (call $reject (local.get $i) (i32.const 1088) (i32.const 27))
                    (br $next_record)))
                (local.set $v (i64.load align=1 (global.get $getbuf)))))
            (local.set $v (i64.add (local.get $v) (i64.const 1)))
            (i64.store (i32.const 1312) (local.get $v))
            (call $state_put (i32.const 0) (local.get $key) (local.get $klen) (i32.const 1312) (i32.const 8))
            (if (i32.ge_s (global.get $last) (i32.const 0))
              (then
                (i64.store (i32.const 1312) (local.get $time))
                (call $state_put (global.get $last) (local.get $key) (local.get $klen) (i32.const 1312) (i32.const 8))))
            ;; The output: key, time, the count in decimal, no headers.
            (local.set $d (call $digits (local.get $v)))
            (local.set $dlen (i32.sub (i32.const 1312) (local.get $d)))
            (if (i32.eqz (call $grow_to (i32.add (local.get $o) (i32.add (i32.add (local.get $klen) (local.get $dlen)) (i32.const 32)))))
              (then (unreachable)))
            (i32.store align=1 (local.get $o) (i32.add (i32.add (i32.const 28) (local.get $klen)) (local.get $dlen)))
            (i32.store offset=4 align=1 (local.get $o) (local.get $i))
            (i32.store offset=8 align=1 (local.get $o) (i32.const 0))
            (i64.store offset=12 align=1 (local.get $o) (local.get $time))
            (i32.store offset=20 align=1 (local.get $o) (local.get $klen))
            (memory.copy (i32.add (local.get $o) (i32.const 24)) (local.get $key) (local.get $klen))
            (local.set $o (i32.add (i32.add (local.get $o) (i32.const 24)) (local.get $klen)))
            (i32.store align=1 (local.get $o) (local.get $dlen))
            (memory.copy (i32.add (local.get $o) (i32.const 4)) (local.get $d) (local.get $dlen))
            (local.set $o (i32.add (i32.add (local.get $o) (i32.const 4)) (local.get $dlen)))
            (i32.store align=1 (local.get $o) (i32.const 0))                  ;; header_count
            (local.set $o (i32.add (local.get $o) (i32.const 4)))
            (local.set $outs (i32.add (local.get $outs) (i32.const 1))))
          (local.set $off (local.get $rend))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $records)))
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      (if (local.get $outs)
        (then
          (i32.store align=1 (local.get $out) (local.get $outs))
          (call $emit (local.get $out) (i32.sub (local.get $o) (local.get $out)))))
      (global.set $pending (i32.const 0))
      (return (i32.const 0)))
    (call $log (i32.const 3) (i32.const 1120) (i32.const 22))
    (global.set $pending (i32.const 0))
    (i32.const -2))
)
