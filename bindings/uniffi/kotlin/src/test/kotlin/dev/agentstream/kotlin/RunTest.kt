package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.AgentMessageChunk
import dev.agentstream.kotlin.types.ContentEnvelope
import dev.agentstream.kotlin.types.Envelope
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.LifecycleEnvelope
import dev.agentstream.kotlin.types.LifecycleEvent
import dev.agentstream.kotlin.types.LifecycleReason
import dev.agentstream.kotlin.types.OutputEvent
import dev.agentstream.kotlin.types.RunCompletedEvent
import dev.agentstream.kotlin.types.RunEvent
import dev.agentstream.kotlin.types.RunStartedEvent
import dev.agentstream.kotlin.types.RunState
import dev.agentstream.kotlin.types.CancelKind
import dev.agentstream.kotlin.types.ErrorKind
import dev.agentstream.kotlin.types.StdoutEnvelope
import dev.agentstream.kotlin.types.ToolStartedEvent
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import java.util.Collections
import java.util.UUID

private val TERMINALS = setOf(LifecycleReason.RUN_COMPLETE, LifecycleReason.RUN_FAILED, LifecycleReason.RUN_INTERRUPTED)

/** Runs of the fake harness (a real process replaying a golden trace) through the Kotlin API. */
@Timeout(60)
class RunTest {
    private val bash = "claude/s2-bash"

    /** A run that prints its trace and then hangs until it is killed. */
    private fun hanging(env: Map<String, String> = emptyMap()) =
        fakeConfig("claude", bash, mapOf("AGENTSTREAM_FAKE_HANG" to "1") + env)

    private fun uniquePrompt() = "agentstream-kotlin-test-${UUID.randomUUID()}"

    @Test
    fun `listeners see the lifecycle in order, exactly one terminal, then the hooks`() = runBlocking {
        val log = Collections.synchronizedList(mutableListOf<String>())
        val lifecycle = mutableListOf<LifecycleEvent>()
        val hooks = mutableListOf<HookEvent>()
        val result = Evolve(fakeConfig("claude", bash)).use { evolve ->
            evolve.onLifecycle { lifecycle += it; log += "lifecycle" }
            evolve.onContent { log += "content" }
            evolve.onStdout { log += "stdout" }
            evolve.run(RunOptions(prompt = "list the files")) { hooks += it; log += "hook" }
        }
        assertEquals(RunState.COMPLETED, result.state)
        assertEquals(listOf(LifecycleReason.SANDBOX_READY, LifecycleReason.RUN_START), lifecycle.take(2).map { it.reason })
        assertEquals(LifecycleReason.RUN_COMPLETE, lifecycle.last().reason)
        assertEquals(1, lifecycle.count { it.reason in TERMINALS }, "exactly one terminal")
        // Nothing but hook events after the terminal lifecycle event.
        val last = log.lastIndexOf("lifecycle")
        assertTrue(log.subList(last + 1, log.size).all { it == "hook" }, "$log")
        assertTrue(hooks.first() is RunStartedEvent, "${hooks.first()}")
        assertTrue(hooks.last() is RunCompletedEvent, "${hooks.last()}")
        assertTrue(hooks.any { it is ToolStartedEvent })
        assertEquals("66c0abf3-0bc5-46a7-8e73-4fef192280ea", result.sessionId)
        assertEquals(0L, result.handlerErrors)
    }

    @Test
    fun `listeners of a channel are called in registration order, and closing one stops it`() = runBlocking {
        val calls = mutableListOf<String>()
        Evolve(fakeConfig("claude", bash)).use { evolve ->
            evolve.onContent { calls += "first" }
            val second = evolve.onContent { calls += "second" }
            evolve.run("x")
            assertTrue(calls.size >= 6)
            assertEquals(List(calls.size / 2) { listOf("first", "second") }.flatten(), calls)
            second.close()
            calls.clear()
            evolve.run("y")
            assertTrue(calls.isNotEmpty() && calls.all { it == "first" }, "$calls")
            assertEquals(1, evolve.off("content"))
            assertThrows(AgentstreamException::class.java) { evolve.on("message") {} }.let {
                assertEquals(ErrorKind.INVALID_ARGUMENT, it.kind)
                assertTrue(it.message!!.contains("content") && it.message!!.contains("stderr"), it.message)
            }
        }
    }

