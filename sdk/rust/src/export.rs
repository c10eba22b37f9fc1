//! The export macros: one per operator kind, invoked once per operator
//! crate with the operator's type. Each expands, in a WebAssembly build
//! only, to the exports of ABI sections 2, 10, 13 and 14, to the
//! `sluice.kinds` custom section that declares the operator kinds they
//! serve (ABI section 12), and to the static that holds the instance's
//! operator, made with `Default` at the first call.
//! In a native build (`cargo test`) they expand to nothing.

/// The exports every operator has: `_initialize`, `sluice_abi_version`,
/// `sluice_features`, `sluice_alloc` and `sluice_configure`.
#[doc(hidden)]
#[macro_export]
macro_rules! __sluice_exports_common {
    ($slot:ident, $new:ident, $t:ty, $tr:path) => {
        #[no_mangle]
        pub extern "C" fn _initialize() {
            $crate::__private::initialize()
        }

        #[no_mangle]
        pub extern "C" fn sluice_abi_version() -> i32 {
            $crate::abi::VERSION
        }

        #[no_mangle]
        pub extern "C" fn sluice_features() -> i32 {
            $crate::abi::FEATURE_INPUTS
        }

        #[no_mangle]
        pub extern "C" fn sluice_alloc(size: i32) -> u32 {
            $slot.with($new, |g| g.alloc(size) as u32)
        }

        #[no_mangle]
        pub extern "C" fn sluice_configure(ptr: u32, len: u32) -> i32 {
            $slot.with($new, |g| {
                g.with_region("sluice_configure", ptr as usize, len as usize, |g, b| {
                    g.configure(b, <$t as $tr>::configure)
                })
            })
        }
    };
}

/// The module's `sluice.kinds` custom section (ABI section 12): the
/// operator kinds its handler serves, names separated by commas, which the
/// host checks against the kind a pipeline gives the operator.
#[doc(hidden)]
#[macro_export]
macro_rules! __sluice_kinds {
    ($kinds:literal) => {
        #[link_section = "sluice.kinds"]
        #[used]
        static SLUICE_KINDS: [u8; $kinds.len()] = *$kinds;
    };
}

/// The static holding the guest core of operator type `$t`, and the
/// function that makes it.
#[doc(hidden)]
#[macro_export]
macro_rules! __sluice_slot {
    ($slot:ident, $new:ident, $t:ty) => {
        static $slot: $crate::__private::Slot<$crate::__private::Guest<$t>> =
            $crate::__private::Slot::new();

        fn $new() -> $crate::__private::Guest<$t> {
            $crate::__private::Guest::new(<$t as ::core::default::Default>::default())
        }
    };
}

/// Exports `$t`, an [`Operator`](crate::Operator) that implements
/// `Default`, as the module's operator: a map, filter or flatmap.
///
/// ```ignore
/// sluice::export_operator!(MyOperator);
/// ```
#[macro_export]
macro_rules! export_operator {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"map,filter,flatmap");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::Operator);

            #[no_mangle]
            pub extern "C" fn sluice_process(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_process", ptr as usize, len as usize, |g, b| {
                        g.run_operator(b, <$t as $crate::Operator>::process)
                    })
                })
            }
        };
    };
}

/// Exports `$t`, a [`MapInPlace`](crate::MapInPlace) that implements
/// `Default`, as the module's operator.
///
/// ```ignore
/// sluice::export_map_in_place!(Upper);
/// ```
#[macro_export]
macro_rules! export_map_in_place {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"map");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::MapInPlace);

            #[no_mangle]
            pub extern "C" fn sluice_process(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_process", ptr as usize, len as usize, |g, b| {
                        g.run_map_in_place(b, <$t as $crate::MapInPlace>::map)
                    })
                })
            }
        };
    };
}

/// Exports `$t`, a [`Filter`](crate::Filter) that implements `Default`, as
/// the module's operator.
///
/// ```ignore
/// sluice::export_filter!(NonEmpty);
/// ```
#[macro_export]
macro_rules! export_filter {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"filter");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::Filter);

            #[no_mangle]
            pub extern "C" fn sluice_process(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_process", ptr as usize, len as usize, |g, b| {
                        g.run_filter(b, <$t as $crate::Filter>::keep)
                    })
                })
            }
        };
    };
}

/// Exports `$t`, a [`Keyed`](crate::Keyed) operator that implements
/// `Default`, as the module's operator.
///
/// ```ignore
/// sluice::export_keyed!(Counter);
/// ```
#[macro_export]
macro_rules! export_keyed {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"keyed");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::Keyed);

            #[no_mangle]
            pub extern "C" fn sluice_process(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_process", ptr as usize, len as usize, |g, b| {
                        g.run_keyed(b, <$t as $crate::Keyed>::process)
                    })
                })
            }
        };
    };
}

