/**
 * Every error name the API can return, with its HTTP status and meaning.
 * The README's error table is generated from this list (keep them in step).
 */
export const API_ERRORS = {
  InvalidRequest: { httpStatus: 400, description: 'The request body is not valid.' },
  NotIdle: { httpStatus: 409, description: 'start is only allowed while the sync is IDLE.' },
  InvalidState: { httpStatus: 409, description: 'The operation is not allowed in the current state.' },
  NotReady: { httpStatus: 503, description: 'The instance is still initializing; retry shortly.' },
  InternalError: { httpStatus: 500, description: 'An unexpected internal error occurred.' },
} as const satisfies Record<string, { httpStatus: number; description: string }>;

export type ApiErrorName = keyof typeof API_ERRORS;
