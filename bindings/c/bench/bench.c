/*
 * Decoder throughput through the C ABI on the mixed corpus (every golden s* trace of every
 * agent), side by side with a plain C JSON normalizer over the same bytes (each line parsed
 * and re-serialized by tests/json_tiny.h): the floor any JSONL consumer pays.
 *
 *   bench <repo>/tests/golden [seconds per mode, default 2] [fake-harness [repetitions, default 300]]
 *
 * Modes: "callback" = agentstream_decoder_feed with one C callback per event (the callback
 * touches every byte of the JSON); "json-array" = agentstream_decoder_feed_json (one owned
 * JSON array per feed). Each pass decodes every trace with a fresh decoder.
 *
 * With the fake harness: the same corpus through REAL runs. Each agent's s* traces are joined
 * and repeated (300 times: about 16 MB of stdout in all), written to a temporary trace, and
 * played by the fake harness as a child process, one run per agent: "run-callback" counts the
 * content events a C `on("content")` handler receives from the run's thread; "run-pull" pulls
 * the run with agentstream_run_next_batch_json (256 per call); "run-await" delivers nothing (no
 * reader: the process, the decoder and the run stream alone). The buffer's marks are raised so
 * no text delta is merged and every event is delivered. Best of 5 rounds; the time includes
 * spawning the processes.
 */
#define _POSIX_C_SOURCE 200809L
#include "agentstream.h"
#include "json_tiny.h"

#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
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

/* ---- through real runs of the fake harness ---- */

typedef struct {
    char agent[32];
    char path[4096];
    size_t bytes;
} run_trace;

static run_trace run_traces[16];
static size_t nrun_traces;

static int write_run_traces(const char *dir, int reps) {
    for (size_t i = 0; i < ntraces; i++) {
        run_trace *rt = NULL;
        for (size_t k = 0; k < nrun_traces; k++)
            if (strcmp(run_traces[k].agent, traces[i].agent) == 0) rt = &run_traces[k];
        if (!rt) {
            rt = &run_traces[nrun_traces++];
            memcpy(rt->agent, traces[i].agent, sizeof rt->agent);
            snprintf(rt->path, sizeof rt->path, "%.1024s/%.31s", dir, traces[i].agent);
        }
    }
    for (size_t k = 0; k < nrun_traces; k++) {
        char file[4200];
        snprintf(file, sizeof file, "%s.input.jsonl", run_traces[k].path);
        FILE *f = fopen(file, "wb");
        if (!f) return 0;
        for (int r = 0; r < reps; r++)
            for (size_t i = 0; i < ntraces; i++)
                if (strcmp(traces[i].agent, run_traces[k].agent) == 0) {
                    fwrite(traces[i].data, 1, traces[i].len, f);
                    run_traces[k].bytes += traces[i].len;
                }
        fclose(f);
    }
    return 1;
}

static const char *NO_MERGE = "{\"limits\":{\"high_water\":1000000000,\"byte_budget\":4000000000,\"stall_ms\":600000}}";
static const char *NO_MERGE_PULL =
    "{\"read\":\"iterate\",\"limits\":{\"high_water\":1000000000,\"byte_budget\":4000000000,\"stall_ms\":600000}}";

static size_t count_substr(const char *s, size_t len, const char *needle) {
    size_t n = 0, k = strlen(needle);
    const char *p = s, *end = s + len;
    while (p < end && (p = strstr(p, needle)) != NULL) {
        n++;
        p += k;
    }
    return n;
}

/* One round: every agent's trace as one run. Returns content events delivered. pull: 0 = a C
 * on("content") handler, 1 = pulled in batches, 2 = awaited only (nothing delivered: the cost of
 * the process, the decoder and the run stream alone). */
