/* The harness of the latency benchmark: a stand-in for `claude` that prints stream-json lines at a
 * steady rate, each carrying the CLOCK_MONOTONIC time (ns) at which it was written.
 *
 * It is given to a binding as the agent's `bin` (the runner's argv for claude is ignored) and is
 * configured by the environment, which the runner passes on:
 *   AGENTSTREAM_LATENCY_RATE     lines per second (default 1000)
 *   AGENTSTREAM_LATENCY_LINES    stamped lines to print (default 3000)
 *   AGENTSTREAM_LATENCY_REPORT   if set, a file to write "lines late_lines seconds" to at the end
 *   AGENTSTREAM_LATENCY_STAMPS   if set, a file to write "<line> <ns>" to at the end, one row per
 *                                line: when each was written (benches/latency/trace.py matches them
 *                                against a scheduler trace)
 *
 * Line i (from 0) is an assistant message whose only text is "@@<i>:<ns>;" (one agent_message_chunk
 * each; if the core merges chunks under backpressure the handler sees several tokens in one text,
 * each still with its own stamp). The time is read immediately before the line's single write(2),
 * so a measured latency is write -> handler and nothing of the pacing. Lines are due at
 * start + i / rate (absolute deadlines, clock_nanosleep with 1 ns timer slack); if the emitter
 * falls more than one period behind (a busy machine) it moves its schedule instead of bursting,
 * and counts the line as late. The run ends with claude's result record, so it completes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n <= 0) {
        fprintf(stderr, "latency emitter: %s must be a positive integer, not \"%s\"\n", name, v);
        exit(2);
    }
    return n;
}

static int write_all(const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void sleep_until(uint64_t t) {
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

int main(void) {
    long rate = env_long("AGENTSTREAM_LATENCY_RATE", 1000);
    long lines = env_long("AGENTSTREAM_LATENCY_LINES", 3000);
    const char *report = getenv("AGENTSTREAM_LATENCY_REPORT");
    const char *stamps_path = getenv("AGENTSTREAM_LATENCY_STAMPS");
    uint64_t *stamps = NULL;
    if (stamps_path && *stamps_path && !(stamps = calloc((size_t)lines, sizeof *stamps))) {
        fprintf(stderr, "latency emitter: no memory for %ld stamps\n", lines);
        return 1;
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

    static const char init[] =
        "{\"type\":\"system\",\"subtype\":\"init\",\"cwd\":\"/\",\"session_id\":\"latency\",\"tools\":[],"
        "\"model\":\"latency\"}\n";
    if (write_all(init, sizeof init - 1)) return 141;

    uint64_t period = 1000000000u / (uint64_t)rate;
    uint64_t start = now_ns() + 1000000u, due = start;
    long late = 0;
    char buf[512];
    for (long i = 0; i < lines; i++, due += period) {
        uint64_t t = now_ns();
        if (t < due) {
            sleep_until(due);
        } else if (t > due + period) {
            late++;
            due = t; /* behind: move the schedule rather than burst to catch up */
        }
        uint64_t stamp = now_ns();
        if (stamps) stamps[i] = stamp;
        int len = snprintf(buf, sizeof buf,
                           "{\"type\":\"assistant\",\"message\":{\"id\":\"msg_%ld\",\"type\":\"message\",\"role\":"
                           "\"assistant\",\"model\":\"latency\",\"content\":[{\"type\":\"text\",\"text\":\"@@%ld:%llu;\"}],"
                           "\"stop_reason\":null},\"parent_tool_use_id\":null,\"session_id\":\"latency\"}\n",
                           i, i, (unsigned long long)stamp);
        if (write_all(buf, (size_t)len)) return 141; /* the reader went away */
    }
    double seconds = (double)(now_ns() - start) / 1e9;
    static const char result[] =
        "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"duration_ms\":1,\"num_turns\":1,"
        "\"result\":\"done\",\"session_id\":\"latency\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}\n";
    if (write_all(result, sizeof result - 1)) return 141;
    if (stamps) {
        FILE *f = fopen(stamps_path, "w");
        if (!f) {
            fprintf(stderr, "latency emitter: cannot write %s: %s\n", stamps_path, strerror(errno));
            return 1;
        }
        for (long i = 0; i < lines; i++) fprintf(f, "%ld %llu\n", i, (unsigned long long)stamps[i]);
        fclose(f);
        free(stamps);
    }
    if (report) {
        FILE *f = fopen(report, "w");
        if (f) {
            fprintf(f, "%ld %ld %.6f\n", lines, late, seconds);
            fclose(f);
        }
    }
    return 0;
}
