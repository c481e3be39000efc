/*
 * C tests of libagentstream through the REAL generated header.
 *
 *   test_capi <repo>/tests/golden [-q]      (-q: print failures and the closing line only)
 *
 * Golden replay (every <agent>/<case>.input.jsonl, whole, byte by byte, in seeded random chunks
 * and through the JSON-array variant, compared semantically with .expected.jsonl), misuse
 * (NULL handles, unknown agent/channel names, free(NULL), reentrancy), panics, the session's
 * handler ownership and delivery from a Rust thread. Closing line: "C: N passed, N failed".
 * Run under AddressSanitizer and valgrind by `make test-c`.
 */
#define _POSIX_C_SOURCE 200809L
#include "agentstream.h"
#include "json_tiny.h"

#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int passed, failed, skipped, quiet;
static const char *current = "";

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "FAIL %s: %s:%d: %s\n", current, __FILE__, __LINE__, #cond); \
            return 0;                                                                   \
        }                                                                               \
    } while (0)

static void run(const char *name, int (*fn)(void)) {
    current = name;
    if (fn()) {
        passed++;
        if (!quiet) printf("ok   %s\n", name);
    } else {
        failed++;
        printf("FAIL %s\n", name);
    }
}

/* ---------- helpers ---------- */

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = (char *)malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

typedef struct {
    char **items;
    size_t *lens;
    size_t count, cap;
    int not_terminated; /* callbacks whose json was not NUL-terminated */
} strlist;

static void strlist_push(strlist *l, const char *s, size_t n) {
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = (char **)realloc(l->items, l->cap * sizeof(char *));
        l->lens = (size_t *)realloc(l->lens, l->cap * sizeof(size_t));
    }
    l->items[l->count] = (char *)malloc(n + 1);
    memcpy(l->items[l->count], s, n);
    l->items[l->count][n] = 0;
    l->lens[l->count] = n;
    l->count++;
}

static void strlist_free(strlist *l) {
    for (size_t i = 0; i < l->count; i++) free(l->items[i]);
    free(l->items);
    free(l->lens);
    memset(l, 0, sizeof *l);
}

static void collect(void *user_data, const char *json, size_t len) {
    strlist *l = (strlist *)user_data;
    if (json[len] != 0) l->not_terminated++;
    strlist_push(l, json, len);
}

/* Non-empty lines of a JSONL text. */
static void split_lines(const char *text, size_t len, strlist *out) {
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *q = p;
        while (q < e && (*q == ' ' || *q == '\r' || *q == '\t')) q++;
        if (q < e) strlist_push(out, p, (size_t)(e - p));
        p = nl ? nl + 1 : end;
    }
}

static int last_error_contains(const char *needle) {
    char buf[1024];
    size_t len = 0;
    agentstream_last_error_message(buf, sizeof buf, &len);
    return strstr(buf, needle) != NULL;
}

static uint64_t rng_state;
static size_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (size_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}

/* chunk: 0 = whole, 1.. = fixed size, (size_t)-1 = seeded random 1..97 */
static int replay(const char *agent, const char *input, size_t n, size_t chunk, strlist *out) {
    agentstream_decoder *d = NULL;
    if (agentstream_decoder_new(agent, &d) != AGENTSTREAM_STATUS_OK) return 0;
    size_t off = 0;
    while (off < n) {
        size_t k = chunk == 0 ? n - off : chunk == (size_t)-1 ? rng_next() % 97 + 1 : chunk;
        if (k > n - off) k = n - off;
        if (agentstream_decoder_feed(d, (const uint8_t *)input + off, k, collect, out) != AGENTSTREAM_STATUS_OK) {
            agentstream_decoder_free(d);
            return 0;
        }
        off += k;
    }
    int ok = agentstream_decoder_finish(d, collect, out) == AGENTSTREAM_STATUS_OK;
    agentstream_decoder_free(d);
    return ok;
}

