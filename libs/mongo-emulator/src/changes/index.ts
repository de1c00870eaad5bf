export { openChangeStream } from './open-change-stream';
export {
  ChangeStreamCursor,
  changeStreamErrorLabels,
  DEFAULT_AWAIT_MS,
  NON_RESUMABLE_LABEL,
  RESUMABLE_LABEL,
} from './change-stream-cursor';
export {
  decodeResumeToken,
  encodeResumeToken,
  eventTokenData,
  highWaterMarkToken,
  compareTokens,
  TOKEN_VERSION,
  TokenType,
  type ResumeTokenData,
  type ResumeTokenDoc,
} from './resume-token';
export { buildEvent, buildInvalidate, relevance, tokenDataForEntry } from './event-builder';
export {
  parseChangeStreamSpec,
  cursorNamespace,
  type ChangeStreamSpec,
  type ChangeStreamScope,
} from './spec';
