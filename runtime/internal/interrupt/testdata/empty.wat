;; A module with no sections at all: the instrumenter adds the global and
;; export sections.
(module)