static int same_events(const strlist *got, const strlist *want) {
    if (got->count != want->count) {
        fprintf(stderr, "  %zu events, expected %zu\n", got->count, want->count);
        return 0;
    }
    for (size_t i = 0; i < got->count; i++) {
        if (!jt_text_equal(got->items[i], got->lens[i], want->items[i], want->lens[i])) {
            fprintf(stderr, "  event %zu differs:\n    got      %s\n    expected %s\n", i + 1, got->items[i], want->items[i]);
            return 0;
        }
    }
    return 1;
}

/* Items of a JSON array text, re-serialized one by one (for comparing the batch variant). */
static int array_items(const char *json, size_t len, strlist *out) {
    jt_value *v = jt_parse(json, len);
    if (!v || v->kind != JT_ARRAY) {
        jt_free(v);
        return 0;
    }
    for (size_t i = 0; i < v->count; i++) {
        jt_out o = {0};
        jt_write(&o, v->items[i]);
        strlist_push(out, o.buf ? o.buf : "", o.len);
        free(o.buf);
    }
    jt_free(v);
    return 1;
}

/* ---------- golden replay ---------- */

static const char *golden_dir;
static glob_t golden;
static size_t golden_index;

static int golden_case(void) {
    const char *path = golden.gl_pathv[golden_index];
    /* <dir>/<agent>/<case>.input.jsonl */
    char agent[64], expected_path[4096];
    const char *slash = strrchr(path, '/');
    const char *prev = slash;
    while (prev > path && prev[-1] != '/') prev--;
    CHECK(slash && (size_t)(slash - prev) < sizeof agent);
    memcpy(agent, prev, (size_t)(slash - prev));
    agent[slash - prev] = 0;
    size_t plen = strlen(path) - strlen(".input.jsonl");
    snprintf(expected_path, sizeof expected_path, "%.*s.expected.jsonl", (int)plen, path);

    size_t in_len = 0, ex_len = 0;
    char *input = read_file(path, &in_len);
    char *expected_text = read_file(expected_path, &ex_len);
    CHECK(input != NULL);
    CHECK(expected_text != NULL);
    strlist want = {0};
    split_lines(expected_text, ex_len, &want);

    int ok = 1;
    size_t chunkings[] = {0, 1, 2, 7, (size_t)-1, (size_t)-1, (size_t)-1};
    for (size_t c = 0; c < sizeof chunkings / sizeof *chunkings && ok; c++) {
        strlist got = {0};
        rng_state = 0x9E3779B97F4A7C15ULL * (c + 1);
        ok = replay(agent, input, in_len, chunkings[c], &got) && got.not_terminated == 0 && same_events(&got, &want);
        if (!ok) fprintf(stderr, "  (chunking #%zu)\n", c);
        strlist_free(&got);
    }

    /* The JSON-array variant and the stats. */
    if (ok) {
        agentstream_decoder *d = NULL;
        char *a = NULL, *b = NULL, *stats = NULL;
        size_t alen = 0, blen = 0, slen = 0;
        strlist got = {0};
        ok = agentstream_decoder_new(agent, &d) == AGENTSTREAM_STATUS_OK &&
             agentstream_decoder_feed_json(d, (const uint8_t *)input, in_len, &a, &alen) == AGENTSTREAM_STATUS_OK &&
             agentstream_decoder_finish_json(d, &b, &blen) == AGENTSTREAM_STATUS_OK &&
             agentstream_decoder_stats_json(d, &stats, &slen) == AGENTSTREAM_STATUS_OK && array_items(a, alen, &got) &&
             array_items(b, blen, &got) && same_events(&got, &want);
        if (ok) {
            jt_value *s = jt_parse(stats, slen);
            const jt_value *events = jt_get(s, "events"), *bytes = jt_get(s, "bytes");
            char want_events[32], want_bytes[32];
            snprintf(want_events, sizeof want_events, "%zu", want.count);
            snprintf(want_bytes, sizeof want_bytes, "%zu", in_len);
            ok = events && bytes && strcmp(events->text, want_events) == 0 && strcmp(bytes->text, want_bytes) == 0;
            if (!ok) fprintf(stderr, "  stats %s\n", stats);
            jt_free(s);
        }
        agentstream_string_free(a);
        agentstream_string_free(b);
        agentstream_string_free(stats);
        agentstream_decoder_free(d);
        strlist_free(&got);
    }
    strlist_free(&want);
    free(input);
    free(expected_text);
    return ok;
}

