package dev.agentstream;

import dev.agentstream.generated.AgentEvent;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * One run: a harness run of a {@linkplain Builder#prompt prompt}, or a {@linkplain Builder#command
 * command} run instead, and how to run it. Build it with {@link #builder()}; what is left unset
 * takes the core's default. The core validates the options when the run starts; its messages name
 * the fields as this builder does ({@code timeoutMs} for {@link Builder#timeout}, {@code
 * limits.stallMs} for {@link Builder#stall}, …).
 *
 * <pre>{@code
 * RunOptions options = RunOptions.builder()
 *         .prompt("List the files")
 *         .timeout(Duration.ofMinutes(10))
 *         .onEvent(hook -> log.info(hook.type() + " " + hook.details()))
 *         .build();
 * }</pre>
 */
public final class RunOptions {
    private final Map<String, Object> request;
    private final Consumer<? super AgentEvent> onEvent;

    private RunOptions(Map<String, Object> request, Consumer<? super AgentEvent> onEvent) {
        this.request = request;
        this.onEvent = onEvent;
    }

    /**
     * A new builder.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Options for a harness run of {@code prompt} with every default.
     *
     * @param prompt the task
     * @return the options
     */
    public static RunOptions prompt(String prompt) {
        return builder().prompt(prompt).build();
    }

    /**
     * The hook handler, if any.
     *
     * @return the handler or null
     */
    public Consumer<? super AgentEvent> onEvent() {
        return onEvent;
    }

    /** The core's run request (JSON) with {@code read} set; null keeps the default. */
    String requestJson(String read) {
        Map<String, Object> r = new LinkedHashMap<>(request);
        if (onEvent != null) {
            r.put("hooks", true);
        }
        if (read != null) {
            r.put("read", read);
        }
        return Json.write(r);
    }

    /** The options as JSON, environment values masked (they are often credentials, and a string form ends up in logs). */
    @Override
    public String toString() {
        Map<String, Object> shown = new LinkedHashMap<>(request);
        if (shown.get("env") instanceof Map<?, ?> env) {
            Map<Object, Object> masked = new LinkedHashMap<>();
            env.keySet().forEach(name -> masked.put(name, "[redacted]"));
            shown.put("env", masked);
        }
        return "RunOptions" + Json.write(shown) + (onEvent != null ? " + onEvent" : "");
    }

    /** Builds {@link RunOptions}. Every setter returns the builder. */
    public static final class Builder {
        private final Map<String, Object> request = new LinkedHashMap<>();
        private final Map<String, Object> limits = new LinkedHashMap<>();
        private Consumer<? super AgentEvent> onEvent;

        private Builder() {}

        private Builder put(String key, Object value) {
            if (value == null) {
                request.remove(key);
            } else {
                request.put(key, value);
            }
            return this;
        }

        /**
         * The task for the agent (a harness run). Give a prompt or a command, not both.
         *
         * @param prompt the prompt
         * @return this builder
         */
        public Builder prompt(String prompt) {
            return put("prompt", prompt);
        }

        /**
         * Runs a command instead of the harness (the seed's {@code execute_command}): the program
         * and its arguments, not a shell string (use {@code "sh", "-c", "…"} for one). It streams
         * like a run (stdout, stderr, lifecycle {@code command_start} … {@code
         * command_complete}); no content is decoded.
         *
         * @param argv the program and its arguments
         * @return this builder
         */
        public Builder command(List<String> argv) {
            return put("command", argv == null ? null : List.copyOf(argv));
        }

        /**
         * See {@link #command(List)}.
         *
         * @param argv the program and its arguments
         * @return this builder
         */
        public Builder command(String... argv) {
            return command(List.of(argv));
        }

        /**
         * This run's model, over the configuration's.
         *
         * @param model the model name
         * @return this builder
         */
        public Builder model(String model) {
            return put("model", model);
        }

        /**
         * This run's working directory, over the configuration's.
         *
         * @param cwd the directory
         * @return this builder
         */
        public Builder cwd(Path cwd) {
            return put("cwd", cwd == null ? null : cwd.toString());
        }

        /**
         * Extra environment variables of this run, over the configuration's.
         *
         * @param env names and values
         * @return this builder
         */
        public Builder env(Map<String, String> env) {
            return put("env", env == null ? null : new LinkedHashMap<>(env));
        }

        /**
         * One extra environment variable of this run.
         *
         * @param name the name
         * @param value the value
         * @return this builder
         */
        @SuppressWarnings("unchecked")
        public Builder env(String name, String value) {
            Map<String, Object> env = (Map<String, Object>) request.computeIfAbsent("env", k -> new LinkedHashMap<>());
            env.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /**
         * Stops the run after this long: it ends {@code run_interrupted}, hook {@code
         * run.stopped}. Whole milliseconds, rounded up; null: no time limit.
         *
         * @param timeout the time limit
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            return put("timeout_ms", millis("timeout", timeout));
        }

        /**
         * A background run (terminal lifecycle reasons {@code run_background_*}).
         *
         * @param background whether it is one
         * @return this builder
         */
        public Builder background(boolean background) {
            return put("background", background ? Boolean.TRUE : null);
        }

        /**
         * Hook events for a {@link RunStream} ({@link Event.Hook} deliveries); implied by {@link
         * #onEvent}.
         *
         * @param hooks whether to derive them
         * @return this builder
         */
        public Builder hooks(boolean hooks) {
            return put("hooks", hooks ? Boolean.TRUE : null);
        }

        /**
         * Whether secret shapes in tool-call inputs are masked (default true; answer text is
         * never altered).
         *
         * @param redact false to turn masking off
         * @return this builder
         */
        public Builder redact(boolean redact) {
            return put("redact", redact ? null : Boolean.FALSE);
        }

        /**
         * Continues this harness session instead of the {@link Evolve}'s current conversation
         * (harness runs only).
         *
         * @param sessionId a session id a run reported
         * @return this builder
         */
        public Builder resume(String sessionId) {
            return put("resume", sessionId);
        }

        /**
         * Tools whose calls in flight when the run is cancelled are safe to retry (their hook
         * {@code tool.failed} says {@code retryable}).
         *
         * @param tools the tool names
         * @return this builder
         */
        public Builder idempotentTools(List<String> tools) {
            return put("idempotent_tools", tools == null ? null : List.copyOf(tools));
        }

        /**
         * The grace period between SIGTERM and SIGKILL when the run is cancelled (default 5 s).
         *
         * @param grace the grace period
         * @return this builder
         */
        public Builder killGrace(Duration grace) {
            return put("kill_grace_ms", millis("killGrace", grace));
        }

        private Builder limit(String key, Object value) {
            if (value == null) {
                limits.remove(key);
            } else {
                limits.put(key, value);
            }
            return this;
        }

        /**
         * How many unread items may wait for the reader before text deltas are merged (default
         * 256).
         *
         * @param highWater the count
         * @return this builder
         */
        public Builder highWater(long highWater) {
            return limit("high_water", nonNegative("highWater", highWater));
        }

        /**
         * How many unread bytes may wait for the reader before text deltas are merged (default 8
         * MiB).
         *
         * @param bytes the byte count
         * @return this builder
         */
        public Builder byteBudget(long bytes) {
            return limit("byte_budget", nonNegative("byteBudget", bytes));
        }

        /**
         * How long a reader may leave items unread before the run is cancelled (default 30 s).
         *
         * @param stall the time
         * @return this builder
         */
        public Builder stall(Duration stall) {
            return limit("stall_ms", millis("stall", stall));
        }

        /**
         * The longest output line decoded; a longer one is skipped and reported (default 16 MiB).
         *
         * @param bytes the byte count
         * @return this builder
         */
        public Builder maxLineBytes(long bytes) {
            return limit("max_line_bytes", nonNegative("maxLineBytes", bytes));
        }

        /**
         * The hook handler (the seed's {@code onEvent}): called with each hook event ({@code
         * run.started} or {@code run.resumed}, {@code tool.started}, …, exactly one terminal:
         * {@code run.completed} / {@code run.failed} / {@code run.cancelled} / {@code
         * run.stopped}) in order, after the item it was derived from, on the run's delivery
         * thread. A handler that throws is counted and reported like any handler (see {@link
         * Evolve#on}).
         *
         * @param onEvent the handler, or null for none
         * @return this builder
         */
        public Builder onEvent(Consumer<? super AgentEvent> onEvent) {
            this.onEvent = onEvent;
            return this;
        }

        /**
         * The options.
         *
         * @return the options
         */
        public RunOptions build() {
            Map<String, Object> r = new LinkedHashMap<>(request);
            // The builder's env map goes on growing with env(name, value): the options keep a copy.
            if (r.get("env") instanceof Map<?, ?> env) {
                r.put("env", new LinkedHashMap<>(env));
            }
            if (!limits.isEmpty()) {
                r.put("limits", new LinkedHashMap<>(limits));
            }
            return new RunOptions(r, onEvent);
        }
    }

    /** Whole milliseconds, rounded up so a positive duration never becomes 0. */
    private static Long millis(String field, Duration d) {
        if (d == null) {
            return null;
        }
        if (d.isNegative()) {
            throw Errors.invalidArgument(field + " must not be negative, got " + d);
        }
        try {
            long ms = d.toMillis();
            return d.minusMillis(ms).isPositive() ? Math.addExact(ms, 1) : ms;
        } catch (ArithmeticException e) {
            throw Errors.invalidArgument(field + " is too long: " + d);
        }
    }

    private static Long nonNegative(String field, long n) {
        if (n < 0) {
            throw Errors.invalidArgument(field + " must not be negative, got " + n);
        }
        return n;
    }
}
