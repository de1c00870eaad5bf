import type { ApiErrorName, Progress } from '@sync/contracts';

/** Response bodies of the API: success, progress and error envelopes. */
export interface SuccessBody {
  success: true;
}

export interface ProgressBody {
  success: true;
  progress: Progress;
}

export interface FailureBody {
  success: false;
  error: ApiErrorName;
  errorDescription: string;
}

export const SUCCESS: SuccessBody = Object.freeze({ success: true });

export function failureBody(error: ApiErrorName, errorDescription: string): FailureBody {
  return { success: false, error, errorDescription };
}