/* ---------- version and header ---------- */

static int test_version(void) {
    char v[64];
    snprintf(v, sizeof v, "%d.%d.%d", AGENTSTREAM_VERSION_MAJOR, AGENTSTREAM_VERSION_MINOR, AGENTSTREAM_VERSION_PATCH);
    CHECK(strcmp(agentstream_version(), AGENTSTREAM_VERSION) == 0);
    CHECK(strcmp(v, AGENTSTREAM_VERSION) == 0);
    CHECK(sizeof(agentstream_status) == 4);
    CHECK(strcmp(agentstream_status_name(AGENTSTREAM_STATUS_INVALID_ARGUMENT), "invalid_argument") == 0);
    CHECK(strcmp(agentstream_status_name(AGENTSTREAM_STATUS_PANIC), "panic") == 0);
    CHECK(strcmp(agentstream_status_name(4242), "unknown") == 0);
    return 1;
}

/* ---------- misuse ---------- */

static int test_decoder_misuse(void) {
    agentstream_decoder *d = (agentstream_decoder *)1;
    CHECK(agentstream_decoder_new(NULL, &d) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(d == NULL);
    CHECK(last_error_contains("agent"));
    CHECK(agentstream_decoder_new("claude", NULL) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    d = (agentstream_decoder *)1;
    CHECK(agentstream_decoder_new("cursor", &d) == AGENTSTREAM_STATUS_INVALID_ARGUMENT);
    CHECK(d == NULL);
    const char *agents[] = {"claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"};
    for (size_t i = 0; i < 7; i++) CHECK(last_error_contains(agents[i]));
    CHECK(last_error_contains("cursor"));
    CHECK(agentstream_decoder_new("\xff\xfe", &d) == AGENTSTREAM_STATUS_INVALID_ARGUMENT);
    CHECK(last_error_contains("UTF-8"));

    for (size_t i = 0; i < 7; i++) {
        CHECK(agentstream_decoder_new(agents[i], &d) == AGENTSTREAM_STATUS_OK);
        agentstream_decoder_free(d);
    }
    CHECK(agentstream_decoder_new("Claude-Code", &d) == AGENTSTREAM_STATUS_OK);

    strlist got = {0};
    CHECK(agentstream_decoder_feed(NULL, (const uint8_t *)"x", 1, collect, &got) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(last_error_contains("decoder"));
    CHECK(agentstream_decoder_feed(d, NULL, 3, collect, &got) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_decoder_feed(d, NULL, 0, collect, &got) == AGENTSTREAM_STATUS_OK);
    CHECK(agentstream_decoder_feed(d, (const uint8_t *)"{}\n", 3, NULL, NULL) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(last_error_contains("cb"));
    /* Garbage is never an error: it is counted. */
    const char *junk = "not json\n[1,2]\nnull\n\xff\xfe\n{\"type\":\"never-heard-of-it\"}\n";
    CHECK(agentstream_decoder_feed(d, (const uint8_t *)junk, strlen(junk), collect, &got) == AGENTSTREAM_STATUS_OK);
    CHECK(agentstream_decoder_finish(d, collect, &got) == AGENTSTREAM_STATUS_OK);
    CHECK(agentstream_decoder_finish(d, collect, &got) == AGENTSTREAM_STATUS_OK);
    char *json = (char *)1;
    size_t len = 99;
    CHECK(agentstream_decoder_stats_json(d, &json, &len) == AGENTSTREAM_STATUS_OK);
    jt_value *stats = jt_parse(json, len);
    CHECK(stats != NULL);
    CHECK(strcmp(jt_get(stats, "lines")->text, "5") == 0);
    CHECK(strcmp(jt_get(stats, "invalid_utf8_lines")->text, "1") == 0);
    jt_free(stats);
    agentstream_string_free(json);
    CHECK(agentstream_decoder_take_diagnostics_json(d, &json, NULL) == AGENTSTREAM_STATUS_OK);
    CHECK(strstr(json, "invalid UTF-8") != NULL);
    agentstream_string_free(json);
    CHECK(agentstream_decoder_take_diagnostics_json(d, &json, &len) == AGENTSTREAM_STATUS_OK);
    CHECK(strcmp(json, "[]") == 0 && len == 2);
    agentstream_string_free(json);
    CHECK(agentstream_decoder_session_id(d, &json, &len) == AGENTSTREAM_STATUS_OK);
    CHECK(json == NULL && len == 0);

    json = (char *)1;
    CHECK(agentstream_decoder_stats_json(NULL, &json, &len) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(json == NULL);
    CHECK(agentstream_decoder_stats_json(d, NULL, &len) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_decoder_feed_json(d, (const uint8_t *)"x", 1, NULL, NULL) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_decoder_finish(NULL, collect, &got) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_decoder_finish_json(NULL, &json, NULL) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    agentstream_decoder_free(d);
    strlist_free(&got);

    /* Every _free is NULL-safe. */
    agentstream_decoder_free(NULL);
    agentstream_session_free(NULL);
    agentstream_string_free(NULL);

    /* A tiny line limit: the long line is skipped and reported, not kept. */
    CHECK(agentstream_decoder_new_with_options("codex", 8, &d) == AGENTSTREAM_STATUS_OK);
    const char *long_line = "{\"type\":\"a-very-long-line\"}\n";
    CHECK(agentstream_decoder_feed(d, (const uint8_t *)long_line, strlen(long_line), collect, &got) == AGENTSTREAM_STATUS_OK);
    CHECK(agentstream_decoder_stats_json(d, &json, NULL) == AGENTSTREAM_STATUS_OK);
    CHECK(strstr(json, "\"oversize_lines\":1") != NULL);
    agentstream_string_free(json);
    agentstream_decoder_free(d);
    strlist_free(&got);
    return 1;
}

static int test_last_error_buffer(void) {
    CHECK(agentstream_channel_validate("message") == AGENTSTREAM_STATUS_INVALID_ARGUMENT);
    size_t len = 0;
    CHECK(agentstream_last_error_message(NULL, 0, &len) == AGENTSTREAM_STATUS_BUFFER_TOO_SMALL);
    CHECK(len > 20);
    char small[8];
    memset(small, 'x', sizeof small);
    size_t len2 = 0;
    CHECK(agentstream_last_error_message(small, sizeof small, &len2) == AGENTSTREAM_STATUS_BUFFER_TOO_SMALL);
    CHECK(len2 == len);
    CHECK(strlen(small) == 7);
    char *full = (char *)malloc(len + 1);
    CHECK(agentstream_last_error_message(full, len + 1, NULL) == AGENTSTREAM_STATUS_OK);
    CHECK(strlen(full) == len);
    CHECK(strncmp(full, small, 7) == 0);
    free(full);
    /* Success clears it. */
    CHECK(agentstream_channel_validate("stdout") == AGENTSTREAM_STATUS_OK);
    CHECK(agentstream_last_error_message(NULL, 0, &len) == AGENTSTREAM_STATUS_OK);
    CHECK(len == 0);
    return 1;
}

static int test_channels(void) {
    const char *ok[] = {"content", "lifecycle", "stdout", "stderr"};
    for (size_t i = 0; i < 4; i++) CHECK(agentstream_channel_validate(ok[i]) == AGENTSTREAM_STATUS_OK);
    const char *bad[] = {"message", "Content", "", "content ", "stdout\n"};
    for (size_t i = 0; i < 5; i++) {
        CHECK(agentstream_channel_validate(bad[i]) == AGENTSTREAM_STATUS_INVALID_ARGUMENT);
        for (size_t j = 0; j < 4; j++) CHECK(last_error_contains(ok[j]));
    }
    CHECK(agentstream_channel_validate(NULL) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    return 1;
}

static int test_panic(void) {
    /* RUST_BACKTRACE=1 makes the default hook print a backtrace: ours must stay quiet. */
    setenv("RUST_BACKTRACE", "1", 1);
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    CHECK(tmp != NULL);
    dup2(fileno(tmp), 2);
    agentstream_status st = agentstream_testing_panic();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fseek(tmp, 0, SEEK_END);
    long printed = ftell(tmp);
    fclose(tmp);
    CHECK(st == AGENTSTREAM_STATUS_PANIC);
    CHECK(last_error_contains("deliberate panic"));
    CHECK(printed == 0);
    /* The library still works afterwards. */
    CHECK(agentstream_channel_validate("content") == AGENTSTREAM_STATUS_OK);
    return 1;
}

/* Reentrancy needs at least one event: taken from the first golden case that has any. */
typedef struct {
    agentstream_decoder *d;
    int calls;
    agentstream_status inner;
} reenter_state;

static void reenter(void *user_data, const char *json, size_t len) {
    (void)json;
    (void)len;
    reenter_state *s = (reenter_state *)user_data;
    if (s->calls++ == 0) {
        char *out = NULL;
        s->inner = agentstream_decoder_stats_json(s->d, &out, NULL);
        agentstream_string_free(out);
        agentstream_decoder_free(s->d); /* deferred to the end of the outer feed */
    }
}

static int reentrancy_skipped;
static int test_reentrancy(void) {
    for (size_t i = 0; i < golden.gl_pathc; i++) {
        const char *path = golden.gl_pathv[i];
        const char *slash = strrchr(path, '/'), *prev = slash;
        while (prev > path && prev[-1] != '/') prev--;
        char agent[64];
        snprintf(agent, sizeof agent, "%.*s", (int)(slash - prev), prev);
        size_t n = 0;
        char *input = read_file(path, &n);
        reenter_state s = {NULL, 0, AGENTSTREAM_STATUS_OK};
        CHECK(agentstream_decoder_new(agent, &s.d) == AGENTSTREAM_STATUS_OK);
        agentstream_status st = agentstream_decoder_feed(s.d, (const uint8_t *)input, n, reenter, &s);
        free(input);
        CHECK(st == AGENTSTREAM_STATUS_OK);
        if (s.calls == 0) {
            agentstream_decoder_free(s.d);
            continue;
        }
        CHECK(s.inner == AGENTSTREAM_STATUS_BUSY);
        CHECK(s.calls == 1); /* no event delivered after the free request */
        return 1;
    }
    reentrancy_skipped = 1;
    return 1;
}

/* ---------- session: on(), ownership, delivery from a Rust thread ---------- */

typedef struct {
    int calls;
    int freed;
    char last[256];
    pthread_t thread;
    int order[16];
    int norder;
} handler_state;

static int *order_log;
static int order_len;

static void handler_a(void *user_data, const char *json, size_t len) {
    handler_state *h = (handler_state *)user_data;
    h->calls++;
    h->thread = pthread_self();
    snprintf(h->last, sizeof h->last, "%.*s", (int)len, json);
    if (order_log) order_log[order_len++] = 1;
}

static void handler_b(void *user_data, const char *json, size_t len) {
    (void)json;
    (void)len;
    handler_state *h = (handler_state *)user_data;
    h->calls++;
    if (order_log) order_log[order_len++] = 2;
}

static void free_state(void *user_data) {
    ((handler_state *)user_data)->freed++;
}

static int test_session(void) {
    agentstream_session *s = (agentstream_session *)1;
    CHECK(agentstream_session_new("cursor", &s) == AGENTSTREAM_STATUS_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK(last_error_contains("opencode"));
    CHECK(agentstream_session_new(NULL, &s) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_session_new("claude", NULL) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_session_new("claude", &s) == AGENTSTREAM_STATUS_OK);
    CHECK(strcmp(agentstream_session_agent(s), "claude") == 0);
    CHECK(agentstream_session_agent(NULL) == NULL);

    handler_state a = {0}, b = {0}, c = {0}, rejected = {0};
    CHECK(agentstream_session_on(s, "message", handler_a, &rejected, free_state) == AGENTSTREAM_STATUS_INVALID_ARGUMENT);
    CHECK(last_error_contains("lifecycle") && last_error_contains("stderr"));
    CHECK(agentstream_session_on(s, "content", NULL, &rejected, free_state) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_session_on(NULL, "content", handler_a, &rejected, free_state) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_session_on(s, NULL, handler_a, &rejected, free_state) == AGENTSTREAM_STATUS_NULL_ARGUMENT);
    CHECK(agentstream_session_on(s, "content", handler_a, &a, free_state) == AGENTSTREAM_STATUS_OK);
    CHECK(agentstream_session_on(s, "content", handler_b, &b, free_state) == AGENTSTREAM_STATUS_OK);
    CHECK(agentstream_session_on(s, "stdout", handler_a, &c, NULL) == AGENTSTREAM_STATUS_OK);

    int log[64];
    order_log = log;
    order_len = 0;
    const char *ev = "{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}}";
    size_t delivered = 0;
    CHECK(agentstream_testing_session_emit(s, "content", (const uint8_t *)ev, strlen(ev), 1, 0, &delivered) ==
          AGENTSTREAM_STATUS_OK);
    CHECK(delivered == 2);
    CHECK(order_len == 2 && log[0] == 1 && log[1] == 2);
    CHECK(strcmp(a.last, ev) == 0);
    CHECK(pthread_equal(a.thread, pthread_self()));

    order_len = 0;
    CHECK(agentstream_testing_session_emit(s, "content", (const uint8_t *)ev, strlen(ev), 3, 1, &delivered) ==
          AGENTSTREAM_STATUS_OK);
    CHECK(delivered == 6);
    CHECK(!pthread_equal(a.thread, pthread_self()));
    for (int i = 0; i < 6; i++) CHECK(log[i] == (i % 2 ? 2 : 1));
    order_log = NULL;

    CHECK(agentstream_testing_session_emit(s, "stdout", (const uint8_t *)"raw line", 8, 1, 0, &delivered) ==
          AGENTSTREAM_STATUS_OK);
    CHECK(delivered == 1 && strcmp(c.last, "raw line") == 0);
    CHECK(agentstream_testing_session_emit(s, "stderr", (const uint8_t *)"x", 1, 1, 0, &delivered) ==
          AGENTSTREAM_STATUS_OK);
    CHECK(delivered == 0);
    CHECK(agentstream_testing_session_emit(s, "nope", (const uint8_t *)"x", 1, 1, 0, NULL) ==
          AGENTSTREAM_STATUS_INVALID_ARGUMENT);
    CHECK(a.calls == 4 && b.calls == 4 && c.calls == 1);

    CHECK(a.freed == 0 && b.freed == 0);
    agentstream_session_free(s);
    CHECK(a.freed == 1 && b.freed == 1);
    CHECK(c.freed == 0); /* registered without a destructor */
    CHECK(rejected.freed == 0); /* failed registrations take nothing */
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <repo>/tests/golden\n", argv[0]);
        return 2;
    }
    golden_dir = argv[1];
    quiet = argc > 2 && strcmp(argv[2], "-q") == 0;
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/*/*.input.jsonl", golden_dir);
    if (glob(pattern, 0, NULL, &golden) != 0 || golden.gl_pathc == 0) {
        fprintf(stderr, "no golden cases under %s\n", golden_dir);
        return 2;
    }

    run("version", test_version);
    run("misuse/decoder", test_decoder_misuse);
    run("misuse/last_error_buffer", test_last_error_buffer);
    run("misuse/channels", test_channels);
    run("bridging/panic", test_panic);
    run("bridging/reentrancy", test_reentrancy);
    if (reentrancy_skipped) {
        passed--;
        skipped++;
        printf("skip bridging/reentrancy (no golden case produces an event yet)\n");
    }
    run("bridging/session_on", test_session);
    char name[512];
    for (golden_index = 0; golden_index < golden.gl_pathc; golden_index++) {
        const char *p = golden.gl_pathv[golden_index] + strlen(golden_dir) + 1;
        snprintf(name, sizeof name, "golden/%.*s", (int)(strlen(p) - strlen(".input.jsonl")), p);
        run(name, golden_case);
    }
    globfree(&golden);
    if (skipped)
        printf("C: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("C: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
