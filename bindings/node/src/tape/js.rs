//! A [`Tape`] handed to JavaScript.

use super::Tape;

/// A tape as JavaScript gets it: the array `[text, words]`, a string and a `Uint32Array`, both
/// copies in memory V8 owns (the [`Tape`]'s buffers are reused for the next batch) — or, from
/// [`JsTape::reusing`], the text alone, its words copied into the reader's own array. Made on the
/// JavaScript thread, handed to JavaScript at once (a value of the current handle scope).
pub struct JsTape(napi::sys::napi_value);

/// The text of `tape` as a JavaScript string (a copy).
fn text<'env>(env: &'env napi::Env, tape: &Tape) -> napi::Result<napi::JsString<'env>> {
    if tape.ascii {
        // Pure ASCII is valid Latin-1: V8 copies it without decoding UTF-8.
        env.create_string_latin1(tape.text.as_bytes())
    } else {
        env.create_string(&tape.text)
    }
}

impl JsTape {
    /// The tape with its words copied into `words`, a `Uint32Array` the reader keeps and passes
    /// on every call, when they fit before its last element, which then holds their count: the
    /// value is then the text alone. Otherwise (too many words) the tape as [`JsTape::new`]
    /// makes it. A new `ArrayBuffer` per batch was most of a small batch's cost in V8 (its
    /// backing store, then its sweeping); a stream fed line by line makes one batch per line.
    pub fn reusing(env: &napi::Env, tape: &Tape, words: &mut [u32]) -> napi::Result<JsTape> {
        let n = tape.words.len();
        match words.split_last_mut() {
            Some((count, room)) if n <= room.len() => {
                room[..n].copy_from_slice(&tape.words);
                // Fits in a u32: `room` is a JavaScript typed array's length minus one.
                *count = n as u32;
                Ok(JsTape(napi::JsValue::raw(&text(env, tape)?)))
            }
            _ => JsTape::new(env, tape),
        }
    }

    /// Copy `tape` into JavaScript values.
    pub fn new(env: &napi::Env, tape: &Tape) -> napi::Result<JsTape> {
        use napi::sys;
        let text = text(env, tape)?;
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
