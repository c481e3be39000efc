/*
 * A tiny JSON reader, writer and semantic equality for the C tests and the C benchmark.
 *
 * Why our own and not the library's serializer: the tests check what the library emits, so
 * comparing through the library's own serializer would let a serializer bug cancel itself out.
 * Semantic equality: object key order is ignored, strings are compared after unescaping
 * (so "\u00e9" equals "é"), numbers by value (integers exactly, others as doubles).
 *
 * Header-only (static functions); strict enough for well-formed input, returns NULL on
 * malformed input. Not a general-purpose parser: no depth limit beyond the C stack.
 */
#ifndef AGENTSTREAM_TESTS_JSON_TINY_H
#define AGENTSTREAM_TESTS_JSON_TINY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { JT_NULL, JT_BOOL, JT_NUMBER, JT_STRING, JT_ARRAY, JT_OBJECT } jt_kind;

typedef struct jt_value {
    jt_kind kind;
    bool boolean;
    char *text;   /* JT_STRING: unescaped UTF-8; JT_NUMBER: the literal */
    size_t len;   /* length of text */
    size_t count; /* JT_ARRAY / JT_OBJECT: number of items */
    char **keys;  /* JT_OBJECT: unescaped keys (NUL-terminated) */
    size_t *key_lens;
    struct jt_value **items;
} jt_value;

typedef struct {
    const char *p;
    const char *end;
} jt_reader;

static inline void jt_free(jt_value *v) {
    if (!v) return;
    free(v->text);
    for (size_t i = 0; i < v->count; i++) {
        if (v->keys) free(v->keys[i]);
        jt_free(v->items[i]);
    }
    free(v->keys);
    free(v->key_lens);
    free(v->items);
    free(v);
}

