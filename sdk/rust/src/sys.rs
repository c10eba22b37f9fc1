//! The host functions of ABI section 3, as safe functions.
//!
//! In WebAssembly they are the imports of module `sluice`. In a native
//! build they call the [`Host`](crate::testing::Host) that
//! [`testing`](crate::testing) installed for the call in progress, so that
//! the same guest core runs in `cargo test`.

#[cfg(target_arch = "wasm32")]
mod imp {
    /// The imports. Every function reads its arguments during the call and
    /// keeps no pointer into guest memory afterwards (ABI section 3).
    mod ffi {
        #[link(wasm_import_module = "sluice")]
        extern "C" {
            #[link_name = "emit"]
            pub fn emit(ptr: *const u8, len: usize);
            #[link_name = "reject"]
            pub fn reject(origin: u32, msg: *const u8, len: usize);
            #[link_name = "table_id"]
            pub fn table_id(name: *const u8, len: usize) -> i32;
            #[link_name = "state_get"]
            pub fn state_get(
                table: i32,
                key: *const u8,
                key_len: usize,
                buf: *mut u8,
                cap: usize,
            ) -> i32;
            #[link_name = "state_put"]
            pub fn state_put(
                table: i32,
                key: *const u8,
                key_len: usize,
                val: *const u8,
                val_len: usize,
            );
            #[link_name = "state_delete"]
            pub fn state_delete(table: i32, key: *const u8, key_len: usize);
            #[link_name = "log"]
            pub fn log(level: i32, msg: *const u8, len: usize);
            #[link_name = "txn_plan"]
            pub fn txn_plan(ptr: *const u8, len: usize);
            #[link_name = "txn_get"]
            pub fn txn_get(
                table: i32,
                key: *const u8,
                key_len: usize,
                buf: *mut u8,
                cap: usize,
            ) -> i32;
            #[link_name = "txn_put"]
            pub fn txn_put(
                table: i32,
                key: *const u8,
                key_len: usize,
                val: *const u8,
                val_len: usize,
            ) -> i32;
            #[link_name = "txn_delete"]
            pub fn txn_delete(table: i32, key: *const u8, key_len: usize) -> i32;
        }

        /// A WASI `ciovec`: one buffer of a gathered write.
        #[cfg(target_os = "wasi")]
        #[repr(C)]
        pub struct Ciovec {
            pub buf: *const u8,
            pub len: usize,
        }

        // Only a WASI build imports WASI: a wasm32-unknown-unknown module
        // imports module `sluice` alone.
        #[cfg(target_os = "wasi")]
        #[link(wasm_import_module = "wasi_snapshot_preview1")]
        extern "C" {
            /// WASI's `fd_write`, for stderr only.
            #[link_name = "fd_write"]
            pub fn fd_write(
                fd: i32,
                iovs: *const Ciovec,
                iovs_len: usize,
                written: *mut usize,
            ) -> i32;
        }
    }

    /// Writes `msg` and a line break to stderr (file descriptor 2), whose
    /// tail the host quotes when the guest traps; errors are ignored. WASI
    /// builds only.
    #[cfg(target_os = "wasi")]
    pub fn stderr(msg: &str) {
        for part in [msg.as_bytes(), b"\n"] {
            let mut left = part;
            while !left.is_empty() {
                let iov = ffi::Ciovec {
                    buf: left.as_ptr(),
                    len: left.len(),
                };
                let mut written = 0usize;
                // SAFETY: iov describes a live slice that the host only
                // reads, and `written` is a live usize the host writes,
                // both during the call (WASI fd_write).
                let errno = unsafe { ffi::fd_write(2, &iov, 1, &mut written) };
                if errno != 0 || written == 0 || written > left.len() {
                    return;
                }
                left = &left[written..];
            }
        }
    }

    pub fn emit(batch: &[u8]) {
        // SAFETY: the pointer and length describe a live slice, which the
        // host only reads, during the call.
        unsafe { ffi::emit(batch.as_ptr(), batch.len()) }
    }

    pub fn reject(origin: u32, msg: &str) {
        // SAFETY: as for emit.
        unsafe { ffi::reject(origin, msg.as_ptr(), msg.len()) }
    }

    pub fn table_id(name: &str) -> i32 {
        // SAFETY: as for emit.
        unsafe { ffi::table_id(name.as_ptr(), name.len()) }
    }

