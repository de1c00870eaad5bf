import { connectionStringProblem } from './connection-string';

describe('connectionStringProblem', () => {
  it.each([
    'mongodb://localhost',
    'mongodb://127.0.0.1:27017',
    'mongodb://alice:p%40ss@h1:1,h2:2/admin?replicaSet=rs0&w=majority',
    'mongodb://[::1]:27017/',
    'mongodb+srv://alice:pw@cluster0.example.net/?retryWrites=true',
  ])('accepts %s', (uri) => {
    expect(connectionStringProblem(uri)).toBeNull();
  });

  it.each([
    ['http://h', 'must start with mongodb:// or mongodb+srv://'],
    ['localhost:27017', 'must start with mongodb://'],
    ['mongodb://', 'names no host'],
    ['mongodb://alice:pw@', 'names no host'],
    ['mongodb://a:b:c@h', 'unescaped characters in its credentials'],
    ['mongodb://a/b:pw@h', 'unescaped characters'],
    ['mongodb://:pw@h', 'empty user name'],
    ['mongodb://h:0', 'invalid port (host 1)'],
    ['mongodb://h:1,h:99999', 'invalid port (host 2)'],
    ['mongodb://h:abc', 'invalid host (host 1)'],
    ['mongodb://h /x', 'whitespace'],
    ['mongodb+srv://h:27017', 'must not give a port'],
    ['mongodb+srv://h1,h2', 'exactly one host'],
    ['mongodb://h/?w', 'malformed option'],
  ])('rejects %s', (uri, problem) => {
    expect(connectionStringProblem(uri)).toContain(problem);
  });

  it('never quotes the credentials', () => {
    expect(connectionStringProblem('mongodb://alice:topsecret:x@h')).not.toContain('topsecret');
  });
});