static inline void jt_ws(jt_reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static inline jt_value *jt_new(jt_kind k) {
    jt_value *v = (jt_value *)calloc(1, sizeof(jt_value));
    if (v) v->kind = k;
    return v;
}

static int jt_hex4(const char *p, unsigned *out) {
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = x;
    return 1;
}

static size_t jt_utf8(unsigned cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Reads a string starting at the opening quote; returns a malloc'd unescaped buffer. */
static inline char *jt_string(jt_reader *r, size_t *out_len) {
    if (r->p >= r->end || *r->p != '"') return NULL;
    r->p++;
    size_t cap = 16, n = 0;
    char *buf = (char *)malloc(cap);
    if (!buf) return NULL;
    while (r->p < r->end && *r->p != '"') {
        if (n + 8 > cap) {
            cap *= 2;
            char *nb = (char *)realloc(buf, cap);
            if (!nb) { free(buf); return NULL; }
            buf = nb;
        }
        char c = *r->p++;
        if ((unsigned char)c < 0x20) { free(buf); return NULL; }
        if (c != '\\') { buf[n++] = c; continue; }
        if (r->p >= r->end) { free(buf); return NULL; }
        char e = *r->p++;
        switch (e) {
            case '"': buf[n++] = '"'; break;
            case '\\': buf[n++] = '\\'; break;
            case '/': buf[n++] = '/'; break;
            case 'b': buf[n++] = '\b'; break;
            case 'f': buf[n++] = '\f'; break;
            case 'n': buf[n++] = '\n'; break;
            case 'r': buf[n++] = '\r'; break;
            case 't': buf[n++] = '\t'; break;
            case 'u': {
                unsigned cp;
                if (r->end - r->p < 4 || !jt_hex4(r->p, &cp)) { free(buf); return NULL; }
                r->p += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
                    unsigned lo;
                    if (jt_hex4(r->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        r->p += 6;
                    }
                }
                n += jt_utf8(cp, buf + n);
                break;
            }
            default: free(buf); return NULL;
        }
    }
    if (r->p >= r->end) { free(buf); return NULL; }
    r->p++; /* closing quote */
    buf[n] = 0;
    *out_len = n;
    return buf;
}

static inline jt_value *jt_parse_value(jt_reader *r);

static inline int jt_push(jt_value *v, jt_value *item, char *key, size_t key_len, size_t *cap) {
    if (v->count == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        jt_value **ni = (jt_value **)realloc(v->items, nc * sizeof(*ni));
        if (!ni) return 0;
        v->items = ni;
        if (v->kind == JT_OBJECT) {
            char **nk = (char **)realloc(v->keys, nc * sizeof(*nk));
            if (!nk) return 0;
            v->keys = nk;
            size_t *nl = (size_t *)realloc(v->key_lens, nc * sizeof(*nl));
            if (!nl) return 0;
            v->key_lens = nl;
        }
        *cap = nc;
    }
    v->items[v->count] = item;
    if (v->kind == JT_OBJECT) { v->keys[v->count] = key; v->key_lens[v->count] = key_len; }
    v->count++;
    return 1;
}

static inline jt_value *jt_parse_value(jt_reader *r) {
    jt_ws(r);
    if (r->p >= r->end) return NULL;
    char c = *r->p;
    if (c == '{' || c == '[') {
        bool obj = c == '{';
        jt_value *v = jt_new(obj ? JT_OBJECT : JT_ARRAY);
        size_t cap = 0;
        if (!v) return NULL;
        r->p++;
        jt_ws(r);
        if (r->p < r->end && *r->p == (obj ? '}' : ']')) { r->p++; return v; }
        for (;;) {
            char *key = NULL;
            size_t key_len = 0;
            jt_ws(r);
            if (obj) {
                key = jt_string(r, &key_len);
                if (!key) { jt_free(v); return NULL; }
                jt_ws(r);
                if (r->p >= r->end || *r->p != ':') { free(key); jt_free(v); return NULL; }
                r->p++;
            }
            jt_value *item = jt_parse_value(r);
            if (!item || !jt_push(v, item, key, key_len, &cap)) { free(key); jt_free(item); jt_free(v); return NULL; }
            jt_ws(r);
            if (r->p < r->end && *r->p == ',') { r->p++; continue; }
            if (r->p < r->end && *r->p == (obj ? '}' : ']')) { r->p++; return v; }
            jt_free(v);
            return NULL;
        }
    }
    if (c == '"') {
        jt_value *v = jt_new(JT_STRING);
        if (!v) return NULL;
        v->text = jt_string(r, &v->len);
        if (!v->text) { jt_free(v); return NULL; }
        return v;
    }
    if ((size_t)(r->end - r->p) >= 4 && memcmp(r->p, "null", 4) == 0) { r->p += 4; return jt_new(JT_NULL); }
    if ((size_t)(r->end - r->p) >= 4 && memcmp(r->p, "true", 4) == 0) {
        r->p += 4;
        jt_value *v = jt_new(JT_BOOL);
        if (v) v->boolean = true;
        return v;
    }
    if ((size_t)(r->end - r->p) >= 5 && memcmp(r->p, "false", 5) == 0) { r->p += 5; return jt_new(JT_BOOL); }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const char *s = r->p;
        while (r->p < r->end && (strchr("+-0123456789.eE", *r->p) != NULL)) r->p++;
        jt_value *v = jt_new(JT_NUMBER);
        if (!v) return NULL;
        v->len = (size_t)(r->p - s);
        v->text = (char *)malloc(v->len + 1);
        if (!v->text) { jt_free(v); return NULL; }
        memcpy(v->text, s, v->len);
        v->text[v->len] = 0;
        return v;
    }
    return NULL;
}

/* Parse exactly one JSON value (surrounding whitespace allowed). NULL when malformed. */
static inline jt_value *jt_parse(const char *text, size_t len) {
    jt_reader r = {text, text + len};
    jt_value *v = jt_parse_value(&r);
    if (!v) return NULL;
    jt_ws(&r);
    if (r.p != r.end) { jt_free(v); return NULL; }
    return v;
}

static inline bool jt_is_integer(const jt_value *v) {
    return strpbrk(v->text, ".eE") == NULL;
}

static inline bool jt_equal(const jt_value *a, const jt_value *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
        case JT_NULL: return true;
        case JT_BOOL: return a->boolean == b->boolean;
        case JT_NUMBER:
            if (jt_is_integer(a) && jt_is_integer(b)) return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
            return strtod(a->text, NULL) == strtod(b->text, NULL);
        case JT_STRING: return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
        case JT_ARRAY:
            if (a->count != b->count) return false;
            for (size_t i = 0; i < a->count; i++)
                if (!jt_equal(a->items[i], b->items[i])) return false;
            return true;
        case JT_OBJECT:
            if (a->count != b->count) return false;
            for (size_t i = 0; i < a->count; i++) {
                size_t j = 0;
                while (j < b->count && !(a->key_lens[i] == b->key_lens[j] && memcmp(a->keys[i], b->keys[j], a->key_lens[i]) == 0)) j++;
                if (j == b->count || !jt_equal(a->items[i], b->items[j])) return false;
            }
            return true;
    }
    return false;
}

