import { API_ERRORS, type ApiErrorName } from './api-errors';

/**
 * An API failure with a stable name. The HTTP layer renders it as
 * `{success: false, error: name, errorDescription: message}` with the table's status.
 */
export class ApiError extends Error {
  readonly httpStatus: number;

  constructor(
    readonly error: ApiErrorName,
    description?: string,
  ) {
    super(description ?? API_ERRORS[error].description);
    this.name = 'ApiError';
    this.httpStatus = API_ERRORS[error].httpStatus;
  }
}
