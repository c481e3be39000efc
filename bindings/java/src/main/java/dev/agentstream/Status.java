package dev.agentstream;

import dev.agentstream.generated.Agent;
import dev.agentstream.generated.AgentState;
import dev.agentstream.generated.RunState;
import dev.agentstream.generated.SandboxState;
import dev.agentstream.generated.WireName;

/**
 * What {@link Evolve#status()} reports (the seed's {@code status()}).
 *
 * @param agent the harness
 * @param sandbox the local environment's state ({@code ready}, {@code running}, {@code paused},
 *     …)
 * @param agentState the agent's state ({@code idle}, {@code running}, {@code interrupted}, {@code
 *     error})
 * @param hasRun whether a run was ever started from this {@link Evolve}
 * @param activeRunId the active run's id while one runs (null otherwise)
 * @param sessionId the harness session the next run continues (null: a new one)
 * @param lastStatus how the last run ended (null before any did)
 */
public record Status(
        @WireName(value = "agent", required = true) Agent agent,
        @WireName(value = "sandbox", required = true) SandboxState sandbox,
        @WireName(value = "agent_state", required = true) AgentState agentState,
        @WireName(value = "has_run", required = true) boolean hasRun,
        @WireName("active_run_id") String activeRunId,
        @WireName("session_id") String sessionId,
        @WireName("last_status") RunState lastStatus) {}
