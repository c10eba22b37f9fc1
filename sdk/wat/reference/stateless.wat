;; stateless.wat: a complete Sluice map operator in WebAssembly text, with
;; the ABI spelled out. Read it with abi/ABI.md open; section numbers below
;; are that document's.
;;
;; What it does: each record's value is emitted with its ASCII letters
;; upper-cased; key, time and headers pass unchanged. A record whose value
;; holds a NUL byte is dead-lettered instead ("reject"), to show how. It
;; takes no configuration: nothing or `null`.
;;
;; Build and check:
;;   wat2wasm stateless.wat -o stateless.wasm
;;   sluice plugin check stateless.wasm
;;
;; Pipeline (map, filter and flatmap operators all call sluice_process;
;; its sluice_kinds export declares it a map, and a module built with
;; `sluice plugin build` is refused as any other kind):
;;   operators:
;;     - name: shout
;;       plugin: stateless.wasm
;;       kind: map
;;
;; The module encodes every output record itself, to show the encoding.
;; plugins/conformance/wat/upper/upper.wat does the same job faster by
;; changing the input in place and emitting the input batch as it is.
(module
  ;; ---------------------------------------------------------------------
  ;; Imports (section 3). Every host function lives in module "sluice". A
  ;; guest imports only what it calls; the host refuses a module that
  ;; imports anything else than "sluice" and "wasi_snapshot_preview1"
  ;; functions. Pointers are i32 offsets into this module's memory,
  ;; lengths unsigned i32; the host bounds-checks every pair and traps the
  ;; call on a bad one (section 5).
  ;; ---------------------------------------------------------------------

  ;; emit(ptr, len): hands the host an encoded batch (section 4) of output
  ;; records. Each output's origin is the index of the input it came from.
  ;; The host copies the bytes during the call: the buffer may be reused
  ;; at once. Any number of calls per sluice_process; records are appended
  ;; in call order.
  (import "sluice" "emit" (func $emit (param $ptr i32) (param $len i32)))

  ;; reject(origin, msg_ptr, msg_len): dead-letters input record `origin`
  ;; with a UTF-8 message (the host keeps 1 KiB of it) and drops the
  ;; outputs emitted for it. The batch goes on.
  (import "sluice" "reject" (func $reject (param $origin i32) (param $msg i32) (param $len i32)))

  ;; log(level, ptr, len): 0 debug, 1 info, 2 warn, 3 error. The last
  ;; level-3 message of a call is the reason the host reports when the
  ;; call returns an error status.
  (import "sluice" "log" (func $log (param $level i32) (param $msg i32) (param $len i32)))

  ;; ---------------------------------------------------------------------
  ;; Memory (sections 1, 5). The module exports its one memory as
  ;; "memory". Layout chosen here:
  ;;   0 - 1023        unused (so that address 0 is never a region)
  ;;   1024 - 2047     constant strings (data segments below)
  ;;   65536 -         the heap: regions handed to the host by
  ;;                   sluice_alloc, then the output batch of the call in
  ;;                   progress. Memory grows as needed (memory.grow), up
  ;;                   to the pipeline's limit (64 MiB by default).
  ;; ---------------------------------------------------------------------
  (memory (export "memory") 2)

  (data (i32.const 1024) "invalid configuration: this operator takes none")   ;; 47 bytes
  (data (i32.const 1088) "value holds a NUL byte")                            ;; 22 bytes
  (data (i32.const 1120) "input batch: malformed")                            ;; 22 bytes

  ;; ---------------------------------------------------------------------
  ;; sluice_abi_version() -> i32 (section 2.1): the version this module
  ;; was written for. The host calls it once at load, on a throw-away
  ;; instance, and refuses any other value than its own (1).
  ;; ---------------------------------------------------------------------
  (func (export "sluice_abi_version") (result i32)
    (i32.const 1))

  ;; ---------------------------------------------------------------------
  ;; sluice_kinds() -> i32 (section 12, optional): the operator kinds the
  ;; module serves, one bit each (map 1, filter 2, flatmap 4, keyed 8,
  ;; transactional 16). `sluice plugin build` calls it once and writes the
  ;; answer into the module's sluice.kinds custom section, from which the
  ;; host refuses, at load, a pipeline that runs the module as another
  ;; kind. The host itself does not call it.
  ;; ---------------------------------------------------------------------
  (func (export "sluice_kinds") (result i32)
    (i32.const 1))   ;; map

  ;; ---------------------------------------------------------------------
  ;; sluice_alloc(size) -> ptr (section 2.2): size writable bytes for the
  ;; argument of the next consuming call (sluice_configure,
  ;; sluice_process), or 0 when they cannot be had. The host writes the
  ;; bytes and then makes the call with this pointer.
  ;;
  ;; The rules this allocator keeps:
  ;;  - a region stays valid until the call that consumes it returns;
  ;;  - two regions handed out before one consuming call never overlap
  ;;    ($pending: a second request bumps past the first);
  ;;  - a region is reused only on the next sluice_alloc after its call,
  ;;    never earlier (a transactional host relies on that, section 10.6);
  ;;  - sizes are unsigned: a "negative" size is a huge one, refused;
  ;;  - size 0 still gets a valid (non-zero) pointer.
  ;; ---------------------------------------------------------------------
  (global $heap_base i32 (i32.const 65536))
  (global $brk (mut i32) (i32.const 65536))      ;; first free byte
  (global $pending (mut i32) (i32.const 0))      ;; a region awaits its call

  (func $alloc (export "sluice_alloc") (param $size i32) (result i32)
    (local $p i32) (local $top i32)
    ;; Refuse over 1 GiB: also keeps $p + $size from overflowing 32 bits.
    (if (i32.gt_u (local.get $size) (i32.const 0x40000000))
      (then (return (i32.const 0))))
    ;; Nothing pending: every earlier region is dead, start over.
    (if (i32.eqz (global.get $pending))
      (then (global.set $brk (global.get $heap_base))))
    (local.set $p (global.get $brk))
    ;; Keep the next region 8-byte aligned (not required, just tidy).
    (local.set $top (i32.and (i32.add (i32.add (local.get $p) (local.get $size)) (i32.const 7))
                             (i32.const -8)))
    (if (i32.eqz (call $grow_to (local.get $top)))
      (then (return (i32.const 0))))
    (global.set $brk (local.get $top))
    (global.set $pending (i32.const 1))
    (local.get $p))

  ;; grow_to makes [0, top) addressable: 1, or 0 when memory cannot grow.
  ;; memory.size and memory.grow count 64 KiB pages.
  (func $grow_to (param $top i32) (result i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $top) (i32.const 0xffff)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 1))

  ;; ---------------------------------------------------------------------
  ;; sluice_configure(ptr, len) -> status (section 2.3), optional: the
  ;; pipeline's `config` as JSON, len 0 when there is none. Called once
  ;; per instance, before the first batch. Returns 0 (StatusOK) or -3
  ;; (StatusBadConfig) after logging the reason at level 3; the host then
  ;; refuses to start the operator. Only `log` may be called here.
  ;; ---------------------------------------------------------------------
  (func (export "sluice_configure") (param $ptr i32) (param $len i32) (result i32)
    ;; The region is consumed: the next sluice_alloc may reuse it.
    (global.set $pending (i32.const 0))
    (if (i32.eqz (local.get $len)) (then (return (i32.const 0))))
    ;; "null", read as one little-endian u32: 'n' 'u' 'l' 'l' = 0x6c6c756e.
    ;; align=1: the region need not be 4-byte aligned; WebAssembly
    ;; allows unaligned access, the alignment is only a hint.
    (if (i32.and (i32.eq (local.get $len) (i32.const 4))
                 (i32.eq (i32.load align=1 (local.get $ptr)) (i32.const 0x6c6c756e)))
      (then (return (i32.const 0))))
    (call $log (i32.const 3) (i32.const 1024) (i32.const 47))
    (i32.const -3))

  ;; ---------------------------------------------------------------------
  ;; sluice_process(ptr, len) -> status (section 2.4): one input batch.
  ;;
  ;; The batch (section 4), all integers little endian, no padding:
  ;;   count:u32
  ;;   record{count}, each:
  ;;     +0   size:u32          bytes of the record after this field
  ;;     +4   origin:u32        the record's index in the batch
  ;;     +8   flags:u32         reserved, 0
  ;;     +12  time:i64          event time, ns since the Unix epoch
  ;;     +20  key_len:u32       then key_len bytes of key
  ;;     ...  value_len:u32     then value_len bytes of value
  ;;     ...  header_count:u32  then per header:
  ;;            name_len:u32 name  value_len:u32 value
  ;; so size = 28 + key_len + value_len + sum(8 + name_len + value_len),
  ;; and a record takes 4 + size bytes.
  ;;
  ;; Every length comes from outside: check it against what is left
  ;; before using it, with unsigned comparisons of differences (never
  ;; `offset + length > end`, which can wrap around 32 bits).
  ;;
  ;; Returns 0, or -2 (StatusError) after logging why: the host then
  ;; undoes the batch and runs its records again one per call.
  ;; ---------------------------------------------------------------------
  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32)        ;; end of the batch
    (local $count i32)      ;; records in the batch
    (local $i i32)          ;; index of the record in hand = its origin
    (local $off i32)        ;; offset of the record in hand
    (local $size i32)       ;; its size field
    (local $rend i32)       ;; its end
    (local $key i32) (local $klen i32)
    (local $val i32) (local $vlen i32)
    (local $hdr i32)        ;; its header_count field
    (local $h i32) (local $n i32) (local $l i32)
    (local $out i32)        ;; the output batch
    (local $o i32)          ;; its end
    (local $outs i32)       ;; records in it
    (local $c i32) (local $k i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    ;; The output batch starts after the input region: $brk is past it.
    (local.set $out (global.get $brk))
    (local.set $o (i32.add (local.get $out) (i32.const 4)))   ;; count, written last
    (block $bad
      (br_if $bad (i32.lt_u (local.get $len) (i32.const 4)))
      (local.set $count (i32.load align=1 (local.get $ptr)))
      (local.set $off (i32.add (local.get $ptr) (i32.const 4)))
      (block $records_done
        (loop $records
          (br_if $records_done (i32.eq (local.get $i) (local.get $count)))
          ;; -- size: at least 28, and inside the batch
          (br_if $bad (i32.lt_u (i32.sub (local.get $end) (local.get $off)) (i32.const 32)))
          (local.set $size (i32.load align=1 (local.get $off)))
          (br_if $bad (i32.lt_u (local.get $size) (i32.const 28)))
          (br_if $bad (i32.gt_u (local.get $size)
                        (i32.sub (i32.sub (local.get $end) (local.get $off)) (i32.const 4))))
          (local.set $rend (i32.add (i32.add (local.get $off) (i32.const 4)) (local.get $size)))
          ;; -- flags: reserved, must be 0
          (br_if $bad (i32.load offset=8 align=1 (local.get $off)))
          ;; -- key: key_len at +20, the bytes at +24
          (local.set $klen (i32.load offset=20 align=1 (local.get $off)))
          (br_if $bad (i32.gt_u (local.get $klen) (i32.sub (local.get $size) (i32.const 28))))
          (local.set $key (i32.add (local.get $off) (i32.const 24)))
          ;; -- value: value_len after the key, the bytes after it
          (local.set $vlen (i32.load align=1 (i32.add (local.get $key) (local.get $klen))))
          (br_if $bad (i32.gt_u (local.get $vlen)
                        (i32.sub (i32.sub (local.get $size) (i32.const 28)) (local.get $klen))))
          (local.set $val (i32.add (i32.add (local.get $key) (local.get $klen)) (i32.const 4)))
          ;; -- headers: header_count after the value; each header takes
          ;;    8 bytes at least; name and value lengths inside the record
          (local.set $hdr (i32.add (local.get $val) (local.get $vlen)))
          (local.set $n (i32.load align=1 (local.get $hdr)))
          (local.set $h (i32.add (local.get $hdr) (i32.const 4)))
          (br_if $bad (i32.gt_u (local.get $n) (i32.shr_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 3))))
          (block $headers_done
            (loop $headers
              (br_if $headers_done (i32.eqz (local.get $n)))
              (br_if $bad (i32.lt_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 4)))
              (local.set $l (i32.load align=1 (local.get $h)))                ;; name_len
              (local.set $h (i32.add (local.get $h) (i32.const 4)))
              (br_if $bad (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $h))))
              (local.set $h (i32.add (local.get $h) (local.get $l)))
              (br_if $bad (i32.lt_u (i32.sub (local.get $rend) (local.get $h)) (i32.const 4)))
              (local.set $l (i32.load align=1 (local.get $h)))                ;; value_len
              (local.set $h (i32.add (local.get $h) (i32.const 4)))
              (br_if $bad (i32.gt_u (local.get $l) (i32.sub (local.get $rend) (local.get $h))))
              (local.set $h (i32.add (local.get $h) (local.get $l)))
              (local.set $n (i32.sub (local.get $n) (i32.const 1)))
              (br $headers)))
          ;; -- no unused bytes at the end of the record
          (br_if $bad (i32.ne (local.get $h) (local.get $rend)))

          ;; The record is good. A NUL in the value dead-letters it.
          (block $clean
            (local.set $k (i32.const 0))
            (loop $scan
              (br_if $clean (i32.ge_u (local.get $k) (local.get $vlen)))
              (if (i32.eqz (i32.load8_u (i32.add (local.get $val) (local.get $k))))
                (then
                  (call $reject (local.get $i) (i32.const 1088) (i32.const 22))
                  (br $clean)))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $scan)))
          (if (i32.ge_u (local.get $k) (local.get $vlen))
            (then
              ;; Encode the output: the same layout, origin = i. The
              ;; header section is copied as it is; the value upper-cased
              ;; on the way. The output is as long as the input record.
              (if (i32.eqz (call $grow_to (i32.add (local.get $o) (i32.add (local.get $size) (i32.const 4)))))
                (then (unreachable)))   ;; out of memory: trap, as a panic would
              (i32.store align=1 (local.get $o) (local.get $size))
              (i32.store offset=4 align=1 (local.get $o) (local.get $i))          ;; origin
              (i32.store offset=8 align=1 (local.get $o) (i32.const 0))           ;; flags
              (i64.store offset=12 align=1 (local.get $o)
                (i64.load offset=12 align=1 (local.get $off)))                    ;; time
              (i32.store offset=20 align=1 (local.get $o) (local.get $klen))
              (memory.copy (i32.add (local.get $o) (i32.const 24)) (local.get $key) (local.get $klen))
              (local.set $o (i32.add (i32.add (local.get $o) (i32.const 24)) (local.get $klen)))
              (i32.store align=1 (local.get $o) (local.get $vlen))
              (local.set $o (i32.add (local.get $o) (i32.const 4)))
              (local.set $k (i32.const 0))
              (block $copied
                (loop $copy
                  (br_if $copied (i32.ge_u (local.get $k) (local.get $vlen)))
                  (local.set $c (i32.load8_u (i32.add (local.get $val) (local.get $k))))
                  ;; 'a'..'z' is 0x61..0x7a: c - 0x61 < 26 unsigned
                  (if (i32.lt_u (i32.sub (local.get $c) (i32.const 0x61)) (i32.const 26))
                    (then (local.set $c (i32.sub (local.get $c) (i32.const 0x20)))))
                  (i32.store8 (i32.add (local.get $o) (local.get $k)) (local.get $c))
                  (local.set $k (i32.add (local.get $k) (i32.const 1)))
                  (br $copy)))
              (local.set $o (i32.add (local.get $o) (local.get $vlen)))
              (memory.copy (local.get $o) (local.get $hdr) (i32.sub (local.get $rend) (local.get $hdr)))
              (local.set $o (i32.add (local.get $o) (i32.sub (local.get $rend) (local.get $hdr))))
              (local.set $outs (i32.add (local.get $outs) (i32.const 1)))))
          (local.set $off (local.get $rend))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $records)))
      ;; No bytes after the last record.
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      ;; One emit for the whole batch. (A real operator may emit every
      ;; MiB or so, between records, to bound its memory.)
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
