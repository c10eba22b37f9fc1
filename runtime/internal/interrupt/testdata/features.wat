;; Post-MVP instructions whose immediates the decoder must skip: bulk
;; memory, reference types and tables, saturating truncation, sign
;; extension, SIMD, with loops around them.
;;
;; call fill_sum 16 3 -> 48
;; call copy 5 -> 5
;; call trunc_sat -> 2147483647
;; call extend8 255 -> -1
;; call extend32 4294967295 -> -1
;; call tables -> 3
;; call is_null -> 1
;; call indirect 2 -> 4
;; call simd_sum 4 -> 40
;; call simd_lanes -> 7
;; call floats -> 1078530011
;; call data_init -> 3
;; spin spin_simd
(module
  (memory (export "memory") 1)
  (table $t 2 10 funcref)
  (table $ext 1 externref)
  (type $unary (func (param i32) (result i32)))
  (func $double (type $unary) (i32.mul (local.get 0) (i32.const 2)))
  (elem (table $t) (i32.const 0) func $double $double)
  (elem $passive func $double)
  (data $d "\01\02\03")

  (func (export "fill_sum") (param $n i32) (param $v i32) (result i32) (local $i i32) (local $s i32)
    (memory.fill (i32.const 0) (local.get $v) (local.get $n))
    (loop $l
      (local.set $s (i32.add (local.get $s) (i32.load8_u offset=0 (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $s))

  (func (export "copy") (param i32) (result i32)
    (i32.store8 (i32.const 100) (local.get 0))
    (memory.copy (i32.const 200) (i32.const 100) (i32.const 1))
    (i32.load8_u (i32.const 200)))

  (func (export "data_init") (result i32)
    (memory.init $d (i32.const 300) (i32.const 0) (i32.const 3))
    (data.drop $d)
    (i32.load8_u (i32.const 302)))

  (func (export "trunc_sat") (result i32) (i32.trunc_sat_f64_s (f64.const 1e300)))
  (func (export "extend8") (param i32) (result i32) (i32.extend8_s (local.get 0)))
  (func (export "extend32") (param i64) (result i64) (i64.extend32_s (local.get 0)))

  (func (export "tables") (result i32)
    (drop (table.grow $t (ref.null func) (i32.const 1)))
    (table.set $t (i32.const 2) (ref.func $double))
    (drop (table.get $t (i32.const 2)))
    (table.fill $t (i32.const 0) (ref.func $double) (i32.const 1))
    (table.copy $t $t (i32.const 1) (i32.const 0) (i32.const 1))
    (table.init $t $passive (i32.const 0) (i32.const 0) (i32.const 1))
    (elem.drop $passive)
    (table.size $t))

  (func (export "is_null") (result i32) (ref.is_null (table.get $ext (i32.const 0))))
  (func (export "indirect") (param i32) (result i32) (call_indirect $t (type $unary) (local.get 0) (i32.const 0)))

  (func (export "simd_sum") (param $n i32) (result i32) (local $acc v128) (local $i i32)
    (loop $l
      (local.set $acc (i32x4.add (local.get $acc) (v128.const i32x4 1 2 3 4)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (v128.store offset=16 align=16 (i32.const 0) (local.get $acc))
    (i32.add (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
             (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32.load offset=28 (i32.const 0)))))

  (func (export "simd_lanes") (result i32) (local $v v128)
    (i32.store (i32.const 0) (i32.const 0x04030201))
    (local.set $v (v128.load32_splat (i32.const 0)))
    (local.set $v (v128.load8_lane 3 (i32.const 2) (local.get $v)))
    (local.set $v (i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 (local.get $v) (local.get $v)))
    (local.set $v (i8x16.replace_lane 0 (local.get $v) (i32.const 4)))
    (v128.store8_lane 0 (i32.const 400) (local.get $v))
    (drop (v128.load64_zero (i32.const 0)))
    (i32.add (i8x16.extract_lane_u 3 (local.get $v)) (i32.load8_u (i32.const 400))))

  (func (export "floats") (result i32)
    (i32.reinterpret_f32 (f32.demote_f64 (f64.promote_f32 (f32.const 3.14159265)))))

  (func (export "spin_simd") (local $v v128)
    (loop $l (local.set $v (f32x4.add (local.get $v) (local.get $v))) (br $l)))
)
