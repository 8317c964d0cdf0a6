// The context manager: AsyncLocalStorage, switched off while no sampled span is open.
//
// Before Node 24, AsyncLocalStorage propagates through async_hooks: from the first context it
// enters until disable(), a hook runs for every promise and resource the process creates, ~10 %
// of a create's CPU on Node 20 whether or not the request is sampled. At a low ratio most of that
// time no sampled span is open, and nothing needs a context. So the count of open sampled spans
// is kept (a span processor): the storage is disabled the moment the last one ends, or on the
// turn after a context was entered outside any (the export's, say); the next context entered
// enables it again. Waiting a turn after the last span too kept it on for the whole next round
// of the event loop, ~30 % of the time at 1 % on a fast-path read (docs/performance.md).
// Node 24 propagates without hooks (AsyncContextFrame): nothing to switch off.
import type { Context, ContextManager } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { isSampled } from './spans.js';

/** True when this process's AsyncLocalStorage runs on async_hooks (Node before 24, or 24+ with --no-async-context-frame). */
export function storageUsesHooks(version = process.versions.node, flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]): boolean {
  const major = Number(version.split('.')[0]);
  if (major >= 24) return flags.includes('--no-async-context-frame');
  return !flags.includes('--experimental-async-context-frame');
}

export interface IdleContext {
  contextManager: ContextManager;
  /** Counts the open sampled spans (first in the provider's processors). */
  processor: SpanProcessor;
  /** Open sampled spans, and whether the storage is on (for tests). */
  state(): { open: number; enabled: boolean };
}

/** AsyncLocalStorageContextManager that asks for a check after entering a context outside any sampled span. */
class CheckingContextManager extends AsyncLocalStorageContextManager {
  constructor(private readonly entered: () => void) {
    super();
  }
  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    try {
      return super.with(context, fn, thisArg, ...args);
    } finally {
      this.entered();
    }
  }
}

export function idleContext(): IdleContext {
  let open = 0;
  let checking = false;
  // On the next turn: what entered a context may still be running in it this turn.
  const check = () => {
    checking = false;
    if (open === 0) manager.disable();
  };
  const checkSoon = () => {
    if (open > 0 || checking) return;
    checking = true;
    setImmediate(check).unref();
  };
  const manager = new CheckingContextManager(checkSoon);
  const storage = (manager as unknown as { _asyncLocalStorage: { enabled?: boolean } })._asyncLocalStorage;
  const processor: SpanProcessor = {
    onStart: (span) => {
      if (isSampled(span)) open++;
    },
    onEnd: (span) => {
      // Nothing left that needs a context: what runs on in an ended span's context starts no spans of ours.
      if (isSampled(span) && --open === 0) manager.disable();
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  return {
    contextManager: manager,
    processor,
    state: () => ({ open, enabled: storage.enabled === true }),
  };
}

