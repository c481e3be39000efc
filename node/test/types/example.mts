// The ES module view of the types: `import` resolves to dist/index.d.mts, which must expose the
// same names as the CommonJS declarations (checked by `tsc --noEmit`, strict).
import { Decoder, Evolve, InvalidArgumentError, parse, type OutputEvent, type HookEvent, type LifecycleEvent } from 'agentstream';

const events: OutputEvent[] = [...new Decoder('codex').feed('{}\n'), ...parse('kimi', 'plain text')];
const evolve = new Evolve({ config: { type: 'opencode' } }).on('content', (e: OutputEvent) => e.update.sessionUpdate);
const hooks: HookEvent[] = [];
const lifecycle: LifecycleEvent[] = [];
const err: TypeError = new InvalidArgumentError('x');
console.log(events, evolve, hooks, lifecycle, err);
