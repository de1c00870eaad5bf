/** The change-stream ports live with every other port, in ../ports/change-stream.ts. */
export * from '../ports/change-stream';
