/**
 * The ES module entry point of agentstream: the same objects as the CommonJS entry (one copy of
 * every class, so `instanceof` works whichever way a program loads the package).
 *
 * @module
 */
export * from './index.js';
