//! Ownership of libibverbs objects: each handle frees its object when dropped, so every error
//! path of `open_first` and `VerbsDevice`'s own drop release them in the right order (the
//! owner declares them CQ, PD, context, and Rust drops fields in declaration order).

use rdma_sys::*;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

/// C structs for which the all-zero bit pattern is a valid value: integers, raw pointers and
/// unions of those, no references or non-null types. rdma-sys gives them no `Default`.
///
/// # Safety
/// Implement only for such plain C structs.
pub(super) unsafe trait Zeroable: Sized {
    fn zeroed() -> Self {
        // SAFETY: the implementor guarantees all-zero bytes are a valid value of Self.
        unsafe { std::mem::zeroed() }
    }
}

// SAFETY: each of these is a bindgen/rdma-sys `repr(C)` struct or union made only of
// integers, integer-typed enums, fixed arrays of those, raw pointers and unions of them.
unsafe impl Zeroable for ibv_port_attr {}
// SAFETY: as above.
unsafe impl Zeroable for ibv_device_attr {}
// SAFETY: as above.
unsafe impl Zeroable for ibv_qp_attr {}
// SAFETY: as above.
unsafe impl Zeroable for ibv_qp_init_attr {}
// SAFETY: as above.
unsafe impl Zeroable for ibv_send_wr {}
// SAFETY: as above.
unsafe impl Zeroable for ibv_wc {}
// SAFETY: as above.
unsafe impl Zeroable for ibv_gid {}

/// errno of the verb that just failed.
pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// strerror(3)'s text, without std's " (os error N)" suffix.
pub(super) fn strerror(e: i32) -> String {
    let s = std::io::Error::from_raw_os_error(e).to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Verbs returning `int` return 0 or an errno value; a few old providers return -1 and set
/// errno instead.
pub(super) fn rc_errno(rc: c_int) -> i32 {
    if rc > 0 {
        rc
    } else {
        errno()
    }
}

/// A C string owned by libibverbs (device names, status names), copied out.
pub(super) fn c_str(p: *const c_char) -> String {
    if p.is_null() {
        return "?".into();
    }
    // SAFETY: libibverbs returns pointers to NUL-terminated strings that live at least as long
    // as the object they name (static tables or the device list); we copy before returning.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The array `ibv_get_device_list` returns, freed on drop.
pub(super) struct DeviceList {
    ptr: *mut *mut ibv_device,
    len: usize,
}

impl DeviceList {
    pub(super) fn get() -> Result<DeviceList, String> {
        let mut n: c_int = 0;
        // SAFETY: `n` is a valid out-pointer; a non-NULL result is ours until freed in Drop.
        let ptr = unsafe { ibv_get_device_list(&mut n) };
        if ptr.is_null() {
            // rdma-core returns NULL (errno ENOSYS) when the kernel has no RDMA support at all.
            let e = errno();
            let hint = if e == libc::ENOSYS {
                " (no kernel RDMA support: is ib_uverbs loaded?)"
            } else {
                ""
            };
            return Err(format!(
                "no RDMA device: ibv_get_device_list failed: {}{hint}",
                strerror(e)
            ));
        }
        Ok(DeviceList {
            ptr,
            len: usize::try_from(n).unwrap_or(0),
        })
    }

    pub(super) fn devices(&self) -> &[*mut ibv_device] {
        // SAFETY: the list holds `len` valid device pointers (then a NULL) until we free it.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from ibv_get_device_list and is freed exactly once; contexts opened
        // from it stay valid after the list is freed (documented by libibverbs).
        unsafe { ibv_free_device_list(self.ptr) }
    }
}

pub(super) fn device_name(dev: *mut ibv_device) -> String {
    // SAFETY: `dev` is an entry of a live device list.
    c_str(unsafe { ibv_get_device_name(dev) })
}

/// An open device context.
pub(super) struct Context(pub(super) *mut ibv_context);

impl Context {
    pub(super) fn open(dev: *mut ibv_device) -> Result<Context, String> {
        // SAFETY: `dev` is an entry of a live device list.
        let ctx = unsafe { ibv_open_device(dev) };
        if ctx.is_null() {
            return Err(format!("ibv_open_device failed: {}", strerror(errno())));
        }
        Ok(Context(ctx))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: opened by ibv_open_device; everything created from it (PD, CQ, QPs, MRs) was
        // released before, since its owners drop first.
        unsafe { ibv_close_device(self.0) };
    }
}

/// A protection domain.
pub(super) struct Pd(pub(super) *mut ibv_pd);

impl Pd {
    pub(super) fn alloc(ctx: &Context) -> Result<Pd, String> {
        // SAFETY: `ctx` is an open context.
        let pd = unsafe { ibv_alloc_pd(ctx.0) };
        if pd.is_null() {
            return Err(format!("ibv_alloc_pd failed: {}", strerror(errno())));
        }
        Ok(Pd(pd))
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: allocated by ibv_alloc_pd; its QPs and MRs were destroyed before.
        unsafe { ibv_dealloc_pd(self.0) };
    }
}

/// A completion queue.
pub(super) struct Cq(pub(super) *mut ibv_cq);

impl Cq {
    pub(super) fn create(ctx: &Context, cqe: c_int) -> Result<Cq, String> {
        // SAFETY: `ctx` is an open context; no channel, no context pointer, vector 0.
        let cq =
            unsafe { ibv_create_cq(ctx.0, cqe, std::ptr::null_mut(), std::ptr::null_mut(), 0) };
        if cq.is_null() {
            return Err(format!(
                "ibv_create_cq({cqe}) failed: {}",
                strerror(errno())
            ));
        }
        Ok(Cq(cq))
    }

    /// The size the provider actually gave (at least what was asked).
    pub(super) fn capacity(&self) -> usize {
        // SAFETY: `self.0` is a live CQ; `cqe` is set by the provider at creation.
        usize::try_from(unsafe { (*self.0).cqe }).unwrap_or(0)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: created by ibv_create_cq; the QPs using it were destroyed before.
        unsafe { ibv_destroy_cq(self.0) };
    }
}