    @Test
    fun `stderr listeners get the harness's stderr as printed, and configure changes the next run`() = runBlocking {
        Evolve(fakeConfig("codex", "codex/s1-text")).use { evolve ->
            val stderr = StringBuilder()
            var toolCalls = 0
            evolve.onStderr { synchronized(stderr) { stderr.append(it) } }
            evolve.onContent { if (it.update is dev.agentstream.kotlin.types.ToolCall) toolCalls++ }
            assertEquals(RunState.COMPLETED, evolve.run("x").state)
            val expected = java.io.File(Repo.golden, "codex/s1-text.stderr.txt").readText()
            assertEquals(expected, synchronized(stderr) { stderr.toString() }, "codex prints its warnings on stderr")
            assertEquals(0, toolCalls, "s1-text calls no tool")
            // Another trace of the same harness: the next run plays it.
            evolve.configure(fakeConfig("codex", "codex/s2-bash"))
            assertEquals(RunState.COMPLETED, evolve.run("y").state)
            assertTrue(toolCalls > 0, "the configured trace's tool call")
        }
    }

    @Test
    fun `a stream delivers every channel in one gapless sequence and ends after the terminal`() = runBlocking {
        val events: List<RunEvent> = Evolve(fakeConfig("claude", bash)).use { it.stream("list the files").toList() }
        val envelopes = events.filterIsInstance<Envelope>()
        assertEquals(envelopes.indices.map { it.toLong() }, envelopes.map { it.sequence }, "gapless from 0")
        val terminals = envelopes.filter { it is LifecycleEnvelope && it.event.reason in TERMINALS }
        assertEquals(1, terminals.size)
        assertTrue(envelopes.last() === terminals.single(), "the terminal is the last envelope")
        assertTrue(events.last() is RunCompletedEvent, "its hook events follow it: ${events.last()}")
        assertTrue(envelopes.any { it is StdoutEnvelope })
        val text = envelopes.filterIsInstance<ContentEnvelope>().map { it.event.update }
            .filterIsInstance<AgentMessageChunk>()
        assertTrue(text.isNotEmpty())
    }

    @Test
    fun `cancelling the coroutine that runs cancels the run and ends its process`() = runBlocking {
        val prompt = uniquePrompt()
        val evolve = Evolve(hanging())
        evolve.use {
            val started = CompletableDeferred<Unit>()
            evolve.onContent { started.complete(Unit) }
            val job = launch(Dispatchers.Default) { evolve.run(prompt) }
            withTimeout(20_000) { started.await() }
            assertTrue(processesWith(prompt).isNotEmpty(), "the harness runs")
            job.cancelAndJoin()
            assertTrue(job.isCancelled)
            eventually(what = "the harness process ends") { processesWith(prompt).isEmpty() }
            eventually(what = "the client sees the run end") { evolve.status().activeRunId == null }
            assertEquals("cancelled", evolve.status().lastStatus)
        }
    }

    @Test
    fun `cancelling a stream's collector cancels the run`() = runBlocking {
        val prompt = uniquePrompt()
        Evolve(hanging()).use { evolve ->
            val first = evolve.stream(RunOptions(prompt = prompt)).take(3).toList()
            assertEquals(3, first.size)
            eventually(what = "the harness process ends") { processesWith(prompt).isEmpty() }
            eventually(what = "the client sees the run end") { evolve.status().activeRunId == null }
            assertEquals("cancelled", evolve.status().lastStatus)
        }
    }

