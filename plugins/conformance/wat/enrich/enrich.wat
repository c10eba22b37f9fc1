;; enrich: the conformance "enrich" operator in hand-written WebAssembly
;; text.
;;
;; Behaviour (identical to plugins/enrich, a Go sluice.FlatMap operator
;; configured with sluice.Configure): records whose values are JSON objects
;; are filtered and enriched by the rules of the configuration
;;
;;   {"require": [names], "min": {name: number}, "set": {name: value}}
;;
;; A record passes when every required field is present and every field
;; with a minimum holds a number at least that minimum (checked in the
;; order of the field names; an absent field drops the record). A passing
;; record is emitted with the `set` fields applied: present fields keep
;; their place and take the new value, the others are appended in the
;; configuration's order; the rest of the object is kept byte for byte.
;; Key, time and headers pass unchanged. A value that is not a JSON
;; object, or a field under `min` that holds something other than a
;; number, dead-letters the record.
;;
;; "Identical" includes the messages, which the Go plugin takes from
;; encoding/json and strconv: this module carries
;;   - a JSON scanner that is the state machine of encoding/json's
;;     scanner (same accepted input, same "invalid character ..." errors,
;;     same nesting limit of 10000),
;;   - the object reader of the Go plugin (json.Decoder's Token and
;;     Decode, with their own error texts and end-of-input rules),
;;   - JSON string unquoting as encoding/json does it (escapes, UTF-16
;;     surrogate pairs, U+FFFD for invalid UTF-8),
;;   - strconv.ParseFloat's decimal algorithm (exact for up to 800
;;     digits, as Go's fallback is), to compare a number with a minimum
;;     exactly as Go rounds it,
;;   - Go's %q (strconv.Quote) with the table of printable runes,
;;   - the configuration decoder: json.Decoder.Decode into the Go
;;     plugin's struct with DisallowUnknownFields (case-insensitive field
;;     names, first error wins, the same error texts).
;; Known difference: a configuration that names "require" more than once,
;; where a later list holds null, decodes as if the earlier lists were
;; absent (Go keeps strings of the earlier list's backing array there).
;;
;; Memory: 1024-9855 strings; 12288 printable-rune table; 20480 the
;; scanner's nesting stack (10001 bytes); 32768 decimal digits of
;; ParseFloat (800), 33792 its shift buffer (820), 34816 its power table,
;; 34832 quotechar's buffer; 65536 on: the rules (after configure), then
;; the regions sluice_alloc hands out, then each call's outputs and
;; scratch.
;;
;; Build:  wat2wasm enrich.wat -o enrich.wasm
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "reject" (func $reject (param i32 i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))

  (memory (export "memory") 2)

  ;; The strings of messages, NUL-terminated, one per 128-byte slot (two
  ;; for a long one), each with a global holding its address: $S_ texts,
  ;; $C_ the scanner's error contexts (with their leading space; the
  ;; literals' contexts are consecutive slots), $L_ the letters after a
  ;; literal's first.
  (global $S_MALFORMED i32 (i32.const 1024))
  (data (i32.const 1024) "input batch: malformed")
  (global $S_BAD_CONFIG i32 (i32.const 1152))
  (data (i32.const 1152) "invalid configuration: ")
  (global $S_ENRICH i32 (i32.const 1280))
  (data (i32.const 1280) "enrich configuration: ")
  (global $S_WANT i32 (i32.const 1408))
  (data (i32.const 1408) " (want {\"require\": [names], \"min\": {name: number}, \"set\": {name: value}})")
  (global $S_UNEXPECTED_EOF i32 (i32.const 1536))
  (data (i32.const 1536) "unexpected EOF")
  (global $S_UNKNOWN_FIELD i32 (i32.const 1664))
  (data (i32.const 1664) "json: unknown field ")
  (global $S_CANNOT i32 (i32.const 1792))
  (data (i32.const 1792) "json: cannot unmarshal ")
  (global $S_INTO_FIELD i32 (i32.const 1920))
  (data (i32.const 1920) " into Go struct field .")
  (global $S_INTO_VALUE i32 (i32.const 2048))
  (data (i32.const 2048) " into Go value of type ")
  (global $S_OF_TYPE i32 (i32.const 2176))
  (data (i32.const 2176) " of type ")
  (global $S_STRUCT i32 (i32.const 2304))
  (data (i32.const 2304) "struct { Require []string \"json:\\\"require\\\"\"; Min map[string]float64 \"json:\\\"min\\\"\"; Set json.RawMessage \"json:\\\"set\\\"\" }")
  (global $S_FLOAT64 i32 (i32.const 2432))
  (data (i32.const 2432) "float64")
  (global $S_STRING i32 (i32.const 2560))
  (data (i32.const 2560) "string")
  (global $S_STRINGS i32 (i32.const 2688))
  (data (i32.const 2688) "[]string")
  (global $S_MAP i32 (i32.const 2816))
  (data (i32.const 2816) "map[string]float64")
  (global $S_REQUIRE i32 (i32.const 2944))
  (data (i32.const 2944) "require")
  (global $S_MIN i32 (i32.const 3072))
  (data (i32.const 3072) "min")
  (global $S_SET i32 (i32.const 3200))
  (data (i32.const 3200) "set")
  (global $S_NUMBER i32 (i32.const 3328))
  (data (i32.const 3328) "number")
  (global $S_BOOL i32 (i32.const 3456))
  (data (i32.const 3456) "bool")
  (global $S_ARRAY i32 (i32.const 3584))
  (data (i32.const 3584) "array")
  (global $S_OBJECT i32 (i32.const 3712))
  (data (i32.const 3712) "object")
  (global $S_REQUIRE_EMPTY i32 (i32.const 3840))
  (data (i32.const 3840) "\"require\" holds an empty field name")
  (global $S_SET_PREFIX i32 (i32.const 3968))
  (data (i32.const 3968) "\"set\": ")
  (global $S_SET_NAMES i32 (i32.const 4096))
  (data (i32.const 4096) "\"set\" names field ")
  (global $S_TWICE i32 (i32.const 4224))
  (data (i32.const 4224) " twice")
  (global $S_NOT_OBJECT i32 (i32.const 4352))
  (data (i32.const 4352) "value is not a JSON object: ")
  (global $S_UNEXPECTED_END i32 (i32.const 4480))
  (data (i32.const 4480) "unexpected end of JSON")
  (global $S_IT_IS i32 (i32.const 4608))
  (data (i32.const 4608) "it is ")
  (global $S_K_STRING i32 (i32.const 4736))
  (data (i32.const 4736) "a string")
  (global $S_K_OBJECT i32 (i32.const 4864))
  (data (i32.const 4864) "an object")
  (global $S_K_ARRAY i32 (i32.const 4992))
  (data (i32.const 4992) "an array")
  (global $S_K_BOOLEAN i32 (i32.const 5120))
  (data (i32.const 5120) "a boolean")
  (global $S_K_NULL i32 (i32.const 5248))
  (data (i32.const 5248) "null")
  (global $S_K_NAN i32 (i32.const 5376))
  (data (i32.const 5376) "not a number")
  (global $S_EXPECTED_COLON i32 (i32.const 5504))
  (data (i32.const 5504) "expected colon after object key")
  (global $S_DATA_AFTER i32 (i32.const 5632))
  (data (i32.const 5632) "data after the object")
  (global $S_FIELD i32 (i32.const 5760))
  (data (i32.const 5760) "field ")
  (global $S_IS i32 (i32.const 5888))
  (data (i32.const 5888) " is ")
  (global $S_NOT_A_NUMBER i32 (i32.const 6016))
  (data (i32.const 6016) ", not a number")
  (global $S_INVALID_CHAR i32 (i32.const 6144))
  (data (i32.const 6144) "invalid character ")
  (global $S_HEX i32 (i32.const 6272))
  (data (i32.const 6272) "0123456789abcdef")
  (global $S_ESCAPES i32 (i32.const 6400))
  (data (i32.const 6400) "abtnvfr")
  (global $C_NONE i32 (i32.const 6528))
  (data (i32.const 6528) "")
  (global $C_BEGIN_VALUE i32 (i32.const 6656))
  (data (i32.const 6656) " looking for beginning of value")
  (global $C_BEGIN_KEY i32 (i32.const 6784))
  (data (i32.const 6784) " looking for beginning of object key string")
  (global $C_AFTER_KEY i32 (i32.const 6912))
  (data (i32.const 6912) " after object key")
  (global $C_AFTER_PAIR i32 (i32.const 7040))
  (data (i32.const 7040) " after object key:value pair")
  (global $C_AFTER_ELEMENT i32 (i32.const 7168))
  (data (i32.const 7168) " after array element")
  (global $C_IN_STRING i32 (i32.const 7296))
  (data (i32.const 7296) " in string literal")
  (global $C_ESCAPE i32 (i32.const 7424))
  (data (i32.const 7424) " in string escape code")
  (global $C_ESCAPE_U i32 (i32.const 7552))
  (data (i32.const 7552) " in \\u hexadecimal character escape")
  (global $C_NUMBER i32 (i32.const 7680))
  (data (i32.const 7680) " in numeric literal")
  (global $C_DOT i32 (i32.const 7808))
  (data (i32.const 7808) " after decimal point in numeric literal")
  (global $C_EXPONENT i32 (i32.const 7936))
  (data (i32.const 7936) " in exponent of numeric literal")
  (global $C_TRUE_R i32 (i32.const 8064))
  (data (i32.const 8064) " in literal true (expecting 'r')")
  (global $C_TRUE_U i32 (i32.const 8192))
  (data (i32.const 8192) " in literal true (expecting 'u')")
  (global $C_TRUE_E i32 (i32.const 8320))
  (data (i32.const 8320) " in literal true (expecting 'e')")
  (global $C_FALSE_A i32 (i32.const 8448))
  (data (i32.const 8448) " in literal false (expecting 'a')")
  (global $C_FALSE_L i32 (i32.const 8576))
  (data (i32.const 8576) " in literal false (expecting 'l')")
  (global $C_FALSE_S i32 (i32.const 8704))
  (data (i32.const 8704) " in literal false (expecting 's')")
  (global $C_FALSE_E i32 (i32.const 8832))
  (data (i32.const 8832) " in literal false (expecting 'e')")
  (global $C_NULL_U i32 (i32.const 8960))
  (data (i32.const 8960) " in literal null (expecting 'u')")
  (global $C_NULL_L1 i32 (i32.const 9088))
  (data (i32.const 9088) " in literal null (expecting 'l')")
  (global $C_NULL_L2 i32 (i32.const 9216))
  (data (i32.const 9216) " in literal null (expecting 'l')")
  (global $C_DEPTH i32 (i32.const 9344))
  (data (i32.const 9344) " exceeded max depth")
  (global $L_TRUE i32 (i32.const 9472))
  (data (i32.const 9472) "rue")
  (global $L_FALSE i32 (i32.const 9600))
  (data (i32.const 9600) "alse")
  (global $L_NULL i32 (i32.const 9728))
  (data (i32.const 9728) "ull")
  ;; string table ends at 9856


  ;; ---------------------------------------------------------------
  ;; The runtime the conformance modules share (see wordcount.wat):
  ;; allocator, memory growth, output batch, message building, Go's
  ;; strconv.Quote.
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

  ;; sluice_kinds (section 12): the module serves flatmap operators (bit 4);
  ;; `sluice plugin build` writes that into its sluice.kinds section.
  (func (export "sluice_kinds") (result i32) (i32.const 4))

  ;; ensure grows memory so that [0, top) is addressable, or traps.
  (func $ensure (param $top i32)
    (local $need i32)
    (local.set $need (i32.shr_u (i32.add (local.get $top) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (unreachable))))))

  (func $align8 (param $p i32) (result i32)
    (i32.and (i32.add (local.get $p) (i32.const 7)) (i32.const -8)))

  (func (export "sluice_alloc") (param $size i32) (result i32)
    (local $p i32) (local $top i32) (local $need i32)
    (if (i32.gt_u (local.get $size) (i32.const 0x40000000)) (then (return (i32.const 0))))
    (if (i32.eqz (global.get $pending)) (then (global.set $brk (global.get $heap_base))))
    (local.set $p (global.get $brk))
    (local.set $top (call $align8 (i32.add (local.get $p) (local.get $size))))
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

  ;; utf8 decodes the rune at [p, end) as Go's utf8.DecodeRune: it returns
  ;; the rune and sets $dw to its width; an invalid or incomplete sequence
  ;; gives U+FFFD with width 1.
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

  ;; put_utf8 writes rune r (a valid scalar value) UTF-8 encoded at p and
  ;; returns its width.
  (func $put_utf8 (param $p i32) (param $r i32) (result i32)
    (if (i32.lt_u (local.get $r) (i32.const 0x80))
      (then (i32.store8 (local.get $p) (local.get $r)) (return (i32.const 1))))
    (if (i32.lt_u (local.get $r) (i32.const 0x800))
      (then
        (i32.store8 (local.get $p) (i32.or (i32.const 0xc0) (i32.shr_u (local.get $r) (i32.const 6))))
        (i32.store8 offset=1 (local.get $p) (i32.or (i32.const 0x80) (i32.and (local.get $r) (i32.const 0x3f))))
        (return (i32.const 2))))
    (if (i32.lt_u (local.get $r) (i32.const 0x10000))
      (then
        (i32.store8 (local.get $p) (i32.or (i32.const 0xe0) (i32.shr_u (local.get $r) (i32.const 12))))
        (i32.store8 offset=1 (local.get $p) (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $r) (i32.const 6)) (i32.const 0x3f))))
        (i32.store8 offset=2 (local.get $p) (i32.or (i32.const 0x80) (i32.and (local.get $r) (i32.const 0x3f))))
        (return (i32.const 3))))
    (i32.store8 (local.get $p) (i32.or (i32.const 0xf0) (i32.shr_u (local.get $r) (i32.const 18))))
    (i32.store8 offset=1 (local.get $p) (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $r) (i32.const 12)) (i32.const 0x3f))))
    (i32.store8 offset=2 (local.get $p) (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $r) (i32.const 6)) (i32.const 0x3f))))
    (i32.store8 offset=3 (local.get $p) (i32.or (i32.const 0x80) (i32.and (local.get $r) (i32.const 0x3f))))
    (i32.const 4))

  ;; is_print is Go's strconv.IsPrint (see wordcount.wat).
  (global $print_table i32 (i32.const 12288))
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

  ;; m_quote_body appends [p, p+n) as strconv.Quote writes it, without the
  ;; surrounding quotes; m_quote with them.
  (func $m_quote_body (param $p i32) (param $n i32)
    (local $end i32) (local $r i32) (local $w i32)
    (local.set $end (i32.add (local.get $p) (local.get $n)))
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
        (br $next))))

  (func $m_quote (param $p i32) (param $n i32)
    (call $m_byte (i32.const 0x22))
    (call $m_quote_body (local.get $p) (local.get $n))
    (call $m_byte (i32.const 0x22)))

  (data (i32.const 12288)  "\a1\00\00\00\ac\00\00\00\ae\00\00\00\77\03\00\00\7a\03\00\00\7f\03\00\00\84\03\00\00\8a\03\00\00"
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

  ;; mem_eq reports whether [a, a+n) and [b, b+n) hold the same bytes.
  (func $mem_eq (param $a i32) (param $b i32) (param $n i32) (result i32)
    (block $bytes
      (loop $words
        (br_if $bytes (i32.lt_u (local.get $n) (i32.const 8)))
        (if (i64.ne (i64.load align=1 (local.get $a)) (i64.load align=1 (local.get $b)))
          (then (return (i32.const 0))))
        (local.set $a (i32.add (local.get $a) (i32.const 8)))
        (local.set $b (i32.add (local.get $b) (i32.const 8)))
        (local.set $n (i32.sub (local.get $n) (i32.const 8)))
        (br $words)))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (if (i32.ne (i32.load8_u (local.get $a)) (i32.load8_u (local.get $b)))
          (then (return (i32.const 0))))
        (local.set $a (i32.add (local.get $a) (i32.const 1)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (i32.const 1))

  ;; mem_less reports whether [a, a+an) sorts before [b, b+bn), bytewise
  ;; (Go's string <).
  (func $mem_less (param $a i32) (param $an i32) (param $b i32) (param $bn i32) (result i32)
    (local $i i32) (local $n i32) (local $x i32) (local $y i32)
    (local.set $n (select (local.get $an) (local.get $bn) (i32.lt_u (local.get $an) (local.get $bn))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $x (i32.load8_u (i32.add (local.get $a) (local.get $i))))
        (local.set $y (i32.load8_u (i32.add (local.get $b) (local.get $i))))
        (if (i32.ne (local.get $x) (local.get $y)) (then (return (i32.lt_u (local.get $x) (local.get $y)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.lt_u (local.get $an) (local.get $bn)))

  ;; ---------------------------------------------------------------
  ;; The record decoder (see wordcount.wat); also sets $r_hdr, the
  ;; header count's address, and $r_end, the record's end.
  ;; ---------------------------------------------------------------

  (global $r_time (mut i64) (i64.const 0))
  (global $r_key (mut i32) (i32.const 0))
  (global $r_klen (mut i32) (i32.const 0))
  (global $r_val (mut i32) (i32.const 0))
  (global $r_vlen (mut i32) (i32.const 0))
  (global $r_hdr (mut i32) (i32.const 0))
  (global $r_end (mut i32) (i32.const 0))

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
    (global.set $r_hdr (local.get $h))
    (global.set $r_end (local.get $rend))
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
  ;; The JSON scanner: encoding/json's state machine, one value at a
  ;; time, as json.Decoder reads a value.
  ;; ---------------------------------------------------------------

  ;; A failed scan returns -1 and says why here: $e_kind 1 is a syntax
  ;; error at byte $e_c with context $e_ctx (a C_ string, which starts
  ;; with a space unless empty); 2 is the end of the input in the middle
  ;; of a value.
  (global $e_kind (mut i32) (i32.const 0))
  (global $e_c (mut i32) (i32.const 0))
  (global $e_ctx (mut i32) (i32.const 0))
  (global $stack i32 (i32.const 20480))

  (func $serr (param $c i32) (param $ctx i32) (result i32)
    (global.set $e_kind (i32.const 1))
    (global.set $e_c (local.get $c))
    (global.set $e_ctx (local.get $ctx))
    (i32.const -1))

  (func $seof (result i32)
    (global.set $e_kind (i32.const 2))
    (i32.const -1))

  ;; is_ws is JSON's white space: space, \t, \n, \r.
  (func $is_ws (param $c i32) (result i32)
    (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x09)))
            (i32.or (i32.eq (local.get $c) (i32.const 0x0a)) (i32.eq (local.get $c) (i32.const 0x0d)))))

  (func $skip_ws (param $p i32) (param $end i32) (result i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (br_if $done (i32.eqz (call $is_ws (i32.load8_u (local.get $p)))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $next)))
    (local.get $p))

  (func $is_digit (param $c i32) (result i32)
    (i32.lt_u (i32.sub (local.get $c) (i32.const 0x30)) (i32.const 10)))

  (func $is_hex (param $c i32) (result i32)
    (i32.or (call $is_digit (local.get $c))
            (i32.lt_u (i32.sub (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x61)) (i32.const 6))))

  ;; scan_string scans the string whose opening quote is at p and returns
  ;; the offset after its closing quote.
  (func $scan_string (param $p i32) (param $end i32) (result i32)
    (local $c i32) (local $k i32)
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (loop $next
      (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 0x22)) (then (return (i32.add (local.get $p) (i32.const 1)))))
      (if (i32.eq (local.get $c) (i32.const 0x5c))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
          (local.set $c (i32.load8_u (local.get $p)))
          (block $simple
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x62)))   ;; b
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x66)))   ;; f
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x6e)))   ;; n
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x72)))   ;; r
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x74)))   ;; t
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x5c)))   ;; \
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x2f)))   ;; /
            (br_if $simple (i32.eq (local.get $c) (i32.const 0x22)))   ;; "
            (if (i32.ne (local.get $c) (i32.const 0x75))               ;; u
              (then (return (call $serr (local.get $c) (global.get $C_ESCAPE)))))
            (local.set $k (i32.const 4))
            (loop $hex
              (local.set $p (i32.add (local.get $p) (i32.const 1)))
              (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
              (local.set $c (i32.load8_u (local.get $p)))
              (if (i32.eqz (call $is_hex (local.get $c)))
                (then (return (call $serr (local.get $c) (global.get $C_ESCAPE_U)))))
              (local.set $k (i32.sub (local.get $k) (i32.const 1)))
              (br_if $hex (local.get $k))))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $next)))
      (if (i32.lt_u (local.get $c) (i32.const 0x20))
        (then (return (call $serr (local.get $c) (global.get $C_IN_STRING)))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $next))
    (unreachable))

  ;; scan_number scans the number that starts at p (a '-' or a digit) and
  ;; returns the offset of the byte that ends it.
  (func $scan_number (param $p i32) (param $end i32) (result i32)
    (local $c i32)
    (local.set $c (i32.load8_u (local.get $p)))
    (block $int_done
      (if (i32.eq (local.get $c) (i32.const 0x2d))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
          (local.set $c (i32.load8_u (local.get $p)))
          (if (i32.eqz (call $is_digit (local.get $c)))
            (then (return (call $serr (local.get $c) (global.get $C_NUMBER)))))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      ;; a leading 0 stands alone; 1-9 take the digits that follow
      (br_if $int_done (i32.eq (local.get $c) (i32.const 0x30)))
      (block $digits_done
        (loop $digits
          (br_if $digits_done (i32.ge_u (local.get $p) (local.get $end)))
          (br_if $digits_done (i32.eqz (call $is_digit (i32.load8_u (local.get $p)))))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $digits))))
    (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (local.get $p))))
    (local.set $c (i32.load8_u (local.get $p)))
    (if (i32.eq (local.get $c) (i32.const 0x2e))
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
        (local.set $c (i32.load8_u (local.get $p)))
        (if (i32.eqz (call $is_digit (local.get $c)))
          (then (return (call $serr (local.get $c) (global.get $C_DOT)))))
        (block $frac_done
          (loop $frac
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br_if $frac_done (i32.ge_u (local.get $p) (local.get $end)))
            (br_if $frac (call $is_digit (i32.load8_u (local.get $p))))))
        (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (local.get $p))))
        (local.set $c (i32.load8_u (local.get $p)))))
    (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x65))   ;; e or E
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
        (local.set $c (i32.load8_u (local.get $p)))
        (if (i32.or (i32.eq (local.get $c) (i32.const 0x2b)) (i32.eq (local.get $c) (i32.const 0x2d)))
          (then
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
            (local.set $c (i32.load8_u (local.get $p)))))
        (if (i32.eqz (call $is_digit (local.get $c)))
          (then (return (call $serr (local.get $c) (global.get $C_EXPONENT)))))
        (block $exp_done
          (loop $exp
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br_if $exp_done (i32.ge_u (local.get $p) (local.get $end)))
            (br_if $exp (call $is_digit (i32.load8_u (local.get $p))))))))
    (local.get $p))

  ;; scan_lit checks the n letters at lit after the literal's first letter
  ;; at p; the context of letter i is the C_ string ctx + 128*i.
  (func $scan_lit (param $p i32) (param $end i32) (param $lit i32) (param $n i32) (param $ctx i32) (result i32)
    (local $c i32)
    (loop $next
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.ne (local.get $c) (i32.load8_u (local.get $lit)))
        (then (return (call $serr (local.get $c) (local.get $ctx)))))
      (local.set $lit (i32.add (local.get $lit) (i32.const 1)))
      (local.set $ctx (i32.add (local.get $ctx) (i32.const 128)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $next (local.get $n)))
    (i32.add (local.get $p) (i32.const 1)))

  ;; scan scans one JSON value at [p, end), after white space, and returns
  ;; the offset after it: after the closing quote or bracket of a string,
  ;; an object or an array; at the byte that ends a number or a literal
  ;; (which is not examined: json.Decoder reports a bad byte after a
  ;; complete value only when it reads on). The nesting stack holds, per
  ;; open object or array: 1 an object whose key was read last, 2 an
  ;; object whose value was read last, 3 an array.
  (func $scan (param $p i32) (param $end i32) (result i32)
    (local $depth i32) (local $c i32) (local $s i32)
    (loop $value
      (local.set $p (call $skip_ws (local.get $p) (local.get $end)))
      (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
      (local.set $c (i32.load8_u (local.get $p)))
      (block $ended
        (if (i32.eq (local.get $c) (i32.const 0x7b))   ;; {
          (then
            (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
            (if (i32.gt_u (local.get $depth) (i32.const 10000))
              (then (return (call $serr (local.get $c) (global.get $C_DEPTH)))))
            (i32.store8 (i32.add (global.get $stack) (local.get $depth)) (i32.const 1))
            (local.set $p (call $skip_ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
            (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
            (local.set $c (i32.load8_u (local.get $p)))
            (if (i32.eq (local.get $c) (i32.const 0x7d))
              (then
                (local.set $p (i32.add (local.get $p) (i32.const 1)))
                (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
                (br $ended)))
            (if (i32.ne (local.get $c) (i32.const 0x22))
              (then (return (call $serr (local.get $c) (global.get $C_BEGIN_KEY)))))
            (local.set $p (call $scan_string (local.get $p) (local.get $end)))
            (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
            (br $ended)))
        (if (i32.eq (local.get $c) (i32.const 0x5b))   ;; [
          (then
            (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
            (if (i32.gt_u (local.get $depth) (i32.const 10000))
              (then (return (call $serr (local.get $c) (global.get $C_DEPTH)))))
            (i32.store8 (i32.add (global.get $stack) (local.get $depth)) (i32.const 3))
            (local.set $p (call $skip_ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
            (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
            (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x5d))
              (then
                (local.set $p (i32.add (local.get $p) (i32.const 1)))
                (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
                (br $ended)))
            (br $value)))
        (if (i32.eq (local.get $c) (i32.const 0x22))
          (then
            (local.set $p (call $scan_string (local.get $p) (local.get $end)))
            (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
            (br $ended)))
        (if (i32.or (i32.eq (local.get $c) (i32.const 0x2d)) (call $is_digit (local.get $c)))
          (then
            (local.set $p (call $scan_number (local.get $p) (local.get $end)))
            (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
            (br $ended)))
        (if (i32.eq (local.get $c) (i32.const 0x74))
          (then
            (local.set $p (call $scan_lit (local.get $p) (local.get $end) (global.get $L_TRUE) (i32.const 3) (global.get $C_TRUE_R)))
            (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
            (br $ended)))
        (if (i32.eq (local.get $c) (i32.const 0x66))
          (then
            (local.set $p (call $scan_lit (local.get $p) (local.get $end) (global.get $L_FALSE) (i32.const 4) (global.get $C_FALSE_A)))
            (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
            (br $ended)))
        (if (i32.eq (local.get $c) (i32.const 0x6e))
          (then
            (local.set $p (call $scan_lit (local.get $p) (local.get $end) (global.get $L_NULL) (i32.const 3) (global.get $C_NULL_U)))
            (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
            (br $ended)))
        (return (call $serr (local.get $c) (global.get $C_BEGIN_VALUE))))
      ;; A value ended: what may follow it depends on the innermost open
      ;; object or array.
      (loop $after
        (if (i32.eqz (local.get $depth)) (then (return (local.get $p))))
        (local.set $p (call $skip_ws (local.get $p) (local.get $end)))
        (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
        (local.set $c (i32.load8_u (local.get $p)))
        (local.set $s (i32.load8_u (i32.add (global.get $stack) (local.get $depth))))
        (if (i32.eq (local.get $s) (i32.const 1))
          (then
            (if (i32.ne (local.get $c) (i32.const 0x3a))
              (then (return (call $serr (local.get $c) (global.get $C_AFTER_KEY)))))
            (i32.store8 (i32.add (global.get $stack) (local.get $depth)) (i32.const 2))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $value)))
        (if (i32.eq (local.get $s) (i32.const 2))
          (then
            (if (i32.eq (local.get $c) (i32.const 0x2c))
              (then
                (i32.store8 (i32.add (global.get $stack) (local.get $depth)) (i32.const 1))
                (local.set $p (call $skip_ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
                (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $seof))))
                (local.set $c (i32.load8_u (local.get $p)))
                (if (i32.ne (local.get $c) (i32.const 0x22))
                  (then (return (call $serr (local.get $c) (global.get $C_BEGIN_KEY)))))
                (local.set $p (call $scan_string (local.get $p) (local.get $end)))
                (if (i32.lt_s (local.get $p) (i32.const 0)) (then (return (i32.const -1))))
                (br $after)))
            (if (i32.eq (local.get $c) (i32.const 0x7d))
              (then
                (local.set $p (i32.add (local.get $p) (i32.const 1)))
                (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
                (br $after)))
            (return (call $serr (local.get $c) (global.get $C_AFTER_PAIR)))))
        (if (i32.eq (local.get $c) (i32.const 0x2c))
          (then
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $value)))
        (if (i32.eq (local.get $c) (i32.const 0x5d))
          (then
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
            (br $after)))
        (return (call $serr (local.get $c) (global.get $C_AFTER_ELEMENT)))))
    (unreachable))

  ;; m_quotechar appends byte c as encoding/json's quoteChar does: '\'',
  ;; '"', or strconv.Quote of the rune c between single quotes.
  (func $m_quotechar (param $c i32)
    (local $n i32)
    (call $m_byte (i32.const 0x27))
    (if (i32.eq (local.get $c) (i32.const 0x27))
      (then (call $m_byte (i32.const 0x5c)) (call $m_byte (i32.const 0x27)) (call $m_byte (i32.const 0x27)) (return)))
    (if (i32.eq (local.get $c) (i32.const 0x22))
      (then (call $m_byte (i32.const 0x22)) (call $m_byte (i32.const 0x27)) (return)))
    (local.set $n (call $put_utf8 (i32.const 34832) (local.get $c)))
    (call $m_quote_body (i32.const 34832) (local.get $n))
    (call $m_byte (i32.const 0x27)))

  ;; m_syntax appends the message of the syntax error in $e_c and $e_ctx.
  (func $m_syntax
    (call $m_str (global.get $S_INVALID_CHAR))
    (call $m_quotechar (global.get $e_c))
    (call $m_str (global.get $e_ctx)))

  ;; ---------------------------------------------------------------
  ;; ParseFloat: strconv's decimal algorithm, after an exact fast path.
  ;; ---------------------------------------------------------------

  (global $f_ovf (mut i32) (i32.const 0))   ;; the last parse overflowed (+-Inf)
  (global $dd i32 (i32.const 32768))        ;; digits, values 0-9
  (global $dt i32 (i32.const 33792))        ;; left shift's buffer (820)
  (global $d_nd (mut i32) (i32.const 0))
  (global $d_dp (mut i32) (i32.const 0))
  (global $d_neg (mut i32) (i32.const 0))
  (global $d_trunc (mut i32) (i32.const 0))
  (data (i32.const 34816) "\01\03\06\09\0d\10\13\17\1a")   ;; powtab: 1 3 6 9 13 16 19 23 26

  (func $digit (param $i i32) (result i32) (i32.load8_u (i32.add (global.get $dd) (local.get $i))))

  (func $d_trim
    (block $done
      (loop $next
        (br_if $done (i32.eqz (global.get $d_nd)))
        (br_if $done (call $digit (i32.sub (global.get $d_nd) (i32.const 1))))
        (global.set $d_nd (i32.sub (global.get $d_nd) (i32.const 1)))
        (br $next)))
    (if (i32.eqz (global.get $d_nd)) (then (global.set $d_dp (i32.const 0)))))

  ;; d_set reads the JSON number at [p, end) into the decimal, as
  ;; strconv's decimal.set does.
  (func $d_set (param $p i32) (param $end i32)
    (local $c i32) (local $sawdot i32) (local $e i32) (local $esign i32)
    (global.set $d_nd (i32.const 0))
    (global.set $d_dp (i32.const 0))
    (global.set $d_neg (i32.const 0))
    (global.set $d_trunc (i32.const 0))
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2d))
      (then (global.set $d_neg (i32.const 1)) (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (if (i32.eq (local.get $c) (i32.const 0x2e))
          (then
            (local.set $sawdot (i32.const 1))
            (global.set $d_dp (global.get $d_nd)))
          (else
            (br_if $done (i32.eqz (call $is_digit (local.get $c))))
            (local.set $c (i32.sub (local.get $c) (i32.const 0x30)))
            (if (i32.and (i32.eqz (local.get $c)) (i32.eqz (global.get $d_nd)))
              (then (global.set $d_dp (i32.sub (global.get $d_dp) (i32.const 1))))   ;; a leading zero
              (else
                (if (i32.lt_u (global.get $d_nd) (i32.const 800))
                  (then
                    (i32.store8 (i32.add (global.get $dd) (global.get $d_nd)) (local.get $c))
                    (global.set $d_nd (i32.add (global.get $d_nd) (i32.const 1))))
                  (else (if (local.get $c) (then (global.set $d_trunc (i32.const 1))))))))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $next)))
    (if (i32.eqz (local.get $sawdot)) (then (global.set $d_dp (global.get $d_nd))))
    (if (i32.lt_u (local.get $p) (local.get $end))   ;; the exponent
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (local.set $esign (i32.const 1))
        (local.set $c (i32.load8_u (local.get $p)))
        (if (i32.eq (local.get $c) (i32.const 0x2b)) (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
        (if (i32.eq (local.get $c) (i32.const 0x2d))
          (then (local.set $esign (i32.const -1)) (local.set $p (i32.add (local.get $p) (i32.const 1)))))
        (block $edone
          (loop $enext
            (br_if $edone (i32.ge_u (local.get $p) (local.get $end)))
            (if (i32.lt_s (local.get $e) (i32.const 10000))
              (then (local.set $e (i32.add (i32.mul (local.get $e) (i32.const 10))
                                          (i32.sub (i32.load8_u (local.get $p)) (i32.const 0x30))))))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $enext)))
        (global.set $d_dp (i32.add (global.get $d_dp) (i32.mul (local.get $e) (local.get $esign)))))))

  ;; d_rshift divides the decimal by 2^k, k <= 60 (strconv's rightShift).
  (func $d_rshift (param $k i32)
    (local $r i32) (local $w i32) (local $n i64) (local $kk i64) (local $mask i64) (local $dig i64)
    (local.set $kk (i64.extend_i32_u (local.get $k)))
    (block $picked
      (loop $pick
        (br_if $picked (i64.ne (i64.shr_u (local.get $n) (local.get $kk)) (i64.const 0)))
        (if (i32.ge_s (local.get $r) (global.get $d_nd))
          (then
            (if (i64.eqz (local.get $n))
              (then (global.set $d_nd (i32.const 0)) (return)))
            (block $enough
              (loop $more
                (br_if $enough (i64.ne (i64.shr_u (local.get $n) (local.get $kk)) (i64.const 0)))
                (local.set $n (i64.mul (local.get $n) (i64.const 10)))
                (local.set $r (i32.add (local.get $r) (i32.const 1)))
                (br $more)))
            (br $picked)))
        (local.set $n (i64.add (i64.mul (local.get $n) (i64.const 10)) (i64.extend_i32_u (call $digit (local.get $r)))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $pick)))
    (global.set $d_dp (i32.sub (global.get $d_dp) (i32.sub (local.get $r) (i32.const 1))))
    (local.set $mask (i64.sub (i64.shl (i64.const 1) (local.get $kk)) (i64.const 1)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $r) (global.get $d_nd)))
        (local.set $dig (i64.shr_u (local.get $n) (local.get $kk)))
        (local.set $n (i64.and (local.get $n) (local.get $mask)))
        (i32.store8 (i32.add (global.get $dd) (local.get $w)) (i32.wrap_i64 (local.get $dig)))
        (local.set $w (i32.add (local.get $w) (i32.const 1)))
        (local.set $n (i64.add (i64.mul (local.get $n) (i64.const 10)) (i64.extend_i32_u (call $digit (local.get $r)))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $next)))
    (block $done
      (loop $next
        (br_if $done (i64.eqz (local.get $n)))
        (local.set $dig (i64.shr_u (local.get $n) (local.get $kk)))
        (local.set $n (i64.and (local.get $n) (local.get $mask)))
        (if (i32.lt_s (local.get $w) (i32.const 800))
          (then
            (i32.store8 (i32.add (global.get $dd) (local.get $w)) (i32.wrap_i64 (local.get $dig)))
            (local.set $w (i32.add (local.get $w) (i32.const 1))))
          (else (if (i64.ne (local.get $dig) (i64.const 0)) (then (global.set $d_trunc (i32.const 1))))))
        (local.set $n (i64.mul (local.get $n) (i64.const 10)))
        (br $next)))
    (global.set $d_nd (local.get $w))
    (call $d_trim))

  ;; d_lshift multiplies the decimal by 2^k, k <= 60: the product's digits
  ;; are written right to left into the shift buffer, then the first 800
  ;; kept (strconv's leftShift, which computes the digit count ahead).
  (func $d_lshift (param $k i32)
    (local $r i32) (local $w i32) (local $n i64) (local $kk i64) (local $q i64) (local $count i32) (local $keep i32) (local $i i32)
    (local.set $kk (i64.extend_i32_u (local.get $k)))
    (local.set $w (i32.add (global.get $dt) (i32.const 820)))
    (local.set $r (global.get $d_nd))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $r)))
        (local.set $r (i32.sub (local.get $r) (i32.const 1)))
        (local.set $n (i64.add (local.get $n) (i64.shl (i64.extend_i32_u (call $digit (local.get $r))) (local.get $kk))))
        (local.set $q (i64.div_u (local.get $n) (i64.const 10)))
        (local.set $w (i32.sub (local.get $w) (i32.const 1)))
        (i32.store8 (local.get $w) (i32.wrap_i64 (i64.sub (local.get $n) (i64.mul (local.get $q) (i64.const 10)))))
        (local.set $n (local.get $q))
        (br $next)))
    (block $done
      (loop $next
        (br_if $done (i64.eqz (local.get $n)))
        (local.set $q (i64.div_u (local.get $n) (i64.const 10)))
        (local.set $w (i32.sub (local.get $w) (i32.const 1)))
        (i32.store8 (local.get $w) (i32.wrap_i64 (i64.sub (local.get $n) (i64.mul (local.get $q) (i64.const 10)))))
        (local.set $n (local.get $q))
        (br $next)))
    (local.set $count (i32.sub (i32.add (global.get $dt) (i32.const 820)) (local.get $w)))
    (local.set $keep (select (local.get $count) (i32.const 800) (i32.lt_u (local.get $count) (i32.const 800))))
    (memory.copy (global.get $dd) (local.get $w) (local.get $keep))
    (local.set $i (local.get $keep))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (if (i32.load8_u (i32.add (local.get $w) (local.get $i))) (then (global.set $d_trunc (i32.const 1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $d_dp (i32.add (global.get $d_dp) (i32.sub (local.get $count) (global.get $d_nd))))
    (global.set $d_nd (local.get $keep))
    (call $d_trim))

  (func $d_shift (param $k i32)
    (if (i32.eqz (global.get $d_nd)) (then (return)))
    (if (i32.gt_s (local.get $k) (i32.const 0))
      (then
        (block $done
          (loop $next
            (br_if $done (i32.le_s (local.get $k) (i32.const 60)))
            (call $d_lshift (i32.const 60))
            (local.set $k (i32.sub (local.get $k) (i32.const 60)))
            (br $next)))
        (call $d_lshift (local.get $k))
        (return)))
    (if (i32.lt_s (local.get $k) (i32.const 0))
      (then
        (block $done
          (loop $next
            (br_if $done (i32.ge_s (local.get $k) (i32.const -60)))
            (call $d_rshift (i32.const 60))
            (local.set $k (i32.add (local.get $k) (i32.const 60)))
            (br $next)))
        (call $d_rshift (i32.sub (i32.const 0) (local.get $k))))))

  ;; d_round_up is strconv's shouldRoundUp: round up when chopping at nd
  ;; digits (half to even, up when digits were dropped).
  (func $d_round_up (param $nd i32) (result i32)
    (if (i32.or (i32.lt_s (local.get $nd) (i32.const 0)) (i32.ge_s (local.get $nd) (global.get $d_nd)))
      (then (return (i32.const 0))))
    (if (i32.and (i32.eq (call $digit (local.get $nd)) (i32.const 5))
                 (i32.eq (i32.add (local.get $nd) (i32.const 1)) (global.get $d_nd)))
      (then
        (if (global.get $d_trunc) (then (return (i32.const 1))))
        (return (i32.and (i32.gt_s (local.get $nd) (i32.const 0))
                         (i32.and (call $digit (i32.sub (local.get $nd) (i32.const 1))) (i32.const 1))))))
    (i32.ge_u (call $digit (local.get $nd)) (i32.const 5)))

  (func $d_rounded_integer (result i64)
    (local $i i32) (local $n i64)
    (if (i32.gt_s (global.get $d_dp) (i32.const 20)) (then (return (i64.const -1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $i) (global.get $d_dp)))
        (br_if $done (i32.ge_s (local.get $i) (global.get $d_nd)))
        (local.set $n (i64.add (i64.mul (local.get $n) (i64.const 10)) (i64.extend_i32_u (call $digit (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $i) (global.get $d_dp)))
        (local.set $n (i64.mul (local.get $n) (i64.const 10)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (if (call $d_round_up (global.get $d_dp)) (then (local.set $n (i64.add (local.get $n) (i64.const 1)))))
    (local.get $n))

  (func $powtab (param $i i32) (result i32)
    (if (i32.ge_s (local.get $i) (i32.const 9)) (then (return (i32.const 27))))
    (i32.load8_u offset=34816 (local.get $i)))

  ;; d_float is strconv's decimal.floatBits for float64 (bias -1023, 52
  ;; mantissa bits, 11 exponent bits); it sets $f_ovf on overflow.
  (func $d_float (result f64)
    (local $exp i32) (local $mant i64) (local $n i32) (local $bits i64)
    (block $out
      (block $overflow
        (if (i32.eqz (global.get $d_nd))
          (then (local.set $exp (i32.const -1023)) (br $out)))
        (br_if $overflow (i32.gt_s (global.get $d_dp) (i32.const 310)))
        (if (i32.lt_s (global.get $d_dp) (i32.const -330))
          (then (local.set $exp (i32.const -1023)) (br $out)))
        (block $done
          (loop $next
            (br_if $done (i32.le_s (global.get $d_dp) (i32.const 0)))
            (local.set $n (call $powtab (global.get $d_dp)))
            (call $d_shift (i32.sub (i32.const 0) (local.get $n)))
            (local.set $exp (i32.add (local.get $exp) (local.get $n)))
            (br $next)))
        (block $done
          (loop $next
            (br_if $done
              (i32.eqz (i32.or (i32.lt_s (global.get $d_dp) (i32.const 0))
                               (i32.and (i32.eqz (global.get $d_dp)) (i32.lt_u (call $digit (i32.const 0)) (i32.const 5))))))
            (local.set $n (call $powtab (i32.sub (i32.const 0) (global.get $d_dp))))
            (call $d_shift (local.get $n))
            (local.set $exp (i32.sub (local.get $exp) (local.get $n)))
            (br $next)))
        (local.set $exp (i32.sub (local.get $exp) (i32.const 1)))
        (if (i32.lt_s (local.get $exp) (i32.const -1022))
          (then
            (local.set $n (i32.sub (i32.const -1022) (local.get $exp)))
            (call $d_shift (i32.sub (i32.const 0) (local.get $n)))
            (local.set $exp (i32.add (local.get $exp) (local.get $n)))))
        (br_if $overflow (i32.ge_s (i32.add (local.get $exp) (i32.const 1023)) (i32.const 2047)))
        (call $d_shift (i32.const 53))
        (local.set $mant (call $d_rounded_integer))
        (if (i64.eq (local.get $mant) (i64.const 0x20000000000000))
          (then
            (local.set $mant (i64.shr_u (local.get $mant) (i64.const 1)))
            (local.set $exp (i32.add (local.get $exp) (i32.const 1)))
            (br_if $overflow (i32.ge_s (i32.add (local.get $exp) (i32.const 1023)) (i32.const 2047)))))
        (if (i64.eqz (i64.and (local.get $mant) (i64.const 0x10000000000000)))
          (then (local.set $exp (i32.const -1023))))
        (br $out))
      ;; overflow: +-Inf
      (local.set $mant (i64.const 0))
      (local.set $exp (i32.const 1024))
      (global.set $f_ovf (i32.const 1)))
    (local.set $bits (i64.or (i64.and (local.get $mant) (i64.const 0xfffffffffffff))
                             (i64.shl (i64.extend_i32_u (i32.and (i32.add (local.get $exp) (i32.const 1023)) (i32.const 0x7ff)))
                                      (i64.const 52))))
    (if (global.get $d_neg) (then (local.set $bits (i64.or (local.get $bits) (i64.const 0x8000000000000000)))))
    (f64.reinterpret_i64 (local.get $bits)))

  ;; parse_float is strconv.ParseFloat(text, 64) of the JSON number at
  ;; [p, end), which the scanner accepted. A number of at most 15 digits
  ;; whose decimal exponent is within +-22 is exact in one float64
  ;; multiplication or division (both operands are exact), as in Go's
  ;; fast path; any other goes through the decimal algorithm. Either way
  ;; the result is the correctly rounded float64 Go computes. $f_ovf says
  ;; whether it overflowed to an infinity (Go's ErrRange).
  (func $parse_float (param $p i32) (param $end i32) (result f64)
    (local $q i32) (local $c i32) (local $neg i32) (local $mant i64) (local $digits i32)
    (local $frac i32) (local $sawdot i32) (local $e i32) (local $esign i32) (local $f f64) (local $pow f64)
    (global.set $f_ovf (i32.const 0))
    (local.set $q (local.get $p))
    (block $slow
      (if (i32.eq (i32.load8_u (local.get $q)) (i32.const 0x2d))
        (then (local.set $neg (i32.const 1)) (local.set $q (i32.add (local.get $q) (i32.const 1)))))
      (block $mant_done
        (loop $next
          (br_if $mant_done (i32.ge_u (local.get $q) (local.get $end)))
          (local.set $c (i32.load8_u (local.get $q)))
          (if (i32.eq (local.get $c) (i32.const 0x2e))
            (then (local.set $sawdot (i32.const 1)))
            (else
              (br_if $mant_done (i32.eqz (call $is_digit (local.get $c))))
              (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
              (br_if $slow (i32.gt_u (local.get $digits) (i32.const 15)))
              (local.set $mant (i64.add (i64.mul (local.get $mant) (i64.const 10))
                                        (i64.extend_i32_u (i32.sub (local.get $c) (i32.const 0x30)))))
              (if (local.get $sawdot) (then (local.set $frac (i32.add (local.get $frac) (i32.const 1)))))))
          (local.set $q (i32.add (local.get $q) (i32.const 1)))
          (br $next)))
      (if (i32.lt_u (local.get $q) (local.get $end))
        (then
          (local.set $q (i32.add (local.get $q) (i32.const 1)))
          (local.set $esign (i32.const 1))
          (local.set $c (i32.load8_u (local.get $q)))
          (if (i32.eq (local.get $c) (i32.const 0x2b)) (then (local.set $q (i32.add (local.get $q) (i32.const 1)))))
          (if (i32.eq (local.get $c) (i32.const 0x2d))
            (then (local.set $esign (i32.const -1)) (local.set $q (i32.add (local.get $q) (i32.const 1)))))
          (block $edone
            (loop $enext
              (br_if $edone (i32.ge_u (local.get $q) (local.get $end)))
              (local.set $e (i32.add (i32.mul (local.get $e) (i32.const 10))
                                     (i32.sub (i32.load8_u (local.get $q)) (i32.const 0x30))))
              (br_if $slow (i32.gt_s (local.get $e) (i32.const 1000)))
              (local.set $q (i32.add (local.get $q) (i32.const 1)))
              (br $enext)))))
      (local.set $e (i32.sub (i32.mul (local.get $e) (local.get $esign)) (local.get $frac)))
      (br_if $slow (i32.gt_s (local.get $e) (i32.const 22)))
      (br_if $slow (i32.lt_s (local.get $e) (i32.const -22)))
      (local.set $f (f64.convert_i64_u (local.get $mant)))
      (local.set $pow (f64.const 1))
      (local.set $c (select (local.get $e) (i32.sub (i32.const 0) (local.get $e)) (i32.ge_s (local.get $e) (i32.const 0))))
      (block $done
        (loop $next
          (br_if $done (i32.eqz (local.get $c)))
          (local.set $pow (f64.mul (local.get $pow) (f64.const 10)))
          (local.set $c (i32.sub (local.get $c) (i32.const 1)))
          (br $next)))
      (local.set $f (select (f64.mul (local.get $f) (local.get $pow)) (f64.div (local.get $f) (local.get $pow))
                            (i32.ge_s (local.get $e) (i32.const 0))))
      (if (local.get $neg) (then (local.set $f (f64.neg (local.get $f)))))
      (return (local.get $f)))
    (call $d_set (local.get $p) (local.get $end))
    (call $d_float))

  ;; ---------------------------------------------------------------
  ;; JSON objects, as the Go plugin's readObject reads them.
  ;; ---------------------------------------------------------------

  ;; A member table entry is 24 bytes: the key's text with its quotes
  ;; (ptr 0, len 4), the value's text (8, 12), and the key unquoted
  ;; (16, 20), which names() fills in.

  ;; read_object splits [p, end), which must hold exactly one JSON object,
  ;; into its members, written from t on, and returns their count, or -1
  ;; with the reason in $oe_kind: 1 the input ends early ("unexpected end
  ;; of JSON"), 2 a syntax error ($e_c, $e_ctx), 3 it is not an object
  ;; ("it is " + the kind of byte $oe_c), 4 no colon after a key, 5 data
  ;; after the object, 6 a number that overflows float64 ($oe_p, $oe_n).
  ;; The steps are json.Decoder's: Token for '{', More and Token for each
  ;; key, Decode for each value, Token for '}', Token for the end.
  (global $oe_kind (mut i32) (i32.const 0))
  (global $oe_c (mut i32) (i32.const 0))
  (global $oe_p (mut i32) (i32.const 0))
  (global $oe_n (mut i32) (i32.const 0))

  (func $oe (param $kind i32) (result i32)
    (global.set $oe_kind (local.get $kind))
    (i32.const -1))

  ;; oe_scan turns a failed scan into a read_object failure.
  (func $oe_scan (result i32)
    (call $oe (select (i32.const 1) (i32.const 2) (i32.eq (global.get $e_kind) (i32.const 2)))))

  ;; oe_token fails with Token's syntax error for byte c in a state whose
  ;; context is ctx.
  (func $oe_token (param $c i32) (param $ctx i32) (result i32)
    (drop (call $serr (local.get $c) (local.get $ctx)))
    (call $oe (i32.const 2)))

  (func $read_object (param $p i32) (param $end i32) (param $t i32) (result i32)
    (local $c i32) (local $q i32) (local $n i32) (local $started i32) (local $ks i32) (local $vs i32) (local $e i32)
    (local.set $p (call $skip_ws (local.get $p) (local.get $end)))
    (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $oe (i32.const 1)))))
    (local.set $c (i32.load8_u (local.get $p)))
    (if (i32.ne (local.get $c) (i32.const 0x7b))
      (then
        (global.set $oe_c (local.get $c))
        (if (i32.eq (local.get $c) (i32.const 0x5b)) (then (return (call $oe (i32.const 3)))))
        (if (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x5d)) (i32.eq (local.get $c) (i32.const 0x7d)))
                    (i32.or (i32.eq (local.get $c) (i32.const 0x3a)) (i32.eq (local.get $c) (i32.const 0x2c))))
          (then (return (call $oe_token (local.get $c) (global.get $C_BEGIN_VALUE)))))
        ;; Token decodes any other value whole, into an interface{}: a
        ;; number must fit a float64.
        (local.set $q (call $scan (local.get $p) (local.get $end)))
        (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (call $oe_scan))))
        (if (i32.or (i32.eq (local.get $c) (i32.const 0x2d)) (call $is_digit (local.get $c)))
          (then
            (drop (call $parse_float (local.get $p) (local.get $q)))
            (if (global.get $f_ovf)
              (then
                (global.set $oe_p (local.get $p))
                (global.set $oe_n (i32.sub (local.get $q) (local.get $p)))
                (return (call $oe (i32.const 6)))))))
        (return (call $oe (i32.const 3)))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (block $members_done
      (loop $members
        ;; More: another member unless the input ends or a bracket closes
        (local.set $p (call $skip_ws (local.get $p) (local.get $end)))
        (br_if $members_done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (br_if $members_done (i32.or (i32.eq (local.get $c) (i32.const 0x5d)) (i32.eq (local.get $c) (i32.const 0x7d))))
        ;; Token: the key, after a comma unless it is the first
        (if (local.get $started)
          (then
            (if (i32.ne (local.get $c) (i32.const 0x2c))
              (then (return (call $oe_token (local.get $c) (global.get $C_AFTER_PAIR)))))
            (local.set $p (call $skip_ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
            (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $oe (i32.const 1)))))
            (local.set $c (i32.load8_u (local.get $p)))
            (if (i32.ne (local.get $c) (i32.const 0x22))
              (then (return (call $oe_token (local.get $c) (global.get $C_BEGIN_KEY))))))
          (else
            (if (i32.ne (local.get $c) (i32.const 0x22))
              (then (return (call $oe_token (local.get $c) (global.get $C_NONE)))))))
        (local.set $ks (local.get $p))
        (local.set $q (call $scan (local.get $p) (local.get $end)))
        (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (call $oe_scan))))
        ;; Decode: a colon, then the value
        (local.set $p (call $skip_ws (local.get $q) (local.get $end)))
        (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $oe (i32.const 1)))))
        (if (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x3a)) (then (return (call $oe (i32.const 4)))))
        (local.set $vs (call $skip_ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
        (local.set $e (call $scan (local.get $vs) (local.get $end)))
        (if (i32.lt_s (local.get $e) (i32.const 0)) (then (return (call $oe_scan))))
        (call $ensure (i32.add (local.get $t) (i32.const 24)))
        (i32.store (local.get $t) (local.get $ks))
        (i32.store offset=4 (local.get $t) (i32.sub (local.get $q) (local.get $ks)))
        (i32.store offset=8 (local.get $t) (local.get $vs))
        (i32.store offset=12 (local.get $t) (i32.sub (local.get $e) (local.get $vs)))
        (local.set $t (i32.add (local.get $t) (i32.const 24)))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $started (i32.const 1))
        (local.set $p (local.get $e))
        (br $members)))
    ;; Token: the closing brace
    (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (call $oe (i32.const 1)))))
    (if (i32.eq (local.get $c) (i32.const 0x5d))
      (then (return (call $oe_token (local.get $c) (select (global.get $C_AFTER_PAIR) (global.get $C_NONE) (local.get $started))))))
    ;; Token: the end of the input
    (if (i32.lt_u (call $skip_ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)) (local.get $end))
      (then (return (call $oe (i32.const 5)))))
    (local.get $n))

  ;; m_kind appends the Go plugin's kind() of a value starting with c.
  (func $m_kind (param $c i32)
    (if (i32.eq (local.get $c) (i32.const 0x22)) (then (call $m_str (global.get $S_K_STRING)) (return)))
    (if (i32.eq (local.get $c) (i32.const 0x7b)) (then (call $m_str (global.get $S_K_OBJECT)) (return)))
    (if (i32.eq (local.get $c) (i32.const 0x5b)) (then (call $m_str (global.get $S_K_ARRAY)) (return)))
    (if (i32.or (i32.eq (local.get $c) (i32.const 0x74)) (i32.eq (local.get $c) (i32.const 0x66)))
      (then (call $m_str (global.get $S_K_BOOLEAN)) (return)))
    (if (i32.eq (local.get $c) (i32.const 0x6e)) (then (call $m_str (global.get $S_K_NULL)) (return)))
    (call $m_str (global.get $S_K_NAN)))

  ;; m_object_error appends the message of read_object's failure.
  (func $m_object_error
    (local $k i32)
    (local.set $k (global.get $oe_kind))
    (if (i32.eq (local.get $k) (i32.const 1)) (then (call $m_str (global.get $S_UNEXPECTED_END)) (return)))
    (if (i32.eq (local.get $k) (i32.const 2)) (then (call $m_syntax) (return)))
    (if (i32.eq (local.get $k) (i32.const 3))
      (then (call $m_str (global.get $S_IT_IS)) (call $m_kind (global.get $oe_c)) (return)))
    (if (i32.eq (local.get $k) (i32.const 4)) (then (call $m_str (global.get $S_EXPECTED_COLON)) (return)))
    (if (i32.eq (local.get $k) (i32.const 5)) (then (call $m_str (global.get $S_DATA_AFTER)) (return)))
    (call $m_str (global.get $S_CANNOT))
    (call $m_str (global.get $S_NUMBER))
    (call $m_byte (i32.const 0x20))
    (call $m_bytes (global.get $oe_p) (global.get $oe_n))
    (call $m_str (global.get $S_INTO_VALUE))
    (call $m_str (global.get $S_FLOAT64)))

  ;; unquote writes the unquoted form of the JSON string whose text
  ;; between the quotes is [p, p+n) (valid: the scanner accepted it) at
  ;; dst, as encoding/json does, and returns its length: escapes decoded,
  ;; a \u surrogate pair joined, a lone surrogate and each byte of
  ;; invalid UTF-8 replaced by U+FFFD. dst needs up to 3n bytes.
  (func $unquote (param $p i32) (param $n i32) (param $dst i32) (result i32)
    (local $end i32) (local $w i32) (local $c i32) (local $r i32) (local $r2 i32)
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (local.set $w (local.get $dst))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (if (i32.eq (local.get $c) (i32.const 0x5c))
          (then
            (local.set $c (i32.load8_u offset=1 (local.get $p)))
            (if (i32.eq (local.get $c) (i32.const 0x75))
              (then
                (local.set $r (call $hex4 (i32.add (local.get $p) (i32.const 2))))
                (local.set $p (i32.add (local.get $p) (i32.const 6)))
                (if (i32.eq (i32.and (local.get $r) (i32.const 0xf800)) (i32.const 0xd800))
                  (then
                    (local.set $r2 (i32.const -1))
                    (if (i32.ge_u (i32.sub (local.get $end) (local.get $p)) (i32.const 6))
                      (then
                        (if (i32.and (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x5c))
                                     (i32.eq (i32.load8_u offset=1 (local.get $p)) (i32.const 0x75)))
                          (then (local.set $r2 (call $hex4 (i32.add (local.get $p) (i32.const 2))))))))
                    (if (i32.and (i32.lt_u (local.get $r) (i32.const 0xdc00))
                                 (i32.eq (i32.and (local.get $r2) (i32.const -1024)) (i32.const 0xdc00)))
                      (then
                        (local.set $r (i32.add (i32.const 0x10000)
                                        (i32.or (i32.shl (i32.sub (local.get $r) (i32.const 0xd800)) (i32.const 10))
                                                (i32.sub (local.get $r2) (i32.const 0xdc00)))))
                        (local.set $p (i32.add (local.get $p) (i32.const 6))))
                      (else (local.set $r (i32.const 0xfffd))))))
                (local.set $w (i32.add (local.get $w) (call $put_utf8 (local.get $w) (local.get $r))))
                (br $next)))
            (local.set $p (i32.add (local.get $p) (i32.const 2)))
            (if (i32.eq (local.get $c) (i32.const 0x62)) (then (local.set $c (i32.const 0x08))))
            (if (i32.eq (local.get $c) (i32.const 0x66)) (then (local.set $c (i32.const 0x0c))))
            (if (i32.eq (local.get $c) (i32.const 0x6e)) (then (local.set $c (i32.const 0x0a))))
            (if (i32.eq (local.get $c) (i32.const 0x72)) (then (local.set $c (i32.const 0x0d))))
            (if (i32.eq (local.get $c) (i32.const 0x74)) (then (local.set $c (i32.const 0x09))))
            (i32.store8 (local.get $w) (local.get $c))
            (local.set $w (i32.add (local.get $w) (i32.const 1)))
            (br $next)))
        (if (i32.lt_u (local.get $c) (i32.const 0x80))
          (then
            (i32.store8 (local.get $w) (local.get $c))
            (local.set $w (i32.add (local.get $w) (i32.const 1)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $next)))
        (local.set $r (call $utf8 (local.get $p) (local.get $end)))
        (if (i32.eq (global.get $dw) (i32.const 1))
          (then (local.set $w (i32.add (local.get $w) (call $put_utf8 (local.get $w) (i32.const 0xfffd)))))
          (else
            (memory.copy (local.get $w) (local.get $p) (global.get $dw))
            (local.set $w (i32.add (local.get $w) (global.get $dw)))))
        (local.set $p (i32.add (local.get $p) (global.get $dw)))
        (br $next)))
    (i32.sub (local.get $w) (local.get $dst)))

  ;; hex4 reads the four hex digits at p.
  (func $hex4 (param $p i32) (result i32)
    (local $i i32) (local $r i32) (local $c i32)
    (loop $next
      (local.set $c (i32.load8_u (i32.add (local.get $p) (local.get $i))))
      (local.set $c (select (i32.sub (local.get $c) (i32.const 0x30))
                            (i32.sub (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x57))
                            (i32.lt_u (local.get $c) (i32.const 0x3a))))
      (local.set $r (i32.or (i32.shl (local.get $r) (i32.const 4)) (local.get $c)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const 4))))
    (local.get $r))

  ;; names fills in the unquoted names of the n entries at t: the text
  ;; between the quotes when it is printable ASCII without escapes, else
  ;; its unquoted form, written from arena on. It returns the arena's new
  ;; end.
  (func $names (param $t i32) (param $n i32) (param $arena i32) (result i32)
    (local $p i32) (local $len i32) (local $i i32) (local $c i32) (local $plain i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $p (i32.add (i32.load (local.get $t)) (i32.const 1)))
        (local.set $len (i32.sub (i32.load offset=4 (local.get $t)) (i32.const 2)))
        (local.set $plain (i32.const 1))
        (local.set $i (i32.const 0))
        (block $checked
          (loop $check
            (br_if $checked (i32.ge_u (local.get $i) (local.get $len)))
            (local.set $c (i32.load8_u (i32.add (local.get $p) (local.get $i))))
            (if (i32.or (i32.ge_u (local.get $c) (i32.const 0x80)) (i32.eq (local.get $c) (i32.const 0x5c)))
              (then (local.set $plain (i32.const 0)) (br $checked)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $check)))
        (if (local.get $plain)
          (then
            (i32.store offset=16 (local.get $t) (local.get $p))
            (i32.store offset=20 (local.get $t) (local.get $len)))
          (else
            (call $ensure (i32.add (local.get $arena) (i32.mul (local.get $len) (i32.const 3))))
            (i32.store offset=16 (local.get $t) (local.get $arena))
            (local.set $len (call $unquote (local.get $p) (local.get $len) (local.get $arena)))
            (i32.store offset=20 (local.get $t) (local.get $len))
            (local.set $arena (i32.add (local.get $arena) (local.get $len)))))
        (local.set $t (i32.add (local.get $t) (i32.const 24)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $arena))

  ;; find returns the index of the last of the n entries at t whose name
  ;; is [name, name+len), or -1 (the member a JSON decoder keeps).
  (func $find (param $t i32) (param $n i32) (param $name i32) (param $len i32) (result i32)
    (local $e i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (local.set $e (i32.add (local.get $t) (i32.mul (local.get $n) (i32.const 24))))
        (if (i32.eq (i32.load offset=20 (local.get $e)) (local.get $len))
          (then
            (if (call $mem_eq (i32.load offset=16 (local.get $e)) (local.get $name) (local.get $len))
              (then (return (local.get $n))))))
        (br $next)))
    (i32.const -1))

  ;; ---------------------------------------------------------------
  ;; Configuration.
  ;; ---------------------------------------------------------------

  ;; The rules, after sluice_configure: tables in the rules blob at
  ;; $heap_base's old value (kept for the life of the instance).
  ;;   require: $req_n entries of 8 bytes: the name (ptr, len)
  ;;   min:     $min_n entries of 16 bytes, sorted by name: the name
  ;;            (ptr, len), the minimum (f64)
  ;;   set:     $set_n member table entries (24 bytes, as read_object's):
  ;;            the key's JSON text, the value compacted, the name
  (global $req_n (mut i32) (i32.const 0))
  (global $req_tab (mut i32) (i32.const 0))
  (global $min_n (mut i32) (i32.const 0))
  (global $min_tab (mut i32) (i32.const 0))
  (global $set_n (mut i32) (i32.const 0))
  (global $set_tab (mut i32) (i32.const 0))

  ;; fold_eq reports whether the unquoted key [k, k+n) names the field
  ;; [f, ...) (a NUL-terminated lower-case ASCII name) as encoding/json
  ;; matches names: ASCII case folded, and U+017F (long s) and U+212A
  ;; (Kelvin sign) folding to s and k.
  (func $fold_eq (param $k i32) (param $n i32) (param $f i32) (result i32)
    (local $end i32) (local $c i32) (local $want i32)
    (local.set $end (i32.add (local.get $k) (local.get $n)))
    (block $done
      (loop $next
        (local.set $want (i32.load8_u (local.get $f)))
        (br_if $done (i32.ge_u (local.get $k) (local.get $end)))
        (if (i32.eqz (local.get $want)) (then (return (i32.const 0))))
        (local.set $c (i32.load8_u (local.get $k)))
        (block $matched
          (if (i32.lt_u (local.get $c) (i32.const 0x80))
            (then
              (if (i32.lt_u (i32.sub (local.get $c) (i32.const 0x41)) (i32.const 26))
                (then (local.set $c (i32.or (local.get $c) (i32.const 0x20)))))
              (br_if $matched (i32.eq (local.get $c) (local.get $want)))
              (return (i32.const 0))))
          (if (i32.and (i32.eq (local.get $want) (i32.const 0x73))
                       (i32.ge_u (i32.sub (local.get $end) (local.get $k)) (i32.const 2)))
            (then
              (if (i32.eq (i32.load16_u align=1 (local.get $k)) (i32.const 0xbfc5))   ;; U+017F
                (then (local.set $k (i32.add (local.get $k) (i32.const 1))) (br $matched)))))
          (if (i32.and (i32.eq (local.get $want) (i32.const 0x6b))
                       (i32.ge_u (i32.sub (local.get $end) (local.get $k)) (i32.const 3)))
            (then
              (if (i32.and (i32.eq (i32.load16_u align=1 (local.get $k)) (i32.const 0x84e2))   ;; U+212A
                           (i32.eq (i32.load8_u offset=2 (local.get $k)) (i32.const 0xaa)))
                (then (local.set $k (i32.add (local.get $k) (i32.const 2))) (br $matched)))))
          (return (i32.const 0)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (local.set $f (i32.add (local.get $f) (i32.const 1)))
        (br $next)))
    (i32.eqz (local.get $want)))

  ;; m_type_kind appends the name encoding/json gives the JSON type of a
  ;; value starting with c, in an UnmarshalTypeError.
  (func $m_type_kind (param $c i32)
    (if (i32.eq (local.get $c) (i32.const 0x22)) (then (call $m_str (global.get $S_STRING)) (return)))
    (if (i32.eq (local.get $c) (i32.const 0x7b)) (then (call $m_str (global.get $S_OBJECT)) (return)))
    (if (i32.eq (local.get $c) (i32.const 0x5b)) (then (call $m_str (global.get $S_ARRAY)) (return)))
    (if (i32.or (i32.eq (local.get $c) (i32.const 0x74)) (i32.eq (local.get $c) (i32.const 0x66)))
      (then (call $m_str (global.get $S_BOOL)) (return)))
    (call $m_str (global.get $S_NUMBER)))

  ;; m_field_tail appends the end of an UnmarshalTypeError's message
  ;; about a field: " into Go struct field .<field> of type <type>".
  (func $m_field_tail (param $field i32) (param $type i32)
    (call $m_str (global.get $S_INTO_FIELD))
    (call $m_str (local.get $field))
    (call $m_str (global.get $S_OF_TYPE))
    (call $m_str (local.get $type)))

  ;; cfg_start starts the message of a configuration that decodes with
  ;; an error: "invalid configuration: enrich configuration: ".
  (func $cfg_start (param $at i32)
    (call $m_start (local.get $at))
    (call $m_str (global.get $S_BAD_CONFIG))
    (call $m_str (global.get $S_ENRICH)))

  ;; cfg_type_error builds the message of a value starting with c that
  ;; does not fit field's Go type, and returns -1.
  (func $cfg_type_error (param $at i32) (param $c i32) (param $field i32) (param $type i32) (result i32)
    (call $cfg_start (local.get $at))
    (call $m_str (global.get $S_CANNOT))
    (call $m_type_kind (local.get $c))
    (call $m_field_tail (local.get $field) (local.get $type))
    (call $m_str (global.get $S_WANT))
    (i32.const -1))

  ;; compact writes the JSON value [p, p+n) without its insignificant
  ;; white space at dst (json.Compact) and returns the length written.
  (func $compact (param $p i32) (param $n i32) (param $dst i32) (result i32)
    (local $end i32) (local $w i32) (local $c i32) (local $in i32)
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (local.set $w (local.get $dst))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (local.get $in)
          (then
            (if (i32.eq (local.get $c) (i32.const 0x5c))
              (then
                (i32.store8 (local.get $w) (local.get $c))
                (local.set $w (i32.add (local.get $w) (i32.const 1)))
                (local.set $c (i32.load8_u (local.get $p)))
                (local.set $p (i32.add (local.get $p) (i32.const 1))))
              (else
                (if (i32.eq (local.get $c) (i32.const 0x22)) (then (local.set $in (i32.const 0)))))))
          (else
            (br_if $next (call $is_ws (local.get $c)))
            (if (i32.eq (local.get $c) (i32.const 0x22)) (then (local.set $in (i32.const 1))))))
        (i32.store8 (local.get $w) (local.get $c))
        (local.set $w (i32.add (local.get $w) (i32.const 1)))
        (br $next)))
    (i32.sub (local.get $w) (local.get $dst)))

  ;; configure decodes the configuration as the Go plugin's parseRules
  ;; does and, when it is good, keeps the rules in a blob at $heap_base,
  ;; which then moves past it. It returns 0, or -1 with the message
  ;; (the Go SDK's "invalid configuration: " + the Go plugin's error)
  ;; built at [$msg_base, $mp).
  ;;
  ;; Scratch memory from $brk, sized from the configuration's length L,
  ;; which bounds every count by L/2+2: the top-level member table, a
  ;; member table for "min" and then "set", the require list, the min
  ;; list, an arena of unquoted names, then the blob being built.
  (func $configure (param $p i32) (param $len i32) (result i32)
    (local $end i32) (local $q i32) (local $w i32) (local $cap i32) (local $c i32) (local $v i32)
    (local $ttop i32) (local $tsub i32) (local $req i32) (local $min i32) (local $arena i32)
    (local $n i32) (local $i i32) (local $j i32) (local $e i32) (local $k i32) (local $kn i32)
    (local $vs i32) (local $vn i32) (local $ve i32) (local $field i32)
    (local $req_n i32) (local $min_n i32) (local $set_p i32) (local $set_len i32) (local $set_n i32)
    (local $f f64) (local $blob i32) (local $sp i32) (local $delta i32) (local $mt i32) (local $st i32)
    (local $tmp i64)
    (local.set $end (i32.add (local.get $p) (local.get $len)))
    ;; Nothing but white space (bytes.TrimSpace) is null: no rules.
    (local.set $q (local.get $p))
    (block $trimmed
      (loop $left
        (br_if $trimmed (i32.eqz (local.tee $w (call $space_prefix (local.get $q) (local.get $end)))))
        (local.set $q (i32.add (local.get $q) (local.get $w)))
        (br $left)))
    (if (i32.ge_u (local.get $q) (local.get $end)) (then (return (i32.const 0))))
    (local.set $cap (i32.add (i32.shr_u (local.get $len) (i32.const 1)) (i32.const 2)))
    (local.set $ttop (call $align8 (global.get $brk)))
    (local.set $tsub (i32.add (local.get $ttop) (i32.mul (local.get $cap) (i32.const 24))))
    (local.set $req (i32.add (local.get $tsub) (i32.mul (local.get $cap) (i32.const 24))))
    (local.set $min (i32.add (local.get $req) (i32.mul (local.get $cap) (i32.const 8))))
    (local.set $arena (i32.add (local.get $min) (i32.mul (local.get $cap) (i32.const 16))))
    (call $ensure (i32.add (local.get $arena) (i32.add (i32.mul (local.get $len) (i32.const 3)) (i32.const 16))))
    ;; json.Decoder.Decode: the first value must scan whole ...
    (local.set $ve (call $scan (local.get $p) (local.get $end)))
    (if (i32.lt_s (local.get $ve) (i32.const 0))
      (then
        (call $cfg_start (local.get $arena))
        (if (i32.eq (global.get $e_kind) (i32.const 2))
          (then (call $m_str (global.get $S_UNEXPECTED_EOF)))
          (else (call $m_syntax)))
        (call $m_str (global.get $S_WANT))
        (return (i32.const -1))))
    ;; ... and unmarshal into the struct: null leaves it empty; any other
    ;; type than an object is an UnmarshalTypeError.
    (local.set $v (call $skip_ws (local.get $p) (local.get $end)))
    (local.set $c (i32.load8_u (local.get $v)))
    (if (i32.eq (local.get $c) (i32.const 0x6e)) (then (return (i32.const 0))))
    (if (i32.ne (local.get $c) (i32.const 0x7b))
      (then
        (call $cfg_start (local.get $arena))
        (call $m_str (global.get $S_CANNOT))
        (call $m_type_kind (local.get $c))
        (call $m_str (global.get $S_INTO_VALUE))
        (call $m_str (global.get $S_STRUCT))
        (call $m_str (global.get $S_WANT))
        (return (i32.const -1))))
    (local.set $n (call $read_object (local.get $v) (local.get $ve) (local.get $ttop)))
    (local.set $i (i32.const 0))
    (block $members_done
      (loop $members
        (br_if $members_done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $e (i32.add (local.get $ttop) (i32.mul (local.get $i) (i32.const 24))))
        (local.set $k (local.get $arena))
        (local.set $kn (call $unquote (i32.add (i32.load (local.get $e)) (i32.const 1))
                                      (i32.sub (i32.load offset=4 (local.get $e)) (i32.const 2)) (local.get $k)))
        (local.set $arena (i32.add (local.get $arena) (local.get $kn)))
        (local.set $vs (i32.load offset=8 (local.get $e)))
        (local.set $vn (i32.load offset=12 (local.get $e)))
        (local.set $c (i32.load8_u (local.get $vs)))
        (local.set $field (i32.const 0))
        (if (call $fold_eq (local.get $k) (local.get $kn) (global.get $S_REQUIRE)) (then (local.set $field (i32.const 1))))
        (if (call $fold_eq (local.get $k) (local.get $kn) (global.get $S_MIN)) (then (local.set $field (i32.const 2))))
        (if (call $fold_eq (local.get $k) (local.get $kn) (global.get $S_SET)) (then (local.set $field (i32.const 3))))
        (if (i32.eqz (local.get $field))
          (then
            (call $cfg_start (local.get $arena))
            (call $m_str (global.get $S_UNKNOWN_FIELD))
            (call $m_quote (local.get $k) (local.get $kn))
            (call $m_str (global.get $S_WANT))
            (return (i32.const -1))))
        (if (i32.eq (local.get $field) (i32.const 1))
          (then
            ;; require: []string; null empties it
            (local.set $req_n (i32.const 0))
            (if (i32.ne (local.get $c) (i32.const 0x6e))
              (then
                (if (i32.ne (local.get $c) (i32.const 0x5b))
                  (then (return (call $cfg_type_error (local.get $arena) (local.get $c) (global.get $S_REQUIRE) (global.get $S_STRINGS)))))
                (local.set $ve (i32.add (local.get $vs) (local.get $vn)))
                (local.set $q (call $skip_ws (i32.add (local.get $vs) (i32.const 1)) (local.get $ve)))
                (if (i32.ne (i32.load8_u (local.get $q)) (i32.const 0x5d))
                  (then
                    (loop $elements
                      (local.set $q (call $skip_ws (local.get $q) (local.get $ve)))
                      (local.set $c (i32.load8_u (local.get $q)))
                      (local.set $j (call $scan (local.get $q) (local.get $ve)))
                      (if (i32.eq (local.get $c) (i32.const 0x22))
                        (then
                          (i32.store (i32.add (local.get $req) (i32.shl (local.get $req_n) (i32.const 3))) (local.get $arena))
                          (local.set $kn (call $unquote (i32.add (local.get $q) (i32.const 1))
                                                        (i32.sub (i32.sub (local.get $j) (local.get $q)) (i32.const 2)) (local.get $arena)))
                          (i32.store offset=4 (i32.add (local.get $req) (i32.shl (local.get $req_n) (i32.const 3))) (local.get $kn))
                          (local.set $arena (i32.add (local.get $arena) (local.get $kn))))
                        (else
                          (if (i32.ne (local.get $c) (i32.const 0x6e))
                            (then (return (call $cfg_type_error (local.get $arena) (local.get $c) (global.get $S_REQUIRE) (global.get $S_STRING)))))
                          ;; null leaves the element "" (in a fresh list)
                          (i64.store (i32.add (local.get $req) (i32.shl (local.get $req_n) (i32.const 3))) (i64.const 0))))
                      (local.set $req_n (i32.add (local.get $req_n) (i32.const 1)))
                      (local.set $q (call $skip_ws (local.get $j) (local.get $ve)))
                      (if (i32.eq (i32.load8_u (local.get $q)) (i32.const 0x2c))
                        (then (local.set $q (i32.add (local.get $q) (i32.const 1))) (br $elements))))))))))
        (if (i32.eq (local.get $field) (i32.const 2))
          (then
            ;; min: map[string]float64; null empties it, objects merge
            (if (i32.eq (local.get $c) (i32.const 0x6e))
              (then (local.set $min_n (i32.const 0)))
              (else
                (if (i32.ne (local.get $c) (i32.const 0x7b))
                  (then (return (call $cfg_type_error (local.get $arena) (local.get $c) (global.get $S_MIN) (global.get $S_MAP)))))
                (local.set $mt (call $read_object (local.get $vs) (i32.add (local.get $vs) (local.get $vn)) (local.get $tsub)))
                (local.set $j (i32.const 0))
                (block $entries_done
                  (loop $entries
                    (br_if $entries_done (i32.ge_u (local.get $j) (local.get $mt)))
                    (local.set $e (i32.add (local.get $tsub) (i32.mul (local.get $j) (i32.const 24))))
                    (local.set $k (local.get $arena))
                    (local.set $kn (call $unquote (i32.add (i32.load (local.get $e)) (i32.const 1))
                                                  (i32.sub (i32.load offset=4 (local.get $e)) (i32.const 2)) (local.get $k)))
                    (local.set $arena (i32.add (local.get $arena) (local.get $kn)))
                    (local.set $q (i32.load offset=8 (local.get $e)))
                    (local.set $c (i32.load8_u (local.get $q)))
                    (local.set $f (f64.const 0))
                    (if (i32.or (i32.eq (local.get $c) (i32.const 0x2d)) (call $is_digit (local.get $c)))
                      (then
                        (local.set $f (call $parse_float (local.get $q) (i32.add (local.get $q) (i32.load offset=12 (local.get $e)))))
                        (if (global.get $f_ovf)
                          (then
                            (call $cfg_start (local.get $arena))
                            (call $m_str (global.get $S_CANNOT))
                            (call $m_str (global.get $S_NUMBER))
                            (call $m_byte (i32.const 0x20))
                            (call $m_bytes (local.get $q) (i32.load offset=12 (local.get $e)))
                            (call $m_field_tail (global.get $S_MIN) (global.get $S_FLOAT64))
                            (call $m_str (global.get $S_WANT))
                            (return (i32.const -1)))))
                      (else
                        (if (i32.ne (local.get $c) (i32.const 0x6e))
                          (then (return (call $cfg_type_error (local.get $arena) (local.get $c) (global.get $S_MIN) (global.get $S_FLOAT64)))))))
                    ;; set the entry of this name, or add one
                    (local.set $w (i32.const 0))
                    (block $found
                      (loop $look
                        (br_if $found (i32.ge_u (local.get $w) (local.get $min_n)))
                        (local.set $ve (i32.add (local.get $min) (i32.shl (local.get $w) (i32.const 4))))
                        (if (i32.eq (i32.load offset=4 (local.get $ve)) (local.get $kn))
                          (then (br_if $found (call $mem_eq (i32.load (local.get $ve)) (local.get $k) (local.get $kn)))))
                        (local.set $w (i32.add (local.get $w) (i32.const 1)))
                        (br $look)))
                    (local.set $ve (i32.add (local.get $min) (i32.shl (local.get $w) (i32.const 4))))
                    (i32.store (local.get $ve) (local.get $k))
                    (i32.store offset=4 (local.get $ve) (local.get $kn))
                    (f64.store offset=8 (local.get $ve) (local.get $f))
                    (if (i32.eq (local.get $w) (local.get $min_n)) (then (local.set $min_n (i32.add (local.get $min_n) (i32.const 1)))))
                    (local.set $j (i32.add (local.get $j) (i32.const 1)))
                    (br $entries)))))))
        (if (i32.eq (local.get $field) (i32.const 3))
          (then
            ;; set: json.RawMessage, the value's text
            (local.set $set_p (local.get $vs))
            (local.set $set_len (local.get $vn))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $members)))
    ;; parseRules: no empty required name
    (local.set $i (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $req_n)))
        (if (i32.eqz (i32.load offset=4 (i32.add (local.get $req) (i32.shl (local.get $i) (i32.const 3)))))
          (then
            (call $cfg_start (local.get $arena))
            (call $m_str (global.get $S_REQUIRE_EMPTY))
            (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    ;; min sorted by name (insertion sort)
    (local.set $i (i32.const 1))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $min_n)))
        (local.set $j (local.get $i))
        (block $placed
          (loop $sink
            (br_if $placed (i32.eqz (local.get $j)))
            (local.set $e (i32.add (local.get $min) (i32.shl (local.get $j) (i32.const 4))))
            (br_if $placed (i32.eqz (call $mem_less (i32.load (local.get $e)) (i32.load offset=4 (local.get $e))
                                                     (i32.load (i32.sub (local.get $e) (i32.const 16))) (i32.load (i32.sub (local.get $e) (i32.const 12))))))
            ;; swap entries j-1 and j
            (local.set $tmp (i64.load (local.get $e)))
            (i64.store (local.get $e) (i64.load (i32.sub (local.get $e) (i32.const 16))))
            (i64.store (i32.sub (local.get $e) (i32.const 16)) (local.get $tmp))
            (local.set $tmp (i64.load offset=8 (local.get $e)))
            (i64.store offset=8 (local.get $e) (i64.load (i32.sub (local.get $e) (i32.const 8))))
            (i64.store (i32.sub (local.get $e) (i32.const 8)) (local.get $tmp))
            (local.set $j (i32.sub (local.get $j) (i32.const 1)))
            (br $sink)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    ;; set: an object of distinct names, unless absent or null
    (if (i32.and (i32.ne (local.get $set_len) (i32.const 0))
                 (i32.eqz (i32.and (i32.eq (local.get $set_len) (i32.const 4))
                                   (i32.eq (i32.load align=1 (local.get $set_p)) (i32.const 0x6c6c756e)))))
      (then
        (local.set $set_n (call $read_object (local.get $set_p) (i32.add (local.get $set_p) (local.get $set_len)) (local.get $tsub)))
        (if (i32.lt_s (local.get $set_n) (i32.const 0))
          (then
            (call $cfg_start (local.get $arena))
            (call $m_str (global.get $S_SET_PREFIX))
            (call $m_object_error)
            (return (i32.const -1))))
        (local.set $arena (call $names (local.get $tsub) (local.get $set_n) (local.get $arena)))
        (local.set $i (i32.const 1))
        (block $done
          (loop $next
            (br_if $done (i32.ge_u (local.get $i) (local.get $set_n)))
            (local.set $e (i32.add (local.get $tsub) (i32.mul (local.get $i) (i32.const 24))))
            (if (i32.ge_s (call $find (local.get $tsub) (local.get $i) (i32.load offset=16 (local.get $e)) (i32.load offset=20 (local.get $e)))
                          (i32.const 0))
              (then
                (call $cfg_start (local.get $arena))
                (call $m_str (global.get $S_SET_NAMES))
                (call $m_quote (i32.load offset=16 (local.get $e)) (i32.load offset=20 (local.get $e)))
                (call $m_str (global.get $S_TWICE))
                (return (i32.const -1))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $next)))))
    ;; The blob: the three tables, then the bytes they point to, written
    ;; at $blob with the addresses they will have at $heap_base.
    (local.set $blob (call $align8 (local.get $arena)))
    (local.set $delta (i32.sub (global.get $heap_base) (local.get $blob)))
    (local.set $mt (i32.add (local.get $blob) (i32.shl (local.get $req_n) (i32.const 3))))
    (local.set $st (i32.add (local.get $mt) (i32.shl (local.get $min_n) (i32.const 4))))
    (local.set $sp (i32.add (local.get $st) (i32.mul (local.get $set_n) (i32.const 24))))
    (call $ensure (local.get $sp))
    (local.set $i (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $req_n)))
        (local.set $e (i32.add (local.get $req) (i32.shl (local.get $i) (i32.const 3))))
        (local.set $kn (i32.load offset=4 (local.get $e)))
        (call $ensure (i32.add (local.get $sp) (local.get $kn)))
        (memory.copy (local.get $sp) (i32.load (local.get $e)) (local.get $kn))
        (local.set $ve (i32.add (local.get $blob) (i32.shl (local.get $i) (i32.const 3))))
        (i32.store (local.get $ve) (i32.add (local.get $sp) (local.get $delta)))
        (i32.store offset=4 (local.get $ve) (local.get $kn))
        (local.set $sp (i32.add (local.get $sp) (local.get $kn)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.set $i (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $min_n)))
        (local.set $e (i32.add (local.get $min) (i32.shl (local.get $i) (i32.const 4))))
        (local.set $kn (i32.load offset=4 (local.get $e)))
        (call $ensure (i32.add (local.get $sp) (local.get $kn)))
        (memory.copy (local.get $sp) (i32.load (local.get $e)) (local.get $kn))
        (local.set $ve (i32.add (local.get $mt) (i32.shl (local.get $i) (i32.const 4))))
        (i32.store (local.get $ve) (i32.add (local.get $sp) (local.get $delta)))
        (i32.store offset=4 (local.get $ve) (local.get $kn))
        (f64.store offset=8 (local.get $ve) (f64.load offset=8 (local.get $e)))
        (local.set $sp (i32.add (local.get $sp) (local.get $kn)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.set $i (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $set_n)))
        (local.set $e (i32.add (local.get $tsub) (i32.mul (local.get $i) (i32.const 24))))
        (local.set $ve (i32.add (local.get $st) (i32.mul (local.get $i) (i32.const 24))))
        (call $ensure (i32.add (i32.add (local.get $sp) (i32.load offset=4 (local.get $e)))
                               (i32.add (i32.load offset=12 (local.get $e)) (i32.load offset=20 (local.get $e)))))
        ;; the key's text
        (memory.copy (local.get $sp) (i32.load (local.get $e)) (i32.load offset=4 (local.get $e)))
        (i32.store (local.get $ve) (i32.add (local.get $sp) (local.get $delta)))
        (i32.store offset=4 (local.get $ve) (i32.load offset=4 (local.get $e)))
        (local.set $sp (i32.add (local.get $sp) (i32.load offset=4 (local.get $e))))
        ;; the value, compacted
        (local.set $kn (call $compact (i32.load offset=8 (local.get $e)) (i32.load offset=12 (local.get $e)) (local.get $sp)))
        (i32.store offset=8 (local.get $ve) (i32.add (local.get $sp) (local.get $delta)))
        (i32.store offset=12 (local.get $ve) (local.get $kn))
        (local.set $sp (i32.add (local.get $sp) (local.get $kn)))
        ;; the name
        (memory.copy (local.get $sp) (i32.load offset=16 (local.get $e)) (i32.load offset=20 (local.get $e)))
        (i32.store offset=16 (local.get $ve) (i32.add (local.get $sp) (local.get $delta)))
        (i32.store offset=20 (local.get $ve) (i32.load offset=20 (local.get $e)))
        (local.set $sp (i32.add (local.get $sp) (i32.load offset=20 (local.get $e))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    ;; Move the blob into place; the configuration's region, which it
    ;; overwrites, is no longer needed.
    (memory.copy (global.get $heap_base) (local.get $blob) (i32.sub (local.get $sp) (local.get $blob)))
    (global.set $req_n (local.get $req_n))
    (global.set $req_tab (global.get $heap_base))
    (global.set $min_n (local.get $min_n))
    (global.set $min_tab (i32.add (local.get $mt) (local.get $delta)))
    (global.set $set_n (local.get $set_n))
    (global.set $set_tab (i32.add (local.get $st) (local.get $delta)))
    (global.set $heap_base (call $align8 (i32.add (local.get $sp) (local.get $delta))))
    (i32.const 0))

  (func (export "sluice_configure") (param $p i32) (param $n i32) (result i32)
    (local $status i32)
    (local.set $status (i32.const 0))
    (if (i32.lt_s (call $configure (local.get $p) (local.get $n)) (i32.const 0))
      (then
        (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
        (local.set $status (i32.const -3))))
    (global.set $pending (i32.const 0))
    (local.get $status))

  ;; space_prefix returns the length of the Unicode white space rune (as
  ;; bytes.TrimSpace sees it) that starts [p, end), or 0 (see
  ;; wordcount.wat).
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
    (if (i32.or (i32.eq (local.get $a) (i32.const 0x20)) (i32.lt_u (i32.sub (local.get $a) (i32.const 9)) (i32.const 5)))
      (then (return (i32.const 1))))
    (if (i32.lt_u (local.get $n) (i32.const 2)) (then (return (i32.const 0))))
    (local.set $b (i32.load8_u offset=1 (local.get $p)))
    (if (i32.and (i32.eq (local.get $a) (i32.const 0xc2))
                 (i32.or (i32.eq (local.get $b) (i32.const 0x85)) (i32.eq (local.get $b) (i32.const 0xa0))))
      (then (return (i32.const 2))))
    (if (i32.lt_u (local.get $n) (i32.const 3)) (then (return (i32.const 0))))
    (if (call $space3 (local.get $a) (local.get $b) (i32.load8_u offset=2 (local.get $p)))
      (then (return (i32.const 3))))
    (i32.const 0))

  ;; ---------------------------------------------------------------
  ;; The operator.
  ;; ---------------------------------------------------------------

  ;; enrich_record applies the rules to record i (the $r_ globals):
  ;; dead-letters it, drops it, or appends its output to the batch. The
  ;; scratch memory above the outputs holds the member table, the
  ;; unquoted names, then the output record (or a message), which then
  ;; moves down to the end of the outputs.
  (func $enrich_record (param $i i32)
    (local $t i32) (local $n i32) (local $arena i32) (local $k i32) (local $e i32) (local $x i32)
    (local $v i32) (local $c i32) (local $vlen_at i32) (local $vstart i32) (local $cnt i32) (local $size i32)
    (local.set $t (call $align8 (global.get $out_end)))
    (local.set $n (call $read_object (global.get $r_val) (i32.add (global.get $r_val) (global.get $r_vlen)) (local.get $t)))
    (if (i32.lt_s (local.get $n) (i32.const 0))
      (then
        (call $m_start (local.get $t))
        (call $m_str (global.get $S_NOT_OBJECT))
        (call $m_object_error)
        (call $reject (local.get $i) (global.get $msg_base) (call $m_len))
        (return)))
    (local.set $arena (call $names (local.get $t) (local.get $n) (i32.add (local.get $t) (i32.mul (local.get $n) (i32.const 24)))))
    ;; every required field present
    (local.set $k (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (global.get $req_n)))
        (local.set $e (i32.add (global.get $req_tab) (i32.shl (local.get $k) (i32.const 3))))
        (if (i32.lt_s (call $find (local.get $t) (local.get $n) (i32.load (local.get $e)) (i32.load offset=4 (local.get $e)))
                      (i32.const 0))
          (then (return)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    ;; every minimum met, in the order of the field names
    (local.set $k (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (global.get $min_n)))
        (local.set $e (i32.add (global.get $min_tab) (i32.shl (local.get $k) (i32.const 4))))
        (local.set $x (call $find (local.get $t) (local.get $n) (i32.load (local.get $e)) (i32.load offset=4 (local.get $e))))
        (if (i32.lt_s (local.get $x) (i32.const 0)) (then (return)))
        (local.set $x (i32.add (local.get $t) (i32.mul (local.get $x) (i32.const 24))))
        (local.set $v (i32.load offset=8 (local.get $x)))
        (local.set $c (i32.load8_u (local.get $v)))
        (if (i32.eqz (i32.or (i32.eq (local.get $c) (i32.const 0x2d)) (call $is_digit (local.get $c))))
          (then
            ;; field %q is %s, not a number
            (call $m_start (local.get $arena))
            (call $m_str (global.get $S_FIELD))
            (call $m_quote (i32.load (local.get $e)) (i32.load offset=4 (local.get $e)))
            (call $m_str (global.get $S_IS))
            (call $m_kind (local.get $c))
            (call $m_str (global.get $S_NOT_A_NUMBER))
            (call $reject (local.get $i) (global.get $msg_base) (call $m_len))
            (return)))
        (if (f64.lt (call $parse_float (local.get $v) (i32.add (local.get $v) (i32.load offset=12 (local.get $x))))
                    (f64.load offset=8 (local.get $e)))
          (then (return)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    ;; The output record: the input's key, time and headers, the object
    ;; with the set fields applied.
    (call $m_start (call $align8 (local.get $arena)))
    (call $m_i32 (i32.const 0))                          ;; size, below
    (call $m_i32 (local.get $i))                         ;; origin
    (call $m_i32 (i32.const 0))                          ;; flags
    (call $m_i64 (global.get $r_time))
    (call $m_i32 (global.get $r_klen))
    (call $m_bytes (global.get $r_key) (global.get $r_klen))
    (local.set $vlen_at (global.get $mp))
    (call $m_i32 (i32.const 0))                          ;; value length, below
    (local.set $vstart (global.get $mp))
    (call $m_byte (i32.const 0x7b))
    (local.set $k (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (if (local.get $k) (then (call $m_byte (i32.const 0x2c))))
        (local.set $e (i32.add (local.get $t) (i32.mul (local.get $k) (i32.const 24))))
        (call $m_bytes (i32.load (local.get $e)) (i32.load offset=4 (local.get $e)))
        (call $m_byte (i32.const 0x3a))
        (local.set $x (call $find (global.get $set_tab) (global.get $set_n) (i32.load offset=16 (local.get $e)) (i32.load offset=20 (local.get $e))))
        (if (i32.ge_s (local.get $x) (i32.const 0))
          (then (local.set $e (i32.add (global.get $set_tab) (i32.mul (local.get $x) (i32.const 24))))))
        (call $m_bytes (i32.load offset=8 (local.get $e)) (i32.load offset=12 (local.get $e)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    (local.set $cnt (local.get $n))
    (local.set $k (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (global.get $set_n)))
        (local.set $e (i32.add (global.get $set_tab) (i32.mul (local.get $k) (i32.const 24))))
        (if (i32.lt_s (call $find (local.get $t) (local.get $n) (i32.load offset=16 (local.get $e)) (i32.load offset=20 (local.get $e)))
                      (i32.const 0))
          (then
            (if (local.get $cnt) (then (call $m_byte (i32.const 0x2c))))
            (local.set $cnt (i32.add (local.get $cnt) (i32.const 1)))
            (call $m_bytes (i32.load (local.get $e)) (i32.load offset=4 (local.get $e)))
            (call $m_byte (i32.const 0x3a))
            (call $m_bytes (i32.load offset=8 (local.get $e)) (i32.load offset=12 (local.get $e)))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    (call $m_byte (i32.const 0x7d))
    (i32.store align=1 (local.get $vlen_at) (i32.sub (global.get $mp) (local.get $vstart)))
    (call $m_bytes (global.get $r_hdr) (i32.sub (global.get $r_end) (global.get $r_hdr)))
    (local.set $size (call $m_len))
    (i32.store align=1 (global.get $msg_base) (i32.sub (local.get $size) (i32.const 4)))
    (memory.copy (global.get $out_end) (global.get $msg_base) (local.get $size))
    (global.set $out_end (i32.add (global.get $out_end) (local.get $size)))
    (global.set $out_count (i32.add (global.get $out_count) (i32.const 1))))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32) (local $count i32) (local $i i32) (local $off i32) (local $next i32)
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
          (call $enrich_record (local.get $i))
          (if (i32.ge_u (i32.sub (global.get $out_end) (global.get $out_base)) (i32.const 0x100000))
            (then (call $flush)))
          (local.set $off (local.get $next))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $records)))
      (br_if $bad (i32.ne (local.get $off) (local.get $end)))
      (call $flush)
      (global.set $pending (i32.const 0))
      (return (i32.const 0)))
    (call $m_start (global.get $out_end))
    (call $m_str (global.get $S_MALFORMED))
    (call $log (i32.const 3) (global.get $msg_base) (call $m_len))
    (global.set $pending (i32.const 0))
    (i32.const -2))
)
