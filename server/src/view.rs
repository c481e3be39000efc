//! The run view: the live page (`GET /`, assets built into the binary, no external network) and
//! the offline page `agentstream view` writes — one self-contained HTML file that renders a
//! recorded run with the same timeline code.

use agentstream_core::replay::Replay;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::http::ApiError;

/// The live page.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");
/// The shared style sheet.
pub const STYLE_CSS: &str = include_str!("../assets/style.css");
/// The timeline renderer (shared by the live and the offline page).
pub const TIMELINE_JS: &str = include_str!("../assets/timeline.js");
/// The live page's client: run list, new runs, SSE with resume.
pub const LIVE_JS: &str = include_str!("../assets/live.js");

/// Every page gets this: no script, style, image or connection from anywhere but the page's
/// own origin (the offline file: from nowhere but itself).
const LIVE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                        connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(LIVE_CSP));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// `GET /`.
pub async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /assets/{file}`.
pub async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "style.css" => page("text/css; charset=utf-8", STYLE_CSS),
        "timeline.js" => page("text/javascript; charset=utf-8", TIMELINE_JS),
        "live.js" => page("text/javascript; charset=utf-8", LIVE_JS),
        _ => ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such asset").into_response(),
    }
}

/// JSON that is safe inside `<script>…</script>`: no `<`, `>` or `&` (so no `</script>` or
/// `<!--`), and no U+2028/U+2029.
fn script_json(value: &serde_json::Value) -> String {
    let json = serde_json::to_string(value).expect("JSON values serialize");
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn html_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The boot script of the offline page: reads the embedded data and renders it.
const OFFLINE_BOOT: &str = r#"'use strict';
(function () {
  const data = JSON.parse(document.getElementById('agentstream-data').textContent);
  const timeline = new window.AgentstreamTimeline(document.getElementById('timeline'), { showRaw: false });
  for (const env of data.envelopes) timeline.push(env, null);
  const o = data.outcome || {};
  timeline.setResult({ error: o.state === 'failed' ? [o.error, o.detail].filter(Boolean).join(': ') : undefined,
                       cancel_reason: o.state === 'cancelled' ? o.reason : undefined });
  timeline.renderSummary();
  const raw = document.getElementById('show-raw');
  raw.addEventListener('change', () => {
    const again = new window.AgentstreamTimeline(document.getElementById('timeline'), { showRaw: raw.checked });
    for (const env of data.envelopes) again.push(env, null);
    again.setResult(timeline.result);
    again.renderSummary();
  });
})();
"#;

/// One self-contained HTML page rendering a replayed run (no server, no network): the style
/// sheet, the timeline renderer and the run's envelopes inlined. `title` names the run (e.g.
/// the trace's file name).
pub fn offline_page(title: &str, agent: &str, replay: &Replay) -> String {
    let data = serde_json::json!({
        "title": title,
        "agent": agent,
        "envelopes": replay.items,
        "outcome": replay.outcome,
    });
    let (timeline_script, boot_script) = (format!("\n{TIMELINE_JS}"), format!("\n{OFFLINE_BOOT}"));
    // Only these two scripts run: a script that data in the page managed to smuggle in would not
    // (its hash is not listed; the data block is JSON, never executed).
    let csp = format!(
        "default-src 'none'; script-src {} {}; style-src 'unsafe-inline'; img-src data:",
        script_hash(&timeline_script),
        script_hash(&boot_script)
    );
    let title = html_text(title);
    let agent = html_text(agent);
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} — agentstream</title>\n<style>\n{STYLE_CSS}</style>\n</head>\n\
         <body class=\"offline\">\n<header class=\"top\"><span class=\"brand\">agentstream</span>\
         <span class=\"sub\">recorded run · {agent}</span></header>\n\
         <section class=\"run\">\n<div class=\"run-head\"><h1>{title}</h1>\
         <label class=\"toggle\"><input id=\"show-raw\" type=\"checkbox\"> raw output</label></div>\n\
         <div id=\"timeline\"></div>\n</section>\n\
         <script id=\"agentstream-data\" type=\"application/json\">{data}</script>\n\
         <script>{timeline_script}</script>\n<script>{boot_script}</script>\n</body>\n</html>\n",
        data = script_json(&data),
    )
}

/// A Content-Security-Policy source naming an inline script by its text's SHA-256.
fn script_hash(text: &str) -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentstream_core::Agent;
    use agentstream_core::replay::{ReplayOptions, replay};

    #[test]
    fn the_offline_page_is_self_contained_and_script_safe() {
        let input = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n\
                     {\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"</script><b>x</b>\"}]}}\n";
        let r = replay(Agent::Claude, input.as_bytes(), &ReplayOptions::default());
        let html = offline_page("a <run>", "claude", &r);
        assert!(!html.contains("<b>x</b>"), "data cannot close the script");
        assert_eq!(html.matches("</script>").count(), 3, "only the three real script ends");
        assert!(html.contains("a &lt;run&gt;"));
        for external in ["http://", "https://", "src=\"", "href=\""] {
            assert!(!html.contains(external), "no external reference: {external}");
        }
        let start = html.find("application/json\">").unwrap() + "application/json\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
        assert_eq!(data["envelopes"].as_array().unwrap().len(), r.items.len());
        assert!(data["envelopes"].to_string().contains("</script><b>x</b>"), "the text itself is intact");
        // The policy lets exactly the page's two scripts run, by hash, and no inline script else.
        let csp = html.split("Content-Security-Policy\" content=\"").nth(1).unwrap().split('"').next().unwrap();
        assert!(!csp.contains("unsafe-inline'; style") && csp.contains("script-src 'sha256-"), "{csp}");
        let scripts: Vec<&str> = html.split("<script>").skip(1).map(|s| s.split("</script>").next().unwrap()).collect();
        assert_eq!(scripts.len(), 2);
        for script in scripts {
            assert!(csp.contains(&script_hash(script)), "{csp}");
        }
    }

    #[test]
    fn assets_have_no_external_references() {
        for asset in [INDEX_HTML, STYLE_CSS, TIMELINE_JS, LIVE_JS] {
            for external in ["http://", "https://", "//cdn", "@import"] {
                assert!(!asset.contains(external), "{external} in an asset");
            }
        }
    }
}