    @Test
    fun `a throwing listener is counted, reported once with its stack, and the run goes on`() = runBlocking {
        val reported = mutableListOf<ListenerFailure>()
        var good = 0
        val result = Evolve(fakeConfig("claude", bash)).use { evolve ->
            evolve.onListenerFailure = { reported += it }
            evolve.onContent { throw IllegalStateException("listener boom") }
            evolve.onContent { good++ }
            evolve.onStdout { error("stdout boom") }
            evolve.run(RunOptions(prompt = "x")) { throw AssertionError("hook boom") }
        }
        assertEquals(RunState.COMPLETED, result.state)
        assertTrue(good >= 3, "the other listener got every event: $good")
        assertTrue(result.handlerErrors >= good + 2, "every failure counted: ${result.handlerErrors}")
        assertEquals(setOf("content", "stdout", "on_event"), reported.map { it.channel }.toSet())
        assertEquals(3, reported.size, "one report per failing listener: $reported")
        val content = reported.single { it.channel == "content" }
        assertTrue(content.reason.contains("IllegalStateException: listener boom"), content.reason)
        assertTrue(content.reason.contains("RunTest"), "the stack trace: ${content.reason}")
        assertTrue(reported.single { it.channel == "on_event" }.reason.contains("AssertionError: hook boom"))
    }

    @Test
    fun `a failure reporter that throws does not stop the run`() = runBlocking {
        var reports = 0
        val result = Evolve(fakeConfig("claude", bash)).use { evolve ->
            evolve.onListenerFailure = { reports++; throw IllegalStateException("reporter boom") }
            evolve.onContent { error("listener boom") }
            evolve.run(RunOptions(prompt = "x"))
        }
        assertEquals(RunState.COMPLETED, result.state, "${result.error}")
        assertEquals(1, reports, "reported once")
        assertTrue(result.handlerErrors >= 3, "every failure counted: ${result.handlerErrors}")
    }

    @Test
    fun `an exception whose message cannot be read is counted and the run goes on`() = runBlocking {
        val reported = mutableListOf<ListenerFailure>()
        var calls = 0
        val result = Evolve(fakeConfig("claude", bash)).use { evolve ->
            evolve.onListenerFailure = { reported += it }
            evolve.onContent {
                calls++
                throw object : RuntimeException() {
                    override val message: String get() = throw IllegalStateException("no message for you")
                }
            }
            evolve.run(RunOptions(prompt = "x"))
        }
        // Before, describing the exception threw, and the run was cancelled.
        assertEquals(RunState.COMPLETED, result.state)
        assertEquals(calls.toLong(), result.handlerErrors)
        assertEquals(1, reported.size)
        assertTrue(reported[0].reason.contains("its message could not be read: java.lang.IllegalStateException"), reported[0].reason)
    }

    @Test
    fun `interrupt, kill, pause and resume control the active run`() = runBlocking {
        Evolve(hanging()).use { evolve ->
            assertFalse(evolve.interrupt())
            assertFalse(evolve.kill())
            assertEquals(ErrorKind.NOT_RUNNING, assertThrows(AgentstreamException::class.java) { evolve.pause() }.kind)
            val started = CompletableDeferred<Unit>()
            evolve.onContent { started.complete(Unit) }
            val run = async(Dispatchers.Default) { evolve.run("x") }
            withTimeout(20_000) { started.await() }
            evolve.pause()
            assertEquals("paused", evolve.status().sandbox)
            evolve.resume()
            assertTrue(evolve.interrupt("the client pressed stop"))
            val result = run.await()
            assertEquals(RunState.CANCELLED, result.state)
            assertEquals(CancelKind.CALLER, result.cancelKind)
            assertTrue(result.cancelReason!!.contains("the client pressed stop"), result.cancelReason)

            val again = async(Dispatchers.Default) { evolve.run("y") }
            eventually(what = "the second run starts") { evolve.status().activeRunId != null }
            assertTrue(evolve.kill())
            assertEquals(RunState.CANCELLED, again.await().state)
        }
    }

