package dev.agentstream;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.Channel;
import dev.agentstream.generated.LifecycleEvent;
import dev.agentstream.generated.OutputEvent;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One delivery of a run, in order: an item of one of the four channels ({@link Content}, {@link
 * Lifecycle}, {@link Text} for stdout and stderr), numbered by one gapless {@link #sequence()}
 * from 0, or a hook event ({@link Hook}) derived from the item before it.
 *
 * <p>Handlers registered with {@link Evolve#on} get the items of their channel; a {@link RunStream}
 * hands over every delivery. Read the payload with the accessor of the channel ({@code
 * event.content()} in a {@code "content"} handler, {@code event.text()} in a {@code "stdout"}
 * one), or switch over the kinds:
 *
 * <pre>{@code
 * switch (event) {
 *     case Event.Content c -> show(c.content().update());
 *     case Event.Lifecycle l -> status(l.lifecycle().reason());
 *     case Event.Text t -> log(t.channel(), t.text());
 *     case Event.Hook h -> audit(h.hook().type());
 * }
 * }</pre>
 */
public sealed interface Event permits Event.Content, Event.Lifecycle, Event.Text, Event.Hook {
    /**
     * The run it belongs to ({@code run_…}).
     *
     * @return the run id
     */
    String runId();

    /**
     * The item's position in the run (one gapless sequence from 0 across the four channels); for
     * a hook, the sequence of the item it was derived from.
     *
     * @return the sequence
     */
    long sequence();

    /**
     * The content event of a {@code content} item.
     *
     * @return the event
     * @throws IllegalStateException for another kind of delivery
     */
    default OutputEvent content() {
        throw new IllegalStateException("a " + describe(this) + " delivery has no content(): only \"content\" items do");
    }

    /**
     * The lifecycle event of a {@code lifecycle} item.
     *
     * @return the event
     * @throws IllegalStateException for another kind of delivery
     */
    default LifecycleEvent lifecycle() {
        throw new IllegalStateException("a " + describe(this) + " delivery has no lifecycle(): only \"lifecycle\" items do");
    }

    /**
     * The raw text of a {@code stdout} or {@code stderr} item (one stdout line with its newline).
     *
     * @return the text
     * @throws IllegalStateException for another kind of delivery
     */
    default String text() {
        throw new IllegalStateException("a " + describe(this) + " delivery has no text(): only \"stdout\" and \"stderr\" items do");
    }

    /**
     * The hook event of a hook delivery.
     *
     * @return the hook event
     * @throws IllegalStateException for an item
     */
    default AgentEvent hook() {
        throw new IllegalStateException("a " + describe(this) + " delivery has no hook(): only hook deliveries do");
    }

    /**
     * The delivery in its wire form: an envelope {@code {"runId", "sequence", "channel", "event",
     * "coalesced"?}} for an item, the hook event for a hook ({@link Json#write} writes it).
     *
     * @return a map or record {@link Json#write} writes as the core would
     */
    default Object toWire() {
        if (this instanceof Hook h) {
            return h.hook();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("runId", runId());
        m.put("sequence", sequence());
        switch (this) {
            case Content c -> {
                m.put("channel", "content");
                m.put("event", c.content());
                if (c.coalesced() > 0) {
                    m.put("coalesced", c.coalesced());
                }
            }
            case Lifecycle l -> {
                m.put("channel", "lifecycle");
                m.put("event", l.lifecycle());
            }
            case Text t -> {
                m.put("channel", t.channel().wire());
                m.put("event", t.text());
                if (t.coalesced() > 0) {
                    m.put("coalesced", t.coalesced());
                }
            }
            case Hook h -> throw new AssertionError(h);
        }
        return m;
    }

    private static String describe(Event e) {
        return switch (e) {
            case Content c -> "content";
            case Lifecycle l -> "lifecycle";
            case Text t -> t.channel().wire();
            case Hook h -> "hook";
        };
    }

    /**
     * A {@code content} item: one decoded event of the harness's output.
     *
     * @param runId the run
     * @param sequence its position in the run
     * @param content the event (the seed's {@code OutputEvent})
     * @param coalesced how many later text deltas were merged into this one under backpressure
     *     (0: none)
     */
    record Content(String runId, long sequence, OutputEvent content, long coalesced) implements Event {}

    /**
     * A {@code lifecycle} item: a sandbox/agent state transition.
     *
     * @param runId the run
     * @param sequence its position in the run
     * @param lifecycle the transition (the seed's {@code LifecycleEvent})
     */
    record Lifecycle(String runId, long sequence, LifecycleEvent lifecycle) implements Event {}

    /**
     * A {@code stdout} or {@code stderr} item: the harness's raw output.
     *
     * @param runId the run
     * @param sequence its position in the run
     * @param channel {@link Channel#STDOUT} or {@link Channel#STDERR}
     * @param text the text (one stdout line with its newline)
     * @param coalesced how many later pieces were merged into this one under backpressure (0:
     *     none)
     */
    record Text(String runId, long sequence, Channel channel, String text, long coalesced) implements Event {}

    /**
     * A hook event (runs with hooks: {@link RunOptions.Builder#onEvent} or {@link
     * RunOptions.Builder#hooks}).
     *
     * @param hook the hook event ({@code type()}, {@code runId()}, {@code agentId()}, {@code
     *     timestamp()}, {@code status()}, {@code details()})
     */
    record Hook(AgentEvent hook) implements Event {
        @Override
        public String runId() {
            return hook.runId();
        }

        @Override
        public long sequence() {
            return hook.sequence();
        }
    }
}
