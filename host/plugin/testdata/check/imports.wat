;; imports imports from modules the host does not provide, the way modules
;; built for another target do: AssemblyScript's abort (built without
;; --use abort=), Go's GOOS=js runtime, an old WASI snapshot, and an
;; undefined C function.
(module
  (import "env" "abort" (func (param i32 i32 i32 i32)))
  (import "gojs" "runtime.ticks" (func (param i32)))
  (import "wasi_unstable" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (import "env" "helper" (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0)))
