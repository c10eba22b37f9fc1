;; sluice.kinds: map
;;
;; map is a module shaped like every Go plugin: it exports what map,
;; filter, flatmap, keyed and transactional operators need, whatever
;; handler it registers, and declares in its sluice.kinds custom section
;; (appended by build.sh) the one it does: map. The host runs it as a map
;; operator and refuses it as any other kind.
(module
  (memory (export "memory") 1)
  (func (export "_initialize"))
  (func (export "sluice_abi_version") (result i32) (i32.const 1))
  (func (export "sluice_kinds") (result i32) (i32.const 1))
  (func (export "sluice_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "sluice_process") (param i32 i32) (result i32) (i32.const 0))
  (func (export "sluice_plan") (param i32 i32) (result i32) (i32.const 0))
  (func (export "sluice_apply") (param i32 i32) (result i32) (i32.const 1))
  (func (export "sluice_post") (param i32 i32 i32 i32) (result i32) (i32.const 0)))
