import { ApiError } from '../api-error';
import { validateStartRequest } from './validate-start-request';

const base = { source: 'cluster0', destination: 'cluster1' };

describe('start request: verification.mode', () => {
  it('is optional (absent: incremental, as before) and accepts incremental or full', () => {
    expect(validateStartRequest({ ...base, verification: { enabled: true } }).verification).toEqual(
      { enabled: true },
    );
    expect(validateStartRequest({ ...base, verification: { mode: 'full' } }).verification).toEqual({
      enabled: true,
      mode: 'full',
    });
    expect(
      validateStartRequest({ ...base, verification: { enabled: true, mode: 'incremental' } })
        .verification,
    ).toEqual({ enabled: true, mode: 'incremental' });
  });

  it('refuses another mode with a named field', () => {
    let caught: unknown;
    try {
      validateStartRequest({ ...base, verification: { mode: 'sampled' } });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).message).toContain(
      'verification.mode must be one of incremental, full',
    );
  });
});
