//! Argument checks and owned strings shared by the exports.

use std::ffi::{CStr, CString, c_char};

use crate::error::{Error, ErrorKind, Result, invalid, null};

/// A borrowed, NUL-terminated, UTF-8 argument.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that outlives the call.
pub unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-NULL and NUL-terminated per the contract.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| invalid(format!("argument `{name}` is not valid UTF-8")))
}

/// An optional borrowed, NUL-terminated, UTF-8 argument (NULL: `None`).
///
/// # Safety
/// As [`str_arg`].
pub unsafe fn opt_str_arg<'a>(p: *const c_char, name: &str) -> Result<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { str_arg(p, name) }.map(Some)
}

/// An optional borrowed, NUL-terminated free text (a reason, a handler's message; NULL:
/// `None`), bytes that are not UTF-8 replaced with U+FFFD: what such a text says must never
/// keep its call from acting (a cancel refused because its reason quoted a file name in
/// Latin-1 would leave the run going).
///
/// # Safety
/// As [`str_arg`].
pub unsafe fn opt_text_arg<'a>(p: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated per the contract.
    Some(String::from_utf8_lossy(unsafe { CStr::from_ptr(p) }.to_bytes()))
}

/// Write `value` to an optional out-parameter (NULL: nothing is written).
///
/// # Safety
/// `p` must be NULL or valid for a write of `T`.
pub unsafe fn put<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: valid per the contract.
        unsafe { p.write(value) };
    }
}

/// A borrowed byte slice given as (pointer, length); NULL is allowed only with length 0.
///
/// # Safety
/// `p` must be NULL or valid for `len` bytes for the duration of the call.
pub unsafe fn bytes_arg<'a>(p: *const u8, len: usize, name: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: valid for len bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A required out-pointer.
///
/// # Safety
/// `p` must be NULL or valid for a write of `T`.
pub unsafe fn out_arg<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T> {
    // SAFETY: valid or NULL per the contract.
    unsafe { p.as_mut() }.ok_or_else(|| null(name))
}

/// Hand an owned, NUL-terminated copy of `bytes` to the caller, who frees it with
/// `agentstream_string_free`. `out_len` (optional) receives the length without the NUL.
///
/// # Safety
/// `out` valid for a write; `out_len` NULL or valid for a write.
pub unsafe fn give_string(bytes: Vec<u8>, out: &mut *mut c_char, out_len: *mut usize) -> Result<()> {
    let len = bytes.len();
    // JSON from serde_json never contains a raw NUL (it escapes U+0000), so this only fails
    // on a bug; check anyway, since `agentstream_string_free` finds the end by the NUL.
    let c = CString::new(bytes)
        .map_err(|_| Error::new(ErrorKind::Internal, "output contained a NUL byte (a bug, please report it)"))?;
    *out = c.into_raw();
    if !out_len.is_null() {
        // SAFETY: valid per the contract.
        unsafe { *out_len = len };
    }
    Ok(())
}

/// Reset optional out-parameters before work, so a failed call leaves `*out == NULL`.
///
/// # Safety
/// Each pointer NULL or valid for a write.
pub unsafe fn reset_out(out: *mut *mut c_char, out_len: *mut usize) {
    if !out.is_null() {
        // SAFETY: valid per the contract.
        unsafe { *out = std::ptr::null_mut() };
    }
    if !out_len.is_null() {
        // SAFETY: valid per the contract.
        unsafe { *out_len = 0 };
    }
}

/// Serialize to JSON bytes; a failure (impossible for the core's types) is `INTERNAL`.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::new(ErrorKind::Internal, format!("serialization failed: {e}")))
}

/// An optional JSON-object argument parsed into `T` (NULL: `T::default()`). Unknown keys and
/// wrong types are `INVALID_ARGUMENT`, with serde's message (it names the known keys).
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that outlives the call.
pub unsafe fn json_options<T: serde::de::DeserializeOwned + Default>(p: *const c_char, name: &str) -> Result<T> {
    if p.is_null() {
        return Ok(T::default());
    }
    // SAFETY: forwarded contract.
    let text = unsafe { str_arg(p, name) }?;
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    agentstream_core::bridge::json_object(text).map_err(|e| invalid(format!("argument `{name}`: {e}")))
}