    pub fn state_get(table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        // SAFETY: key is a live slice the host only reads; buf is a live,
        // exclusively borrowed slice, and the host writes at most its
        // length into it (the buffer protocol of state_get), during the
        // call.
        unsafe { ffi::state_get(table, key.as_ptr(), key.len(), buf.as_mut_ptr(), buf.len()) }
    }

    pub fn state_put(table: i32, key: &[u8], value: &[u8]) {
        // SAFETY: as for emit; the host copies both.
        unsafe { ffi::state_put(table, key.as_ptr(), key.len(), value.as_ptr(), value.len()) }
    }

    pub fn state_delete(table: i32, key: &[u8]) {
        // SAFETY: as for emit.
        unsafe { ffi::state_delete(table, key.as_ptr(), key.len()) }
    }

    pub fn log(level: i32, msg: &str) {
        // SAFETY: as for emit.
        unsafe { ffi::log(level, msg.as_ptr(), msg.len()) }
    }

    pub fn txn_plan(decls: &[u8]) {
        // SAFETY: as for emit; the host copies what it keeps.
        unsafe { ffi::txn_plan(decls.as_ptr(), decls.len()) }
    }

    pub fn txn_get(table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        // SAFETY: as for state_get.
        unsafe { ffi::txn_get(table, key.as_ptr(), key.len(), buf.as_mut_ptr(), buf.len()) }
    }

    pub fn txn_put(table: i32, key: &[u8], value: &[u8]) -> i32 {
        // SAFETY: as for state_put.
        unsafe { ffi::txn_put(table, key.as_ptr(), key.len(), value.as_ptr(), value.len()) }
    }

    pub fn txn_delete(table: i32, key: &[u8]) -> i32 {
        // SAFETY: as for emit.
        unsafe { ffi::txn_delete(table, key.as_ptr(), key.len()) }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use std::cell::RefCell;

    use crate::testing::Host;

    thread_local! {
        /// The host of the native call in progress on this thread.
        static HOST: RefCell<Option<Box<dyn Host>>> = RefCell::new(None);
    }

    /// Runs `f` with `host` as the host of this thread's guest calls.
    pub fn with_host<R>(host: Box<dyn Host>, f: impl FnOnce() -> R) -> R {
        struct Uninstall;
        impl Drop for Uninstall {
            fn drop(&mut self) {
                HOST.with(|h| h.borrow_mut().take());
            }
        }
        HOST.with(|h| *h.borrow_mut() = Some(host));
        let _u = Uninstall;
        f()
    }

    fn call<R>(name: &str, f: impl FnOnce(&mut dyn Host) -> R) -> R {
        HOST.with(|h| {
            let mut h = h.borrow_mut();
            match h.as_mut() {
                Some(host) => f(host.as_mut()),
                None => panic!(
                    "sluice: host function {} called outside a guest call; run operators natively through sluice::testing",
                    name
                ),
            }
        })
    }

    pub fn emit(batch: &[u8]) {
        call("emit", |h| h.emit(batch))
    }

    pub fn reject(origin: u32, msg: &str) {
        call("reject", |h| h.reject(origin, msg))
    }

    pub fn table_id(name: &str) -> i32 {
        call("table_id", |h| h.table_id(name))
    }

    pub fn state_get(table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        call("state_get", |h| h.state_get(table, key, buf))
    }

    pub fn state_put(table: i32, key: &[u8], value: &[u8]) {
        call("state_put", |h| h.state_put(table, key, value))
    }

    pub fn state_delete(table: i32, key: &[u8]) {
        call("state_delete", |h| h.state_delete(table, key))
    }

    /// Logs through the host of the call in progress, or to stderr outside
    /// one.
    pub fn log(level: i32, msg: &str) {
        HOST.with(|h| match h.borrow_mut().as_mut() {
            Some(host) => host.log(level, msg),
            None => eprintln!("sluice log level {}: {}", level, msg),
        })
    }

    pub fn txn_plan(decls: &[u8]) {
        call("txn_plan", |h| h.txn_plan(decls))
    }

    pub fn txn_get(table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        call("txn_get", |h| h.txn_get(table, key, buf))
    }

    pub fn txn_put(table: i32, key: &[u8], value: &[u8]) -> i32 {
        call("txn_put", |h| h.txn_put(table, key, value))
    }

    pub fn txn_delete(table: i32, key: &[u8]) -> i32 {
        call("txn_delete", |h| h.txn_delete(table, key))
    }
}

pub(crate) use imp::*;
