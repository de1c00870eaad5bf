import { redactSecrets, redactUri, uriSecrets } from './redact-uri';

describe('redactUri', () => {
  it.each([
    [
      'mongodb://alice:s3cret@h1:27017,h2:27018/db?replicaSet=rs0',
      'mongodb://<credentials>@h1:27017,h2:27018/db?replicaSet=rs0',
    ],
    [
      'mongodb+srv://alice:s3cret@cluster.example.net/',
      'mongodb+srv://<credentials>@cluster.example.net/',
    ],
    ['mongodb://h1:27017', 'mongodb://h1:27017'],
    ['mongodb://user@h1', 'mongodb://<credentials>@h1'],
    ['mongodb://u:p@ss/w@rd@h1/?x=1', 'mongodb://<credentials>@h1/?x=1'],
    [
      'mongodb://h/?tls=true&tlsCertificateKeyFilePassword=topsecret',
      'mongodb://h/?tls=true&tlsCertificateKeyFilePassword=<redacted>',
    ],
    [
      'mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN:abc',
      'mongodb://h/?authMechanismProperties=<redacted>',
    ],
    ['http://alice:s3cret@h', '<redacted connection string>'],
  ])('%s', (uri, expected) => {
    expect(redactUri(uri)).toBe(expected);
    expect(redactUri(uri)).not.toContain('s3cret');
  });
});

describe('redactSecrets', () => {
  it('redacts every connection string inside free text', () => {
    const text = 'failed to connect to mongodb://a:pw1@h1 and "mongodb+srv://b:pw2@h2/x" today';
    expect(redactSecrets(text)).toBe(
      'failed to connect to mongodb://<credentials>@h1 and "mongodb+srv://<credentials>@h2/x" today',
    );
  });
});

describe('uriSecrets', () => {
  it('returns the password raw and decoded and secret option values', () => {
    expect(uriSecrets('mongodb://alice:p%40ssword@h/?proxyPassword=proxysecret')).toEqual([
      'p%40ssword',
      'p@ssword',
      'proxysecret',
    ]);
  });

  it('skips values too short to scrub safely', () => {
    expect(uriSecrets('mongodb://a:b@h')).toEqual([]);
  });
});