/* The member `key` of an object, or NULL. */
static inline const jt_value *jt_get(const jt_value *obj, const char *key) {
    if (!obj || obj->kind != JT_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < obj->count; i++)
        if (obj->key_lens[i] == kl && memcmp(obj->keys[i], key, kl) == 0) return obj->items[i];
    return NULL;
}

/* Two JSON texts are semantically equal (false if either is malformed). */
static inline bool jt_text_equal(const char *a, size_t alen, const char *b, size_t blen) {
    jt_value *x = jt_parse(a, alen);
    jt_value *y = jt_parse(b, blen);
    bool eq = x && y && jt_equal(x, y);
    jt_free(x);
    jt_free(y);
    return eq;
}

/* ---- writer (the benchmark's plain-C normalizer baseline) ---- */

typedef struct {
    char *buf;
    size_t len, cap;
} jt_out;

static inline void jt_put(jt_out *o, const char *s, size_t n) {
    if (o->len + n > o->cap) {
        size_t nc = o->cap ? o->cap : 256;
        while (nc < o->len + n) nc *= 2;
        char *nb = (char *)realloc(o->buf, nc);
        if (!nb) abort();
        o->buf = nb;
        o->cap = nc;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static inline void jt_put_string(jt_out *o, const char *s, size_t n) {
    jt_put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; jt_put(o, e, 2); }
        else if (c == '\n') jt_put(o, "\\n", 2);
        else if (c < 0x20) { char e[8]; snprintf(e, sizeof e, "\\u%04x", c); jt_put(o, e, 6); }
        else jt_put(o, (const char *)&s[i], 1);
    }
    jt_put(o, "\"", 1);
}

static inline void jt_write(jt_out *o, const jt_value *v) {
    switch (v->kind) {
        case JT_NULL: jt_put(o, "null", 4); break;
        case JT_BOOL: if (v->boolean) jt_put(o, "true", 4); else jt_put(o, "false", 5); break;
        case JT_NUMBER: jt_put(o, v->text, v->len); break;
        case JT_STRING: jt_put_string(o, v->text, v->len); break;
        case JT_ARRAY:
        case JT_OBJECT:
            jt_put(o, v->kind == JT_ARRAY ? "[" : "{", 1);
            for (size_t i = 0; i < v->count; i++) {
                if (i) jt_put(o, ",", 1);
                if (v->kind == JT_OBJECT) { jt_put_string(o, v->keys[i], v->key_lens[i]); jt_put(o, ":", 1); }
                jt_write(o, v->items[i]);
            }
            jt_put(o, v->kind == JT_ARRAY ? "]" : "}", 1);
            break;
    }
}

#endif /* AGENTSTREAM_TESTS_JSON_TINY_H */
