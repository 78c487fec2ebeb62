/** The Flotilla client SDK: typed access to the REST/SSE API. */
export { FlotillaClient, RunnerTokenResponse } from './client.js';
export type { FlotillaClientOptions, CreateJobInput, ListJobsQuery, FollowOptions } from './client.js';
export { ApiError } from './errors.js';
export { SseParser, parseSseStream } from './sse.js';
export type { SseEvent, ByteSource } from './sse.js';