    @Test
    fun `a cancel token and a timeout end the run as cancelled`() = runBlocking {
        Evolve(hanging()).use { evolve ->
            val token = CancelToken()
            val started = CompletableDeferred<Unit>()
            evolve.onContent { started.complete(Unit) }
            val run = async(Dispatchers.Default) { evolve.run(RunOptions(prompt = "x"), cancel = token) }
            withTimeout(20_000) { started.await() }
            assertTrue(token.cancel("stop from elsewhere"))
            assertFalse(token.cancel("again"))
            val result = run.await()
            assertEquals(RunState.CANCELLED, result.state)
            assertEquals(CancelKind.CALLER, result.cancelKind)

            val timedOut = evolve.run(RunOptions(prompt = "y", timeoutMs = 300))
            assertEquals(RunState.CANCELLED, timedOut.state)
            assertEquals(CancelKind.TIMEOUT, timedOut.cancelKind)
        }
    }

    @Test
    fun `errors are typed, name the option and carry the table's number`() = runBlocking {
        Evolve(fakeConfig("claude", bash)).use { evolve ->
            val bad = assertThrows(AgentstreamException::class.java) {
                runBlocking { evolve.run(RunOptions(prompt = "x", timeoutMs = 0)) }
            }
            assertEquals(ErrorKind.INVALID_ARGUMENT, bad.kind)
            assertEquals(1004, bad.code)
            assertTrue(bad.message!!.startsWith("timeoutMs"), bad.message)
            val negative = assertThrows(AgentstreamException::class.java) {
                runBlocking { evolve.run(RunOptions(prompt = "x", limits = RunLimits(stallMs = -1))) }
            }
            assertTrue(negative.message!!.startsWith("limits.stallMs"), negative.message)
            val both = assertThrows(AgentstreamException::class.java) {
                runBlocking { evolve.run(RunOptions(prompt = "x", command = listOf("ls"))) }
            }
            assertTrue(both.message!!.contains("not both"), both.message)
        }
        val missing = AgentConfig(type = "codex", bin = "/nonexistent/agentstream-kotlin/codex")
        Evolve(missing).use { evolve ->
            val e = assertThrows(AgentstreamException::class.java) { runBlocking { evolve.run("x") } }
            assertEquals(ErrorKind.HARNESS_NOT_FOUND, e.kind)
            assertTrue(e is dev.agentstream.kotlin.ffi.AgentstreamException.HarnessNotFound)
        }
        val unknown = assertThrows(AgentstreamException::class.java) { Evolve(AgentConfig(type = "nope")) }
        assertEquals(ErrorKind.INVALID_ARGUMENT, unknown.kind)
        assertTrue(unknown.message!!.contains("opencode"), unknown.message)
    }

    @Test
    fun `one run at a time, and a listener may call back into the client`() = runBlocking {
        Evolve(hanging()).use { evolve ->
            val inside = mutableListOf<String>()
            val started = CompletableDeferred<Unit>()
            evolve.onContent {
                if (started.isCompleted) return@onContent
                inside += evolve.status().sandbox
                val e = runCatching { runBlocking { evolve.run("nested") } }.exceptionOrNull()
                inside += (e as? AgentstreamException)?.kind?.name ?: "no error"
                started.complete(Unit)
            }
            val run = async(Dispatchers.Default) { evolve.run("x") }
            withTimeout(20_000) { started.await() }
            assertEquals("running", inside[0])
            assertEquals("ALREADY_RUNNING", inside[1])
            val e = assertThrows(AgentstreamException::class.java) { runBlocking { evolve.run("second") } }
            assertEquals(ErrorKind.ALREADY_RUNNING, e.kind)
            evolve.kill()
            assertEquals(RunState.CANCELLED, run.await().state)
        }
    }

