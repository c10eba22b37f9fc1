;; grow asks for memory until the host refuses, when record 0 has a
;; non-empty key: first 65535 pages at once (4 GiB, the whole address
;; space), then one page at a time until memory.grow fails. It then logs
;; why at error level and returns StatusError. Otherwise it emits its input
;; batch unchanged. Its memory declares the largest maximum there is, which
;; the host's memory limit overrides.
(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1 65536)
  (data (i32.const 16) "memory.grow failed at the limit")
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param $size i32) (result i32) (i32.const 1024))

  (func (export "sluice_process") (param $ptr i32) (param $len i32) (result i32)
    (if (i32.load offset=24 (local.get $ptr)) (then
      (drop (memory.grow (i32.const 65535)))
      (block $refused
        (loop $more
          (br_if $refused (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
          (br $more)))
      (call $log (i32.const 3) (i32.const 16) (i32.const 31))
      (return (i32.const -2))))
    (call $emit (local.get $ptr) (local.get $len))
    (i32.const 0)))
