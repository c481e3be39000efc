//! A [`Tape`] handed to JavaScript.

use super::Tape;

/// A tape as JavaScript gets it: the array `[text, words]`, a string and a `Uint32Array`, both
/// copies in memory V8 owns (the [`Tape`]'s buffers are reused for the next batch). Made on the
/// JavaScript thread, handed to JavaScript at once (a value of the current handle scope).
pub struct JsTape(napi::sys::napi_value);

impl JsTape {
    /// Copy `tape` into JavaScript values.
    pub fn new(env: &napi::Env, tape: &Tape) -> napi::Result<JsTape> {
        use napi::sys;
        let text = if tape.ascii {
            // Pure ASCII is valid Latin-1: V8 copies it without decoding UTF-8.
            env.create_string_latin1(tape.text.as_bytes())?
        } else {
            env.create_string(&tape.text)?
        };
        let words = &tape.words;
        let bytes = std::mem::size_of_val(words.as_slice());
        let mut data = std::ptr::null_mut();
        let mut buffer = std::ptr::null_mut();
        let mut typed = std::ptr::null_mut();
        let mut array = std::ptr::null_mut();
        // SAFETY: napi_create_arraybuffer gives `data`, valid for `bytes` bytes (or null for
        // none), which nothing else aliases until the buffer is handed to JavaScript; every
        // value is used in the handle scope of the calling JavaScript callback.
        unsafe {
            napi::check_status!(sys::napi_create_arraybuffer(env.raw(), bytes, &mut data, &mut buffer))?;
            if bytes > 0 {
                std::ptr::copy_nonoverlapping(words.as_ptr().cast::<u8>(), data.cast::<u8>(), bytes);
            }
            napi::check_status!(sys::napi_create_typedarray(
                env.raw(),
                sys::TypedarrayType::uint32_array,
                words.len(),
                buffer,
                0,
                &mut typed,
            ))?;
            napi::check_status!(sys::napi_create_array_with_length(env.raw(), 2, &mut array))?;
            napi::check_status!(sys::napi_set_element(env.raw(), array, 0, napi::JsValue::raw(&text)))?;
            napi::check_status!(sys::napi_set_element(env.raw(), array, 1, typed))?;
        }
        Ok(JsTape(array))
    }
}

impl napi::bindgen_prelude::ToNapiValue for JsTape {
    unsafe fn to_napi_value(_env: napi::sys::napi_env, val: Self) -> napi::Result<napi::sys::napi_value> {
        Ok(val.0)
    }
}