    @Test
    fun `a command run streams with the command lifecycle`() = runBlocking {
        val reasons = mutableListOf<LifecycleReason>()
        val lines = mutableListOf<String>()
        val result = Evolve(AgentConfig(type = "claude")).use { evolve ->
            evolve.onLifecycle { reasons += it.reason }
            evolve.onStdout { lines += it }
            evolve.run(RunOptions(command = listOf("sh", "-c", "echo one; echo two")))
        }
        assertEquals(RunState.COMPLETED, result.state)
        assertEquals(listOf(LifecycleReason.COMMAND_START, LifecycleReason.COMMAND_COMPLETE), reasons.drop(1))
        assertEquals(listOf("one\n", "two\n"), lines)
    }

    @Test
    fun `the harness runs under an exec'd supervisor, not a copy of the JVM`() = runBlocking {
        // The harness's parent is the supervisor: the native library run as a program (its
        // command line names it and the marker), not a fork whose start copies the JVM.
        val lines = mutableListOf<String>()
        val result = Evolve(AgentConfig(type = "claude")).use { evolve ->
            evolve.onStdout { lines += it }
            evolve.run(RunOptions(command = listOf("sh", "-c", "tr '\\0' ' ' < /proc/\$PPID/cmdline; echo; cat /proc/\$PPID/comm")))
        }
        assertEquals(RunState.COMPLETED, result.state)
        assertTrue(lines[0].contains("agentstream_uniffi") && lines[0].contains("--agentstream-supervisor-1"), lines[0])
        assertEquals("agentstream-sup\n", lines[1])
    }

    @Test
    fun `the session of the last run is continued, chosen or cleared`() = runBlocking {
        Evolve(fakeConfig("claude", bash)).use { evolve ->
            assertNull(evolve.sessionId)
            evolve.run("first")
            assertEquals("66c0abf3-0bc5-46a7-8e73-4fef192280ea", evolve.sessionId)
            val hooks = mutableListOf<HookEvent>()
            evolve.run(RunOptions(prompt = "second")) { hooks += it }
            assertEquals("run.resumed", hooks.first().type)
            evolve.sessionId = null
            assertNull(evolve.status().sessionId)
            val bad = assertThrows(AgentstreamException::class.java) { evolve.sessionId = "-x" }
            assertEquals(ErrorKind.INVALID_ARGUMENT, bad.kind)
        }
    }

    @Test
    fun `content listeners receive typed events`() = runBlocking {
        val events = mutableListOf<OutputEvent>()
        Evolve(fakeConfig("claude", bash)).use { evolve ->
            evolve.on("content") { env -> events += (env as ContentEnvelope).event }
            evolve.run("x")
        }
        assertNotNull(events.firstOrNull { it.update is AgentMessageChunk })
        assertTrue(events.all { it.sessionId == "66c0abf3-0bc5-46a7-8e73-4fef192280ea" })
    }

    @Test
    fun `a cancelled coroutine is a CancellationException, not an agentstream error`() {
        Evolve(hanging()).use { evolve ->
            assertThrows(CancellationException::class.java) {
                runBlocking { withTimeout(500) { evolve.run("x") } }
            }
            eventually(what = "the client sees the run end") { evolve.status().activeRunId == null }
        }
    }

    @Test
    fun `a cancelled coroutine stops a run whose listeners are slower than it`() {
        // A batch is always ready for a reader slower than the run: it never suspends, so only
        // a check between batches sees the cancellation (it read on to the run's end before).
        Evolve(AgentConfig(type = "claude")).use { evolve ->
            evolve.onStdout { Thread.sleep(1) }
            val started = System.nanoTime()
            assertThrows(CancellationException::class.java) {
                runBlocking {
                    withTimeout(1_000) { evolve.run(RunOptions(command = listOf("sh", "-c", "seq 1 100000000"))) }
                }
            }
            val seconds = (System.nanoTime() - started) / 1e9
            assertTrue(seconds < 15, "stopped ${"%.1f".format(seconds)} s after the start")
            eventually(what = "the client sees the run end") { evolve.status().activeRunId == null }
            assertEquals("cancelled", evolve.status().lastStatus)
        }
    }

