/*
 * The C side of the C# benchmark: the C callback the C# handler is compared with, the same one
 * bindings/c/bench/bench.c measures (it counts the event and hashes every byte of its JSON), built
 * as a small shared library so the C# benchmark can hand it to libagentstream in the same process,
 * on the same corpus, in alternating rounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint64_t events;
    uint64_t bytes;
    unsigned checksum;
} bench_sink;

static void on_event(void *user_data, const char *json, size_t len) {
    bench_sink *s = (bench_sink *)user_data;
    s->events++;
    s->bytes += len;
    unsigned h = s->checksum;
    for (size_t i = 0; i < len; i++) h = h * 31u + (unsigned char)json[i];
    s->checksum = h;
}

/* The callback, as a function pointer for agentstream_decoder_feed / agentstream_session_on. */
void *bench_sink_callback(void) { return (void *)on_event; }

bench_sink *bench_sink_new(void) { return (bench_sink *)calloc(1, sizeof(bench_sink)); }

uint64_t bench_sink_events(const bench_sink *s) { return s->events; }

unsigned bench_sink_checksum(const bench_sink *s) { return s->checksum; }

void bench_sink_free(bench_sink *s) { free(s); }
