;; Functions in the form Go's WebAssembly code gives every function: a
;; loop that opens with a jump table on a local, the code of each entry
;; after the end of its block, and jumps that set the local and branch back
;; to the loop. With Options.ThreadJumps the jumps forward (to a block that
;; encloses them) become direct branches; the jumps backward stay.
;;
;; call sum_odd 0 -> 0
;; call sum_odd 1 -> 0
;; call sum_odd 2 -> 1
;; call sum_odd 10 -> 25
;; call sum_odd 1001 -> 250000
;; call resume 0 -> 10
;; call resume 1 -> 20
;; call resume 2 -> 40
;; call resume 3 -> 0
;; call resume 9 -> 40
;; spin spin_dispatch
(module
  ;; The sum of the odd numbers below n. Entry 0 starts, 1 tests i < n,
  ;; 2 adds i when it is odd, 3 steps i; 4 leaves the loop.
  ;; Forward jumps: 0 -> 1, 1 -> 4, 2 -> 3 (3). Backward: 3 -> 1.
  (func (export "sum_odd") (param $n i32) (result i32)
    (local $pc i32) (local $i i32) (local $s i32)
    block $exit
      loop $dispatch
        block $b4
          block $b3
            block $b2
              block $b1
                block $b0
                  local.get $pc
                  br_table $b0 $b1 $b2 $b3 $b4 $exit
                end
                ;; entry 0
                i32.const 0
                local.set $i
                i32.const 1
                local.set $pc
                br $dispatch
              end
              ;; entry 1
              local.get $i
              local.get $n
              i32.ge_u
              if
                i32.const 4
                local.set $pc
                br $dispatch
              end
            end
            ;; entry 2
            local.get $i
            i32.const 1
            i32.and
            i32.eqz
            if
              i32.const 3
              local.set $pc
              br $dispatch
            end
            local.get $s
            local.get $i
            i32.add
            local.set $s
          end
          ;; entry 3
          local.get $i
          i32.const 1
          i32.add
          local.set $i
          i32.const 1
          local.set $pc
          br $dispatch
        end
        ;; entry 4
        local.get $s
        return
      end
    end
    unreachable)

  ;; Entered at the entry its parameter names, as Go resumes a function
  ;; after a goroutine switch; an entry past the table takes the default,
  ;; which leaves the dispatch. Every jump is forward: 0 and 1 -> 3, and
  ;; 2 -> 99, the default, to $exit (3).
  (func (export "resume") (param $pc i32) (result i32)
    (local $r i32)
    block $exit
      loop $dispatch
        block $b3
          block $b2
            block $b1
              block $b0
                local.get $pc
                br_table $b0 $b1 $b2 $b3 $exit
              end
              i32.const 10
              local.set $r
              i32.const 3
              local.set $pc
              br $dispatch
            end
            i32.const 20
            local.set $r
            i32.const 3
            local.set $pc
            br $dispatch
          end
          i32.const 30
          local.set $r
          i32.const 99
          local.set $pc
          br $dispatch
        end
        local.get $r
        return
      end
    end
    i32.const 40)

  ;; Entry 0 jumps forward to 1 (threaded), and 1 back to 0 forever: the
  ;; dispatch loop still counts the iterations.
  (func (export "spin_dispatch")
    (local $pc i32)
    loop $dispatch
      block $b1
        block $b0
          local.get $pc
          br_table $b0 $b1 $b1
        end
        i32.const 1
        local.set $pc
        br $dispatch
      end
      i32.const 0
      local.set $pc
      br $dispatch
    end)
)