    @Test
    fun `lines larger than the batch buffer arrive whole, in order`() = runBlocking {
        // 200,000 and 300,000 bytes: each batch is larger than the reader's first buffer (64 KiB).
        val sizes = listOf(200_000, 300_000)
        val script = sizes.joinToString("; ") { "head -c $it /dev/zero | tr '\\0' a; echo" }
        val lines = mutableListOf<String>()
        val result = Evolve(AgentConfig(type = "claude")).use { evolve ->
            evolve.onStdout { lines += it }
            evolve.run(RunOptions(command = listOf("sh", "-c", script)))
        }
        assertEquals(RunState.COMPLETED, result.state)
        assertEquals(sizes.map { "a".repeat(it) + "\n" }, lines)
    }

    @Test
    fun `listeners run on the coroutine's thread, never a library thread`() {
        val threads = Collections.synchronizedSet(mutableSetOf<String>())
        var caller = ""
        runBlocking {
            caller = Thread.currentThread().name
            Evolve(fakeConfig("claude", bash)).use { evolve ->
                evolve.onContent { threads += Thread.currentThread().name }
                evolve.onLifecycle { threads += Thread.currentThread().name }
                evolve.run(RunOptions(prompt = "x")) { threads += Thread.currentThread().name }
            }
        }
        assertEquals(setOf(caller), threads.toSet())
    }

    @Test
    fun `a stream calls the registered listeners, each item before it is emitted`() = runBlocking {
        val log = mutableListOf<String>()
        Evolve(fakeConfig("claude", bash)).use { evolve ->
            evolve.on("content") { log += "heard ${it.sequence}" }
            evolve.stream("x").collect { if (it is ContentEnvelope) log += "emitted ${it.sequence}" }
        }
        val heard = log.filter { it.startsWith("heard") }.map { it.substringAfter(' ') }
        assertEquals(log.filter { it.startsWith("emitted") }.map { it.substringAfter(' ') }, heard, "once each, in order")
        assertTrue(heard.isNotEmpty())
        assertTrue(heard.all { log.indexOf("heard $it") < log.indexOf("emitted $it") }, log.toString())
    }

    @Test
    fun `a pull of a run that is not there is an error naming it`() {
        val buffer = java.nio.ByteBuffer.allocateDirect(64)
        assertEquals(RoutedPull.UNKNOWN_READER, RoutedPull.agentstream_uniffi_run_pull_routed(Long.MAX_VALUE, 0, buffer, 64))
        assertEquals(RoutedPull.BAD_ARGUMENT, RoutedPull.agentstream_uniffi_run_pull_routed(1, 0, buffer, 4))
        val kinds = listOf(RoutedPull.BUSY, RoutedPull.UNKNOWN_READER, RoutedPull.BAD_ARGUMENT, -99L)
            .map { RoutedPull.error(it, "r1") }
        assertEquals(
            listOf(ErrorKind.BUSY, ErrorKind.INVALID_HANDLE, ErrorKind.INTERNAL, ErrorKind.INTERNAL),
            kinds.map { it.kind },
        )
        assertTrue(kinds.all { it.message!!.contains("r1") || it.kind == ErrorKind.INTERNAL }, kinds.toString())
    }

    @Test
    fun `a pull that panicked is an error with the panic's message`() {
        val text = "index out of range".toByteArray()
        val buffer = java.nio.ByteBuffer.allocateDirect(64).order(java.nio.ByteOrder.LITTLE_ENDIAN)
        buffer.putLong(0, text.size.toLong()).put(8, text)
        val panic = RoutedPull.panic(buffer, "r1")
        assertEquals(ErrorKind.PANIC, panic.kind)
        assertTrue(panic.message!!.contains("r1") && panic.message!!.contains("index out of range"), panic.message)
        buffer.putLong(0, 1_000)
        assertTrue(RoutedPull.panic(buffer, "r1").message!!.contains("could not be read"))
    }
}
