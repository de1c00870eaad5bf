/** Logical sessions and the retryable-write table. (Owned by the server work; stub.) */
export class SessionRegistry {}
