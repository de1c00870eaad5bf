/**
 * Change event application and its part in the commit: ports, pure event → write translation,
 * lanes, checkpointing and commit support. One role per file:
 * - ports.ts — ChangeFeed, ChangeWriter, CheckpointStore, DocumentLookup, ApplyListener
 * - translate-event.ts → insert/update/replace/delete-event.ts, ddl-event.ts
 * - write-lane.ts, lane-router.ts, checkpoint-tracker.ts, ddl-executor.ts
 * - change-applier.ts — the loop; commit-readiness.ts — lag and canCommit
 */
export * from './change-event';
export * from './errors';
export * from './ports';
export * from './write-step';
export * from './translate-event';
export * from './ddl-event';
export * from './namespace-rules';
export * from './doc-key';
export * from './resume-token';
export * from './checkpoint-tracker';
export * from './commit-readiness';
export * from './change-applier';
export { compareTimestamps } from './timestamps';
export * from './update-in-memory';
export * from './raw-document';
