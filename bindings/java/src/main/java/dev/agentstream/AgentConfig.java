package dev.agentstream;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The agent an {@link Evolve} runs (the seed's {@code AgentConfig}). Start from {@link
 * #of(String)} and change what you need with the {@code with…} methods, each returning a new
 * config:
 *
 * <pre>{@code
 * AgentConfig config = AgentConfig.of("codex").withModel("gpt-5").withEnv("CODEX_HOME", "/tmp/codex");
 * }</pre>
 *
 * The core validates it when the {@link Evolve} is created: an unknown agent is an {@link
 * InvalidArgumentException} listing the seven.
 *
 * @param type the agent: {@code claude}, {@code codex}, {@code gemini}, {@code qwen}, {@code
 *     kimi}, {@code opencode} or {@code droid}
 * @param agentId names the agent in hook events (null: the type)
 * @param bin the harness executable, a path or a command on PATH (null: the harness's usual
 *     command)
 * @param model the model to ask the harness for (null: the harness's default)
 * @param extraArgs added to the harness's command line, after its streaming flags
 * @param cwd the harness's working directory (null: the current one)
 * @param env added to (or overriding) the inherited environment of the harness
 */
public record AgentConfig(
        String type, String agentId, String bin, String model, List<String> extraArgs, Path cwd, Map<String, String> env) {

    /**
     * A config; the lists and maps are copied.
     *
     * @param type the agent
     * @param agentId the hook events' agent id, or null
     * @param bin the executable, or null
     * @param model the model, or null
     * @param extraArgs extra arguments (null: none)
     * @param cwd the working directory, or null
     * @param env extra environment (null: none)
     */
    public AgentConfig {
        Objects.requireNonNull(type, "type");
        extraArgs = extraArgs == null ? List.of() : List.copyOf(extraArgs);
        env = env == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(env));
    }

    /**
     * The config of an agent with every default.
     *
     * @param type {@code claude}, {@code codex}, {@code gemini}, {@code qwen}, {@code kimi}, {@code
     *     opencode} or {@code droid}
     * @return the config
     */
    public static AgentConfig of(String type) {
        return new AgentConfig(type, null, null, null, null, null, null);
    }

    /**
     * This config with another hook agent id.
     *
     * @param agentId the id
     * @return the new config
     */
    public AgentConfig withAgentId(String agentId) {
        return new AgentConfig(type, agentId, bin, model, extraArgs, cwd, env);
    }

    /**
     * This config with another harness executable.
     *
     * @param bin a path, or a command on PATH
     * @return the new config
     */
    public AgentConfig withBin(String bin) {
        return new AgentConfig(type, agentId, bin, model, extraArgs, cwd, env);
    }

    /**
     * This config with another model.
     *
     * @param model the model
     * @return the new config
     */
    public AgentConfig withModel(String model) {
        return new AgentConfig(type, agentId, bin, model, extraArgs, cwd, env);
    }

    /**
     * This config with these extra harness arguments (replacing any).
     *
     * @param args the arguments
     * @return the new config
     */
    public AgentConfig withExtraArgs(String... args) {
        return new AgentConfig(type, agentId, bin, model, List.of(args), cwd, env);
    }

    /**
     * This config with another working directory.
     *
     * @param cwd the directory
     * @return the new config
     */
    public AgentConfig withCwd(Path cwd) {
        return new AgentConfig(type, agentId, bin, model, extraArgs, cwd, env);
    }

    /**
     * This config with one more environment variable.
     *
     * @param name the name
     * @param value the value
     * @return the new config
     */
    public AgentConfig withEnv(String name, String value) {
        Map<String, String> e = new LinkedHashMap<>(env);
        e.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
        return new AgentConfig(type, agentId, bin, model, extraArgs, cwd, e);
    }

    /** The core's JSON form. */
    String toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        if (agentId != null) {
            m.put("agent_id", agentId);
        }
        if (bin != null) {
            m.put("bin", bin);
        }
        if (model != null) {
            m.put("model", model);
        }
        if (!extraArgs.isEmpty()) {
            m.put("extra_args", new ArrayList<>(extraArgs));
        }
        if (cwd != null) {
            m.put("cwd", cwd.toString());
        }
        if (!env.isEmpty()) {
            m.put("env", env);
        }
        return Json.write(m);
    }
}