/// Exports `$t`, a [`Transactional`](crate::Transactional) operator that
/// implements `Default`, as the module's operator: `sluice_plan`,
/// `sluice_apply` and `sluice_post` instead of `sluice_process`.
///
/// ```ignore
/// sluice::export_transactional!(Ledger);
/// ```
#[macro_export]
macro_rules! export_transactional {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"transactional");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::Transactional);

            #[no_mangle]
            pub extern "C" fn sluice_plan(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_plan", ptr as usize, len as usize, |g, b| {
                        g.run_plan(
                            b,
                            <$t as $crate::Transactional>::FUNCTIONS,
                            <$t as $crate::Transactional>::plan,
                        )
                    })
                })
            }

            #[no_mangle]
            pub extern "C" fn sluice_apply(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_apply", ptr as usize, len as usize, |g, b| {
                        let (code, addr, n) = g.run_apply(
                            b,
                            <$t as $crate::Transactional>::FUNCTIONS,
                            <$t as $crate::Transactional>::apply,
                            |code, v| (code, v.as_ptr() as usize as u32, v.len() as u32),
                        );
                        if code == $crate::abi::APPLY_WRITE {
                            // The result slot: the value's address and
                            // length (ABI section 10.6).
                            b[0..4].copy_from_slice(&addr.to_le_bytes());
                            b[4..8].copy_from_slice(&n.to_le_bytes());
                        }
                        code
                    })
                })
            }

            #[no_mangle]
            pub extern "C" fn sluice_post(
                events: u32,
                events_len: u32,
                outcomes: u32,
                outcomes_len: u32,
            ) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_regions2(
                        "sluice_post",
                        (events as usize, events_len as usize),
                        (outcomes as usize, outcomes_len as usize),
                        |g, ev, oc| g.run_post(ev, oc, <$t as $crate::Transactional>::post),
                    )
                })
            }
        };
    };
}

/// Exports `$t`, an [`Aggregate`](crate::Aggregate) that implements
/// `Default`, as the module's operator: `sluice_agg_add`,
/// `sluice_agg_merge` and `sluice_agg_fire` (ABI section 13).
///
/// ```ignore
/// sluice::export_aggregate!(CountSum);
/// ```
#[macro_export]
macro_rules! export_aggregate {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"aggregate");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::Aggregate);

            #[no_mangle]
            pub extern "C" fn sluice_agg_add(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_agg_add", ptr as usize, len as usize, |g, b| {
                        g.run_agg_add(b, <$t as $crate::Aggregate>::add)
                    })
                })
            }

            #[no_mangle]
            pub extern "C" fn sluice_agg_merge(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_agg_merge", ptr as usize, len as usize, |g, b| {
                        g.run_agg_merge(b, <$t as $crate::Aggregate>::merge)
                    })
                })
            }

            #[no_mangle]
            pub extern "C" fn sluice_agg_fire(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_agg_fire", ptr as usize, len as usize, |g, b| {
                        g.run_agg_fire(b, <$t as $crate::Aggregate>::fire)
                    })
                })
            }
        };
    };
}

/// Exports `$t`, a [`WindowFunction`](crate::WindowFunction) that
/// implements `Default`, as the module's operator: `sluice_window_fire`
/// (ABI section 13).
///
/// ```ignore
/// sluice::export_window!(Median);
/// ```
#[macro_export]
macro_rules! export_window {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"window");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::WindowFunction);

            #[no_mangle]
            pub extern "C" fn sluice_window_fire(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_window_fire", ptr as usize, len as usize, |g, b| {
                        g.run_window_fire(b, <$t as $crate::WindowFunction>::fire)
                    })
                })
            }
        };
    };
}

/// Exports `$t`, a [`JoinFunction`](crate::JoinFunction) that implements
/// `Default`, as the module's operator: `sluice_join` (ABI section 14).
///
/// ```ignore
/// sluice::export_join!(Enrich);
/// ```
#[macro_export]
macro_rules! export_join {
    ($t:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__sluice_kinds!(b"join");
            $crate::__sluice_slot!(GUEST, new_guest, $t);
            $crate::__sluice_exports_common!(GUEST, new_guest, $t, $crate::JoinFunction);

            #[no_mangle]
            pub extern "C" fn sluice_join(ptr: u32, len: u32) -> i32 {
                GUEST.with(new_guest, |g| {
                    g.with_region("sluice_join", ptr as usize, len as usize, |g, b| {
                        g.run_join(b, <$t as $crate::JoinFunction>::join)
                    })
                })
            }
        };
    };
}
