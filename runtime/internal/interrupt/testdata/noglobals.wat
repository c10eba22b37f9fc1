;; Exports but no globals, and custom sections around: the global section
;; goes in before the export section.
;;
;; call answer -> 42
;; spin spin
(module
  (func (export "answer") (result i32) (i32.const 42))
  (func (export "spin") (loop (br 0))))
