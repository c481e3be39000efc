/*
 * Decoder throughput through the C ABI on the mixed corpus (every golden s* trace of every
 * agent), side by side with a plain C JSON normalizer over the same bytes (each line parsed
 * and re-serialized by tests/json_tiny.h): the floor any JSONL consumer pays.
 *
 *   bench <repo>/tests/golden [seconds per mode, default 2]
 *
 * Modes: "callback" = agentstream_decoder_feed with one C callback per event (the callback
 * touches every byte of the JSON); "json-array" = agentstream_decoder_feed_json (one owned
 * JSON array per feed). Each pass decodes every trace with a fresh decoder.
 */
#define _POSIX_C_SOURCE 200809L
#include "agentstream.h"
#include "json_tiny.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char agent[32];
    char *data;
    size_t len;
} trace;

static trace traces[256];
static size_t ntraces;
static size_t corpus_bytes, corpus_lines;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
    size_t events;
    size_t bytes;
    unsigned checksum;
} sink;

static void on_event(void *user_data, const char *json, size_t len) {
    sink *s = (sink *)user_data;
    s->events++;
    s->bytes += len;
    unsigned h = s->checksum;
    for (size_t i = 0; i < len; i++) h = h * 31u + (unsigned char)json[i];
    s->checksum = h;
}

static size_t pass_callback(sink *s) {
    size_t before = s->events;
    for (size_t i = 0; i < ntraces; i++) {
        agentstream_decoder *d = NULL;
        if (agentstream_decoder_new(traces[i].agent, &d) != AGENTSTREAM_STATUS_OK) abort();
        for (size_t off = 0; off < traces[i].len; off += 65536) {
            size_t n = traces[i].len - off < 65536 ? traces[i].len - off : 65536;
            agentstream_decoder_feed(d, (const uint8_t *)traces[i].data + off, n, on_event, s);
        }
        agentstream_decoder_finish(d, on_event, s);
        agentstream_decoder_free(d);
    }
    return s->events - before;
}

static size_t count_array(const char *json, size_t len) {
    /* Top-level items of the array: count depth-1 commas, cheaply (strings skipped). */
    size_t n = 0;
    int depth = 0, in_str = 0;
    if (len <= 2) return 0;
    for (size_t i = 0; i < len; i++) {
        char c = json[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') in_str = 1;
        else if (c == '[' || c == '{') depth++;
        else if (c == ']' || c == '}') depth--;
        else if (c == ',' && depth == 1) n++;
    }
    return n + 1;
}

static size_t pass_json_array(sink *s) {
    size_t events = 0;
    for (size_t i = 0; i < ntraces; i++) {
        agentstream_decoder *d = NULL;
        char *out = NULL;
        size_t len = 0;
        if (agentstream_decoder_new(traces[i].agent, &d) != AGENTSTREAM_STATUS_OK) abort();
        agentstream_decoder_feed_json(d, (const uint8_t *)traces[i].data, traces[i].len, &out, &len);
        events += count_array(out, len);
        s->bytes += len;
        agentstream_string_free(out);
        agentstream_decoder_finish_json(d, &out, &len);
        events += count_array(out, len);
        agentstream_string_free(out);
        agentstream_decoder_free(d);
    }
    s->events += events;
    return events;
}

static size_t pass_baseline(sink *s) {
    size_t lines = 0;
    jt_out o = {0};
    for (size_t i = 0; i < ntraces; i++) {
        const char *p = traces[i].data, *end = p + traces[i].len;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *e = nl ? nl : end;
            jt_value *v = jt_parse(p, (size_t)(e - p));
            if (v) {
                o.len = 0;
                jt_write(&o, v);
                s->bytes += o.len;
                jt_free(v);
                lines++;
            }
            p = nl ? nl + 1 : end;
        }
    }
    free(o.buf);
    s->events += lines;
    return lines;
}

static double run_mode(const char *name, size_t (*pass)(sink *), double seconds, const char *unit, double *out_mbps) {
    sink s = {0, 0, 0};
    pass(&s); /* warm-up */
    size_t items = 0, passes = 0;
    double t0 = now(), t;
    do {
        items += pass(&s);
        passes++;
        t = now() - t0;
    } while (t < seconds);
    double per_s = (double)items / t;
    double mbps = (double)corpus_bytes * (double)passes / t / 1e6;
    printf("%-12s %10.0f %s/s  %8.1f MB/s input  %7.0f ns/%s  (%zu passes, checksum %08x)\n", name, per_s, unit, mbps,
           items ? t * 1e9 / (double)items : 0.0, unit, passes, s.checksum);
    *out_mbps = mbps;
    return per_s;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <repo>/tests/golden [seconds]\n", argv[0]);
        return 2;
    }
    double seconds = argc > 2 ? atof(argv[2]) : 2.0;
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/*/s*.input.jsonl", argv[1]);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) {
        fprintf(stderr, "no traces under %s\n", argv[1]);
        return 2;
    }
    for (size_t i = 0; i < g.gl_pathc && ntraces < 256; i++) {
        const char *path = g.gl_pathv[i];
        const char *slash = strrchr(path, '/'), *prev = slash;
        while (prev > path && prev[-1] != '/') prev--;
        trace *t = &traces[ntraces++];
        snprintf(t->agent, sizeof t->agent, "%.*s", (int)(slash - prev), prev);
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        t->len = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        t->data = (char *)malloc(t->len);
        if (fread(t->data, 1, t->len, f) != t->len) abort();
        fclose(f);
        corpus_bytes += t->len;
        for (size_t k = 0; k < t->len; k++) corpus_lines += t->data[k] == '\n';
    }
    globfree(&g);

    sink s = {0, 0, 0};
    size_t events = pass_callback(&s);
    printf("agentstream %s C ABI bench: %zu traces, %zu bytes, %zu lines, %zu events per pass\n", agentstream_version(),
           ntraces, corpus_bytes, corpus_lines, events);
    double mb_cb, mb_arr, mb_base;
    run_mode("callback", pass_callback, seconds, "event", &mb_cb);
    run_mode("json-array", pass_json_array, seconds, "event", &mb_arr);
    run_mode("C-normalize", pass_baseline, seconds, "line", &mb_base);
    printf("ratio to the plain C normalizer (input MB/s): callback %.2fx, json-array %.2fx\n", mb_cb / mb_base,
           mb_arr / mb_base);
    for (size_t i = 0; i < ntraces; i++) free(traces[i].data);
    return 0;
}
