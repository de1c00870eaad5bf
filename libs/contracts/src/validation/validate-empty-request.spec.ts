import { ApiError } from '../api-error';
import { validateEmptyRequest } from './validate-empty-request';

describe('validateEmptyRequest', () => {
  it('accepts {}', () => {
    expect(() => validateEmptyRequest({}, 'pause')).not.toThrow();
  });

  it.each([
    ['a field', { force: true }, 'pause takes no fields; unknown field "force"'],
    ['an array', [], 'must be a JSON object'],
    ['null', null, 'must be a JSON object'],
    ['a string', 'x', 'must be a JSON object'],
  ])('rejects %s as InvalidRequest', (_name, body, text) => {
    const error = (() => {
      try {
        validateEmptyRequest(body, 'pause');
      } catch (caught) {
        return caught as ApiError;
      }
    })();
    expect(error).toBeInstanceOf(ApiError);
    expect(error!.error).toBe('InvalidRequest');
    expect(error!.message).toContain(text);
  });
});
