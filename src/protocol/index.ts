export * from './labels.js';
export * from './agent.js';
export * from './errors.js';
export * from './job.js';
export * from './events.js';
export * from './runner.js';
export * from './runner-messages.js';