static size_t run_round(const char *fake, int pull, sink *s) {
    size_t events = 0;
    for (size_t k = 0; k < nrun_traces; k++) {
        agentstream_session *session = NULL;
        agentstream_run *run = NULL;
        if (agentstream_session_new(run_traces[k].agent, &session) != AGENTSTREAM_STATUS_OK ||
            agentstream_session_set_bin(session, fake) != AGENTSTREAM_STATUS_OK ||
            agentstream_session_set_env(session, "AGENTSTREAM_FAKE_TRACE", run_traces[k].path) != AGENTSTREAM_STATUS_OK)
            abort();
        if (pull == 0 && agentstream_session_on(session, "content", on_event, s, NULL, NULL) != AGENTSTREAM_STATUS_OK) abort();
        size_t before = s->events;
        if (agentstream_session_start_run(session, "bench", pull == 1 ? NO_MERGE_PULL : NO_MERGE, NULL, NULL, NULL, &run) !=
            AGENTSTREAM_STATUS_OK)
            abort();
        if (pull == 1) {
            for (;;) {
                agentstream_next kind;
                char *json = NULL;
                size_t len = 0;
                if (agentstream_run_next_batch_json(run, 256, 0, -1, &kind, &json, &len) != AGENTSTREAM_STATUS_OK) abort();
                if (kind == AGENTSTREAM_NEXT_END) {
                    agentstream_string_free(json);
                    break;
                }
                s->events += count_substr(json, len, "\"channel\":\"content\"");
                s->bytes += len;
                agentstream_string_free(json);
            }
        }
        char *result = NULL;
        if (agentstream_run_wait(run, -1, &result, NULL) != AGENTSTREAM_STATUS_OK) abort();
        if (!strstr(result, "\"coalesced\":0")) fprintf(stderr, "warning: text was merged: %s\n", result);
        agentstream_string_free(result);
        agentstream_run_free(run);
        agentstream_session_free(session);
        events += s->events - before;
    }
    return events;
}

static size_t events_per_round;

static double run_mode_runs(const char *name, const char *fake, int pull, size_t run_bytes) {
    sink s = {0, 0, 0};
    double best = 1e300;
    size_t events = 0;
    for (int round = 0; round < 5; round++) {
        double t0 = now();
        events = run_round(fake, pull, &s);
        double t = now() - t0;
        if (t < best) best = t;
    }
    if (pull == 2) events = events_per_round; /* nothing was delivered: the same events were decoded */
    else events_per_round = events;
    printf("%-12s %10.0f event/s  %8.1f MB/s input  %7.0f ns/event  (%zu events per round, best of 5: %.3f s)\n", name,
           (double)events / best, (double)run_bytes / best / 1e6, best * 1e9 / (double)events, events, best);
    return (double)events / best;
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
    if (argc > 3) {
        int reps = argc > 4 ? atoi(argv[4]) : 300;
        char dir[] = "/tmp/agentstream-bench-XXXXXX";
        if (!mkdtemp(dir) || !write_run_traces(dir, reps)) {
            fprintf(stderr, "cannot write the run traces\n");
            return 1;
        }
        size_t run_bytes = 0;
        for (size_t k = 0; k < nrun_traces; k++) run_bytes += run_traces[k].bytes;
        printf("through real runs of the fake harness: %zu runs per round (one per agent), %d repetitions, %zu bytes of stdout\n",
               nrun_traces, reps, run_bytes);
        double cb_events_per_s = (double)events * (double)(mb_cb * 1e6 / (double)corpus_bytes);
        double r_cb = run_mode_runs("run-callback", argv[3], 0, run_bytes);
        double r_pull = run_mode_runs("run-pull", argv[3], 1, run_bytes);
        double r_await = run_mode_runs("run-await", argv[3], 2, run_bytes);
        printf("ratio to the decoder callback (events/s): run-callback %.2fx, run-pull %.2fx, run-await (no delivery) %.2fx\n",
               r_cb / cb_events_per_s, r_pull / cb_events_per_s, r_await / cb_events_per_s);
        for (size_t k = 0; k < nrun_traces; k++) {
            char file[4200];
            snprintf(file, sizeof file, "%s.input.jsonl", run_traces[k].path);
            unlink(file);
        }
        rmdir(dir);
    }
    for (size_t i = 0; i < ntraces; i++) free(traces[i].data);
    return 0;
}
